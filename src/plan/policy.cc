#include "plan/policy.h"

#include "common/gallop.h"
#include "plan/baselines/dynamo.h"
#include "plan/baselines/least_conn.h"
#include "plan/baselines/llm_d.h"
#include "plan/baselines/session_hash.h"
#include "plan/baselines/sglang.h"
#include "plan/oracle.h"
#include "plan/scheduler_policy.h"

namespace infergrid::plan {

std::vector<std::string> BuiltinPolicyNames() {
  return {"infergrid", "round-robin", "least-conn", "least-load", "session-hash",
          "sglang",    "dynamo",      "llm-d",      "oracle"};
}

namespace {
config::SchedulingProfile Simple(const std::string& name, const std::string& scorer,
                                 const std::string& picker) {
  config::SchedulingProfile p;
  p.name = name;
  config::PluginConfig healthy;
  healthy.name = "healthy";
  p.filters.push_back(healthy);
  if (!scorer.empty()) {
    config::PluginConfig s;
    s.name = scorer;
    p.scorers.push_back(s);
  }
  p.picker.name = picker;
  return p;
}
}  // namespace

Result<std::unique_ptr<Policy>> MakePolicy(const std::string& name, const PolicyContext& ctx,
                                           const config::Gateway* gateway) {
  const size_t n = ctx.fleet->servers.size();
  if (name == "infergrid") {
    return SchedulerPolicy::Create(name, config::DefaultProfile(), "default profile", ctx.seed);
  }
  if (name == "round-robin") {
    return SchedulerPolicy::Create(name, Simple(name, "", "round-robin"), "built in", ctx.seed);
  }
  if (name == "least-load") {
    return SchedulerPolicy::Create(name, Simple(name, "least-load", "max-score"), "built in",
                                   ctx.seed);
  }
  if (name == "session-hash") return std::unique_ptr<Policy>(new SessionHashPolicy(n));
  if (name == "least-conn") return std::unique_ptr<Policy>(new LeastConnPolicy(n));
  if (name == "sglang") {
    return std::unique_ptr<Policy>(
        new SglangPolicy(n, ctx.fleet->block_size, SglangPolicy::Options{}, ctx.seed));
  }
  if (name == "dynamo") return std::unique_ptr<Policy>(new DynamoPolicy(ctx, 1.0));
  if (name == "llm-d") {
    return std::unique_ptr<Policy>(new LlmdPolicy(n, ctx.fleet->block_size, ctx.seed));
  }
  if (name == "oracle") return std::unique_ptr<Policy>(new OraclePolicy(ctx));
  const std::string prefix = "profile:";
  if (name.rfind(prefix, 0) == 0) {
    std::string profile = name.substr(prefix.size());
    if (gateway == nullptr) {
      return Status::Error("policy '" + name + "' needs --config with a Gateway file");
    }
    for (const auto& p : gateway->profiles) {
      if (p.name == profile) return SchedulerPolicy::Create(name, p, gateway->source, ctx.seed);
    }
    std::string names;
    for (const auto& p : gateway->profiles) names += (names.empty() ? "" : ", ") + p.name;
    return Status::Error("no scheduling profile '" + profile + "' in " + gateway->source +
                         " (it has: " + names + ")");
  }
  std::string names;
  for (const auto& b : BuiltinPolicyNames()) names += (names.empty() ? "" : ", ") + b;
  return Status::Error("unknown policy '" + name + "'; expected one of: " + names +
                       ", or profile:<name> from --config");
}

uint32_t CachedPrefixBlocks(const engine_model::Engine& e, std::span<const BlockHash> blocks) {
  const auto& pool = e.pool();
  if (blocks.empty() || !pool.Contains(blocks[0])) return 0;
  size_t last =
      GallopLastTrue(0, blocks.size(), [&](size_t k) { return pool.Contains(blocks[k]); });
  return static_cast<uint32_t>(last + 1);
}

}  // namespace infergrid::plan
