#pragma once
// Whether a model server has room for one more request now, from the gateway's own
// accounting and the server's scraped gauges (docs/qos.md). Hard bounds are never crossed:
// the KV cache the requests in flight there would hold at their peak (so the server never
// has to preempt), and a configured request bound. Soft bounds say a server is busy (its
// batch full, its queue or KV usage over a threshold): a request still goes to a busy server
// when the scheduler prefers it (its cached context is there), but when every endpoint is
// busy or at a hard bound the pool is saturated and requests wait in the gateway.
//
// Pure: a function of one endpoint snapshot.

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "infergrid/endpoint.h"

namespace infergrid::scheduling::flow {

struct SaturationThresholds {
  uint32_t max_requests = 0;  // a hard bound on requests in flight; 0: none
  double kv_cache_utilization = 0.95;
  uint32_t queue_depth = 5;  // 0: not checked
};

// Which bound an endpoint is up against (or kNone: it has room). The first three are hard.
enum class Full {
  kNone,
  kUnhealthy,
  kRequests,    // max_requests in flight (hard)
  kKvReserved,  // the peak KV with this request would pass kv_cache_utilization (hard)
  kBatchFull,   // as many in flight as its max_num_seqs (soft)
  kKvUsage,     // scraped KV usage at kv_cache_utilization (soft)
  kQueueDepth,  // scraped waiting requests at queue_depth (soft)
};
std::string_view FullName(Full f);
inline bool IsHard(Full f) {
  return f == Full::kUnhealthy || f == Full::kRequests || f == Full::kKvReserved;
}

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

// The endpoints a request may go to now, into `out` (copies, each keeping its index): those
// within their hard bounds. Returns true when it must wait instead: none is, or every one of
// them is busy (a soft bound). A pool with no healthy endpoint is down, not saturated: then
// every endpoint is passed on, for the scheduler to say why none can serve. `peak_kv(i)` is
// PeakKvTokens of endpoint i with this request (called only where the KV size is known).
template <typename PeakKv>
bool SelectWithRoom(std::span<const EndpointSnapshot> endpoints, PeakKv&& peak_kv,
                    const SaturationThresholds& t, std::vector<EndpointSnapshot>* out) {
  out->clear();
  bool any_healthy = false, any_free = false;
  for (size_t i = 0; i < endpoints.size(); ++i) {
    const EndpointSnapshot& e = endpoints[i];
    double peak = e.capacity.kv_cache_tokens > 0 && e.in_flight > 0 ? peak_kv(i) : 0;
    Full full = RoomFor(e, peak, t);
    any_healthy = any_healthy || full != Full::kUnhealthy;
    if (IsHard(full)) continue;
    any_free = any_free || full == Full::kNone;
    out->push_back(e);
  }
  if (!any_healthy) {
    out->assign(endpoints.begin(), endpoints.end());
    return false;
  }
  return !any_free;
}

}  // namespace infergrid::scheduling::flow
