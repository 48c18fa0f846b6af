#pragma once
// Scrapes each endpoint's /metrics at an interval and stores vLLM's gauges in its
// EndpointState. Runs on one io_context (the gateway's control thread).

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

class Scraper {
 public:
  Scraper(http::asio::io_context& io, const config::Scrape& cfg,
          std::vector<EndpointState*> endpoints, GatewayMetrics* metrics);
  void Start();
  void Stop();

 private:
  http::awaitable<void> Loop(EndpointState* e);
  http::awaitable<void> ScrapeOnce(EndpointState* e);

  http::asio::io_context& io_;
  config::Scrape cfg_;
  std::vector<EndpointState*> endpoints_;
  GatewayMetrics* metrics_;
  bool stopped_ = false;
};

}  // namespace infergrid::gateway
