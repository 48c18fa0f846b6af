#include "scheduling/scorers/prefix_cache/prefix_cache_scorer.h"

#include <gtest/gtest.h>

#include "scheduling/registry.h"
#include "unit/scheduling/test_util.h"

namespace infergrid::scheduling {
namespace {

std::unique_ptr<Scorer> Make(std::map<std::string, std::string> params = {}) {
  auto cfg = testutil::Plugin("prefix-cache", std::move(params));
  auto s = PrefixCacheScorer::Create(PluginContext{cfg, "t"});
  EXPECT_TRUE(s.ok()) << s.status().message();
  return std::move(*s);
}

TEST(PrefixCacheScorer, ScoresTheHeldPrefixOverThePromptLength) {
  auto s = Make({{"blockSize", "16"}, {"indexBlockSize", "16"}});
  auto eps = testutil::Endpoints(3);
  RequestInfo first = testutil::Prompt(100, 640);
  testutil::ScoreAll(*s, first, eps);
  s->OnPicked(first, eps[1]);
  // The same 640 tokens, then 640 more: endpoint 1 holds half of it.
  RequestInfo next = testutil::Prompt(100, 1280);
  auto scores = testutil::ScoreAll(*s, next, eps);
  EXPECT_DOUBLE_EQ(scores[0], 0);
  EXPECT_DOUBLE_EQ(scores[1], 0.5);
  EXPECT_DOUBLE_EQ(scores[2], 0);
}

TEST(PrefixCacheScorer, AnotherPromptMatchesNothing) {
  auto s = Make();
  auto eps = testutil::Endpoints(2);
  RequestInfo a = testutil::Prompt(100, 2048);
  testutil::ScoreAll(*s, a, eps);
  s->OnPicked(a, eps[0]);
  auto scores = testutil::ScoreAll(*s, testutil::Prompt(50000, 2048), eps);
  EXPECT_EQ(scores, (std::vector<double>{0, 0}));
  scores = testutil::ScoreAll(*s, a, eps);
  EXPECT_DOUBLE_EQ(scores[0], 1);
}

TEST(PrefixCacheScorer, UsesTheRequestsOwnHashesWhenTheBlockSizeMatches) {
  auto s = Make({{"indexBlockSize", "64"}});
  auto eps = testutil::Endpoints(2);
  RequestInfo by_tokens = testutil::Prompt(7, 1024);
  testutil::ScoreAll(*s, by_tokens, eps);
  s->OnPicked(by_tokens, eps[1]);
  RequestInfo by_hashes;  // the planner's form: hashes only, same content
  by_hashes.block_size = 16;
  by_hashes.prompt_block_hashes = HashBlocks(by_tokens.prompt_token_ids, 16);
  by_hashes.prompt_tokens_estimate = 1024;
  auto scores = testutil::ScoreAll(*s, by_hashes, eps);
  EXPECT_DOUBLE_EQ(scores[1], 1);
  EXPECT_DOUBLE_EQ(scores[0], 0);
}

TEST(PrefixCacheScorer, RemembersPerEndpointAsMuchAsItsKvCacheHolds) {
  auto s = Make({{"indexBlockSize", "64"}});
  auto eps = testutil::Endpoints(2);
  eps[0].capacity.kv_cache_tokens = 64 * 10;  // ten entries
  eps[1].capacity.kv_cache_tokens = 64 * 1000;
  RequestInfo a = testutil::Prompt(1, 64 * 20);
  testutil::ScoreAll(*s, a, eps);
  s->OnPicked(a, eps[0]);
  testutil::ScoreAll(*s, a, eps);
  s->OnPicked(a, eps[1]);
  auto& state = static_cast<PrefixCacheScorer&>(*s).state();
  EXPECT_EQ(state.index().size(0), 10u);
  EXPECT_EQ(state.index().size(1), 20u);
  auto scores = testutil::ScoreAll(*s, a, eps);
  EXPECT_DOUBLE_EQ(scores[0], 0.5);
  EXPECT_DOUBLE_EQ(scores[1], 1);
}

TEST(PrefixCacheScorer, ValidatesItsParameters) {
  auto bad = testutil::Plugin("prefix-cache", {{"blockSize", "16"}, {"indexBlockSize", "40"}});
  auto r = PrefixCacheScorer::Create(PluginContext{bad, "f.yaml"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("indexBlockSize 40 must be a whole multiple of blockSize 16"),
            std::string::npos);
  auto unknown = testutil::Plugin("prefix-cache", {{"hashSeed", "1"}});
  EXPECT_FALSE(PrefixCacheScorer::Create(PluginContext{unknown, "f.yaml"}).ok());
}

}  // namespace
}  // namespace infergrid::scheduling
