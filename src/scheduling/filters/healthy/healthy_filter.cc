#include "scheduling/filters/healthy/healthy_filter.h"

#include <algorithm>

#include "scheduling/registry.h"

namespace infergrid::scheduling {

Result<std::unique_ptr<Filter>> HealthyFilter::Create(const PluginContext& ctx) {
  IG_RETURN_IF_ERROR(ctx.CheckParams({}));
  return std::unique_ptr<Filter>(new HealthyFilter());
}

void HealthyFilter::Apply(const RequestInfo&, std::span<const EndpointSnapshot> endpoints,
                          std::vector<size_t>* candidates) {
  std::erase_if(*candidates, [&](size_t i) { return !endpoints[i].healthy; });
}

}  // namespace infergrid::scheduling
