#pragma once
// `healthy`: drops endpoints that are ejected or known to be down.

#include <memory>

#include "common/result.h"
#include "infergrid/scheduling.h"

namespace infergrid::scheduling {
struct PluginContext;

class HealthyFilter : public Filter {
 public:
  static Result<std::unique_ptr<Filter>> Create(const PluginContext& ctx);
  std::string_view name() const override { return "healthy"; }
  void Apply(const RequestInfo& req, std::span<const EndpointSnapshot> endpoints,
             std::vector<size_t>* candidates) override;
};

}  // namespace infergrid::scheduling
