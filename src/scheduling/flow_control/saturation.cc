#include "scheduling/flow_control/saturation.h"

#include <algorithm>

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
    case Full::kBatchFull:
      return "batch_full";
    case Full::kKvUsage:
      return "kv_usage";
    case Full::kQueueDepth:
      return "queue_depth";
  }
  return "none";
}

double PeakKvTokens(std::vector<RunningRequest>& running) {
  // Sorted by remaining tokens, the requests still running at the step the j-th ends are
  // those from j on: they hold their current tokens plus that many more each.
  std::sort(running.begin(), running.end(),
            [](const auto& a, const auto& b) { return a.remaining_tokens < b.remaining_tokens; });
  double suffix = 0, peak = 0;
  for (size_t j = running.size(); j-- > 0;) {
    suffix += running[j].kv_tokens;
    double at = suffix + static_cast<double>(running.size() - j) * running[j].remaining_tokens;
    peak = std::max(peak, at);
  }
  return peak;
}

Full RoomFor(const EndpointSnapshot& e, double peak_kv_tokens, const SaturationThresholds& t) {
  if (!e.healthy) return Full::kUnhealthy;
  if (e.in_flight == 0) return Full::kNone;
  if (t.max_requests > 0 && e.in_flight >= t.max_requests) return Full::kRequests;
  if (e.capacity.kv_cache_tokens > 0 &&
      peak_kv_tokens > t.kv_cache_utilization * static_cast<double>(e.capacity.kv_cache_tokens)) {
    return Full::kKvReserved;
  }
  if (e.capacity.max_num_seqs > 0 && e.in_flight >= e.capacity.max_num_seqs) {
    return Full::kBatchFull;
  }
  if (e.metrics_fresh) {
    if (e.kv_cache_usage >= t.kv_cache_utilization) return Full::kKvUsage;
    if (t.queue_depth > 0 && e.num_requests_waiting >= t.queue_depth) return Full::kQueueDepth;
  }
  return Full::kNone;
}

}  // namespace infergrid::scheduling::flow
