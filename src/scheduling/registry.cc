#include "scheduling/registry.h"

#include <fmt/format.h>

#include "scheduling/filters/healthy/healthy_filter.h"
#include "scheduling/pickers/max_score/max_score_picker.h"
#include "scheduling/pickers/round_robin/round_robin_picker.h"
#include "scheduling/scorers/least_load/least_load_scorer.h"

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

Result<std::unique_ptr<Scheduler>> PluginRegistry::Build(const config::SchedulingProfile& profile,
                                                         const std::string& source,
                                                         uint64_t seed) const {
  std::vector<std::unique_ptr<Filter>> filters;
  for (const auto& fc : profile.filters) {
    PluginContext ctx{fc, source};
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
    PluginContext ctx{sc, source};
    auto it = scorers_.find(sc.name);
    if (it == scorers_.end()) {
      return ctx.Error(
          fmt::format("unknown scorer '{}'; expected one of: {}", sc.name, Names(scorers_)));
    }
    IG_ASSIGN_OR_RETURN(auto s, it->second(ctx));
    scorers.push_back(WeightedScorer{std::move(s), sc.weight});
  }
  PluginContext pctx{profile.picker, source};
  auto it = pickers_.find(profile.picker.name);
  if (it == pickers_.end()) {
    return pctx.Error(fmt::format("unknown picker '{}'; expected one of: {}", profile.picker.name,
                                  Names(pickers_)));
  }
  IG_ASSIGN_OR_RETURN(auto picker, it->second(pctx));
  return std::make_unique<Scheduler>(profile.name, std::move(filters), std::move(scorers),
                                     std::move(picker), seed);
}

void RegisterBuiltins(PluginRegistry* r) {
  r->AddFilter("healthy", HealthyFilter::Create);
  r->AddScorer("least-load", LeastLoadScorer::Create);
  r->AddPicker("max-score", MaxScorePicker::Create);
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
