#pragma once
// The live gateway: an OpenAI-compatible HTTP front that routes each inference request
// through its pool's scheduler to one endpoint and relays the response.
//
// Threads: `workers` I/O threads (each owns its connections and its upstream connection
// pools) and one control thread (endpoint scraping). Start() returns once listening.

#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "config/config.h"
#include "gateway/endpoint_registry.h"
#include "gateway/gateway_metrics.h"
#include "gateway/proxy.h"
#include "gateway/scraper.h"
#include "gateway/tenancy.h"
#include "http/server.h"
#include "http/upstream_pool.h"
#include "metrics/registry.h"
#include "scheduling/flow_control/tenant_limiter.h"

namespace infergrid::gateway {

class Gateway {
 public:
  // Builds pools and schedulers; fails on a config the scheduling plugins reject.
  static Result<std::unique_ptr<Gateway>> Create(config::Gateway cfg);
  ~Gateway();

  Status Start();
  uint16_t port() const { return port_; }
  // Stops accepting and serving, joins every thread and tears down I/O state (pending
  // requests are dropped). Idempotent.
  void Stop();

  metrics::Registry& registry() { return registry_; }

  // Applies `cfg`'s tenancy and flow control (tenants, keys, classes, weights, limits, queue
  // settings) without a restart; requests waiting in the queues keep their places. Other
  // sections of `cfg` are not applied. Thread-safe.
  void ReloadTenancy(const config::Gateway& cfg);
  // Counts a reload attempt in infergrid_config_reloads_total{result}.
  void CountReload(bool ok);

 private:
  explicit Gateway(config::Gateway cfg);
  http::awaitable<void> Handle(http::Exchange& ex);
  http::awaitable<void> HandleInference(http::Exchange& ex, ApiKind api,
                                        std::chrono::steady_clock::time_point start);
  http::awaitable<void> RespondJson(http::Exchange& ex, int status, std::string body);
  // A refusal by flow control: OpenAI-shaped, with Retry-After in whole seconds.
  http::awaitable<void> RespondRefusal(http::Exchange& ex, int status, const std::string& message,
                                       const std::string& type, const std::string& code,
                                       double retry_after_s);
  http::awaitable<void> RespondError(http::Exchange& ex, int status, const std::string& message,
                                     const std::string& type, const std::string& param,
                                     const std::string& code);
  std::string ModelsJson() const;
  bool Ready() const;

  config::Gateway cfg_;
  metrics::Registry registry_;
  GatewayMetrics metrics_;
  ProxyOptions proxy_options_;
  std::vector<std::unique_ptr<EndpointState>> endpoints_;
  std::vector<std::unique_ptr<PoolState>> pools_;
  // What a model name (or alias) routes to, with its metric children resolved once so the
  // request path does no label lookups on success.
  struct ModelRoute {
    PoolState* pool = nullptr;
    metrics::Histogram* ttft = nullptr;
    metrics::Histogram* e2e = nullptr;
    metrics::Counter* prompt_tokens = nullptr;
    metrics::Counter* cached_tokens = nullptr;
    std::vector<metrics::Counter*> decisions;  // per endpoint index
    std::vector<metrics::Counter*> ok;         // per endpoint index: code 200
  };
  std::unordered_map<std::string, ModelRoute> routes_;
  // Tenancy: who a request is from, and its limits; replaced or reconfigured on reload.
  mutable std::mutex tenancy_mu_;
  std::shared_ptr<const TenantDirectory> directory_;
  scheduling::flow::TenantLimiter limiter_;
  std::atomic<uint32_t> output_tokens_estimate_{256};
  std::shared_ptr<const TenantDirectory> directory() const;
  // A tenant and class's metric children, resolved once (one lookup a request, not five).
  struct TenantMetrics {
    metrics::Gauge* queued;
    metrics::Counter* admitted;
    metrics::Histogram* wait;
    metrics::Counter* prompt_tokens;
    metrics::Counter* completion_tokens;
  };
  const TenantMetrics& TenantMetricsFor(const std::string& tenant, const std::string& klass);
  std::mutex tenant_metrics_mu_;
  std::unordered_map<std::string, std::unique_ptr<TenantMetrics>> tenant_metrics_;
  int64_t created_unix_ = 0;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();

  std::vector<std::unique_ptr<http::asio::io_context>> worker_ios_;
  std::vector<std::vector<std::unique_ptr<http::UpstreamPool>>>
      upstreams_;  // [worker][endpoint id]
  std::unique_ptr<http::asio::io_context> control_io_ = std::make_unique<http::asio::io_context>(1);
  std::unique_ptr<http::Server> server_;
  std::unique_ptr<Scraper> scraper_;
  // Re-runs every pool's dispatch: scraped gauges and reachability change endpoints' room.
  std::unique_ptr<http::asio::steady_timer> flow_tick_;
  std::vector<std::thread> threads_;
  uint16_t port_ = 0;
  bool stopped_ = false;
};

}  // namespace infergrid::gateway
