#pragma once
// `session-hash`: what nginx users run for stickiness, `hash $http_x_session_id consistent`:
// a ketama ring with 160 points per server; a request goes to the first point at or after
// the hash of its session key. Requests without a key all hash the empty string (as nginx
// does), so they land on one server. Ignores load and caches.

#include <cstdint>
#include <utility>
#include <vector>

#include "plan/policy.h"

namespace infergrid::plan {

class SessionHashPolicy : public Policy {
 public:
  explicit SessionHashPolicy(size_t servers);
  std::optional<Routed> Route(uint64_t id, const RequestInfo& req,
                              std::span<const EndpointSnapshot> endpoints) override;

 private:
  std::vector<std::pair<uint64_t, uint32_t>> ring_;  // (point, server), sorted
};

}  // namespace infergrid::plan
