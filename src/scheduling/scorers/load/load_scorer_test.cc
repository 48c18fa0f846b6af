#include "scheduling/scorers/load/load_scorer.h"

#include <gtest/gtest.h>

#include "scheduling/load_model.h"
#include "scheduling/registry.h"
#include "unit/scheduling/test_util.h"

namespace infergrid::scheduling {
namespace {

TEST(LoadScorer, NormalisesByEachEndpointsCapacity) {
  LoadScorer s(1);
  auto eps = testutil::Endpoints(2);
  // The same queued prefill on a fast and on a slow server.
  for (auto& e : eps) {
    e.in_flight = 4;
    e.in_flight_prefilling = 4;
    e.in_flight_prefill_tokens = 20000;
    e.capacity.max_num_seqs = 256;
  }
  eps[0].capacity.prefill_tokens_per_s = 40000;  // 0.5 s of work
  eps[1].capacity.prefill_tokens_per_s = 10000;  // 2 s of work
  EXPECT_DOUBLE_EQ(LoadOf(eps[0]).prefill_seconds, 0.5);
  EXPECT_DOUBLE_EQ(LoadOf(eps[1]).prefill_seconds, 2.0);
  auto scores = testutil::ScoreAll(s, RequestInfo{}, eps);
  EXPECT_DOUBLE_EQ(scores[0], 1 / 1.5);
  EXPECT_DOUBLE_EQ(scores[1], 1 / 3.0);
}

TEST(LoadScorer, CountsDecodeSequencesAgainstTheBatch) {
  LoadScorer s(1);
  auto eps = testutil::Endpoints(2);
  eps[0].in_flight = 128;  // all past their first token
  eps[0].capacity.max_num_seqs = 256;
  eps[1].in_flight = 128;
  eps[1].capacity.max_num_seqs = 1024;
  auto scores = testutil::ScoreAll(s, RequestInfo{}, eps);
  EXPECT_DOUBLE_EQ(scores[0], 1 / 1.5);
  EXPECT_DOUBLE_EQ(scores[1], 1 / 1.125);
}

TEST(LoadScorer, FreshMetricsAddOtherClientsWorkStaleOnesAreIgnored) {
  auto eps = testutil::Endpoints(1);
  auto& e = eps[0];
  e.in_flight = 2;
  e.in_flight_prefilling = 2;
  e.in_flight_prefill_tokens = 10000;
  e.capacity.prefill_tokens_per_s = 10000;
  e.num_requests_waiting = 6;  // 4 beyond ours
  e.num_requests_running = 50;
  EXPECT_DOUBLE_EQ(LoadOf(e).prefill_seconds, 1.0);  // stale: our own accounting only
  e.metrics_fresh = true;
  EXPECT_DOUBLE_EQ(LoadOf(e).prefill_seconds, 3.0);  // + 4 x our average 5000 tokens
  EXPECT_DOUBLE_EQ(LoadOf(e).decode_share, 50.0 / kDefaultMaxNumSeqs);
}

TEST(LoadScorer, ValidatesItsParameters) {
  auto bad = testutil::Plugin("load", {{"prefillHorizonSeconds", "0"}});
  EXPECT_FALSE(LoadScorer::Create(PluginContext{bad, "f.yaml"}).ok());
  auto ok = testutil::Plugin("load", {{"prefillHorizonSeconds", "2"}});
  EXPECT_TRUE(LoadScorer::Create(PluginContext{ok, "f.yaml"}).ok());
}

}  // namespace
}  // namespace infergrid::scheduling
