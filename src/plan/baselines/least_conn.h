#pragma once
// `least-conn`: nginx's `least_conn` and HAProxy's `balance leastconn`, the load balancers
// most fleets run today. A request goes to the server with the fewest requests in flight
// (active connections, through this balancer); among equals, in turn (nginx: "tried in turn
// using a weighted round-robin"; HAProxy: "round-robin is performed within groups of servers
// of the same load"). Ignores caches, prompt lengths and the servers' own queues.

#include <cstddef>

#include "plan/policy.h"

namespace infergrid::plan {

class LeastConnPolicy : public Policy {
 public:
  explicit LeastConnPolicy(size_t servers) : Policy("least-conn"), servers_(servers) {}
  std::optional<Routed> Route(uint64_t id, const RequestInfo& req,
                              std::span<const EndpointSnapshot> endpoints) override;

 private:
  size_t servers_;
  size_t next_ = 0;  // where the round-robin among equals starts
};

}  // namespace infergrid::plan
