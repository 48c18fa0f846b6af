#pragma once
// Scrapes each endpoint's /metrics at an interval and stores vLLM's gauges in its
// EndpointState. Runs on one io_context (the gateway's control thread).

#include <functional>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "config/config.h"
#include "gateway/endpoint_registry.h"
#include "gateway/gateway_metrics.h"
#include "http/asio.h"
#include "metrics/text_parser.h"

namespace infergrid::gateway {

// Reads vLLM's names: vllm:num_requests_running and vllm:num_requests_waiting (summed over
// engines), vllm:kv_cache_usage_perc (older servers: vllm:gpu_cache_usage_perc; the highest
// engine's), and the prefix cache counters vllm:prefix_cache_queries / vllm:prefix_cache_hits
// (older: vllm:gpu_prefix_cache_queries / _hits), with or without the _total suffix, and the
// KV cache's size in tokens from vllm:cache_config_info (num_gpu_blocks x block_size).
// Returns an error if none of the scheduler gauges is present.
Result<ScrapedMetrics> ExtractVllmMetrics(const std::vector<metrics::Sample>& samples);

// Also probes each endpoint's health path (spec.health.active) and reports the results.
struct ScraperCallbacks {
  std::function<void(EndpointState*, bool ok)> on_probe;
  // Its cumulative counters went backwards: the server restarted.
  std::function<void(EndpointState*)> on_restart;
};

class Scraper {
 public:
  Scraper(http::asio::io_context& io, const config::Scrape& cfg, config::ActiveHealth active,
          std::vector<EndpointState*> endpoints, GatewayMetrics* metrics,
          ScraperCallbacks callbacks);
  void Start();
  void Stop();
  // Starts scraping and probing an endpoint added at run time. Thread-safe.
  void AddEndpoint(EndpointState* e);
  // New probe settings (a reload). Thread-safe.
  void SetActiveHealth(config::ActiveHealth active);

 private:
  struct Fetched {
    bool connected = false;
    std::string error;  // empty: a response came
    int status = 0;
    std::string body;
  };
  http::awaitable<Fetched> Fetch(EndpointState* e, std::string path, Duration timeout,
                                 const char* agent);
  http::awaitable<void> Loop(EndpointState* e);
  http::awaitable<void> ProbeLoop(EndpointState* e);
  http::awaitable<void> ScrapeOnce(EndpointState* e);

  http::asio::io_context& io_;
  config::Scrape cfg_;
  config::ActiveHealth active_;  // on the io thread
  std::vector<EndpointState*> endpoints_;
  GatewayMetrics* metrics_;
  ScraperCallbacks callbacks_;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace infergrid::gateway
