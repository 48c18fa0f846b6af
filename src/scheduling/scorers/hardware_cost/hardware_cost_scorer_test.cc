#include "scheduling/scorers/hardware_cost/hardware_cost_scorer.h"

#include <gtest/gtest.h>

#include "scheduling/registry.h"
#include "unit/scheduling/test_util.h"

namespace infergrid::scheduling {
namespace {

std::vector<EndpointSnapshot> Fleet() {
  auto eps = testutil::Endpoints(3);
  // $/h and decode tokens/s: costs per token 1e-6, 0.5e-6 and 0.25e-6 dollars.
  double price[] = {36, 9, 4.5};
  double decode[] = {10000, 5000, 5000};
  for (size_t i = 0; i < 3; ++i) {
    eps[i].capacity.price_per_hour = price[i];
    eps[i].capacity.decode_tokens_per_s = decode[i];
    eps[i].capacity.prefill_tokens_per_s = 10000;
  }
  return eps;
}

TEST(HardwareCostScorer, PrefersTheCheapestPerToken) {
  HardwareCostScorer s(0);
  auto eps = Fleet();
  EXPECT_NEAR(HardwareCostScorer::CostPerToken(eps[0]), 1e-6, 1e-15);
  auto scores = testutil::ScoreAll(s, RequestInfo{}, eps);
  EXPECT_DOUBLE_EQ(scores[2], 1);
  EXPECT_DOUBLE_EQ(scores[1], 0.5);
  EXPECT_DOUBLE_EQ(scores[0], 0.25);
}

TEST(HardwareCostScorer, OnlyAmongThoseMeetingTheLatencyObjective) {
  HardwareCostScorer s(/*objective=*/1.0);
  auto eps = Fleet();
  eps[2].in_flight = eps[2].in_flight_prefilling = 2;
  eps[2].in_flight_prefill_tokens = 20000;  // 2 s of queued prefill: misses 1 s
  RequestInfo r;
  r.prompt_tokens_estimate = 1000;  // 0.1 s of its own
  auto scores = testutil::ScoreAll(s, r, eps);
  EXPECT_DOUBLE_EQ(scores[2], 0);
  EXPECT_DOUBLE_EQ(scores[1], 1);  // now the cheapest feasible
  EXPECT_DOUBLE_EQ(scores[0], 0.5);
  r.ttft_objective_seconds = 5;  // the request's own objective wins over the default
  scores = testutil::ScoreAll(s, r, eps);
  EXPECT_DOUBLE_EQ(scores[2], 1);
}

TEST(HardwareCostScorer, UnknownPricesScoreAlike) {
  HardwareCostScorer s(0);
  auto eps = testutil::Endpoints(3);
  auto scores = testutil::ScoreAll(s, RequestInfo{}, eps);
  EXPECT_EQ(scores, (std::vector<double>{1, 1, 1}));
}

}  // namespace
}  // namespace infergrid::scheduling
