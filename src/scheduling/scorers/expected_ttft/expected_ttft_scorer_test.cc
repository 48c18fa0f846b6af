#include "scheduling/scorers/expected_ttft/expected_ttft_scorer.h"

#include <gtest/gtest.h>

#include "scheduling/registry.h"
#include "unit/scheduling/test_util.h"

namespace infergrid::scheduling {
namespace {

std::unique_ptr<ExpectedTtftScorer> Make(std::map<std::string, std::string> params = {}) {
  auto cfg = testutil::Plugin("expected-ttft", std::move(params));
  auto s = ExpectedTtftScorer::Create(PluginContext{cfg, "t"});
  EXPECT_TRUE(s.ok()) << s.status().message();
  return std::unique_ptr<ExpectedTtftScorer>(static_cast<ExpectedTtftScorer*>(s->release()));
}

std::vector<EndpointSnapshot> Servers(size_t n, double rate) {
  auto eps = testutil::Endpoints(n);
  for (auto& e : eps) e.capacity.prefill_tokens_per_s = rate;
  return eps;
}

TEST(ExpectedTtftScorer, TradesCacheAgainstQueueInSeconds) {
  auto s = Make({{"floorSeconds", "0.1"}, {"indexBlockSize", "16"}});
  auto eps = Servers(2, 10000);
  RequestInfo conv = testutil::Prompt(1, 20000);
  testutil::ScoreAll(*s, conv, eps);
  s->OnPicked(conv, eps[0]);  // endpoint 0 now holds the 20k-token conversation
  RequestInfo next = testutil::Prompt(1, 21000);
  // Endpoint 0: 1k uncached = 0.1 s; endpoint 1: 21k = 2.1 s.
  EXPECT_DOUBLE_EQ(s->ExpectedTtft(next, eps[0], 20000), 0.1);
  auto scores = testutil::ScoreAll(*s, next, eps);
  EXPECT_DOUBLE_EQ(scores[0], 1);
  EXPECT_NEAR(scores[1], 0.2 / 2.2, 1e-9);
  // 3 s of prefill queued at endpoint 0 outweighs the cache: moving is faster.
  eps[0].in_flight = eps[0].in_flight_prefilling = 3;
  eps[0].in_flight_prefill_tokens = 30000;
  scores = testutil::ScoreAll(*s, next, eps);
  EXPECT_GT(scores[1], scores[0]);
}

TEST(ExpectedTtftScorer, ComparesHardwareByItsOwnPrefillRate) {
  auto s = Make();
  auto eps = Servers(2, 10000);
  eps[1].capacity.prefill_tokens_per_s = 40000;  // a faster server, equally idle
  auto scores = testutil::ScoreAll(*s, testutil::Prompt(1, 8000), eps);
  EXPECT_GT(scores[1], scores[0]);
  EXPECT_DOUBLE_EQ(scores[1], 1);
}

TEST(ExpectedTtftScorer, ChargesAServerWhoseKvCacheWouldOverflow) {
  auto s = Make({{"kvHeadroom", "0.1"}, {"overloadSeconds", "30"}});
  auto eps = Servers(2, 10000);
  for (auto& e : eps) {
    e.capacity.kv_cache_tokens = 100000;
    e.metrics_fresh = true;
  }
  eps[0].kv_cache_usage = 0.88;  // + 5k tokens = 0.93: 0.03 past 0.9
  RequestInfo r = testutil::Prompt(1, 5000);
  EXPECT_NEAR(s->ExpectedTtft(r, eps[0], 0), 0.5 + 30 * 0.3, 1e-9);
  EXPECT_DOUBLE_EQ(s->ExpectedTtft(r, eps[1], 0), 0.5);
}

TEST(ExpectedTtftScorer, SharesTheProfilesPrefixIndexWithPrefixCache) {
  auto profile = config::DefaultProfile();
  profile.scorers.clear();
  config::PluginConfig a, b;
  a.name = "prefix-cache";
  b.name = "expected-ttft";
  profile.scorers = {a, b};
  auto sched = BuiltinRegistry().Build(profile, "t", 1);
  ASSERT_TRUE(sched.ok()) << sched.status().message();
  auto eps = Servers(3, 10000);
  RequestInfo r = testutil::Prompt(1, 4096);
  auto d1 = (*sched)->Schedule(r, eps);
  auto d2 = (*sched)->Schedule(r, eps);
  EXPECT_EQ(*d1.endpoint, *d2.endpoint);     // the prompt follows its cache
  EXPECT_DOUBLE_EQ(d1.cached_tokens, 0);     // nothing cached the first time
  EXPECT_DOUBLE_EQ(d2.cached_tokens, 4096);  // all of it the second
  // One index for both plugins: two decisions inserted one chain, once.
  EXPECT_EQ((*sched)->shared().prefix()->index().size(), 4096u / 64);
  // Plugins of one profile must agree on the index's shape.
  b.parameters["indexBlockSize"] = config::Param{"128", {3, 5}, "x.parameters.indexBlockSize"};
  profile.scorers = {a, b};
  auto bad = BuiltinRegistry().Build(profile, "f.yaml", 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("share one prefix index"), std::string::npos);
}

}  // namespace
}  // namespace infergrid::scheduling
