#pragma once
// How busy an endpoint is, in units that compare across hardware: the seconds of prefill it
// has queued (prompt tokens over its prefill rate) and the share of its decode batch in use.
// From the gateway's own accounting, blended with scraped metrics when they are fresh (so
// other clients' traffic counts too, without counting ours twice). Shared by the load,
// session-affinity and hardware-cost plugins and the planner's baselines.

#include <algorithm>

#include "infergrid/endpoint.h"

namespace infergrid::scheduling {

// Assumed where an endpoint's capacity is unknown (a mid-size GPU server).
inline constexpr double kDefaultPrefillTokensPerS = 10000;
inline constexpr double kDefaultMaxNumSeqs = 256;

struct EndpointLoad {
  double prefill_seconds = 0;  // queued prefill work
  double decode_share = 0;     // running sequences over the batch it can run
  // One figure: a server with `horizon` seconds of prefill queued, or a full decode batch,
  // is at 1.
  double Combined(double prefill_horizon_s) const {
    return prefill_seconds / prefill_horizon_s + decode_share;
  }
};

inline double PrefillRate(const EndpointSnapshot& e) {
  return e.capacity.prefill_tokens_per_s > 0 ? e.capacity.prefill_tokens_per_s
                                             : kDefaultPrefillTokensPerS;
}

inline EndpointLoad LoadOf(const EndpointSnapshot& e) {
  double prefill_tokens = static_cast<double>(e.in_flight_prefill_tokens);
  double decoding =
      static_cast<double>(e.in_flight - std::min(e.in_flight, e.in_flight_prefilling));
  if (e.metrics_fresh) {
    // Requests waiting on the server beyond ours still prefilling are someone else's: count
    // them at our average prompt.
    double ours = e.in_flight_prefilling;
    double avg = ours > 0 ? prefill_tokens / ours
                          : (e.in_flight > 0 ? double(e.in_flight_prompt_tokens) / e.in_flight : 0);
    if (e.num_requests_waiting > ours) prefill_tokens += (e.num_requests_waiting - ours) * avg;
    decoding = std::max(decoding, e.num_requests_running);
  }
  double seqs = e.capacity.max_num_seqs > 0 ? e.capacity.max_num_seqs : kDefaultMaxNumSeqs;
  return EndpointLoad{prefill_tokens / PrefillRate(e), decoding / seqs};
}

}  // namespace infergrid::scheduling
