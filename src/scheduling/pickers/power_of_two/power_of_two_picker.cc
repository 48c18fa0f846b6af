#include "scheduling/pickers/power_of_two/power_of_two_picker.h"

#include "scheduling/registry.h"

namespace infergrid::scheduling {

Result<std::unique_ptr<Picker>> PowerOfTwoPicker::Create(const PluginContext& ctx) {
  IG_RETURN_IF_ERROR(ctx.CheckParams({}));
  return std::unique_ptr<Picker>(new PowerOfTwoPicker());
}

std::optional<size_t> PowerOfTwoPicker::Pick(std::span<const size_t> candidates,
                                             std::span<const double> scores, std::mt19937_64& rng) {
  if (candidates.empty()) return std::nullopt;
  if (candidates.size() == 1) return 0;
  std::uniform_int_distribution<size_t> first(0, candidates.size() - 1);
  std::uniform_int_distribution<size_t> second(0, candidates.size() - 2);
  size_t a = first(rng);
  size_t b = second(rng);
  if (b >= a) ++b;  // two distinct positions
  if (scores[a] != scores[b]) return scores[a] > scores[b] ? a : b;
  return (rng() & 1) ? a : b;
}

}  // namespace infergrid::scheduling
