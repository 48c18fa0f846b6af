#include "scheduling/pickers/max_score/max_score_picker.h"

#include <algorithm>

#include "scheduling/registry.h"

namespace infergrid::scheduling {

Result<std::unique_ptr<Picker>> MaxScorePicker::Create(const PluginContext& ctx) {
  IG_RETURN_IF_ERROR(ctx.CheckParams({"tieTolerance"}));
  IG_ASSIGN_OR_RETURN(double tol, ctx.Number("tieTolerance", 1e-9, 0, 1e6));
  return std::unique_ptr<Picker>(new MaxScorePicker(tol));
}

std::optional<size_t> MaxScorePicker::Pick(std::span<const size_t> candidates,
                                           std::span<const double> scores, std::mt19937_64& rng) {
  if (candidates.empty()) return std::nullopt;
  double best = *std::max_element(scores.begin(), scores.end());
  best_.clear();
  for (size_t i = 0; i < scores.size(); ++i) {
    if (scores[i] >= best - tie_tolerance_) best_.push_back(i);
  }
  if (best_.size() == 1) return best_[0];
  std::uniform_int_distribution<size_t> dist(0, best_.size() - 1);
  return best_[dist(rng)];
}

}  // namespace infergrid::scheduling
