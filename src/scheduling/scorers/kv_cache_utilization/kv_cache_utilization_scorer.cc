#include "scheduling/scorers/kv_cache_utilization/kv_cache_utilization_scorer.h"

#include <algorithm>

#include "scheduling/registry.h"

namespace infergrid::scheduling {

Result<std::unique_ptr<Scorer>> KvCacheUtilizationScorer::Create(const PluginContext& ctx) {
  IG_RETURN_IF_ERROR(ctx.CheckParams({}));
  return std::unique_ptr<Scorer>(new KvCacheUtilizationScorer());
}

double KvCacheUtilizationScorer::Usage(const EndpointSnapshot& e) {
  if (e.metrics_fresh) return std::clamp(e.kv_cache_usage, 0.0, 1.0);
  if (e.capacity.kv_cache_tokens == 0) return 0;
  return std::min(1.0, double(e.in_flight_prompt_tokens) / double(e.capacity.kv_cache_tokens));
}

void KvCacheUtilizationScorer::Score(const RequestInfo&,
                                     std::span<const EndpointSnapshot> endpoints,
                                     std::span<const size_t> candidates, std::span<double> scores) {
  for (size_t i = 0; i < candidates.size(); ++i) scores[i] = 1.0 - Usage(endpoints[candidates[i]]);
}

}  // namespace infergrid::scheduling
