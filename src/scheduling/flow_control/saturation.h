#pragma once
// Whether a model server has room for one more request now, from the gateway's own
// accounting and the server's scraped gauges (docs/qos.md). A pool with no endpoint that has
// room is saturated: its requests wait in the gateway instead of queueing on servers that
// would have to preempt to make room for them.
//
// Pure: a function of one endpoint snapshot.

#include <cstdint>
#include <string_view>

#include "infergrid/endpoint.h"

namespace infergrid::scheduling::flow {

struct SaturationThresholds {
  uint32_t max_requests = 0;  // 0: the endpoint's max_num_seqs when known, else unbounded
  double kv_cache_utilization = 0.9;
  uint32_t queue_depth = 5;  // 0: not checked
};

// Which bound an endpoint is up against (or kNone: it has room).
enum class Full { kNone, kUnhealthy, kRequests, kKvReserved, kKvUsage, kQueueDepth };
std::string_view FullName(Full f);

// `kv_tokens`: what the request would reserve there (its prompt plus expected output). An
// endpoint with nothing in flight always has room for one request (however large), so a
// request larger than any server is sent rather than held forever.
Full RoomFor(const EndpointSnapshot& e, double kv_tokens, const SaturationThresholds& t);

}  // namespace infergrid::scheduling::flow
