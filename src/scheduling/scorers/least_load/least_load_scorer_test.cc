#include "scheduling/scorers/least_load/least_load_scorer.h"

#include <gtest/gtest.h>

#include "scheduling/registry.h"
#include "unit/scheduling/test_util.h"

namespace infergrid::scheduling {
namespace {

TEST(LeastLoadScorer, UsesOwnAccountingWhenMetricsAreStale) {
  LeastLoadScorer s(1000, 1);
  auto eps = testutil::Endpoints(3);
  eps[0].in_flight = 4;
  eps[1].in_flight = 2;
  eps[1].in_flight_prompt_tokens = 2000;  // +2 requests' worth
  eps[2].in_flight = 0;
  eps[2].num_requests_waiting = 50;  // stale: ignored
  EXPECT_DOUBLE_EQ(s.Load(eps[0]), 4);
  EXPECT_DOUBLE_EQ(s.Load(eps[1]), 4);
  EXPECT_DOUBLE_EQ(s.Load(eps[2]), 0);
  std::vector<size_t> cands = {0, 1, 2};
  std::vector<double> scores(3);
  s.Score(RequestInfo{}, eps, cands, scores);
  EXPECT_DOUBLE_EQ(scores[0], 0);
  EXPECT_DOUBLE_EQ(scores[1], 0);
  EXPECT_DOUBLE_EQ(scores[2], 1);
}

TEST(LeastLoadScorer, FreshMetricsCountOtherClientsWithoutDoubleCounting) {
  LeastLoadScorer s(1e9, 2);
  auto eps = testutil::Endpoints(2);
  eps[0].in_flight = 3;
  eps[0].metrics_fresh = true;
  eps[0].num_requests_running = 2;  // our 3 are mostly visible; take the larger
  eps[1].in_flight = 1;
  eps[1].metrics_fresh = true;
  eps[1].num_requests_running = 4;
  eps[1].num_requests_waiting = 3;  // others' traffic queued there
  EXPECT_DOUBLE_EQ(s.Load(eps[0]), 3);
  EXPECT_DOUBLE_EQ(s.Load(eps[1]), 10);
  std::vector<size_t> cands = {0, 1};
  std::vector<double> scores(2);
  s.Score(RequestInfo{}, eps, cands, scores);
  EXPECT_GT(scores[0], scores[1]);
}

TEST(LeastLoadScorer, AllIdleScoreEqually) {
  LeastLoadScorer s(2048, 1);
  auto eps = testutil::Endpoints(3);
  std::vector<size_t> cands = {0, 1, 2};
  std::vector<double> scores(3);
  s.Score(RequestInfo{}, eps, cands, scores);
  EXPECT_EQ(scores, (std::vector<double>{1, 1, 1}));
}

TEST(LeastLoadScorer, ValidatesParameters) {
  auto bad = testutil::Plugin("least-load", {{"promptTokensPerRequest", "0"}});
  auto r = LeastLoadScorer::Create(PluginContext{bad, "f.yaml"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(
                "plugin.parameters.promptTokensPerRequest: expected a number from 1"),
            std::string::npos);
  auto unknown = testutil::Plugin("least-load", {{"speed", "1"}});
  EXPECT_FALSE(LeastLoadScorer::Create(PluginContext{unknown, "f.yaml"}).ok());
}

}  // namespace
}  // namespace infergrid::scheduling
