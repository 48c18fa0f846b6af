#include "plan/simulator.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "plan/policy.h"

namespace infergrid::plan {
namespace {

// Four 8B servers and 32 coding agents for a simulated two minutes: small enough to run in a
// fraction of a second, large enough for routing to matter.
Fleet SmallFleet(int count = 4) {
  auto spec = ParseFleet(
      "apiVersion: infergrid.dev/v1\nkind: Fleet\nspec:\n  servers:\n"
      "  - {name: s, count: " +
          std::to_string(count) +
          ", accelerator: h100, model: llama-3.1-8b, gpuMemoryUtilization: 0.3, "
          "pricePerHour: 3}\n",
      "f.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  auto f = BuildFleet(*spec);
  EXPECT_TRUE(f.ok()) << f.status().message();
  return *f;
}

workload::WorkloadSpec Agents(int n = 32) {
  auto w = workload::ParseWorkload(
      "apiVersion: infergrid.dev/v1\nkind: Workload\nspec:\n  seed: 3\n  duration: 120s\n"
      "  warmup: 20s\n  rampUp: 10s\n  clients:\n"
      "  - type: coding-agent\n    count: " +
          std::to_string(n) +
          "\n    systemPromptTokens: 2000\n    contextTokens: {mean: 3000, cv: 0.5}\n"
          "    nextMessageTokens: {mean: 400, cv: 1}\n    outputTokens: {mean: 80, cv: 0.5}\n"
          "    maxContextTokens: 20000\n",
      "w.yaml");
  EXPECT_TRUE(w.ok()) << w.status().message();
  return *w;
}

PolicyReport Plan(const std::string& policy, const Fleet& f, const workload::WorkloadSpec& w) {
  auto r = Simulate(f, w, policy, SimOptions{}, nullptr);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return *r;
}

TEST(Simulator, ReportsWhatTheFleetDid) {
  Fleet f = SmallFleet();
  auto w = Agents();
  PolicyReport r = Plan("round-robin", f, w);
  EXPECT_EQ(r.policy, "round-robin");
  EXPECT_GT(r.requests, 100u);
  EXPECT_EQ(r.unfinished, 0u);
  EXPECT_EQ(r.rejected, 0u);
  EXPECT_GT(r.ttft_p50, 0);
  EXPECT_LE(r.ttft_p50, r.ttft_p90);
  EXPECT_LE(r.ttft_p90, r.ttft_p99);
  EXPECT_GT(r.itl_p50, 0.001);
  EXPECT_GT(r.output_tokens, 0u);
  EXPECT_NEAR(r.output_tokens_per_min, r.output_tokens / 100.0 * 60, 1e-6);
  // $3/h x 4 servers over the 100 s window, per million tokens produced in it.
  EXPECT_NEAR(r.cost_per_million_output, 12 * (100.0 / 3600) / r.output_tokens * 1e6, 1e-6);
  EXPECT_GE(r.load_spread, 1.0);
  EXPECT_GT(r.prefix_hit_rate, 0);  // the shared system prompt, at least
}

TEST(Simulator, IsDeterministic) {
  Fleet f = SmallFleet();
  auto w = Agents();
  PolicyReport a = Plan("infergrid", f, w), b = Plan("infergrid", f, w);
  EXPECT_EQ(a.requests, b.requests);
  EXPECT_EQ(a.output_tokens, b.output_tokens);
  EXPECT_DOUBLE_EQ(a.ttft_p90, b.ttft_p90);
  EXPECT_DOUBLE_EQ(a.prefix_hit_rate, b.prefix_hit_rate);
}

TEST(Simulator, CacheAwareRoutingKeepsAgentsOnTheirCache) {
  Fleet f = SmallFleet();
  auto w = Agents();
  PolicyReport rr = Plan("round-robin", f, w);
  PolicyReport hash = Plan("session-hash", f, w);
  PolicyReport ig = Plan("infergrid", f, w);
  PolicyReport oracle = Plan("oracle", f, w);
  // Round-robin scatters every conversation; pinning sessions keeps their prefix cached.
  EXPECT_GT(rr.session_moves, rr.session_turns / 2);
  EXPECT_EQ(hash.session_moves, 0u);
  EXPECT_GT(hash.prefix_hit_rate, rr.prefix_hit_rate + 0.2);
  EXPECT_GT(ig.prefix_hit_rate, rr.prefix_hit_rate + 0.2);
  EXPECT_GE(ig.prefix_hit_rate, 0.95 * oracle.prefix_hit_rate);
  EXPECT_LT(ig.ttft_p90, rr.ttft_p90);
}

TEST(Simulator, EveryBuiltinPolicyRuns) {
  Fleet f = SmallFleet(3);
  auto w = Agents(12);
  for (const auto& name : BuiltinPolicyNames()) {
    PolicyReport r = Plan(name, f, w);
    EXPECT_EQ(r.policy, name);
    EXPECT_GT(r.requests, 20u) << name;
  }
  EXPECT_FALSE(Simulate(f, w, "fastest", SimOptions{}, nullptr).ok());
  EXPECT_FALSE(Simulate(f, w, "profile:x", SimOptions{}, nullptr).ok());  // needs a config
}

TEST(Simulator, OpenLoopArrivalsFollowTheirRate) {
  Fleet f = SmallFleet(2);
  auto w = workload::ParseWorkload(
      "apiVersion: infergrid.dev/v1\nkind: Workload\nspec:\n  duration: 200s\n  warmup: 0s\n"
      "  clients:\n  - {type: random, sessionsPerSecond: 2, firstMessageTokens: 200,"
      " outputTokens: 20}\n",
      "w.yaml");
  ASSERT_TRUE(w.ok()) << w.status().message();
  PolicyReport r = Plan("round-robin", f, *w);
  EXPECT_NEAR(double(r.requests), 400, 60);  // Poisson: 2/s for 200 s
  EXPECT_LT(r.prefix_hit_rate, 0.05);        // nothing to reuse
}

// A small Mooncake trace: `n` requests a second apart, each of 4 blocks of 512 tokens, the
// first `shared` blocks common to all.
std::string WriteTrace(const std::string& name, int n, int shared, const std::string& extra = "") {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream f(path);
  for (int i = 0; i < n; ++i) {
    f << "{\"timestamp\": " << i * 1000 << ", \"input_length\": 2048, \"output_length\": 20, "
      << "\"hash_ids\": [";
    for (int b = 0; b < 4; ++b) f << (b ? ", " : "") << (b < shared ? b : 1000 * (i + 1) + b);
    f << "]}\n";
  }
  f << extra;
  return path;
}

TEST(SimulatorTrace, TheBoundIsOneInfiniteCachesHitRate) {
  TraceReplay t;
  t.path = WriteTrace("bound.jsonl", 10, 2);
  auto facts = ScanTrace(t);
  ASSERT_TRUE(facts.ok()) << facts.status().message();
  EXPECT_EQ(facts->requests, 10u);
  EXPECT_DOUBLE_EQ(facts->span_s, 9);
  EXPECT_EQ(facts->prompt_tokens, 20480u);
  EXPECT_EQ(facts->output_tokens, 200u);
  // The first request misses everything; each later one hits its 2 shared blocks of 4.
  EXPECT_DOUBLE_EQ(facts->bound_hit_rate, 9 * 1024.0 / 20480);
  t.speed = 3;  // three times faster: a third of the span
  EXPECT_DOUBLE_EQ(ScanTrace(t)->span_s, 3);
  t.speed = 1;
  t.from_ms = 2000;
  t.to_ms = 5000;
  auto part = ScanTrace(t);
  EXPECT_EQ(part->requests, 3u);
  EXPECT_DOUBLE_EQ(part->span_s, 2);
}

TEST(SimulatorTrace, ReplaysEveryRequestAndCacheAwareRoutingReachesTheSharing) {
  TraceReplay t;
  t.path = WriteTrace("replay.jsonl", 30, 3);
  auto facts = ScanTrace(t);
  ASSERT_TRUE(facts.ok());
  Fleet f = SmallFleet();
  auto rr = SimulateTrace(f, t, *facts, "round-robin", SimOptions{}, nullptr);
  auto ig = SimulateTrace(f, t, *facts, "infergrid", SimOptions{}, nullptr);
  ASSERT_TRUE(rr.ok() && ig.ok()) << rr.status().message() << ig.status().message();
  EXPECT_EQ(rr->requests, 30u);
  EXPECT_EQ(ig->requests, 30u);
  EXPECT_EQ(ig->output_tokens, 30u * 20);
  // One server holding the shared 1,536 tokens of every prompt: close to the bound.
  EXPECT_GT(ig->prefix_hit_rate, 0.9 * facts->bound_hit_rate);
  EXPECT_LE(ig->prefix_hit_rate, facts->bound_hit_rate + 1e-9);
  EXPECT_LT(rr->prefix_hit_rate, ig->prefix_hit_rate);
}

TEST(SimulatorTrace, ASessionsDelayedTurnFollowsItsPreviousTurn) {
  TraceReplay t;
  // Request 0 opens session "s"; a turn of it follows 500 ms after it ends.
  std::string extra =
      R"({"session_id": "s", "delay": 500, "input_length": 2048, "output_length": 5,)"
      R"( "hash_ids": [0, 1, 2, 3]})"
      "\n";
  std::string path = ::testing::TempDir() + "/session.jsonl";
  {
    std::ofstream f(path);
    f << R"({"timestamp": 0, "session_id": "s", "input_length": 1024, "output_length": 5,)"
      << R"( "hash_ids": [0, 1]})"
      << "\n"
      << extra;
  }
  t.path = path;
  auto facts = ScanTrace(t);
  ASSERT_TRUE(facts.ok()) << facts.status().message();
  Fleet f = SmallFleet();
  auto r = SimulateTrace(f, t, *facts, "infergrid", SimOptions{}, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->requests, 2u);
  EXPECT_EQ(r->session_turns, 1u);  // the second turn continued the session...
  EXPECT_EQ(r->session_moves, 0u);  // ...on the server that had its context
}

TEST(SimulatorTrace, ABadLineStopsTheReplayWithItsLineNumber) {
  TraceReplay t;
  t.path = WriteTrace("bad.jsonl", 3, 1, "{\"timestamp\": 9000, \"output_length\": 1}\n");
  auto facts = ScanTrace(t);
  ASSERT_FALSE(facts.ok());
  EXPECT_NE(facts.status().message().find("bad.jsonl:4: input_length: missing"), std::string::npos)
      << facts.status().message();
}

TEST(SimulatorTrace, ATextInputIsThePromptItself) {
  std::string text;
  for (int i = 0; i < 1500; ++i) text += " word" + std::to_string(i % 50);
  std::string path = ::testing::TempDir() + "/text_input.jsonl";
  {
    std::ofstream f(path);
    for (int i = 0; i < 2; ++i) {
      f << "{\"timestamp\": " << i * 1000
        << R"(, "input_length": 1500, "output_length": 4, "text_input": ")" << text << "\"}\n";
    }
  }
  TraceReplay t;
  t.path = path;
  auto facts = ScanTrace(t);
  ASSERT_TRUE(facts.ok()) << facts.status().message();
  auto r = SimulateTrace(SmallFleet(1), t, *facts, "infergrid", SimOptions{}, nullptr);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->requests, 2u);
  // The same text twice: the second finds the first's blocks cached.
  EXPECT_GT(r->prefix_hit_rate, 0.4);
}

}  // namespace
}  // namespace infergrid::plan
