#pragma once
// The bench's load: a workload's clients (the planner's generators, same parameters and
// seeds) or a recorded trace, sent over HTTP to one gateway, timed from the client's side.
//
// Time: the fleet may run faster than the wall clock (the simulator's --time-scale S); the
// driver then waits 1/S of every think time and reports every time in the fleet's seconds,
// so figures compare with the planner's and with a fleet at S = 1. Turns sent in
// [warmup, duration) are measured; no turn starts after the duration; requests still running
// then are drained up to a limit. The run stops early on `interrupted`.

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bench/fleet_probe.h"
#include "bench/stats.h"
#include "common/result.h"
#include "workload/workload.h"

namespace infergrid::bench {

struct DriverOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::string model;
  bool chat = true;    // /v1/chat/completions, else /v1/completions
  bool stream = true;  // SSE with usage
  // A new connection for every request (clients spread over replicas behind one port, as
  // many clients sharing a pool of connections would be); default: one keep-alive each.
  bool connection_per_request = false;
  uint32_t trace_block_size = 512;  // a Mooncake-format trace's tokens per hash id
  double time_scale = 1;
  double duration_s = 0;  // fleet seconds; 0: the workload's (a trace: its last request)
  double warmup_s = 0;
  uint64_t max_requests = 0;  // stop sending after this many (0: no limit)
  double drain_limit_s = 300;
  double request_timeout_s = 600;
  const workload::WorkloadSpec* workload = nullptr;  // either this
  std::string trace_path;                            // or this
  std::string record_path;                           // write what is sent as a trace
  FleetProbe* fleet = nullptr;                       // optional: the fleet's own figures
  const std::atomic<bool>* interrupted = nullptr;
  struct Progress {
    double t = 0, duration = 0;  // fleet seconds
    uint64_t done = 0, failed = 0, in_flight = 0;
    double requests_per_s = 0;  // over the last second
    double ttft_p90 = 0;        // measured so far
  };
  std::function<void(const Progress&)> progress;  // about once a wall second
};

struct DriverResult {
  uint64_t sent = 0;
  uint64_t completed = 0;                         // measured and complete
  uint64_t failed = 0;                            // any request of the run that failed
  uint64_t unfinished = 0;                        // cut at the drain limit or by an interrupt
  std::map<std::string, uint64_t> errors;         // kind -> count
  std::vector<std::string> error_examples;        // the first few, with details
  std::vector<double> ttft, itl, e2e;             // measured, fleet seconds
  uint64_t window_output_tokens = 0;              // tokens that arrived in [warmup, duration)
  uint64_t prompt_tokens = 0, cached_tokens = 0;  // measured requests' usage
  double window_s = 0;
  TimeSeries output_tokens{1}, completions{1};
  FleetWindow fleet;
  bool interrupted = false;
  double wall_s = 0;
};

// Runs the load on its own event loop (one thread) and returns when it is over.
Result<DriverResult> RunLoad(const DriverOptions& o);

}  // namespace infergrid::bench
