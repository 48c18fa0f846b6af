#include "scheduling/registry.h"

#include <fmt/format.h>

#include <algorithm>

#include "scheduling/filters/healthy/healthy_filter.h"
#include "scheduling/pickers/max_score/max_score_picker.h"
#include "scheduling/pickers/power_of_two/power_of_two_picker.h"
#include "scheduling/pickers/round_robin/round_robin_picker.h"
#include "scheduling/scorers/expected_ttft/expected_ttft_scorer.h"
#include "scheduling/scorers/hardware_cost/hardware_cost_scorer.h"
#include "scheduling/scorers/kv_cache_utilization/kv_cache_utilization_scorer.h"
#include "scheduling/scorers/least_load/least_load_scorer.h"
#include "scheduling/scorers/load/load_scorer.h"
#include "scheduling/scorers/prefix_cache/prefix_cache_scorer.h"
#include "scheduling/scorers/session_affinity/session_affinity_scorer.h"

namespace infergrid::scheduling {
namespace {
template <typename M>
std::string Names(const M& m) {
  std::string out;
  for (const auto& [k, v] : m) out += (out.empty() ? "" : ", ") + k;
  return out;
}
}  // namespace

Status PluginContext::Error(const std::string& message) const {
  return Status::Error(config::FormatError(source, config.mark, config.path, message));
}

Status PluginContext::ParamError(const config::Param& p, const std::string& message) const {
  return Status::Error(config::FormatError(source, p.mark, p.path, message));
}

Status PluginContext::CheckParams(std::initializer_list<const char*> allowed) const {
  for (const auto& [key, p] : config.parameters) {
    bool ok = false;
    std::string list;
    for (const char* a : allowed) {
      ok = ok || key == a;
      list += (list.empty() ? "" : ", ") + std::string(a);
    }
    if (!ok) {
      return ParamError(p, fmt::format("unknown parameter '{}' of '{}'; expected {}", key,
                                       config.name, list.empty() ? "none" : "one of: " + list));
    }
  }
  return Status::Ok();
}

Result<double> PluginContext::Number(const char* key, double fallback, double min,
                                     double max) const {
  auto it = config.parameters.find(key);
  if (it == config.parameters.end()) return fallback;
  char* end = nullptr;
  double v = std::strtod(it->second.value.c_str(), &end);
  if (it->second.value.empty() || *end != '\0') {
    return ParamError(it->second, fmt::format("expected a number, got '{}'", it->second.value));
  }
  if (!(v >= min && v <= max)) {
    return ParamError(it->second,
                      fmt::format("expected a number from {} to {}, got {}", min, max, v));
  }
  return v;
}

Result<PrefixParams> PluginContext::PrefixParameters() const {
  PrefixParams p;
  IG_ASSIGN_OR_RETURN(double bs, Number("blockSize", 16, 1, 4096));
  IG_ASSIGN_OR_RETURN(double ibs, Number("indexBlockSize", std::max(64.0, bs), 1, 1 << 20));
  IG_ASSIGN_OR_RETURN(double cap, Number("lruCapacityPerServer", 0, 0, 1e9));
  p.block_size = static_cast<uint32_t>(bs);
  p.index_block_size = static_cast<uint32_t>(ibs);
  p.capacity_entries = static_cast<size_t>(cap);
  if (p.block_size != bs || p.index_block_size != ibs || p.index_block_size % p.block_size != 0) {
    std::string msg =
        fmt::format("indexBlockSize {} must be a whole multiple of blockSize {}", ibs, bs);
    auto it = config.parameters.find("indexBlockSize");
    if (it == config.parameters.end()) it = config.parameters.find("blockSize");
    if (it != config.parameters.end()) return ParamError(it->second, msg);
    return Error(msg);
  }
  return p;
}

Result<PrefixState*> PluginContext::Prefix(const PrefixParams& p,
                                           std::unique_ptr<PrefixState>* own) const {
  if (shared == nullptr) {
    *own = std::make_unique<PrefixState>(p);
    return own->get();
  }
  auto r = shared->Prefix(p);
  if (!r.ok()) return Error(r.status().message());
  return r;
}

Result<std::unique_ptr<Scheduler>> PluginRegistry::Build(const config::SchedulingProfile& profile,
                                                         const std::string& source,
                                                         uint64_t seed) const {
  auto shared = std::make_unique<SharedState>();
  std::vector<std::unique_ptr<Filter>> filters;
  for (const auto& fc : profile.filters) {
    PluginContext ctx{fc, source, shared.get()};
    auto it = filters_.find(fc.name);
    if (it == filters_.end()) {
      return ctx.Error(
          fmt::format("unknown filter '{}'; expected one of: {}", fc.name, Names(filters_)));
    }
    IG_ASSIGN_OR_RETURN(auto f, it->second(ctx));
    filters.push_back(std::move(f));
  }
  std::vector<WeightedScorer> scorers;
  for (const auto& sc : profile.scorers) {
    PluginContext ctx{sc, source, shared.get()};
    auto it = scorers_.find(sc.name);
    if (it == scorers_.end()) {
      return ctx.Error(
          fmt::format("unknown scorer '{}'; expected one of: {}", sc.name, Names(scorers_)));
    }
    IG_ASSIGN_OR_RETURN(auto s, it->second(ctx));
    scorers.push_back(WeightedScorer{std::move(s), sc.weight});
  }
  PluginContext pctx{profile.picker, source, shared.get()};
  auto it = pickers_.find(profile.picker.name);
  if (it == pickers_.end()) {
    return pctx.Error(fmt::format("unknown picker '{}'; expected one of: {}", profile.picker.name,
                                  Names(pickers_)));
  }
  IG_ASSIGN_OR_RETURN(auto picker, it->second(pctx));
  return std::make_unique<Scheduler>(profile.name, std::move(filters), std::move(scorers),
                                     std::move(picker), seed, std::move(shared));
}

void RegisterBuiltins(PluginRegistry* r) {
  r->AddFilter("healthy", HealthyFilter::Create);
  r->AddScorer("expected-ttft", ExpectedTtftScorer::Create);
  r->AddScorer("least-load", LeastLoadScorer::Create);
  r->AddScorer("load", LoadScorer::Create);
  r->AddScorer("prefix-cache", PrefixCacheScorer::Create);
  r->AddScorer("kv-cache-utilization", KvCacheUtilizationScorer::Create);
  r->AddScorer("session-affinity", SessionAffinityScorer::Create);
  r->AddScorer("hardware-cost", HardwareCostScorer::Create);
  r->AddPicker("max-score", MaxScorePicker::Create);
  r->AddPicker("power-of-two", PowerOfTwoPicker::Create);
  r->AddPicker("round-robin", RoundRobinPicker::Create);
}

const PluginRegistry& BuiltinRegistry() {
  static const PluginRegistry* r = [] {
    auto* reg = new PluginRegistry();
    RegisterBuiltins(reg);
    return reg;
  }();
  return *r;
}

Status ValidateProfiles(const config::Gateway& g) {
  for (const auto& p : g.profiles) {
    auto s = BuiltinRegistry().Build(p, g.source, 0);
    if (!s.ok()) return s.status();
  }
  return Status::Ok();
}

}  // namespace infergrid::scheduling
