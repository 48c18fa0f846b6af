#pragma once
// `power-of-two`: draws two candidates at random and takes the one with the higher score
// (ties at random). Less herding than the global maximum when many routers act on the same
// stale view (Mitzenmacher's power of two choices).

#include <memory>

#include "common/result.h"
#include "infergrid/scheduling.h"

namespace infergrid::scheduling {
struct PluginContext;

class PowerOfTwoPicker : public Picker {
 public:
  static Result<std::unique_ptr<Picker>> Create(const PluginContext& ctx);
  std::string_view name() const override { return "power-of-two"; }
  std::optional<size_t> Pick(std::span<const size_t> candidates, std::span<const double> scores,
                             std::mt19937_64& rng) override;
};

}  // namespace infergrid::scheduling
