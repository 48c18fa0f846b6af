#pragma once
// Whether a model server has room for one more request now, from the gateway's own
// accounting and the server's scraped gauges (docs/qos.md). A pool with no endpoint that has
// room is saturated: its requests wait in the gateway instead of queueing on servers that
// would have to preempt to make room for them.
//
// Pure: a function of one endpoint snapshot.

#include <cstdint>
#include <string_view>
#include <vector>

#include "infergrid/endpoint.h"

namespace infergrid::scheduling::flow {

struct SaturationThresholds {
  uint32_t max_requests = 0;  // 0: the endpoint's max_num_seqs when known, else unbounded
  double kv_cache_utilization = 0.95;
  uint32_t queue_depth = 5;  // 0: not checked
};

// Which bound an endpoint is up against (or kNone: it has room).
enum class Full { kNone, kUnhealthy, kRequests, kKvReserved, kKvUsage, kQueueDepth };
std::string_view FullName(Full f);

// A request running on a server, as the KV cache sees it: what it holds now (prompt plus the
// tokens generated so far) and how many more tokens it may generate (its max_tokens left).
struct RunningRequest {
  double kv_tokens = 0;
  double remaining_tokens = 0;
};

// The most KV cache `running` will hold at once if each gains a token per decode step until
// it has no tokens left (then its blocks are freed): the peak over the steps at which one of
// them ends. A server that admits a request only while this stays within its cache never
// has to preempt (vLLM preempts when a running request needs a block and none is free).
// Reorders `running`.
double PeakKvTokens(std::vector<RunningRequest>& running);

// `peak_kv_tokens`: the most KV cache the endpoint's in-flight requests and this one would
// hold together (PeakKvTokens). An endpoint with nothing in flight always has room for one
// request (however large), so a request larger than any server is sent rather than held
// forever.
Full RoomFor(const EndpointSnapshot& e, double peak_kv_tokens, const SaturationThresholds& t);

}  // namespace infergrid::scheduling::flow
