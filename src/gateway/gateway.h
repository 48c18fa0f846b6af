#pragma once
// The live gateway: an OpenAI-compatible HTTP front that routes each inference request
// through its pool's scheduler to one endpoint and relays the response.
//
// Threads: `workers` I/O threads (each owns its connections and its upstream connection
// pools) and one control thread (endpoint scraping). Start() returns once listening.

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "config/config.h"
#include "gateway/endpoint_registry.h"
#include "gateway/gateway_metrics.h"
#include "gateway/health.h"
#include "gateway/peer_mesh.h"
#include "gateway/proxy.h"
#include "gateway/recorder.h"
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
  // Applies a whole new configuration, atomically (docs/zero-downtime.md): endpoints added,
  // drained and removed; tenancy, flow control, health, retries, timeouts, admin keys and
  // peers replaced. In-flight and queued requests are kept. Sections that need a restart
  // (listen, workers, pools' models and profiles, scheduling profiles, scrape, upstream
  // pools, request limits, ha.listen) must be unchanged, else nothing is applied and the
  // error names the field. Counted in infergrid_config_reloads_total. Thread-safe.
  Status Reload(const config::Gateway& next);
  // Counts a reload attempt in infergrid_config_reloads_total{result}.
  void CountReload(bool ok);
  // The running configuration's lifecycle settings (as last reloaded). Thread-safe.
  config::Lifecycle lifecycle();
  // What POST /admin/reload reloads: loads and validates the file (set by the binary).
  void SetConfigLoader(std::function<Result<config::Gateway>()> loader);

  // Endpoint lifecycle (also through the admin API). `pool` empty: every pool holding `url`.
  // Errors name what was not found.
  Status AddEndpoint(const std::string& pool, const config::Endpoint& e);
  Status DrainEndpoint(const std::string& pool, const std::string& url);
  Status UndrainEndpoint(const std::string& pool, const std::string& url);
  // Drains, then removes once its in-flight requests are done (or lifecycle.drainTimeout).
  Status RemoveEndpoint(const std::string& pool, const std::string& url);

  // Graceful shutdown: stops accepting, reports not ready, answers with Connection: close,
  // and waits until no request is in the gateway (queued or in flight) or `deadline`; then
  // Stop(). Returns the requests still in the gateway when it gave up (0: all finished).
  size_t Shutdown(std::chrono::steady_clock::duration deadline);
  // Requests in the gateway now (queued or in flight).
  size_t requests_in_gateway() const { return in_gateway_.load(); }
  // The peer port (0 when peering is off).
  uint16_t peer_port() const;
  // With peers configured: whether this replica has had its peers' state (half a second after
  // the first peer connected and records came in, 2.5 s if none came), or waited two resolve
  // intervals for a peer. /ready waits for it.
  bool Warm() const;

 private:
  explicit Gateway(config::Gateway cfg);
  // Makes an endpoint's state, metric children and scraping; under endpoints_mu_.
  EndpointState* NewEndpointLocked(PoolState* pool, const config::Endpoint& e,
                                   const http::HostPort& target);
  std::vector<EndpointState*> AllEndpoints() const;
  std::vector<EndpointState*> Find(const std::string& pool, const std::string& url,
                                   PoolState** pool_of = nullptr) const;
  PoolState* PoolNamed(const std::string& name) const;
  http::UpstreamPool& UpstreamFor(size_t worker, EndpointState* ep);
  // The control thread's periodic work: dispatch, passive health time, drains' deadlines.
  void Tick();
  void OnHealthChange(EndpointState* e, EndpointState::HealthChange c, const char* source);
  http::awaitable<void> HandleAdmin(http::Exchange& ex, std::string_view path);

 public:
  struct AdminReply {
    int status = 200;
    std::string body;
    const char* result = "ok";
  };

 private:
  AdminReply Admin(const http::StringRequest& req, std::string_view path);
  void StartPeering();
  // What reloads replace, read by the request path.
  struct Settings {
    ProxyOptions proxy;
    HealthPolicy health;
    uint32_t max_retries = 2;
    std::vector<std::string> admin_keys;  // SHA-256 hex digests
    Duration drain_timeout = std::chrono::seconds(300);
  };
  std::shared_ptr<const Settings> settings() const;
  void ApplySettings(const config::Gateway& cfg);
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

  config::Gateway cfg_;  // as created; what reloads compare against is current_
  std::shared_ptr<const config::Gateway> current_;
  std::mutex reload_mu_;     // one reload at a time
  std::mutex lifecycle_mu_;  // one endpoint change (add, drain, undrain, remove) at a time
  std::function<Result<config::Gateway>()> loader_;
  metrics::Registry registry_;
  GatewayMetrics metrics_;
  mutable std::mutex endpoints_mu_;  // guards endpoints_' growth
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

  mutable std::mutex settings_mu_;
  std::shared_ptr<const Settings> settings_;
  RetryBudget retry_budget_{20, 3};  // under settings_mu_
  std::atomic<size_t> in_gateway_{0};
  std::atomic<bool> shutting_down_{false};
  std::atomic<int64_t> first_peer_ns_{0};  // steady clock, when a peer first connected
  std::unique_ptr<PeerMesh> peers_;
  std::unique_ptr<TraceRecorder> recorder_;  // spec.recording

  std::vector<std::unique_ptr<http::asio::io_context>> worker_ios_;
  http::UpstreamPoolOptions upstream_options_;
  std::vector<std::vector<std::unique_ptr<http::UpstreamPool>>>
      upstreams_;  // [worker][endpoint id], grown by each worker on its own thread
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
