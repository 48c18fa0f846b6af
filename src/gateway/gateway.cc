#include "gateway/gateway.h"

#include <charconv>
#include <cmath>
#include <ctime>
#include <future>
#include <nlohmann/json.hpp>

#include "common/block_hash.h"
#include "common/log.h"
#include "gateway/openai.h"
#include "http/client_watch.h"
#include "scheduling/registry.h"

namespace infergrid::gateway {

namespace {
// vLLM's default --block-size, and the prefix index's default blockSize.
constexpr uint32_t kServerBlockSize = 16;
}  // namespace

using namespace infergrid::http;

namespace {
// Watches a queued request's client: if it leaves, the request leaves the queue at once.
// (A coroutine function, not a capturing lambda: its arguments live in its own frame.)
awaitable<void> WatchQueuedClient(std::shared_ptr<PoolState::Waiter> w, tcp::socket& client) {
  // Named, not a temporary in the co_await expression: GCC 12 may destroy such temporaries
  // twice across the suspension.
  std::function<bool()> stopped = [w] { return w->watch_done; };
  bool gone = co_await AwaitClientClose(client, stopped);
  if (gone) {
    w->client_gone = true;
    w->timer.cancel();
  }
}
}  // namespace
using nlohmann::json;

Gateway::Gateway(config::Gateway cfg) : cfg_(std::move(cfg)), metrics_(&registry_) {}

Gateway::~Gateway() { Stop(); }

Result<std::unique_ptr<Gateway>> Gateway::Create(config::Gateway cfg) {
  std::unique_ptr<Gateway> g(new Gateway(std::move(cfg)));
  g->created_unix_ = static_cast<int64_t>(std::time(nullptr));
  g->ReloadTenancy(g->cfg_);
  g->ApplySettings(g->cfg_);
  g->current_ = std::make_shared<const config::Gateway>(g->cfg_);
  if (g->cfg_.recording.enabled) {
    IG_ASSIGN_OR_RETURN(g->recorder_, TraceRecorder::Open(g->cfg_.recording));
    TraceRecorder* rec = g->recorder_.get();
    g->registry_.AddGaugeCallback(
        "infergrid_recorded_requests",
        "Requests written to the Mooncake-format trace (spec.recording) since start.", {}, [rec] {
          return std::vector<metrics::GaugeSample>{{{}, static_cast<double>(rec->records())}};
        });
  }

  uint64_t seed = 0x9e3779b97f4a7c15ull;
  for (const auto& pool_cfg : g->cfg_.pools) {
    const config::SchedulingProfile* profile = nullptr;
    for (const auto& p : g->cfg_.profiles) {
      if (p.name == pool_cfg.scheduling_profile) profile = &p;
    }
    if (profile == nullptr)
      return Status::Error("pool '" + pool_cfg.name + "' names an unknown scheduling profile");
    IG_ASSIGN_OR_RETURN(auto scheduler,
                        scheduling::BuiltinRegistry().Build(*profile, g->cfg_.source, seed++));
    g->pools_.push_back(
        std::make_unique<PoolState>(pool_cfg, std::move(scheduler), std::vector<EndpointState*>{},
                                    g->cfg_.scrape.stale_after, FlowSettingsFrom(g->cfg_)));
    PoolState* pool = g->pools_.back().get();
    for (const auto& e : pool_cfg.endpoints) {
      IG_ASSIGN_OR_RETURN(HostPort target, ParseHttpUrl(e.url));
      std::lock_guard lock(g->endpoints_mu_);
      g->NewEndpointLocked(pool, e, target);
    }
    PoolState* ps = g->pools_.back().get();
    for (const auto& m : pool_cfg.models) {
      std::vector<std::string> names = m.aliases;
      names.insert(names.begin(), m.name);
      for (const auto& name : names) {
        ModelRoute r;
        r.pool = ps;
        r.ttft = g->metrics_.ttft->With({pool_cfg.name, name});
        r.prompt_tokens = g->metrics_.prompt_tokens->With({pool_cfg.name});
        r.cached_tokens = g->metrics_.cached_tokens->With({pool_cfg.name});
        r.e2e = g->metrics_.e2e->With({pool_cfg.name, name});
        g->routes_[name] = std::move(r);
      }
    }
  }

  // Per-endpoint gauges, read from the live state when /metrics is rendered.
  Gateway* self = g.get();
  auto per_pool = [self](auto fn) {
    return [self, fn] {
      std::vector<metrics::GaugeSample> out;
      for (const auto& p : self->pools_) out.push_back({{p->config().name}, fn(*p)});
      return out;
    };
  };
  g->registry_.AddGaugeCallback(
      "infergrid_pool_queued_requests", "Requests waiting in the pool's queue in the gateway.",
      {"pool"}, per_pool([](const PoolState& p) { return static_cast<double>(p.queued()); }));
  g->registry_.AddGaugeCallback(
      "infergrid_pool_saturated",
      "1 while no endpoint of the pool has room for the next queued request (requests wait in "
      "the gateway).",
      {"pool"}, per_pool([](const PoolState& p) { return p.saturated() ? 1.0 : 0.0; }));
  g->registry_.AddGaugeCallback(
      "infergrid_endpoint_in_flight_kv_tokens",
      "KV cache the endpoint's in-flight requests may grow to (prompts plus expected outputs), "
      "as the gateway reserves it.",
      {"pool", "endpoint"}, [self] {
        std::vector<metrics::GaugeSample> out;
        for (const auto* e : self->AllEndpoints())
          out.push_back({{e->pool(), e->url()}, static_cast<double>(e->kv_tokens())});
        return out;
      });
  auto per_endpoint = [self](auto fn) {
    return [self, fn] {
      std::vector<metrics::GaugeSample> out;
      for (const auto* e : self->AllEndpoints()) out.push_back({{e->pool(), e->url()}, fn(*e)});
      return out;
    };
  };
  g->registry_.AddGaugeCallback(
      "infergrid_endpoint_state",
      "1 for the endpoint's lifecycle state: active (gets requests), draining (keeps its "
      "in-flight requests, gets no new ones), removed.",
      {"pool", "endpoint", "state"}, [self] {
        std::vector<metrics::GaugeSample> out;
        for (const auto* e : self->AllEndpoints()) {
          for (AdminState s : {AdminState::kActive, AdminState::kDraining, AdminState::kRemoved})
            out.push_back({{e->pool(), e->url(), AdminStateName(s)}, e->admin() == s ? 1.0 : 0.0});
        }
        return out;
      });
  g->registry_.AddGaugeCallback(
      "infergrid_endpoint_healthy",
      "1 unless health checks have ejected the endpoint (passive: failed requests; active: "
      "failed probes).",
      {"pool", "endpoint"},
      per_endpoint([](const EndpointState& e) { return e.health_ok() ? 1.0 : 0.0; }));
  g->registry_.AddGaugeCallback(
      "infergrid_endpoint_in_flight_requests",
      "Requests the gateway has sent to the endpoint that have not finished.", {"pool", "endpoint"},
      per_endpoint([](const EndpointState& e) { return static_cast<double>(e.in_flight()); }));
  g->registry_.AddGaugeCallback("infergrid_endpoint_in_flight_prompt_tokens",
                                "Estimated prompt tokens of the endpoint's in-flight requests.",
                                {"pool", "endpoint"}, per_endpoint([](const EndpointState& e) {
                                  return static_cast<double>(e.in_flight_prompt_tokens());
                                }));
  g->registry_.AddGaugeCallback(
      "infergrid_endpoint_prefilling_requests",
      "Requests sent to the endpoint that have no first token back yet.", {"pool", "endpoint"},
      per_endpoint([](const EndpointState& e) { return static_cast<double>(e.prefilling()); }));
  g->registry_.AddGaugeCallback(
      "infergrid_endpoint_queued_prefill_tokens",
      "Prompt tokens the endpoint still has to prefill for the gateway's requests (each "
      "request's prompt less what the prefix index expected cached there).",
      {"pool", "endpoint"},
      per_endpoint([](const EndpointState& e) { return static_cast<double>(e.prefill_tokens()); }));
  g->registry_.AddGaugeCallback(
      "infergrid_endpoint_ttft_ewma_seconds",
      "Recent time to first byte through the endpoint (exponentially weighted mean).",
      {"pool", "endpoint"}, per_endpoint([](const EndpointState& e) { return e.ttft_ewma(); }));
  g->registry_.AddGaugeCallback(
      "infergrid_endpoint_reachable",
      "1 if the last connection to the endpoint (request or scrape) succeeded.",
      {"pool", "endpoint"},
      per_endpoint([](const EndpointState& e) { return e.reachable() ? 1.0 : 0.0; }));
  auto scraped = [self](double ScrapedMetrics::*field) {
    return [self, field] {
      std::vector<metrics::GaugeSample> out;
      auto now = std::chrono::steady_clock::now();
      for (const auto* e : self->AllEndpoints()) {
        ScrapedMetrics m;
        if (e->Scraped(now, self->cfg_.scrape.stale_after, &m))
          out.push_back({{e->pool(), e->url()}, m.*field});
      }
      return out;
    };
  };
  g->registry_.AddGaugeCallback("infergrid_endpoint_num_requests_running",
                                "vllm:num_requests_running as last scraped from the endpoint.",
                                {"pool", "endpoint"}, scraped(&ScrapedMetrics::running));
  g->registry_.AddGaugeCallback("infergrid_endpoint_num_requests_waiting",
                                "vllm:num_requests_waiting as last scraped from the endpoint.",
                                {"pool", "endpoint"}, scraped(&ScrapedMetrics::waiting));
  g->registry_.AddGaugeCallback("infergrid_endpoint_kv_cache_usage_ratio",
                                "KV cache usage (0-1) as last scraped from the endpoint.",
                                {"pool", "endpoint"}, scraped(&ScrapedMetrics::kv_usage));
  g->registry_.AddGaugeCallback(
      "infergrid_endpoint_prefix_cache_queries",
      "The endpoint's prefix cache queries counter (tokens) as last scraped.", {"pool", "endpoint"},
      scraped(&ScrapedMetrics::prefix_queries));
  g->registry_.AddGaugeCallback(
      "infergrid_endpoint_prefix_cache_hits",
      "The endpoint's prefix cache hits counter (tokens) as last scraped.", {"pool", "endpoint"},
      scraped(&ScrapedMetrics::prefix_hits));
  return g;
}

Status Gateway::Start() {
  uint32_t n = cfg_.workers;
  if (n == 0) n = std::max(1u, std::thread::hardware_concurrency());
  std::vector<asio::io_context*> ios;
  upstream_options_.max_connections = cfg_.upstream.max_connections_per_endpoint;
  upstream_options_.max_idle = cfg_.upstream.max_idle_connections_per_endpoint;
  upstream_options_.idle_timeout = cfg_.timeouts.idle;
  for (uint32_t i = 0; i < n; ++i) {
    worker_ios_.push_back(std::make_unique<asio::io_context>(1));
    ios.push_back(worker_ios_.back().get());
    upstreams_.emplace_back();  // each worker makes its upstream pools on first use
  }
  ServerOptions so;
  so.max_header_bytes = cfg_.limits.max_request_header_bytes;
  so.max_body_bytes = cfg_.limits.max_request_body_bytes;
  so.header_timeout = cfg_.timeouts.request_headers;
  so.idle_timeout = cfg_.timeouts.client_idle;
  so.write_timeout = cfg_.timeouts.idle;
  so.error_body = [](int status, const std::string& message, const std::string& code) {
    ApiError e;
    e.status = status;
    e.message = message;
    e.code = code;
    return ErrorJson(e);
  };
  so.on_protocol_error = [this](ProtocolError kind) {
    const char* name = kind == ProtocolError::kHeadersTooLarge    ? "headers_too_large"
                       : kind == ProtocolError::kBodyTooLarge     ? "body_too_large"
                       : kind == ProtocolError::kHeaderTimeout    ? "request_timeout"
                       : kind == ProtocolError::kBodyTimeout      ? "body_timeout"
                       : kind == ProtocolError::kHandlerException ? "internal_error"
                                                                  : "bad_http";
    metrics_.client_errors->With({name})->Inc();
  };
  server_ =
      std::make_unique<Server>(ios, std::move(so), [this](Exchange& ex) { return Handle(ex); });
  IG_RETURN_IF_ERROR(server_->Listen(cfg_.listen_host, cfg_.listen_port));
  port_ = server_->port();

  ScraperCallbacks cb;
  cb.on_probe = [this](EndpointState* e, bool ok) {
    double now = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    OnHealthChange(e, e->RecordProbe(ok, now, settings()->health), "active");
  };
  cb.on_restart = [this](EndpointState* e) {
    log::Info("endpoint {} restarted (its counters went back): its cache is forgotten", e->url());
    for (auto& p : pools_) p->ForgetEndpoint(e);
  };
  {
    std::lock_guard lock(endpoints_mu_);
    std::vector<EndpointState*> eps;
    for (auto& e : endpoints_) eps.push_back(e.get());
    scraper_ = std::make_unique<Scraper>(*control_io_, cfg_.scrape, cfg_.health.active, eps,
                                         &metrics_, std::move(cb));
  }
  scraper_->Start();
  StartPeering();

  flow_tick_ = std::make_unique<asio::steady_timer>(*control_io_);
  asio::co_spawn(
      *control_io_,
      [this]() -> awaitable<void> {
        while (true) {
          flow_tick_->expires_after(std::chrono::milliseconds(20));
          error_code ec;
          co_await flow_tick_->async_wait(with_ec(ec));
          if (ec) co_return;
          Tick();
        }
      },
      asio::detached);
  for (auto& io : worker_ios_) {
    threads_.emplace_back([io = io.get()] {
      auto guard = asio::make_work_guard(*io);
      io->run();
    });
  }
  threads_.emplace_back([this] {
    auto guard = asio::make_work_guard(*control_io_);
    control_io_->run();
  });
  log::Info("gateway listening on {}:{} with {} workers, {} pools, {} endpoints", cfg_.listen_host,
            server_->port(), n, pools_.size(), endpoints_.size());
  return Status::Ok();
}

void Gateway::Stop() {
  if (stopped_) return;
  stopped_ = true;
  if (server_) server_->StopAccepting();
  if (scraper_) scraper_->Stop();
  if (peers_ && control_io_) {
    // On its own thread, so no callback runs after this.
    std::promise<void> done;
    asio::post(*control_io_, [this, &done] {
      peers_->Stop();
      done.set_value();
    });
    if (!threads_.empty()) done.get_future().wait();
  }
  for (auto& io : worker_ios_) io->stop();
  if (control_io_) control_io_->stop();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  // Queued requests' timers belong to the workers' io_contexts: the queues let go of them
  // first, and release nothing more while the handlers' frames are destroyed.
  for (auto& p : pools_) p->Close();
  // Tear down in dependency order: sockets owned by long-lived objects go first, then the
  // io_contexts (destroying suspended coroutines, whose leases still find their pools), then
  // the pools.
  if (server_) server_->Shutdown();
  for (auto& worker : upstreams_) {
    for (auto& pool : worker) {
      if (pool) pool->CloseIdle();  // a worker makes its pools on first use: some are null
    }
  }
  worker_ios_.clear();
  upstreams_.clear();
  server_.reset();
  flow_tick_.reset();
  // The scraper's and the mesh's I/O objects go before the io_context they belong to.
  if (peers_) peers_->Stop();
  peers_.reset();
  scraper_.reset();
  control_io_.reset();
  if (recorder_) recorder_->Flush();
}

awaitable<void> Gateway::RespondJson(Exchange& ex, int status, std::string body) {
  StringResponse res{static_cast<bhttp::status>(status), 11};
  res.set(bhttp::field::content_type, "application/json");
  res.body() = std::move(body);
  co_await ex.Respond(std::move(res));
}

awaitable<void> Gateway::RespondError(Exchange& ex, int status, const std::string& message,
                                      const std::string& type, const std::string& param,
                                      const std::string& code) {
  ApiError e;
  e.status = status;
  e.message = message;
  e.type = type;
  e.param = param;
  e.code = code;
  co_await RespondJson(ex, status, ErrorJson(e));
}

awaitable<void> Gateway::RespondRefusal(Exchange& ex, int status, const std::string& message,
                                        const std::string& type, const std::string& code,
                                        double retry_after_s) {
  ApiError e;
  e.status = status;
  e.message = message;
  e.type = type;
  e.code = code;
  StringResponse res{static_cast<bhttp::status>(status), 11};
  res.set(bhttp::field::content_type, "application/json");
  if (retry_after_s > 0) {
    res.set(bhttp::field::retry_after,
            std::to_string(std::max<int64_t>(1, static_cast<int64_t>(std::ceil(retry_after_s)))));
  }
  res.body() = ErrorJson(e);
  co_await ex.Respond(std::move(res));
}

const Gateway::TenantMetrics& Gateway::TenantMetricsFor(const std::string& tenant,
                                                        const std::string& klass) {
  // Most requests on a worker come from the tenant and class before them: no lookup then. A
  // worker thread serves one gateway for its whole life, so the cache never outlives it.
  thread_local const TenantMetrics* last = nullptr;
  thread_local std::string last_tenant, last_klass;
  if (last != nullptr && last_tenant == tenant && last_klass == klass) return *last;
  std::string key = tenant;
  key += '\x1f';
  key += klass;
  std::lock_guard lock(tenant_metrics_mu_);
  auto& m = tenant_metrics_[key];
  if (!m) {
    m = std::make_unique<TenantMetrics>();
    m->queued = metrics_.tenant_queued->With({tenant, klass});
    m->admitted = metrics_.tenant_admitted->With({tenant, klass});
    m->wait = metrics_.tenant_wait->With({tenant, klass});
    m->prompt_tokens = metrics_.tenant_tokens->With({tenant, klass, "prompt"});
    m->completion_tokens = metrics_.tenant_tokens->With({tenant, klass, "completion"});
  }
  last = m.get();
  last_tenant = tenant;
  last_klass = klass;
  return *m;
}

std::shared_ptr<const TenantDirectory> Gateway::directory() const {
  std::lock_guard lock(tenancy_mu_);
  return directory_;
}

void Gateway::ReloadTenancy(const config::Gateway& cfg) {
  auto dir = std::make_shared<const TenantDirectory>(cfg.tenancy);
  size_t classes = dir->config().classes.size();
  std::vector<scheduling::flow::TenantLimitSpec> limits;
  for (const auto& t : cfg.tenancy.tenants) {
    limits.push_back({t.name, t.limits.max_concurrent_requests, t.limits.requests_per_minute,
                      t.limits.tokens_per_minute});
  }
  FlowSettings flow = FlowSettingsFrom(cfg);
  {
    std::lock_guard lock(tenancy_mu_);
    directory_ = std::move(dir);
    limiter_.Reconfigure(std::move(limits));
    output_tokens_estimate_.store(cfg.flow_control.saturation.output_tokens_estimate,
                                  std::memory_order_relaxed);
  }
  for (auto& p : pools_) p->Reconfigure(flow);
  if (&cfg != &cfg_) {
    cfg_.tenancy = cfg.tenancy;
    cfg_.flow_control = cfg.flow_control;
    log::Info("tenancy reloaded: {} tenants, {} priority classes", cfg.tenancy.tenants.size(),
              classes);
  }
}

void Gateway::CountReload(bool ok) { metrics_.reloads->With({ok ? "ok" : "error"})->Inc(); }

std::string Gateway::ModelsJson() const {
  json data = json::array();
  for (const auto& p : pools_) {
    for (const auto& m : p->config().models) {
      data.push_back({{"id", m.name},
                      {"object", "model"},
                      {"created", created_unix_},
                      {"owned_by", "infergrid"},
                      {"root", m.name}});
      for (const auto& a : m.aliases) {
        data.push_back({{"id", a},
                        {"object", "model"},
                        {"created", created_unix_},
                        {"owned_by", "infergrid"},
                        {"root", m.name}});
      }
    }
  }
  return json{{"object", "list"}, {"data", data}}.dump(-1, ' ', false,
                                                       json::error_handler_t::replace);
}

bool Gateway::Ready() const {
  if (shutting_down_.load()) return false;
  if (!Warm()) return false;
  for (const auto& p : pools_) {
    if (!p->Ready()) return false;
  }
  return true;
}

awaitable<void> Gateway::Handle(Exchange& ex) {
  auto start = std::chrono::steady_clock::now();
  const auto& req = ex.request();
  std::string_view target = req.target();
  std::string_view path = target.substr(0, target.find('?'));
  bhttp::verb method = req.method();

  struct Route {
    std::string_view path;
    bhttp::verb method;
  };
  static constexpr Route kRoutes[] = {
      {"/v1/chat/completions", bhttp::verb::post},
      {"/v1/completions", bhttp::verb::post},
      {"/v1/models", bhttp::verb::get},
      {"/health", bhttp::verb::get},
      {"/ready", bhttp::verb::get},
      {"/metrics", bhttp::verb::get},
  };
  if (path.starts_with("/admin/")) {
    co_await HandleAdmin(ex, path);
    co_return;
  }
  const Route* route = nullptr;
  for (const auto& r : kRoutes) {
    if (r.path == path) route = &r;
  }
  if (route == nullptr) {
    metrics_.client_errors->With({"not_found"})->Inc();
    co_await RespondError(ex, 404, "Unknown request URL: " + std::string(path),
                          "invalid_request_error", "", "unknown_url");
    co_return;
  }
  if (method != route->method) {
    metrics_.client_errors->With({"method_not_allowed"})->Inc();
    StringResponse res{bhttp::status::method_not_allowed, 11};
    res.set(bhttp::field::allow, route->method == bhttp::verb::post ? "POST" : "GET");
    res.set(bhttp::field::content_type, "application/json");
    ApiError e;
    e.status = 405;
    e.message = std::string(req.method_string()) + " is not allowed on " + std::string(path) +
                "; use " + (route->method == bhttp::verb::post ? "POST" : "GET");
    e.code = "method_not_allowed";
    res.body() = ErrorJson(e);
    co_await ex.Respond(std::move(res));
    co_return;
  }

  if (path == "/v1/chat/completions" || path == "/v1/completions") {
    // Counted while in the gateway, queued or in flight: a graceful shutdown waits for these.
    struct InGateway {
      std::atomic<size_t>& n;
      explicit InGateway(std::atomic<size_t>& c) : n(c) { n.fetch_add(1); }
      ~InGateway() { n.fetch_sub(1); }
    } counted(in_gateway_);
    co_await HandleInference(
        ex, path == "/v1/chat/completions" ? ApiKind::kChatCompletions : ApiKind::kCompletions,
        start);
  } else if (path == "/v1/models") {
    co_await RespondJson(ex, 200, ModelsJson());
  } else if (path == "/health") {
    co_await RespondJson(ex, 200, R"({"status":"ok"})");
  } else if (path == "/ready") {
    bool ready = Ready();
    co_await RespondJson(ex, ready ? 200 : 503,
                         ready ? R"({"status":"ready"})" : R"({"status":"not ready"})");
  } else if (path == "/metrics") {
    StringResponse res{bhttp::status::ok, 11};
    res.set(bhttp::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
    res.body() = registry_.Render();
    co_await ex.Respond(std::move(res));
  }
}

awaitable<void> Gateway::HandleInference(Exchange& ex, ApiKind api,
                                         std::chrono::steady_clock::time_point start) {
  // With recording on, every request is in the recorder from its arrival to its end, so the
  // trace comes out in arrival order; one that is not served is abandoned on any path.
  struct Recorded {
    TraceRecorder* r;
    std::chrono::steady_clock::time_point arrival;
    bool done = false;
    ~Recorded() {
      if (r && !done) r->Abandon(arrival);
    }
  } recorded{recorder_.get(), start};
  if (recorder_) recorder_->Begin(start);
  std::string_view session = ex.request()["x-session-id"];
  auto parsed = ParseInferenceRequest(api, ex.request().body(), session);
  if (auto* err = std::get_if<ApiError>(&parsed)) {
    metrics_.client_errors->With({err->code.empty() ? "invalid_request" : err->code})->Inc();
    co_await RespondJson(ex, err->status, ErrorJson(*err));
    co_return;
  }
  RequestInfo info = std::move(std::get<RequestInfo>(parsed));
  // An optional time-to-first-token objective for this request (hardware-cost routes to the
  // cheapest endpoint expected to meet it).
  if (std::string_view slo = ex.request()["x-ttft-objective-ms"]; !slo.empty()) {
    double ms = 0;
    auto [end, ec] = std::from_chars(slo.data(), slo.data() + slo.size(), ms);
    if (ec != std::errc() || end != slo.data() + slo.size() || !(ms > 0) || ms > 3.6e6) {
      metrics_.client_errors->With({"invalid_header"})->Inc();
      co_await RespondError(ex, 400,
                            "The x-ttft-objective-ms header must be a number of milliseconds "
                            "from 0 to 3600000.",
                            "invalid_request_error", "x-ttft-objective-ms", "invalid_header");
      co_return;
    }
    info.ttft_objective_seconds = ms / 1000;
  }
  auto it = routes_.find(info.model);
  if (it == routes_.end()) {
    metrics_.client_errors->With({"model_not_found"})->Inc();
    co_await RespondError(
        ex, 404, "The model '" + info.model + "' does not exist or is not served by this gateway.",
        "invalid_request_error", "model", "model_not_found");
    co_return;
  }
  const ModelRoute& route = it->second;
  PoolState* pool = route.pool;

  // Who it is from, and at which priority (docs/qos.md).
  auto dir = directory();
  std::string_view tenant_header;
  if (!dir->tenant_header().empty()) tenant_header = ex.request()[dir->tenant_header()];
  Identity who = dir->Identify(ex.request()[bhttp::field::authorization], tenant_header,
                               ex.request()["x-priority-class"]);
  if (who.tenant == nullptr) {
    metrics_.auth_failures->With({who.reason})->Inc();
    co_await RespondError(ex, who.status, who.message,
                          who.status == 401 ? "authentication_error" : "invalid_request_error",
                          who.status == 401 ? "" : "x-priority-class", who.code);
    co_return;
  }
  const std::string tenant = who.tenant->name;
  const std::string klass = who.klass ? who.klass->name : "standard";
  const bool sheddable = who.klass && who.klass->sheddable;

  info.pool = pool->config().name;
  info.now_seconds = std::chrono::duration<double>(start - started_).count();
  // Hash the prompt into vLLM-sized blocks here, outside the pool's lock; a profile whose
  // prefix index uses another block size hashes the token ids itself.
  info.block_size = kServerBlockSize;
  info.prompt_block_hashes = HashBlocks(info.prompt_token_ids, kServerBlockSize);

  // Its cost: the KV cache it may grow to, prompt plus expected output.
  uint32_t output_estimate = info.max_tokens;
  if (output_estimate == 0)
    output_estimate = output_tokens_estimate_.load(std::memory_order_relaxed);
  // Tenants without limits skip the limiter (and its lock) altogether.
  const config::TenantLimits& limits = who.tenant->limits;
  const bool limited = limits.max_concurrent_requests > 0 || limits.requests_per_minute > 0 ||
                       limits.tokens_per_minute > 0;
  scheduling::flow::TenantLimiter::Verdict verdict;
  if (limited) {
    std::lock_guard lock(tenancy_mu_);
    verdict = limiter_.Admit(tenant, double(info.prompt_tokens_estimate) + output_estimate,
                             std::chrono::duration<double>(start - started_).count());
  }
  const uint32_t kv_tokens = static_cast<uint32_t>(
      std::min<uint64_t>(uint64_t{info.prompt_tokens_estimate} + output_estimate, UINT32_MAX));
  const double cost = kv_tokens;
  if (verdict.exceeded != scheduling::flow::Limit::kNone) {
    const char* limit = scheduling::flow::LimitName(verdict.exceeded);
    metrics_.tenant_shed->With({tenant, klass, limit})->Inc();
    co_await RespondRefusal(
        ex, 429,
        fmt::format("Rate limit reached for tenant '{}': {} exceeded. Retry after {:.0f}s.", tenant,
                    limit, std::ceil(std::max(1.0, verdict.retry_after_s))),
        verdict.exceeded == scheduling::flow::Limit::kTokensPerMinute ? "tokens" : "requests",
        "rate_limit_exceeded", std::max(1.0, verdict.retry_after_s));
    co_return;
  }
  // Held against the tenant's limits until the request ends; refunded if it is never served.
  struct LimitHold {
    Gateway* g;
    const std::string& tenant;
    double cost;
    bool counted;        // admitted through the limiter
    double actual = -1;  // tokens used, once known
    bool served = false;
    ~LimitHold() {
      if (!counted) return;
      double now =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - g->started_).count();
      std::lock_guard lock(g->tenancy_mu_);
      g->limiter_.Release(tenant, cost, actual >= 0 ? actual : cost, served, now);
    }
  } hold{this, tenant, cost, limited};

  const TenantMetrics& tm = TenantMetricsFor(tenant, klass);
  PoolState::Pick pick;
  scheduling::flow::FairQueue::Arrival a;
  a.tenant = tenant;
  a.klass = klass;
  a.cost = cost;
  a.session = info.session_key.empty() ? 0 : std::hash<std::string>{}(info.session_key);
  std::optional<PoolState::Pick> at_once;
  bool queued_first = false;
  if (pool->flow_enabled()) at_once = pool->AdmitNow(info, output_estimate, a);
  if (at_once) {
    pick = std::move(*at_once);
    tm.wait->Observe(0);
  } else if (pool->flow_enabled()) {
    tcp::socket& client = ex.stream().socket();
    auto w = std::make_shared<PoolState::Waiter>(client.get_executor());
    w->info = std::move(info);
    w->output_tokens = output_estimate;
    metrics::Gauge* queued = tm.queued;
    queued_first = true;
    PoolState::Enqueued q = pool->Enqueue(w, a);
    if (q.refusal == scheduling::flow::Refusal::kUnknownClass) {
      // Its class went away in a reload between identification and queueing.
      metrics_.tenant_shed->With({tenant, klass, "queue_full"})->Inc();
      co_await RespondRefusal(ex, 503, "The request's priority class was just reconfigured; retry.",
                              "server_error", "priority_class_changed", 1);
      co_return;
    }
    if (q.refusal != scheduling::flow::Refusal::kNone) {
      bool full = q.refusal == scheduling::flow::Refusal::kQueueFull;
      metrics_.tenant_shed->With({tenant, klass, full ? "queue_full" : "expected_wait"})->Inc();
      if (full) {
        co_await RespondRefusal(
            ex, sheddable ? 429 : 503,
            "The gateway's queue for '" + w->info.model + "' is full; retry later.", "server_error",
            "queue_full", 1);
      } else {
        co_await RespondRefusal(ex, 429,
                                fmt::format("Requests of class '{}' are being shed: the expected "
                                            "wait ({:.1f}s) exceeds the class's limit.",
                                            klass, q.expected_wait_s),
                                "server_error", "expected_wait_exceeded", q.expected_wait_s);
      }
      co_return;
    }
    double waited_from = pool->Now();
    if (!pool->IsReleased(*w)) {
      queued->Add(1);
      auto deadline = std::chrono::steady_clock::now() +
                      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                          std::chrono::duration<double>(std::max(0.0, q.deadline_s - waited_from)));
      // A client that leaves while queued leaves the queue at once.
      asio::co_spawn(client.get_executor(), WatchQueuedClient(w, client), asio::detached);
      bool left = false;
      while (true) {
        w->timer.expires_at(deadline);
        error_code ec;
        co_await w->timer.async_wait(with_ec(ec));
        if (pool->IsReleased(*w)) break;
        if (w->client_gone || std::chrono::steady_clock::now() >= deadline) {
          left = pool->Withdraw(*w);  // false: released meanwhile, so it is served
          break;
        }
      }
      if (!w->client_gone) {
        w->watch_done = true;
        error_code ignored;
        client.cancel(ignored);  // wakes the watcher, which sees watch_done and exits
      }
      w->watch_done = true;
      queued->Add(-1);
      double waited = pool->Now() - waited_from;
      tm.wait->Observe(waited);
      if (left) {
        if (w->client_gone) {
          metrics_.tenant_shed->With({tenant, klass, "client_gone"})->Inc();
          metrics_.client_disconnects->With({"queued"})->Inc();
          ex.close();
          co_return;
        }
        metrics_.tenant_shed->With({tenant, klass, "queue_timeout"})->Inc();
        co_await RespondRefusal(ex, sheddable ? 429 : 503,
                                fmt::format("The request waited {:.1f}s in the gateway's queue "
                                            "for '{}' without a model server becoming free.",
                                            waited, w->info.model),
                                "server_error", "queue_timeout", 1);
        co_return;
      }
    } else {
      tm.wait->Observe(0);
    }
    pick = std::move(w->pick);
    info = std::move(w->info);
    if (w->client_gone && pick.endpoint != nullptr) {
      // Released just as its client left: give the endpoint's place back.
      pick.endpoint->OnFinish(pick.live, pick.prefill_tokens, true);
      pool->Dispatch();
      metrics_.tenant_shed->With({tenant, klass, "client_gone"})->Inc();
      metrics_.client_disconnects->With({"queued"})->Inc();
      ex.close();
      co_return;
    }
  } else {
    pick = pool->Schedule(info, output_estimate);
  }
  if (pick.used_stale_metrics && cfg_.scrape.enabled)
    metrics_.stale_metrics->With({info.pool})->Inc();
  if (pick.endpoint == nullptr) {
    metrics_.decision_failures->With({info.pool, pick.reason})->Inc();
    co_await RespondError(ex, 503,
                          "No model server is available for '" + info.model + "': " + pick.reason,
                          "server_error", "", "no_endpoint_available");
    co_return;
  }
  hold.served = true;
  tm.admitted->Inc();
  // What reloads replace, and the request's deposit in the retry budget: one lock.
  std::shared_ptr<const Settings> settings;
  {
    std::lock_guard lock(settings_mu_);
    settings = settings_;
    retry_budget_.OnRequest();
  }
  EndpointState* tried[8];
  size_t n_tried = 0;
  EndpointState* ep = nullptr;
  ProxyOutcome out;
  UsageSniffer usage;
  for (uint32_t attempt = 0;; ++attempt) {
    ep = pick.endpoint;
    ep->decisions->Inc();
    if (attempt == 0) {
      route.prompt_tokens->Inc(info.prompt_tokens_estimate);
      route.cached_tokens->Inc(info.prompt_tokens_estimate - pick.prefill_tokens);
    }
    UpstreamPool& up = UpstreamFor(ex.worker(), ep);
    out = ProxyOutcome{};
    {
      // Released on every path, also if the connection's coroutine is torn down mid-request.
      struct InFlight {
        EndpointState* ep;
        PoolState* pool;
        LiveRequest* live;
        uint32_t prefill;
        bool prefilling = true;
        ~InFlight() {
          ep->OnFinish(live, prefill, prefilling);
          pool->Dispatch();  // its place may be the room a queued request waits for
        }
      } in_flight{ep, pool, pick.live, pick.prefill_tokens};
      ProxyHooks hooks;
      hooks.on_body = [&usage, live = pick.live](std::string_view piece) {
        usage.Feed(piece);
        // Each content event is a token the request now holds in the server's KV cache.
        live->generated.store(static_cast<uint32_t>(usage.stream_events()),
                              std::memory_order_relaxed);
      };
      hooks.on_retry = [&] { metrics_.retries->With({ep->url()})->Inc(); };
      hooks.on_first_body = [&] {
        in_flight.prefilling = false;
        ep->OnFirstToken(in_flight.prefill);
      };
      hooks.hold_retryable = attempt < settings->max_retries && n_tried + 1 < std::size(tried);
      out = co_await Forward(ex, up, settings->proxy, start, hooks);
    }
    // What the endpoint did, for its health: failures of its own (not the client's leaving,
    // not the gateway's connection limit).
    if (!out.client_gone && out.error != "pool_exhausted") {
      bool failed = (!out.error.empty()) || out.status >= 500;
      double now_s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
      OnHealthChange(ep, ep->RecordRequest(!failed, now_s, settings->health), "passive");
    }
    if (!out.error.empty()) {
      metrics_.upstream_errors->With({ep->url(), out.error})->Inc();
      if (out.error == "connect_failed" || out.error == "connect_timeout") ep->SetReachable(false);
    } else if (out.status > 0) {
      ep->SetReachable(true);
    }
    if (!out.retryable) break;
    // Nothing reached the client: another endpoint may serve it, within the budget.
    tried[n_tried++] = ep;
    PoolState::Pick next = pool->Retry(info, output_estimate, std::span(tried, n_tried));
    bool allowed = false;
    if (next.endpoint != nullptr) {
      std::lock_guard lock(settings_mu_);  // spent only on a retry that can happen
      allowed = retry_budget_.TryRetry();
    }
    if (!allowed) {
      if (next.endpoint != nullptr) {  // the budget said no: give its place back
        next.endpoint->OnFinish(next.live, next.prefill_tokens, true);
        pool->Dispatch();
      }
      metrics_.retries_refused->With({info.pool, next.endpoint ? "budget" : "no_endpoint"})->Inc();
      co_await RespondUpstreamError(ex, out.status, out.message, out.error);
      break;
    }
    metrics_.request_retries->With({info.pool, out.error})->Inc();
    log::Debug("retrying a request on {} after {} from {}", next.endpoint->url(), out.error,
               ep->url());
    pick = std::move(next);
  }

  if (out.client_gone) {
    metrics_.client_disconnects->With({out.started ? "streaming" : "before_response"})->Inc();
  }
  double e2e = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (out.first_byte_seconds >= 0) {
    route.ttft->Observe(out.first_byte_seconds);
    ep->RecordTtft(out.first_byte_seconds);
  }
  route.e2e->Observe(e2e);
  // 499: the client closed the connection before a status was sent (nginx's convention).
  int code = out.client_gone && !out.started ? 499 : out.status;
  if (code == 200) {
    auto ok = ep->ok.find(info.model);
    if (ok != ep->ok.end()) ok->second->Inc();
    if (recorder_) {
      uint32_t own = static_cast<uint32_t>(info.prompt_token_ids.size());
      recorded.done = true;
      recorder_->Record(
          start, info.prompt_block_hashes, info.prompt_token_ids,
          usage.prompt_tokens() > 0 ? static_cast<uint32_t>(usage.prompt_tokens()) : own,
          usage.has_usage() ? static_cast<uint32_t>(usage.completion_tokens())
                            : static_cast<uint32_t>(usage.stream_events()),
          info.session_key);
    }
  } else {
    metrics_.requests->With({info.pool, info.model, ep->url(), std::to_string(code)})->Inc();
  }
  // Tokens served, from the usage the server reported (else estimated), correct the tenant's
  // limits and its fair share.
  double prompt_used = usage.prompt_tokens() >= 0 ? double(usage.prompt_tokens())
                                                  : double(info.prompt_tokens_estimate);
  double output_used = usage.has_usage() ? double(usage.completion_tokens())
                       : info.stream     ? double(usage.stream_events())
                                         : double(output_estimate);
  hold.actual = prompt_used + output_used;
  tm.prompt_tokens->Inc(prompt_used);
  tm.completion_tokens->Inc(output_used);
  // Only a request that waited was charged to its tenant's fair share.
  if (queued_first) pool->Correct(tenant, klass, cost, hold.actual);
  Completion c;
  c.ok = out.error.empty() && !out.client_gone && out.status >= 200 && out.status < 300;
  c.ttft_seconds = out.first_byte_seconds;
  c.e2e_seconds = e2e;
  pool->OnCompleted(info, ep, c);
}

}  // namespace infergrid::gateway
