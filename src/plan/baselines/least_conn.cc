#include "plan/baselines/least_conn.h"

namespace infergrid::plan {

std::optional<Routed> LeastConnPolicy::Route(uint64_t, const RequestInfo&,
                                             std::span<const EndpointSnapshot> endpoints) {
  const size_t n = std::min(servers_, endpoints.size());
  if (n == 0) return std::nullopt;
  size_t best = n;
  for (size_t k = 0; k < n; ++k) {
    size_t i = (next_ + k) % n;
    if (best == n || endpoints[i].in_flight < endpoints[best].in_flight) best = i;
  }
  next_ = (best + 1) % n;
  return Routed{best, 0};
}

}  // namespace infergrid::plan
