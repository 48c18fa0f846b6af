// The gateway's life at run time (docs/zero-downtime.md): endpoints added, drained and
// removed; health; configuration reloads; the admin API; peering with other replicas; a
// graceful shutdown. Members of Gateway, apart from the request path in gateway.cc.

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "common/log.h"
#include "gateway/gateway.h"
#include "gateway/openai.h"
#include "gateway/tenancy.h"

namespace infergrid::gateway {

using namespace infergrid::http;
using nlohmann::json;

std::shared_ptr<const Gateway::Settings> Gateway::settings() const {
  std::lock_guard lock(settings_mu_);
  return settings_;
}

void Gateway::ApplySettings(const config::Gateway& cfg) {
  auto s = std::make_shared<Settings>();
  s->proxy.connect = cfg.timeouts.connect;
  s->proxy.first_byte = cfg.timeouts.first_byte;
  s->proxy.idle = cfg.timeouts.idle;
  const auto& h = cfg.health;
  s->health.passive = h.passive.enabled;
  s->health.consecutive_failures = h.passive.consecutive_failures;
  s->health.base_ejection_s = std::chrono::duration<double>(h.passive.base_ejection).count();
  s->health.max_ejection_s = std::chrono::duration<double>(h.passive.max_ejection).count();
  s->health.active = h.active.enabled;
  s->health.healthy_threshold = h.active.healthy_threshold;
  s->health.unhealthy_threshold = h.active.unhealthy_threshold;
  s->max_retries = cfg.retries.max_retries;
  s->admin_keys = cfg.admin.api_key_sha256;
  s->drain_timeout = cfg.lifecycle.drain_timeout;
  std::lock_guard lock(settings_mu_);
  settings_ = std::move(s);
  retry_budget_.Configure(cfg.retries.budget_percent, cfg.retries.min_retry_reserve);
}

// --- endpoints -----------------------------------------------------------------------------

EndpointState* Gateway::NewEndpointLocked(PoolState* pool, const config::Endpoint& e,
                                          const HostPort& target) {
  const auto& pc = pool->config();
  endpoints_.push_back(std::make_unique<EndpointState>(endpoints_.size(), pc.name, e, target));
  EndpointState* ep = endpoints_.back().get();
  ep->decisions = metrics_.decisions->With({pc.name, pool->profile_name(), e.url});
  for (const auto& m : pc.models) {
    ep->ok[m.name] = metrics_.requests->With({pc.name, m.name, e.url, "200"});
    for (const auto& a : m.aliases) ep->ok[a] = metrics_.requests->With({pc.name, a, e.url, "200"});
  }
  pool->AddEndpoint(ep);
  return ep;
}

std::vector<EndpointState*> Gateway::AllEndpoints() const {
  std::lock_guard lock(endpoints_mu_);
  std::vector<EndpointState*> out;
  out.reserve(endpoints_.size());
  for (const auto& e : endpoints_) out.push_back(e.get());
  return out;
}

PoolState* Gateway::PoolNamed(const std::string& name) const {
  for (const auto& p : pools_) {
    if (p->config().name == name) return p.get();
  }
  return nullptr;
}

std::vector<EndpointState*> Gateway::Find(const std::string& pool, const std::string& url,
                                          PoolState** pool_of) const {
  std::vector<EndpointState*> out;
  for (auto* e : AllEndpoints()) {
    if (e->url() == url && (pool.empty() || e->pool() == pool)) out.push_back(e);
  }
  if (pool_of && !out.empty()) *pool_of = PoolNamed(out.front()->pool());
  return out;
}

UpstreamPool& Gateway::UpstreamFor(size_t worker, EndpointState* ep) {
  // Each worker's pools are touched by that worker only: growing them needs no lock.
  auto& pools = upstreams_[worker];
  if (pools.size() <= ep->id()) pools.resize(ep->id() + 1);
  auto& slot = pools[ep->id()];
  if (!slot) {
    slot = std::make_unique<UpstreamPool>(worker_ios_[worker]->get_executor(), ep->target(),
                                          upstream_options_);
  }
  return *slot;
}

Status Gateway::AddEndpoint(const std::string& pool_name, const config::Endpoint& e) {
  std::lock_guard lifecycle(lifecycle_mu_);  // one change of an endpoint at a time
  PoolState* pool = PoolNamed(pool_name);
  if (pool == nullptr) return Status::Error("no pool named '" + pool_name + "'");
  IG_ASSIGN_OR_RETURN(HostPort target, ParseHttpUrl(e.url));
  auto existing = Find(pool_name, e.url);
  if (!existing.empty()) {
    // Back into rotation: a URL keeps its slot (and its metrics) for the gateway's life.
    EndpointState* ep = existing.front();
    if (ep->admin() != AdminState::kActive) {
      ep->SetAdmin(AdminState::kActive);
      metrics_.endpoint_changes->With({pool_name, e.url, "added"})->Inc();
      log::Info("endpoint {} back in pool {}", e.url, pool_name);
    }
    pool->Dispatch();
    return Status::Ok();
  }
  config::Endpoint full = e;
  if (full.capacity.kv_cache_tokens == 0 && full.capacity.prefill_tokens_per_s == 0 &&
      pool->config().has_hardware) {
    auto cap = config::ResolveCapacity(pool->config().hardware);
    if (cap.ok()) full.capacity = *cap;
  }
  EndpointState* ep;
  {
    std::lock_guard lock(endpoints_mu_);
    ep = NewEndpointLocked(pool, full, target);
  }
  if (scraper_) scraper_->AddEndpoint(ep);
  metrics_.endpoint_changes->With({pool_name, e.url, "added"})->Inc();
  log::Info("endpoint {} added to pool {}", e.url, pool_name);
  pool->Dispatch();
  return Status::Ok();
}

namespace {
std::string Where(const std::string& pool) { return pool.empty() ? "any pool" : "pool " + pool; }
}  // namespace

Status Gateway::DrainEndpoint(const std::string& pool, const std::string& url) {
  std::lock_guard lifecycle(lifecycle_mu_);  // one change of an endpoint at a time
  auto eps = Find(pool, url);
  if (eps.empty()) return Status::Error("no endpoint " + url + " in " + Where(pool));
  for (auto* e : eps) {
    if (e->admin() == AdminState::kActive) {
      e->SetAdmin(AdminState::kDraining);
      metrics_.endpoint_changes->With({e->pool(), url, "drain"})->Inc();
      log::Info("endpoint {} of pool {} draining ({} requests in flight)", url, e->pool(),
                e->in_flight());
    }
  }
  return Status::Ok();
}

Status Gateway::UndrainEndpoint(const std::string& pool, const std::string& url) {
  std::lock_guard lifecycle(lifecycle_mu_);  // one change of an endpoint at a time
  auto eps = Find(pool, url);
  if (eps.empty()) return Status::Error("no endpoint " + url + " in " + Where(pool));
  for (auto* e : eps) {
    if (e->admin() != AdminState::kActive) {
      e->SetAdmin(AdminState::kActive);
      metrics_.endpoint_changes->With({e->pool(), url, "undrain"})->Inc();
      log::Info("endpoint {} of pool {} back in rotation", url, e->pool());
    }
    if (PoolState* p = PoolNamed(e->pool())) p->Dispatch();
  }
  return Status::Ok();
}

Status Gateway::RemoveEndpoint(const std::string& pool, const std::string& url) {
  std::lock_guard lifecycle(lifecycle_mu_);  // one change of an endpoint at a time
  auto eps = Find(pool, url);
  if (eps.empty()) return Status::Error("no endpoint " + url + " in " + Where(pool));
  auto now = std::chrono::steady_clock::now();
  for (auto* e : eps) {
    if (e->admin() == AdminState::kRemoved) continue;
    if (e->admin() == AdminState::kActive) {
      e->SetAdmin(AdminState::kDraining);
      metrics_.endpoint_changes->With({e->pool(), url, "drain"})->Inc();
    }
    e->AskRemoval(now);  // Tick() removes it once drained, or at the deadline
  }
  return Status::Ok();
}

void Gateway::OnHealthChange(EndpointState* e, EndpointState::HealthChange c, const char* source) {
  if (c == EndpointState::HealthChange::kNone) return;
  if (c == EndpointState::HealthChange::kEjected) {
    metrics_.ejections->With({e->pool(), e->url(), source})->Inc();
    log::Warn("endpoint {} of pool {} ejected ({} health check)", e->url(), e->pool(), source);
  } else {
    metrics_.rejoins->With({e->pool(), e->url()})->Inc();
    log::Info("endpoint {} of pool {} rejoined", e->url(), e->pool());
    if (PoolState* p = PoolNamed(e->pool())) p->Dispatch();
  }
}

void Gateway::Tick() {
  auto now = std::chrono::steady_clock::now();
  double now_s = std::chrono::duration<double>(now - started_).count();
  auto s = settings();
  for (auto* e : AllEndpoints()) {
    OnHealthChange(e, e->TickHealth(now_s, s->health), "passive");
    if (e->admin() != AdminState::kDraining) continue;
    SteadyTime asked = e->removal_asked();
    if (asked == SteadyTime{}) continue;
    PoolState* pool = PoolNamed(e->pool());
    uint32_t left = e->in_flight();
    if (pool && pool->FinishRemoval(e, now - asked >= s->drain_timeout)) {
      const char* change = left == 0 ? "removed" : "drain_timeout";
      metrics_.endpoint_changes->With({e->pool(), e->url(), change})->Inc();
      log::Info("endpoint {} removed from pool {}{}", e->url(), e->pool(),
                left == 0
                    ? ""
                    : fmt::format(" at the drain deadline, {} requests still in flight", left));
    }
  }
  for (auto& p : pools_) p->Dispatch();
}

// --- reload --------------------------------------------------------------------------------

namespace {

std::string Fingerprint(const config::PluginConfig& p) {
  std::string out = p.name + "@" + fmt::format("{}", p.weight) + "{";
  for (const auto& [k, v] : p.parameters) out += k + "=" + v.value + ";";
  return out + "}";
}

std::string Fingerprint(const config::SchedulingProfile& p) {
  std::string out = p.name + ":";
  for (const auto& f : p.filters) out += Fingerprint(f);
  out += "|";
  for (const auto& s : p.scorers) out += Fingerprint(s);
  return out + "|" + Fingerprint(p.picker);
}

std::string Fingerprint(const config::Pool& p) {
  std::string out = p.name + ":" + p.scheduling_profile + ":";
  for (const auto& m : p.models) {
    out += m.name + "(";
    for (const auto& a : m.aliases) out += a + ",";
    out += ")";
  }
  return out;
}

bool SameCapacity(const EndpointCapacity& a, const EndpointCapacity& b) {
  return a.prefill_tokens_per_s == b.prefill_tokens_per_s &&
         a.decode_tokens_per_s == b.decode_tokens_per_s && a.max_num_seqs == b.max_num_seqs &&
         a.kv_cache_tokens == b.kv_cache_tokens && a.price_per_hour == b.price_per_hour;
}

// What a reload cannot change without a restart; the first difference, as an error.
Status CheckReloadable(const config::Gateway& cur, const config::Gateway& next) {
  auto restart = [](const std::string& what) {
    return Status::Error(what + " cannot change without a restart; nothing was applied");
  };
  if (cur.listen_host != next.listen_host || cur.listen_port != next.listen_port)
    return restart("spec.listen");
  if (cur.workers != next.workers) return restart("spec.workers");
  if (cur.limits.max_request_body_bytes != next.limits.max_request_body_bytes ||
      cur.limits.max_request_header_bytes != next.limits.max_request_header_bytes)
    return restart("spec.limits");
  if (cur.upstream.max_connections_per_endpoint != next.upstream.max_connections_per_endpoint ||
      cur.upstream.max_idle_connections_per_endpoint !=
          next.upstream.max_idle_connections_per_endpoint)
    return restart("spec.upstream");
  if (cur.timeouts.request_headers != next.timeouts.request_headers ||
      cur.timeouts.client_idle != next.timeouts.client_idle)
    return restart("spec.timeouts.requestHeaders and clientIdle");
  if (cur.scrape.interval != next.scrape.interval || cur.scrape.timeout != next.scrape.timeout ||
      cur.scrape.stale_after != next.scrape.stale_after || cur.scrape.path != next.scrape.path ||
      cur.scrape.enabled != next.scrape.enabled)
    return restart("spec.scrape");
  if (cur.ha.listen_host != next.ha.listen_host || cur.ha.listen_port != next.ha.listen_port ||
      cur.ha.replica_id != next.ha.replica_id ||
      cur.ha.resolve_interval != next.ha.resolve_interval)
    return restart("spec.ha.listen, replicaId and resolveInterval");
  if (cur.recording.enabled != next.recording.enabled ||
      cur.recording.path != next.recording.path ||
      cur.recording.max_file_bytes != next.recording.max_file_bytes ||
      cur.recording.max_files != next.recording.max_files ||
      cur.recording.block_size != next.recording.block_size)
    return restart("spec.recording");
  if (cur.pools.size() != next.pools.size()) return restart("the set of spec.pools");
  for (size_t i = 0; i < cur.pools.size(); ++i) {
    if (Fingerprint(cur.pools[i]) != Fingerprint(next.pools[i]))
      return restart(next.pools[i].path + " (its name, models or schedulingProfile)");
    // An endpoint kept must keep its labels and capacity (remove it and add it back instead).
    for (const auto& ne : next.pools[i].endpoints) {
      for (const auto& ce : cur.pools[i].endpoints) {
        if (ce.url != ne.url) continue;
        if (ce.labels != ne.labels || !SameCapacity(ce.capacity, ne.capacity)) {
          return Status::Error(ne.path + ": the labels or hardware of endpoint " + ne.url +
                               " changed; that needs a restart (or remove it in one reload and "
                               "add it back in the next); nothing was applied");
        }
      }
    }
  }
  if (cur.profiles.size() != next.profiles.size()) return restart("spec.schedulingProfiles");
  for (size_t i = 0; i < cur.profiles.size(); ++i) {
    if (Fingerprint(cur.profiles[i]) != Fingerprint(next.profiles[i]))
      return restart(next.profiles[i].path.empty() ? "spec.schedulingProfiles"
                                                   : next.profiles[i].path);
  }
  return Status::Ok();
}

}  // namespace

config::Lifecycle Gateway::lifecycle() {
  std::lock_guard lock(reload_mu_);
  return current_->lifecycle;
}

void Gateway::SetConfigLoader(std::function<Result<config::Gateway>()> loader) {
  std::lock_guard lock(reload_mu_);
  loader_ = std::move(loader);
}

Status Gateway::Reload(const config::Gateway& next_in) {
  std::lock_guard lock(reload_mu_);
  // Port 0 was "any": the port it got is the same listen address, and so is 0 again.
  config::Gateway next = next_in;
  if (cfg_.listen_port == 0 && (next.listen_port == 0 || next.listen_port == port_))
    next.listen_port = current_->listen_port;
  if (cfg_.ha.listen_port == 0 && peers_ &&
      (next.ha.listen_port == 0 || next.ha.listen_port == peers_->port()))
    next.ha.listen_port = current_->ha.listen_port;
  Status ok = CheckReloadable(*current_, next);
  if (!ok.ok()) {
    CountReload(false);
    return ok;
  }
  // Membership first: what is new comes in before what is gone drains, so a pool whose
  // endpoints are all replaced never has none.
  for (const auto& pool_cfg : next.pools) {
    for (const auto& e : pool_cfg.endpoints) {
      auto have = Find(pool_cfg.name, e.url);
      if (have.empty() || have.front()->admin() == AdminState::kRemoved ||
          have.front()->removal_asked() != SteadyTime{}) {
        if (!have.empty()) have.front()->CancelRemoval();
        Status s = AddEndpoint(pool_cfg.name, e);
        if (!s.ok()) log::Warn("reload: endpoint {}: {}", e.url, s.message());
      }
    }
  }
  for (const auto& pool_cfg : next.pools) {
    PoolState* pool = PoolNamed(pool_cfg.name);
    for (auto* e : pool->endpoints()) {
      bool listed = std::any_of(pool_cfg.endpoints.begin(), pool_cfg.endpoints.end(),
                                [&](const config::Endpoint& c) { return c.url == e->url(); });
      if (!listed && e->admin() != AdminState::kRemoved && e->removal_asked() == SteadyTime{}) {
        log::Info("reload: endpoint {} left pool {}: draining, then removed", e->url(),
                  pool_cfg.name);
        (void)RemoveEndpoint(pool_cfg.name, e->url());
      }
    }
  }
  ReloadTenancy(next);
  ApplySettings(next);
  if (scraper_) scraper_->SetActiveHealth(next.health.active);
  if (peers_) peers_->SetPeers(next.ha.peers);
  current_ = std::make_shared<const config::Gateway>(next);
  CountReload(true);
  return Status::Ok();
}

// --- admin API -----------------------------------------------------------------------------

namespace {
constexpr std::string_view kEndpointsPrefix = "/admin/endpoints/";

using AdminReply = Gateway::AdminReply;

AdminReply AdminError(int status, const std::string& message, const std::string& code,
                      const char* result) {
  ApiError e;
  e.status = status;
  e.message = message;
  e.type = status == 401 ? "authentication_error" : "invalid_request_error";
  e.code = code;
  return AdminReply{status, ErrorJson(e), result};
}
}  // namespace

awaitable<void> Gateway::HandleAdmin(Exchange& ex, std::string_view path) {
  AdminReply r = Admin(ex.request(), path);
  metrics_.admin_requests->With({r.result})->Inc();
  co_await RespondJson(ex, r.status, std::move(r.body));
}

Gateway::AdminReply Gateway::Admin(const StringRequest& req, std::string_view path) {
  auto s = settings();
  if (s->admin_keys.empty()) {
    return AdminError(403, "The admin API is off: configure spec.admin.apiKeySha256 to use it.",
                      "admin_disabled", "disabled");
  }
  std::string_view auth = req[bhttp::field::authorization];
  bool authorized = false;
  if (auth.size() > 7 && (auth.starts_with("Bearer ") || auth.starts_with("bearer "))) {
    std::string digest = Sha256Hex(auth.substr(7));
    authorized =
        std::find(s->admin_keys.begin(), s->admin_keys.end(), digest) != s->admin_keys.end();
  }
  if (!authorized) {
    return AdminError(401, "The admin API needs a valid admin key (Authorization: Bearer).",
                      "invalid_admin_key", "unauthorized");
  }
  const bool post = req.method() == bhttp::verb::post;
  if (path == "/admin/endpoints" && req.method() == bhttp::verb::get) {
    json list = json::array();
    for (auto* e : AllEndpoints()) {
      list.push_back({{"pool", e->pool()},
                      {"url", e->url()},
                      {"state", AdminStateName(e->admin())},
                      {"healthy", e->health_ok()},
                      {"reachable", e->reachable()},
                      {"in_flight", e->in_flight()},
                      {"ejections", e->ejections()}});
    }
    return AdminReply{200, json{{"endpoints", list}}.dump()};
  }
  if (path == "/admin/reload" && post) {
    std::function<Result<config::Gateway>()> loader;
    {
      std::lock_guard lock(reload_mu_);
      loader = loader_;
    }
    if (!loader) {
      return AdminError(400, "This gateway was not started with --config: nothing to reload.",
                        "no_config_file", "bad_request");
    }
    auto next = loader();
    if (!next.ok()) CountReload(false);
    Status st = next.ok() ? Reload(*next) : next.status();
    if (!st.ok()) {
      log::Error("admin reload refused, the running configuration stays: {}", st.message());
      return AdminError(400, st.message(), "invalid_config", "bad_request");
    }
    return AdminReply{200, R"({"status":"reloaded"})"};
  }
  if (!post || !path.starts_with(kEndpointsPrefix)) {
    return AdminError(404, "Unknown admin request: " + std::string(path), "unknown_url",
                      "not_found");
  }
  std::string_view action = path.substr(kEndpointsPrefix.size());
  json body = json::parse(req.body(), nullptr, false);
  if (body.is_discarded() || !body.is_object() || !body.contains("url") ||
      !body["url"].is_string() || (body.contains("pool") && !body["pool"].is_string())) {
    return AdminError(400,
                      R"(The body must be a JSON object {"url": "http://...", "pool": "..."}.)",
                      "invalid_body", "bad_request");
  }
  std::string url = body["url"].get<std::string>();
  std::string pool = body.value("pool", "");
  if (pool.empty() && action != "add") {
    std::set<std::string> pools;
    for (auto* e : Find("", url)) pools.insert(e->pool());
    if (pools.size() > 1)
      return AdminError(400, url + " is in several pools: name the pool.", "invalid_body",
                        "bad_request");
  }
  Status st = Status::Ok();
  if (action == "drain") {
    st = DrainEndpoint(pool, url);
  } else if (action == "undrain") {
    st = UndrainEndpoint(pool, url);
  } else if (action == "remove") {
    st = RemoveEndpoint(pool, url);
  } else if (action == "add") {
    if (pool.empty()) {
      if (pools_.size() != 1)
        return AdminError(400, "Name the pool to add the endpoint to.", "invalid_body",
                          "bad_request");
      pool = pools_.front()->config().name;
    }
    config::Endpoint e;
    e.url = url;
    if (body.contains("labels") && body["labels"].is_object()) {
      for (auto& [k, v] : body["labels"].items()) {
        if (v.is_string()) e.labels[k] = v.get<std::string>();
      }
    }
    auto parsed = ParseHttpUrl(url);
    st = parsed.ok() ? AddEndpoint(pool, e) : parsed.status();
  } else {
    return AdminError(404, "Unknown admin action: " + std::string(action), "unknown_url",
                      "not_found");
  }
  if (!st.ok()) {
    bool missing = st.message().starts_with("no ");
    return AdminError(missing ? 404 : 400, st.message(),
                      missing ? "endpoint_not_found" : "invalid_request",
                      missing ? "not_found" : "bad_request");
  }
  json list = json::array();
  for (auto* e : Find(pool, url)) {
    list.push_back({{"pool", e->pool()},
                    {"url", e->url()},
                    {"state", AdminStateName(e->admin())},
                    {"in_flight", e->in_flight()}});
  }
  return AdminReply{200, json{{"endpoints", list}}.dump()};
}

// --- shutdown ------------------------------------------------------------------------------

size_t Gateway::Shutdown(std::chrono::steady_clock::duration deadline) {
  shutting_down_.store(true);
  if (server_) {
    server_->StopAccepting(/*wait=*/true);
    server_->SetDraining();
  }
  auto until = std::chrono::steady_clock::now() + deadline;
  while (in_gateway_.load() > 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  size_t left = in_gateway_.load();
  if (left > 0) log::Warn("shutdown: {} requests still in the gateway at the deadline", left);
  Stop();
  return left;
}

// --- peering -------------------------------------------------------------------------------

uint16_t Gateway::peer_port() const { return peers_ ? peers_->port() : 0; }

bool Gateway::Warm() const {
  if (cfg_.ha.listen_host.empty() || cfg_.ha.peers.empty()) return true;
  auto now = std::chrono::steady_clock::now();
  // A peer's state arrives right after its hello on the connection it dials to this replica
  // (about a megabyte for a large fleet's index). Half a second after the first peer connected,
  // if records came in; else after its redial backoff (at most 2 s) could have brought them.
  int64_t first = first_peer_ns_.load();
  if (first != 0) {
    auto since = std::chrono::steady_clock::duration(now.time_since_epoch().count() - first);
    bool got = peers_ && peers_->stats().records_received > 0;
    if (since >= (got ? std::chrono::milliseconds(500) : std::chrono::milliseconds(2500)))
      return true;
  }
  // No peer within two resolve intervals (the first replica of a fleet): ready anyway.
  return now - started_ >= 2 * cfg_.ha.resolve_interval + std::chrono::seconds(1);
}

void Gateway::StartPeering() {
  if (cfg_.ha.listen_host.empty()) return;
  PeerMeshOptions o;
  o.listen_host = cfg_.ha.listen_host;
  o.listen_port = cfg_.ha.listen_port;
  o.peers = cfg_.ha.peers;
  o.resolve_interval = cfg_.ha.resolve_interval;
  o.replica_id = cfg_.ha.replica_id;
  PeerMeshCallbacks cb;
  cb.on_record = [this](const RoutingRecord& r) {
    if (PoolState* p = PoolNamed(r.pool)) {
      double now =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
      p->Observe(r, now);
    }
  };
  cb.snapshot = [this] {
    std::vector<RoutingRecord> out;
    for (auto& p : pools_) p->Export(&out);
    return out;
  };
  cb.on_peers_changed = [this](size_t n) {
    if (n > 0 && first_peer_ns_.load() == 0) {
      first_peer_ns_.store(std::chrono::steady_clock::now().time_since_epoch().count());
    }
    log::Info("peering: {} peer replicas connected; tenant limits are shared {} ways", n, n + 1);
    std::lock_guard lock(tenancy_mu_);
    limiter_.SetShare(1.0 / double(n + 1));
  };
  peers_ = std::make_unique<PeerMesh>(*control_io_, o, std::move(cb));
  Status s = peers_->Start();
  if (!s.ok()) {
    log::Error("peering off: {}", s.message());
    peers_.reset();
    return;
  }
  PeerMesh* mesh = peers_.get();
  for (auto& p : pools_) {
    p->SetPublisher([mesh](RoutingRecord r) { mesh->Publish(std::move(r)); });
  }
  // Read through peers_, which Stop() resets: a render after it finds no mesh.
  registry_.AddGaugeCallback("infergrid_peers_connected",
                             "Other gateway replicas this one is connected to.", {}, [this] {
                               std::vector<metrics::GaugeSample> out;
                               if (peers_) out.push_back({{}, double(peers_->connected_peers())});
                               return out;
                             });
  registry_.AddGaugeCallback(
      "infergrid_peer_records",
      "Routing decisions shared with peers (sent), applied from them (received) and dropped "
      "(a peer's queue was full), since start.",
      {"direction"}, [this] {
        std::vector<metrics::GaugeSample> out;
        if (!peers_) return out;
        auto st = peers_->stats();
        out.push_back({{"sent"}, double(st.records_sent)});
        out.push_back({{"received"}, double(st.records_received)});
        out.push_back({{"dropped"}, double(st.dropped)});
        return out;
      });
  log::Info("peering on port {} with {} configured peers", peers_->port(), o.peers.size());
}

}  // namespace infergrid::gateway
