#include "plan/simulator.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace infergrid::plan
