#include "scheduling/scorers/kv_cache_utilization/kv_cache_utilization_scorer.h"

#include <gtest/gtest.h>

#include "scheduling/registry.h"
#include "unit/scheduling/test_util.h"

namespace infergrid::scheduling {
namespace {

TEST(KvCacheUtilizationScorer, PrefersFreeCacheFromFreshMetrics) {
  KvCacheUtilizationScorer s;
  auto eps = testutil::Endpoints(2);
  eps[0].metrics_fresh = eps[1].metrics_fresh = true;
  eps[0].kv_cache_usage = 0.9;
  eps[1].kv_cache_usage = 0.25;
  std::vector<size_t> cands = {0, 1};
  std::vector<double> scores(2);
  s.Score(RequestInfo{}, eps, cands, scores);
  EXPECT_NEAR(scores[0], 0.1, 1e-12);
  EXPECT_DOUBLE_EQ(scores[1], 0.75);
}

TEST(KvCacheUtilizationScorer, StaleMetricsFallBackToInFlightPromptsOverKvSize) {
  auto eps = testutil::Endpoints(2);
  eps[0].kv_cache_usage = 0.0;  // stale: ignored
  eps[0].in_flight_prompt_tokens = 300000;
  eps[0].capacity.kv_cache_tokens = 1000000;
  eps[1].in_flight_prompt_tokens = 300000;  // no KV size known: no estimate
  EXPECT_DOUBLE_EQ(KvCacheUtilizationScorer::Usage(eps[0]), 0.3);
  EXPECT_DOUBLE_EQ(KvCacheUtilizationScorer::Usage(eps[1]), 0.0);
  eps[0].in_flight_prompt_tokens = 5000000;
  EXPECT_DOUBLE_EQ(KvCacheUtilizationScorer::Usage(eps[0]), 1.0);
}

TEST(KvCacheUtilizationScorer, TakesNoParameters) {
  auto bad = testutil::Plugin("kv-cache-utilization", {{"x", "1"}});
  EXPECT_FALSE(KvCacheUtilizationScorer::Create(PluginContext{bad, "f.yaml"}).ok());
}

}  // namespace
}  // namespace infergrid::scheduling
