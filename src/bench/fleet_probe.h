#pragma once
// What the fleet itself says, from each server's vLLM /metrics: prefix cache queries and hits,
// preemptions, prompt and generated tokens, finished requests (counters, read at the start and
// the end of the measured window) and KV usage (a gauge, sampled through the window). Also
// empties the servers' prefix caches between runs (vLLM's POST /reset_prefix_cache), so each
// gateway starts from a cold fleet.

#include <string>
#include <vector>

#include "common/result.h"
#include "http/asio.h"

namespace infergrid::bench {

struct ServerUrl {
  std::string host;
  uint16_t port = 0;
};

struct ServerCounters {
  bool ok = false;
  double prefix_queries = 0, prefix_hits = 0, preemptions = 0;
  double prompt_tokens = 0, generation_tokens = 0, requests = 0;
  double kv_usage = 0, running = 0, waiting = 0;
};

// Reads one server's counters from its exposition text (vLLM's metric names).
ServerCounters CountersFromText(std::string_view text);

struct FleetWindow {
  double prefix_hit_rate = 0;  // hit tokens over queried tokens, the whole fleet
  double preemptions = 0;
  double load_spread = 0;  // max over mean of tokens computed per server (uncached prompt + output)
  std::vector<double> requests_per_server;
  double kv_usage_mean = 0, kv_usage_max = 0;  // over the samples, mean over servers / max
  uint32_t kv_samples = 0;
  bool complete = false;  // every server answered both snapshots
};

// The window's figures from counters at its start and end (same server order).
FleetWindow Diff(const std::vector<ServerCounters>& start, const std::vector<ServerCounters>& end);

class FleetProbe {
 public:
  explicit FleetProbe(std::vector<ServerUrl> servers) : servers_(std::move(servers)) {}
  const std::vector<ServerUrl>& servers() const { return servers_; }

  http::awaitable<std::vector<ServerCounters>> Scrape();
  // Empties every server's prefix cache once it is idle (vLLM refuses while requests run),
  // waiting up to `timeout_s`.
  http::awaitable<Status> ResetCaches(double timeout_s);

 private:
  std::vector<ServerUrl> servers_;
};

}  // namespace infergrid::bench
