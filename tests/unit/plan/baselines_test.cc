// The planner's baselines, each against the behaviour its source describes.

#include <gtest/gtest.h>

#include <set>

#include "common/block_hash.h"
#include "plan/baselines/dynamo.h"
#include "plan/baselines/least_conn.h"
#include "plan/baselines/llm_d.h"
#include "plan/baselines/session_hash.h"
#include "plan/baselines/sglang.h"
#include "unit/scheduling/test_util.h"

namespace infergrid::plan {
namespace {

RequestInfo Req(uint32_t first, size_t n, std::string session = "") {
  RequestInfo r = scheduling::testutil::Prompt(first, n);
  r.block_size = 16;
  r.prompt_block_hashes = HashBlocks(r.prompt_token_ids, 16);
  r.session_key = std::move(session);
  return r;
}

TEST(SessionHashPolicy, OneSessionOneServerAndSessionsSpread) {
  SessionHashPolicy p(8);
  auto eps = scheduling::testutil::Endpoints(8);
  std::set<size_t> used;
  for (int s = 0; s < 200; ++s) {
    RequestInfo r = Req(1, 16, "session-" + std::to_string(s));
    size_t first = p.Route(0, r, eps)->server;
    EXPECT_EQ(p.Route(1, r, eps)->server, first);
    used.insert(first);
  }
  EXPECT_EQ(used.size(), 8u);
}

TEST(LeastConnPolicy, FewestInFlightAndEqualsInTurn) {
  LeastConnPolicy p(3);
  auto eps = scheduling::testutil::Endpoints(3);
  // All equal: in turn.
  EXPECT_EQ(p.Route(0, Req(1, 16), eps)->server, 0u);
  EXPECT_EQ(p.Route(1, Req(1, 16), eps)->server, 1u);
  EXPECT_EQ(p.Route(2, Req(1, 16), eps)->server, 2u);
  EXPECT_EQ(p.Route(3, Req(1, 16), eps)->server, 0u);
  // The fewest in flight wins, whatever the prompt or the cache.
  eps[0].in_flight = 4;
  eps[1].in_flight = 1;
  eps[2].in_flight = 3;
  EXPECT_EQ(p.Route(4, Req(1, 4096), eps)->server, 1u);
  eps[1].in_flight = 4;
  EXPECT_EQ(p.Route(5, Req(1, 16), eps)->server, 2u);
  // Two tied at the least: in turn between them.
  eps[2].in_flight = 4;
  eps[0].in_flight = 2;
  eps[1].in_flight = 2;
  size_t a = p.Route(6, Req(1, 16), eps)->server;
  size_t b = p.Route(7, Req(1, 16), eps)->server;
  EXPECT_NE(a, b);
  EXPECT_LT(a, 2u);
  EXPECT_LT(b, 2u);
}

TEST(SglangPolicy, FollowsTheLongestPrefixAboveTheThreshold) {
  SglangPolicy p(3, 16, SglangPolicy::Options{}, 1);
  auto eps = scheduling::testutil::Endpoints(3);
  size_t home = p.Route(0, Req(1, 4096), eps)->server;
  // The same prompt and more: its match rate is high, so it follows the tree.
  EXPECT_EQ(p.Route(1, Req(1, 5000), eps)->server, home);
  // A new prompt matches nothing: the smallest tree (not the home, which holds 4096 tokens).
  EXPECT_NE(p.Route(2, Req(900000, 4096), eps)->server, home);
}

TEST(SglangPolicy, BalancesOnlyPastBothImbalanceThresholds) {
  SglangPolicy p(2, 16, SglangPolicy::Options{}, 1);
  auto eps = scheduling::testutil::Endpoints(2);
  size_t home = p.Route(0, Req(1, 4096), eps)->server;
  eps[home].in_flight = 60;  // 60 - 0 <= 64: still balanced, the cache wins
  EXPECT_EQ(p.Route(1, Req(1, 4096), eps)->server, home);
  eps[home].in_flight = 70;  // > 64 apart and > 1.5x: the least loaded
  eps[1 - home].in_flight = 2;
  EXPECT_EQ(p.Route(2, Req(1, 4096), eps)->server, 1 - home);
}

TEST(LlmdPolicy, ScoresOnlyTheFirst256BlocksOfAPrompt) {
  LlmdPolicy p(2, 16, 1);
  auto eps = scheduling::testutil::Endpoints(2);
  for (auto& e : eps) e.metrics_fresh = true;
  // Two prompts that share their first 4096 tokens (256 blocks) and differ after.
  size_t first = p.Route(0, Req(1, 8192), eps)->server;
  RequestInfo other = Req(1, 4096);
  std::vector<uint32_t> tail = Req(777777, 4096).prompt_token_ids;
  other.prompt_token_ids.insert(other.prompt_token_ids.end(), tail.begin(), tail.end());
  other.prompt_block_hashes = HashBlocks(other.prompt_token_ids, 16);
  other.prompt_tokens_estimate = 8192;
  // To llm-d's approximate scorer they look the same: the holder of the head wins.
  EXPECT_EQ(p.Route(1, other, eps)->server, first);
  // A longer queue there (queue score 0, weight 2) and more KV in use outweigh prefix 3.
  eps[first].num_requests_waiting = 10;
  eps[first].kv_cache_usage = 0.6;
  EXPECT_NE(p.Route(2, other, eps)->server, first);
}

}  // namespace
}  // namespace infergrid::plan
