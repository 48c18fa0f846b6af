#pragma once
// `round-robin`: ignores scores and takes candidates in turn by endpoint index. The cursor is
// the last endpoint index chosen, so the rotation stays fair when filters remove endpoints.

#include <memory>

#include "common/result.h"
#include "infergrid/scheduling.h"

namespace infergrid::scheduling {
struct PluginContext;

class RoundRobinPicker : public Picker {
 public:
  static Result<std::unique_ptr<Picker>> Create(const PluginContext& ctx);
  std::string_view name() const override { return "round-robin"; }
  std::optional<size_t> Pick(std::span<const size_t> candidates, std::span<const double> scores,
                             std::mt19937_64& rng) override;

 private:
  std::optional<size_t> last_;
};

}  // namespace infergrid::scheduling
