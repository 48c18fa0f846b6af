#include "scheduling/pickers/round_robin/round_robin_picker.h"

#include "scheduling/registry.h"

namespace infergrid::scheduling {

Result<std::unique_ptr<Picker>> RoundRobinPicker::Create(const PluginContext& ctx) {
  IG_RETURN_IF_ERROR(ctx.CheckParams({}));
  return std::unique_ptr<Picker>(new RoundRobinPicker());
}

std::optional<size_t> RoundRobinPicker::Pick(std::span<const size_t> candidates,
                                             std::span<const double>, std::mt19937_64&) {
  if (candidates.empty()) return std::nullopt;
  // Candidates are in ascending endpoint order: take the first after the last one chosen.
  size_t pos = 0;
  if (last_) {
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (candidates[i] > *last_) {
        pos = i;
        break;
      }
    }
  }
  last_ = candidates[pos];
  return pos;
}

}  // namespace infergrid::scheduling
