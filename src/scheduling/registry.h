#pragma once
// Builds scheduling plugins by name from their v1 config. Built-ins are registered explicitly
// by RegisterBuiltins(); a plugin's factory validates its own parameters and reports errors
// with the file, line, column and path of the offending field.

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "common/result.h"
#include "config/config.h"
#include "infergrid/scheduling.h"
#include "scheduling/prefix_state.h"
#include "scheduling/scheduler.h"

namespace infergrid::scheduling {

// What a factory gets: the plugin's config, the file it came from, and the state its
// profile's plugins share (null when a plugin is built alone, as in unit tests).
struct PluginContext {
  const config::PluginConfig& config;
  const std::string& source;
  SharedState* shared = nullptr;

  // An error at the plugin, or at one of its parameters.
  Status Error(const std::string& message) const;
  Status ParamError(const config::Param& p, const std::string& message) const;
  // Rejects parameters outside `allowed`.
  Status CheckParams(std::initializer_list<const char*> allowed) const;
  // Reads a numeric parameter in [min, max], or `fallback` when absent.
  Result<double> Number(const char* key, double fallback, double min, double max) const;
  // Reads the prefix index's parameters (blockSize, indexBlockSize, lruCapacityPerServer).
  Result<PrefixParams> PrefixParameters() const;
  // The profile's shared prefix state (or, built alone, a private one kept in `own`).
  Result<PrefixState*> Prefix(const PrefixParams& p, std::unique_ptr<PrefixState>* own) const;
};

using FilterFactory = std::function<Result<std::unique_ptr<Filter>>(const PluginContext&)>;
using ScorerFactory = std::function<Result<std::unique_ptr<Scorer>>(const PluginContext&)>;
using PickerFactory = std::function<Result<std::unique_ptr<Picker>>(const PluginContext&)>;

class PluginRegistry {
 public:
  void AddFilter(const std::string& name, FilterFactory f) { filters_[name] = std::move(f); }
  void AddScorer(const std::string& name, ScorerFactory f) { scorers_[name] = std::move(f); }
  void AddPicker(const std::string& name, PickerFactory f) { pickers_[name] = std::move(f); }

  // Builds a scheduler for one profile, or the first configuration error.
  Result<std::unique_ptr<Scheduler>> Build(const config::SchedulingProfile& profile,
                                           const std::string& source, uint64_t seed) const;

 private:
  std::map<std::string, FilterFactory> filters_;
  std::map<std::string, ScorerFactory> scorers_;
  std::map<std::string, PickerFactory> pickers_;
};

// Registers the built-in filters, scorers and pickers (docs/config-v1.md lists them).
void RegisterBuiltins(PluginRegistry* registry);

// A registry with the built-ins.
const PluginRegistry& BuiltinRegistry();

// Builds every profile of a config once, to validate it (infergrid config validate).
Status ValidateProfiles(const config::Gateway& g);

}  // namespace infergrid::scheduling
