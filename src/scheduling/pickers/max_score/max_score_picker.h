#pragma once
// `max-score`: the candidate with the highest weighted score; a uniform random choice among
// those within `tieTolerance` of the best (default 1e-9), so equal endpoints share load.

#include <memory>

#include "common/result.h"
#include "infergrid/scheduling.h"

namespace infergrid::scheduling {
struct PluginContext;

class MaxScorePicker : public Picker {
 public:
  explicit MaxScorePicker(double tie_tolerance) : tie_tolerance_(tie_tolerance) {}
  static Result<std::unique_ptr<Picker>> Create(const PluginContext& ctx);
  std::string_view name() const override { return "max-score"; }
  std::optional<size_t> Pick(std::span<const size_t> candidates, std::span<const double> scores,
                             std::mt19937_64& rng) override;

 private:
  double tie_tolerance_;
  std::vector<size_t> best_;
};

}  // namespace infergrid::scheduling
