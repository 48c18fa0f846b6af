#pragma once
// `kv-cache-utilization`: prefers the endpoint with the most free KV cache, from the scraped
// vllm:kv_cache_usage_perc. When metrics are stale or missing it estimates usage from the
// gateway's own accounting: in-flight prompt tokens over the endpoint's KV size (0 if that
// is unknown). Score: 1 - usage.

#include <memory>

#include "common/result.h"
#include "infergrid/scheduling.h"

namespace infergrid::scheduling {
struct PluginContext;

class KvCacheUtilizationScorer : public Scorer {
 public:
  static Result<std::unique_ptr<Scorer>> Create(const PluginContext& ctx);

  std::string_view name() const override { return "kv-cache-utilization"; }
  bool uses_metrics() const override { return true; }
  void Score(const RequestInfo& req, std::span<const EndpointSnapshot> endpoints,
             std::span<const size_t> candidates, std::span<double> scores) override;
  static double Usage(const EndpointSnapshot& e);
};

}  // namespace infergrid::scheduling
