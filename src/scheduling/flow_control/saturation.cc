#include "scheduling/flow_control/saturation.h"

namespace infergrid::scheduling::flow {

std::string_view FullName(Full f) {
  switch (f) {
    case Full::kNone:
      return "none";
    case Full::kUnhealthy:
      return "unhealthy";
    case Full::kRequests:
      return "requests";
    case Full::kKvReserved:
      return "kv_reserved";
    case Full::kKvUsage:
      return "kv_usage";
    case Full::kQueueDepth:
      return "queue_depth";
  }
  return "none";
}

Full RoomFor(const EndpointSnapshot& e, double kv_tokens, const SaturationThresholds& t) {
  if (!e.healthy) return Full::kUnhealthy;
  if (e.in_flight == 0) return Full::kNone;
  uint32_t max_requests = t.max_requests > 0 ? t.max_requests : e.capacity.max_num_seqs;
  if (max_requests > 0 && e.in_flight >= max_requests) return Full::kRequests;
  if (e.capacity.kv_cache_tokens > 0 &&
      static_cast<double>(e.in_flight_kv_tokens) + kv_tokens >
          t.kv_cache_utilization * static_cast<double>(e.capacity.kv_cache_tokens)) {
    return Full::kKvReserved;
  }
  if (e.metrics_fresh) {
    if (e.kv_cache_usage >= t.kv_cache_utilization) return Full::kKvUsage;
    if (t.queue_depth > 0 && e.num_requests_waiting >= t.queue_depth) return Full::kQueueDepth;
  }
  return Full::kNone;
}

}  // namespace infergrid::scheduling::flow
