#include "scheduling/scorers/session_affinity/session_affinity_scorer.h"

#include <gtest/gtest.h>

#include "scheduling/registry.h"
#include "unit/scheduling/test_util.h"

namespace infergrid::scheduling {
namespace {

RequestInfo Turn(const std::string& session, double now) {
  RequestInfo r;
  r.session_key = session;
  r.now_seconds = now;
  r.prompt_tokens_estimate = 1000;
  return r;
}

TEST(SessionAffinityScorer, KeepsASessionOnItsHome) {
  SessionAffinityScorer s(1, 0.9, 1, 600, 100);
  auto eps = testutil::Endpoints(3);
  EXPECT_EQ(testutil::ScoreAll(s, Turn("a", 0), eps), (std::vector<double>{0, 0, 0}));  // unknown yet
  s.OnPicked(Turn("a", 0), eps[2]);
  EXPECT_EQ(testutil::ScoreAll(s, Turn("a", 1), eps), (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(testutil::ScoreAll(s, Turn("b", 1), eps), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(testutil::ScoreAll(s, Turn("", 1), eps), (std::vector<double>{0, 0, 0}));  // no key, no affinity
}

TEST(SessionAffinityScorer, MovesOnceWhenItsHomeIsOverloadedAndDoesNotFlapBack) {
  SessionAffinityScorer s(1, 0.9, 1, 600, 100);
  auto eps = testutil::Endpoints(2);
  for (auto& e : eps) e.capacity.prefill_tokens_per_s = 10000;
  s.OnPicked(Turn("a", 0), eps[0]);
  eps[0].in_flight = eps[0].in_flight_prefilling = 3;
  eps[0].in_flight_prefill_tokens = 30000;  // 3 s of prefill queued at home
  EXPECT_EQ(testutil::ScoreAll(s, Turn("a", 1), eps), (std::vector<double>{0, 0}));  // free to move
  s.OnPicked(Turn("a", 1), eps[1]);  // the other scorers chose endpoint 1
  EXPECT_EQ(s.moves(), 1u);
  eps[0] = testutil::Endpoints(1)[0];  // the old home is idle again
  EXPECT_EQ(testutil::ScoreAll(s, Turn("a", 2), eps), (std::vector<double>{0, 1}));  // stays at the new one
}

TEST(SessionAffinityScorer, LeavesAHomeWhoseKvCacheWouldOverflow) {
  SessionAffinityScorer s(1, 0.9, 1, 600, 100);
  auto eps = testutil::Endpoints(2);
  eps[0].capacity.kv_cache_tokens = 100000;
  s.OnPicked(Turn("a", 0), eps[0]);
  eps[0].metrics_fresh = true;
  eps[0].kv_cache_usage = 0.85;
  EXPECT_EQ(testutil::ScoreAll(s, Turn("a", 1), eps)[0], 1);  // 0.85 + 1000/100000 < 0.9
  eps[0].kv_cache_usage = 0.895;
  EXPECT_EQ(testutil::ScoreAll(s, Turn("a", 1), eps)[0], 0);
}

TEST(SessionAffinityScorer, ForgetsIdleSessionsAndBoundsItsMemory) {
  SessionAffinityScorer s(1, 0.9, 1, /*ttl=*/60, /*max=*/3);
  auto eps = testutil::Endpoints(2);
  s.OnPicked(Turn("old", 0), eps[1]);
  EXPECT_EQ(testutil::ScoreAll(s, Turn("old", 61), eps), (std::vector<double>{0, 0}));  // past its TTL
  for (int i = 0; i < 10; ++i) s.OnPicked(Turn("s" + std::to_string(i), 100 + i), eps[i % 2]);
  EXPECT_LE(s.num_sessions(), 3u);
  EXPECT_EQ(testutil::ScoreAll(s, Turn("s9", 110), eps), (std::vector<double>{0, 1}));  // the most recent kept
  EXPECT_EQ(testutil::ScoreAll(s, Turn("s0", 110), eps), (std::vector<double>{0, 0}));  // the oldest forgotten
}

TEST(SessionAffinityScorer, ValidatesItsParameters) {
  auto bad = testutil::Plugin("session-affinity", {{"kvUsageThreshold", "2"}});
  EXPECT_FALSE(SessionAffinityScorer::Create(PluginContext{bad, "f.yaml"}).ok());
  auto ok = testutil::Plugin("session-affinity", {{"ttlSeconds", "30"}, {"maxSessions", "10"}});
  EXPECT_TRUE(SessionAffinityScorer::Create(PluginContext{ok, "f.yaml"}).ok());
}

}  // namespace
}  // namespace infergrid::scheduling
