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
  SessionAffinityScorer s(
      {.overload = 1, .kv_threshold = 0.9, .horizon_s = 1, .ttl_s = 600, .max_sessions = 100});
  auto eps = testutil::Endpoints(3);
  EXPECT_EQ(testutil::ScoreAll(s, Turn("a", 0), eps),
            (std::vector<double>{0, 0, 0}));  // unknown yet
  s.OnPicked(Turn("a", 0), eps[2]);
  EXPECT_EQ(testutil::ScoreAll(s, Turn("a", 1), eps), (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(testutil::ScoreAll(s, Turn("b", 1), eps), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(testutil::ScoreAll(s, Turn("", 1), eps),
            (std::vector<double>{0, 0, 0}));  // no key, no affinity
}

TEST(SessionAffinityScorer, FindsItsHomeInASubsetOfThePool) {
  // Flow control passes only the endpoints with room: positions are not pool indexes.
  SessionAffinityScorer s({.overload = 1,
                           .kv_threshold = 0.9,
                           .horizon_s = 1,
                           .balance_weight = 0.1,
                           .ttl_s = 600,
                           .max_sessions = 100});
  auto eps = testutil::Endpoints(4);
  s.OnPicked(Turn("a", 0), eps[3]);
  std::vector<EndpointSnapshot> some = {eps[1], eps[3]};
  EXPECT_EQ(testutil::ScoreAll(s, Turn("a", 1), some), (std::vector<double>{0, 1}));
  std::vector<EndpointSnapshot> without_home = {eps[0], eps[1]};
  auto scores = testutil::ScoreAll(s, Turn("a", 1), without_home);
  EXPECT_LT(scores[0], 1);  // no false home: only the balance scores
  EXPECT_LT(scores[1], 1);
  // A new session placed on a high index of a subset is counted there.
  std::vector<EndpointSnapshot> high = {eps[3]};
  s.OnPicked(Turn("b", 1), high[0]);
  EXPECT_EQ(testutil::ScoreAll(s, Turn("b", 2), high), (std::vector<double>{1}));
}

TEST(SessionAffinityScorer, MovesOnceWhenItsHomeIsOverloadedAndDoesNotFlapBack) {
  SessionAffinityScorer s(
      {.overload = 1, .kv_threshold = 0.9, .horizon_s = 1, .ttl_s = 600, .max_sessions = 100});
  auto eps = testutil::Endpoints(2);
  for (auto& e : eps) e.capacity.prefill_tokens_per_s = 10000;
  s.OnPicked(Turn("a", 0), eps[0]);
  eps[0].in_flight = eps[0].in_flight_prefilling = 3;
  eps[0].in_flight_prefill_tokens = 30000;  // 3 s of prefill queued at home
  EXPECT_EQ(testutil::ScoreAll(s, Turn("a", 1), eps), (std::vector<double>{0, 0}));  // free to move
  s.OnPicked(Turn("a", 1), eps[1]);  // the other scorers chose endpoint 1
  EXPECT_EQ(s.moves(), 1u);
  eps[0] = testutil::Endpoints(1)[0];  // the old home is idle again
  EXPECT_EQ(testutil::ScoreAll(s, Turn("a", 2), eps),
            (std::vector<double>{0, 1}));  // stays at the new one
}

TEST(SessionAffinityScorer, LeavesAHomeWhoseKvCacheWouldOverflow) {
  SessionAffinityScorer s(
      {.overload = 1, .kv_threshold = 0.9, .horizon_s = 1, .ttl_s = 600, .max_sessions = 100});
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
  SessionAffinityScorer s({.ttl_s = 60, .max_sessions = 3});
  auto eps = testutil::Endpoints(2);
  s.OnPicked(Turn("old", 0), eps[1]);
  EXPECT_EQ(testutil::ScoreAll(s, Turn("old", 61), eps),
            (std::vector<double>{0, 0}));  // past its TTL
  for (int i = 0; i < 10; ++i) s.OnPicked(Turn("s" + std::to_string(i), 100 + i), eps[i % 2]);
  EXPECT_LE(s.num_sessions(), 3u);
  EXPECT_EQ(testutil::ScoreAll(s, Turn("s9", 110), eps),
            (std::vector<double>{0, 1}));  // the most recent kept
  EXPECT_EQ(testutil::ScoreAll(s, Turn("s0", 110), eps),
            (std::vector<double>{0, 0}));  // the oldest forgotten
}

TEST(SessionAffinityScorer, ValidatesItsParameters) {
  auto bad = testutil::Plugin("session-affinity", {{"kvUsageThreshold", "2"}});
  EXPECT_FALSE(SessionAffinityScorer::Create(PluginContext{bad, "f.yaml"}).ok());
  auto ok = testutil::Plugin("session-affinity", {{"ttlSeconds", "30"}, {"maxSessions", "10"}});
  EXPECT_TRUE(SessionAffinityScorer::Create(PluginContext{ok, "f.yaml"}).ok());
}

}  // namespace
}  // namespace infergrid::scheduling

namespace infergrid::scheduling {
namespace {

TEST(SessionAffinityScorer, PlacesNewSessionsWhereActiveContextsLeastCrowdTheKvCache) {
  SessionAffinityScorer s({.balance_weight = 1, .active_s = 60});
  auto eps = testutil::Endpoints(3);
  eps[0].capacity.kv_cache_tokens = 100000;
  eps[1].capacity.kv_cache_tokens = 100000;
  eps[2].capacity.kv_cache_tokens = 300000;  // three times the cache
  RequestInfo a = Turn("a", 0), b = Turn("b", 0);
  a.prompt_tokens_estimate = b.prompt_tokens_estimate = 30000;
  s.OnPicked(a, eps[0]);
  s.OnPicked(b, eps[1]);
  EXPECT_EQ(s.ActiveTokens(0), 30000);
  RequestInfo c = Turn("c", 1);
  c.prompt_tokens_estimate = 10000;
  auto scores = testutil::ScoreAll(s, c, eps);
  // Footprints with c: 0.4, 0.4 and 0.033: the large idle cache wins.
  EXPECT_DOUBLE_EQ(scores[2], 1);
  EXPECT_NEAR(scores[0], (0.05 + 10000.0 / 300000) / (0.05 + 0.4), 1e-9);
  EXPECT_DOUBLE_EQ(scores[0], scores[1]);
  // Sessions idle longer than activeSeconds no longer count.
  auto later = testutil::ScoreAll(s, Turn("c", 100), eps);
  EXPECT_DOUBLE_EQ(later[0], later[1]);
  EXPECT_EQ(s.ActiveTokens(0), 0);
}

TEST(SessionAffinityScorer, AnotherReplicasDecisionSetsTheHomeAndTheSessionsExportOldestFirst) {
  SessionAffinityScorer s(
      {.overload = 1, .kv_threshold = 0.9, .horizon_s = 1, .ttl_s = 600, .max_sessions = 100});
  auto eps = testutil::Endpoints(3);
  s.OnPicked(Turn("a", 0), eps[0]);
  s.OnObserved(Turn("b", 1), 2);
  EXPECT_EQ(testutil::ScoreAll(s, Turn("b", 2), eps), (std::vector<double>{0, 0, 1}));
  // A peer moving a session is not a move of this replica's.
  s.OnObserved(Turn("a", 3), 1);
  EXPECT_EQ(testutil::ScoreAll(s, Turn("a", 4), eps), (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(s.moves(), 0u);
  std::vector<std::pair<std::string, size_t>> seen;
  s.ForEachSession([&](const Scorer::SessionHome& h) { seen.emplace_back(*h.key, h.endpoint); });
  EXPECT_EQ(seen, (std::vector<std::pair<std::string, size_t>>{{"b", 2}, {"a", 1}}));
}

}  // namespace
}  // namespace infergrid::scheduling
