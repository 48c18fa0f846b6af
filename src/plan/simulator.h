#pragma once
// The planner's simulation: a fleet of engine models, a workload's clients and one routing
// policy, advanced in virtual time by a discrete-event loop (one event per engine step, client
// turn and metrics scrape). Deterministic for a given fleet, workload, policy and seed, and
// independent of the wall clock (which it reads only to report its own speed).
//
// A turn is routed when its client sends it: the policy sees per-server snapshots built the
// way the live gateway builds them (its own in-flight accounting, always current; the servers'
// gauges as of the last scrape) and picks a server; the server's engine model then queues,
// batches, prefills (reusing its prefix cache) and decodes it. Turns that arrive in
// [warmup, duration) are measured; new turns stop at the duration, and the requests still in
// flight are drained (up to drain_limit) so every measured request has its latencies.

#include <string>

#include "common/result.h"
#include "config/config.h"
#include "plan/fleet.h"
#include "workload/workload.h"

namespace infergrid::plan {

struct SimOptions {
  double scrape_interval_s = 0.1;  // how fresh the servers' gauges are for the policy
  double drain_limit_s = 600;
  uint64_t seed = 1;  // the policy's randomness (ties, power of two)
};

struct PolicyReport {
  std::string policy;
  uint64_t requests = 0;    // measured requests that finished
  uint64_t unfinished = 0;  // measured requests still running at the drain limit
  uint64_t rejected = 0;    // no server could take them (too long, or none available)
  double ttft_p50 = 0, ttft_p90 = 0, ttft_p99 = 0, ttft_mean = 0;
  double itl_p50 = 0, itl_p99 = 0;
  double e2e_p50 = 0, e2e_p99 = 0;
  double output_tokens_per_min = 0;  // tokens produced in the window, per minute
  uint64_t output_tokens = 0;
  double prefix_hit_rate = 0;  // the servers' own counters: hit tokens over queried tokens
  uint64_t preemptions = 0;
  double cost_per_million_output = 0;  // fleet price over the window / output tokens
  double load_spread = 0;              // max over mean of per-server busy time
  double work_spread = 0;              // ... of per-server tokens computed over its prefill rate
  uint64_t session_turns = 0;          // turns that continued a session
  uint64_t session_moves = 0;          // ... on a different server than its last turn
  double decision_us = 0;              // wall time per routing decision
  double wall_s = 0;
  double window_s = 0;
};

// Runs `policy` (a name MakePolicy knows). `gateway`, if given, supplies profile:<name>.
Result<PolicyReport> Simulate(const Fleet& fleet, const workload::WorkloadSpec& workload,
                              const std::string& policy, const SimOptions& options,
                              const config::Gateway* gateway);

// A Mooncake-format trace (workload/mooncake.h) replayed instead of a workload's clients: each
// request arrives at its timestamp (over `speed`; a turn with a session and a delay, that long
// after its session's previous turn ended), with its synthesised prompt, asking for its
// output_length; its session_id, if any, is its session key. Read from disk as it goes.
struct TraceReplay {
  std::string path;
  uint32_t block_size = 512;  // tokens per hash id
  double speed = 1;           // timestamps are divided by it
  double from_ms = 0;         // only requests whose timestamp is in [from_ms, to_ms)...
  double to_ms = -1;          // ...-1: to the end; kept requests are shifted to start at 0
};

// A trace's selection in one streaming pass: its size, and the prefix cache hit rate of one
// infinite cache (token-weighted; a block hits only while every block before it hit): the
// bound no router over finite caches beats.
struct TraceFacts {
  uint64_t requests = 0;
  double span_s = 0;  // first to last arrival, after `speed`
  uint64_t prompt_tokens = 0, output_tokens = 0;
  double bound_hit_rate = 0;
};
Result<TraceFacts> ScanTrace(const TraceReplay& trace);

Result<PolicyReport> SimulateTrace(const Fleet& fleet, const TraceReplay& trace,
                                   const TraceFacts& facts, const std::string& policy,
                                   const SimOptions& options, const config::Gateway* gateway);

}  // namespace infergrid::plan
