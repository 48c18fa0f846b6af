#include "workload/workload.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "workload/conversation.h"

namespace infergrid::workload {
namespace {

using ::testing::HasSubstr;

const char* kAgents = R"(apiVersion: infergrid.dev/v1
kind: Workload
metadata: {name: t}
spec:
  seed: 7
  duration: 2m
  warmup: 10s
  clients:
  - type: coding-agent
    count: 3
    turns: 3
    thinkSeconds: {dist: exponential, mean: 2}
    outputTokens: {mean: 100, cv: 0.5, min: 10, max: 400}
)";

WorkloadSpec Parse(const std::string& y) {
  auto w = ParseWorkload(y, "w.yaml");
  EXPECT_TRUE(w.ok()) << w.status().message();
  return *w;
}

std::string ErrorOf(const std::string& y) {
  auto w = ParseWorkload(y, "w.yaml");
  return w.ok() ? "" : w.status().message();
}

TEST(Workload, ParsesGroupsWithDefaultsAndDistributions) {
  WorkloadSpec w = Parse(kAgents);
  EXPECT_EQ(w.name, "t");
  EXPECT_EQ(w.seed, 7u);
  EXPECT_DOUBLE_EQ(w.duration_s, 120);
  EXPECT_DOUBLE_EQ(w.warmup_s, 10);
  ASSERT_EQ(w.groups.size(), 1u);
  const ClientGroup& g = w.groups[0];
  EXPECT_EQ(g.count, 3u);
  EXPECT_EQ(g.system_prompt_tokens, 6000u);  // the kind's default
  EXPECT_EQ(g.turns.kind, Distribution::Kind::kConstant);
  EXPECT_EQ(g.think_seconds.kind, Distribution::Kind::kExponential);
  EXPECT_EQ(g.output_tokens.kind, Distribution::Kind::kLognormal);
  EXPECT_DOUBLE_EQ(g.output_tokens.max, 400);
}

TEST(Workload, BadFilesSayWhereAndWhat) {
  std::string y = kAgents;
  EXPECT_THAT(ErrorOf(y + "    colour: red\n"),
              HasSubstr("w.yaml:14:5: spec.clients[0].colour: unknown field 'colour'"));
  std::string bad = kAgents;
  bad.replace(bad.find("coding-agent"), 12, "poet");
  EXPECT_THAT(ErrorOf(bad), HasSubstr("spec.clients[0].type: unknown client type 'poet'"));
  EXPECT_THAT(ErrorOf(y + "    sessionsPerSecond: 2\n"),
              HasSubstr("give exactly one of 'count' (closed loop) and 'sessionsPerSecond'"));
  bad = kAgents;
  bad.replace(bad.find("{mean: 100, cv: 0.5"), 19, "{mean: 100, cv: -1");
  EXPECT_THAT(ErrorOf(bad), HasSubstr("spec.clients[0].outputTokens.cv: expected a number"));
  bad = kAgents;
  bad.replace(bad.find("warmup: 10s"), 11, "warmup: 5m");
  EXPECT_THAT(ErrorOf(bad), HasSubstr("spec.warmup: must be shorter than the duration"));
  EXPECT_THAT(ErrorOf("apiVersion: infergrid.dev/v1\nkind: Fleet\nspec: {}\n"),
              HasSubstr("expected 'Workload', got 'Fleet'"));
}

TEST(Workload, DistributionsHaveTheirMeans) {
  std::mt19937_64 rng(1);
  auto mean_of = [&](const Distribution& d) {
    double s = 0;
    for (int i = 0; i < 200000; ++i) s += d.Sample(rng);
    return s / 200000;
  };
  EXPECT_NEAR(mean_of(Distribution::Exponential(3)), 3, 0.05);
  EXPECT_NEAR(mean_of(Distribution::Lognormal(800, 0.8, 0, 1e9)), 800, 10);
  Distribution clipped = Distribution::Lognormal(800, 2, 100, 1000);
  for (int i = 0; i < 1000; ++i) {
    double v = clipped.Sample(rng);
    ASSERT_GE(v, 100);
    ASSERT_LE(v, 1000);
  }
}

TEST(Workload, CodingAgentsShareTheSystemPromptAndGrowTheirContext) {
  WorkloadSpec w = Parse(kAgents);
  Client a(w, 0, 0, false), b(w, 0, 1, false);
  auto a1 = a.Next(), b1 = b.Next();
  ASSERT_TRUE(a1 && b1);
  EXPECT_TRUE(a1->new_session);
  ASSERT_EQ(a1->append.size(), 3u);  // system prompt, repository, task
  EXPECT_EQ(a1->append[0].role, Role::kSystem);
  EXPECT_EQ(a1->append[0].seed, b1->append[0].seed);  // one system prompt for all agents
  EXPECT_EQ(a1->append[0].tokens, 6000u);
  EXPECT_NE(a1->append[1].seed, b1->append[1].seed);  // each its own repository
  EXPECT_NE(a1->session_key, b1->session_key);
  EXPECT_FALSE(a1->session_key.empty());
  auto a2 = a.Next();
  ASSERT_TRUE(a2);
  EXPECT_FALSE(a2->new_session);
  EXPECT_EQ(a2->session_key, a1->session_key);
  ASSERT_EQ(a2->append.size(), 1u);  // a tool's output
  EXPECT_EQ(a2->append[0].role, Role::kTool);
  a.Next();
  auto a4 = a.Next();  // turns: 3, so the fourth starts a new task in the same repository
  ASSERT_TRUE(a4);
  EXPECT_TRUE(a4->new_session);
  EXPECT_NE(a4->session_key, a1->session_key);
  EXPECT_EQ(a4->append[1].seed, a1->append[1].seed);
}

TEST(Workload, TheSameSeedGivesTheSameTurnsWhateverTheTiming) {
  WorkloadSpec w = Parse(kAgents);
  Client x(w, 0, 2, false), y(w, 0, 2, false);
  for (int i = 0; i < 20; ++i) {
    auto p = x.Next(), q = y.Next();
    ASSERT_TRUE(p && q);
    EXPECT_EQ(p->output_tokens, q->output_tokens);
    EXPECT_EQ(p->output_seed, q->output_seed);
    EXPECT_DOUBLE_EQ(p->delay_s, q->delay_s);
    ASSERT_EQ(p->append.size(), q->append.size());
    for (size_t k = 0; k < p->append.size(); ++k) EXPECT_EQ(p->append[k].seed, q->append[k].seed);
  }
  WorkloadSpec other = w;
  other.seed = 8;
  Client z(other, 0, 2, false);
  EXPECT_NE(z.Next()->append[1].seed, Client(w, 0, 2, false).Next()->append[1].seed);
}

TEST(Workload, RepositoryReuseZeroMovesEachTaskToANewRepository) {
  std::string y = kAgents;
  y += "    repositoryReuse: 0\n";
  WorkloadSpec w = Parse(y);
  Client a(w, 0, 0, false);
  uint64_t first = a.Next()->append[1].seed;
  a.Next();
  a.Next();
  EXPECT_NE(a.Next()->append[1].seed, first);
}

TEST(Workload, OpenLoopClientsRunOneSession) {
  WorkloadSpec w = Parse(R"(apiVersion: infergrid.dev/v1
kind: Workload
spec:
  clients:
  - {type: chat, sessionsPerSecond: 2, turns: 2}
  - {type: random, count: 1}
)");
  Client c(w, 0, 0, true);
  EXPECT_TRUE(c.Next());
  EXPECT_TRUE(c.Next());
  EXPECT_FALSE(c.Next());  // its session is over: it leaves
  Client r(w, 1, 0, false);
  auto t1 = r.Next(), t2 = r.Next();
  EXPECT_TRUE(t1->new_session && t2->new_session);  // one-turn prompts, nothing reused
  EXPECT_TRUE(t1->session_key.empty());
  EXPECT_NE(t1->append[0].seed, t2->append[0].seed);
}

TEST(Workload, DocQaDrawsPopularDocumentsMoreOften) {
  WorkloadSpec w = Parse(R"(apiVersion: infergrid.dev/v1
kind: Workload
spec:
  clients:
  - {type: shared-doc-qa, count: 1, documents: 50, zipf: 1.2}
)");
  Client c(w, 0, 0, false);
  std::map<uint64_t, int> seen;
  for (int i = 0; i < 2000; ++i) ++seen[c.Next()->append[1].seed];
  std::vector<int> counts;
  for (auto& [k, v] : seen) counts.push_back(v);
  std::sort(counts.rbegin(), counts.rend());
  EXPECT_LE(seen.size(), 50u);
  EXPECT_GT(counts[0], 5 * counts[counts.size() / 2]);  // a head of popular documents
}

TEST(TokenConversation, HashesEqualTheChainOfItsTokens) {
  TokenConversation c(16);
  std::vector<uint32_t> all;
  for (Segment s : {Segment{Role::kSystem, 1, 40}, Segment{Role::kUser, 2, 7},
                    Segment{Role::kAssistant, 3, 100}}) {
    c.AppendSegment(s);
    SegmentTokens(s.seed, s.tokens, &all);
  }
  EXPECT_EQ(c.length(), 147u);
  EXPECT_EQ(c.blocks(), HashBlocks(all, 16));
  EXPECT_EQ(c.tail(), std::vector<uint32_t>(all.end() - 3, all.end()));
  // Equal segments give equal prefixes: two conversations share their system prompt's blocks.
  TokenConversation d(16);
  d.AppendSegment({Role::kSystem, 1, 40});
  d.AppendSegment({Role::kUser, 9, 30});
  EXPECT_EQ(d.blocks()[0], c.blocks()[0]);
  EXPECT_EQ(d.blocks()[1], c.blocks()[1]);
  EXPECT_NE(d.blocks()[2], c.blocks()[2]);
}

}  // namespace
}  // namespace infergrid::workload
