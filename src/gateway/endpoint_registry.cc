#include "gateway/endpoint_registry.h"

#include <algorithm>

namespace infergrid::gateway {

const char* AdminStateName(AdminState s) {
  switch (s) {
    case AdminState::kActive:
      return "active";
    case AdminState::kDraining:
      return "draining";
    case AdminState::kRemoved:
      return "removed";
  }
  return "?";
}

void EndpointState::SetAdmin(AdminState s) {
  admin_.store(s, std::memory_order_release);
  if (s == AdminState::kActive) CancelRemoval();
}

SteadyTime EndpointState::removal_asked() const {
  std::lock_guard lock(mu_);
  return removal_asked_;
}

void EndpointState::AskRemoval(SteadyTime now) {
  std::lock_guard lock(mu_);
  if (removal_asked_ == SteadyTime{}) removal_asked_ = now;
}

void EndpointState::CancelRemoval() {
  std::lock_guard lock(mu_);
  removal_asked_ = SteadyTime{};
}

template <typename Judge>
EndpointState::HealthChange EndpointState::UpdateHealth(Judge judge) {
  std::lock_guard lock(mu_);
  HealthChange c = judge(health_);
  health_ok_.store(health_.available(), std::memory_order_relaxed);
  return c;
}

EndpointState::HealthChange EndpointState::RecordRequest(bool ok, double now_s,
                                                         const HealthPolicy& p) {
  return UpdateHealth([&](EndpointHealth& h) { return h.OnRequest(ok, now_s, p); });
}

EndpointState::HealthChange EndpointState::RecordProbe(bool ok, double now_s,
                                                       const HealthPolicy& p) {
  return UpdateHealth([&](EndpointHealth& h) { return h.OnProbe(ok, now_s, p); });
}

EndpointState::HealthChange EndpointState::TickHealth(double now_s, const HealthPolicy& p) {
  return UpdateHealth([&](EndpointHealth& h) { return h.Tick(now_s, p); });
}

uint64_t EndpointState::ejections() const {
  std::lock_guard lock(mu_);
  return health_.ejections();
}

LiveRequest* EndpointState::OnStart(uint32_t prompt_tokens, uint32_t prefill_tokens,
                                    uint32_t max_output_tokens) {
  LiveRequest* live;
  {
    std::lock_guard lock(live_mu_);
    // Entries are list nodes reused from finished requests: no allocation per request.
    if (spare_.empty()) {
      live_.emplace_back();
    } else {
      live_.splice(live_.end(), spare_, spare_.begin());
    }
    live = &live_.back();
    live->prompt_tokens = prompt_tokens;
    live->max_output_tokens = max_output_tokens;
    live->generated.store(0, std::memory_order_relaxed);
  }
  in_flight_.fetch_add(1, std::memory_order_relaxed);
  kv_tokens_.fetch_add(uint64_t{prompt_tokens} + max_output_tokens, std::memory_order_relaxed);
  in_flight_tokens_.fetch_add(prompt_tokens, std::memory_order_relaxed);
  prefilling_.fetch_add(1, std::memory_order_relaxed);
  prefill_tokens_.fetch_add(prefill_tokens, std::memory_order_relaxed);
  return live;
}

void EndpointState::OnFirstToken(uint32_t prefill_tokens) {
  prefilling_.fetch_sub(1, std::memory_order_relaxed);
  prefill_tokens_.fetch_sub(prefill_tokens, std::memory_order_relaxed);
}

void EndpointState::OnFinish(LiveRequest* live, uint32_t prefill_tokens, bool prefilling) {
  if (prefilling) OnFirstToken(prefill_tokens);
  const uint32_t prompt_tokens = live->prompt_tokens;
  kv_tokens_.fetch_sub(uint64_t{prompt_tokens} + live->max_output_tokens,
                       std::memory_order_relaxed);
  {
    std::lock_guard lock(live_mu_);
    for (auto it = live_.begin(); it != live_.end(); ++it) {
      if (&*it == live) {
        spare_.splice(spare_.begin(), live_, it);
        break;
      }
    }
  }
  in_flight_.fetch_sub(1, std::memory_order_relaxed);
  in_flight_tokens_.fetch_sub(prompt_tokens, std::memory_order_relaxed);
}

double EndpointState::PeakKvWith(uint32_t prompt_tokens, uint32_t max_output_tokens) const {
  std::lock_guard lock(live_mu_);
  peak_scratch_.clear();
  for (const auto& r : live_) {
    // One that generates past its estimate (no max_tokens) holds what it has generated.
    uint32_t g = r.generated.load(std::memory_order_relaxed);
    peak_scratch_.push_back({double(r.prompt_tokens) + g,
                             double(r.max_output_tokens - std::min(g, r.max_output_tokens))});
  }
  peak_scratch_.push_back({double(prompt_tokens), double(max_output_tokens)});
  return scheduling::flow::PeakKvTokens(peak_scratch_);
}

void EndpointState::RecordTtft(double seconds) {
  std::lock_guard lock(mu_);
  // An exponentially weighted mean over roughly the last ten requests.
  ttft_ewma_ = have_ttft_ ? 0.9 * ttft_ewma_ + 0.1 * seconds : seconds;
  have_ttft_ = true;
}

double EndpointState::ttft_ewma() const {
  std::lock_guard lock(mu_);
  return ttft_ewma_;
}

bool EndpointState::SetScraped(const ScrapedMetrics& m) {
  std::lock_guard lock(mu_);
  bool restarted = have_scraped_ && m.prefix_queries < scraped_.prefix_queries;
  scraped_ = m;
  have_scraped_ = true;
  return restarted;
}

bool EndpointState::Scraped(SteadyTime now, std::chrono::nanoseconds stale_after,
                            ScrapedMetrics* out) const {
  std::lock_guard lock(mu_);
  if (out) *out = scraped_;
  return have_scraped_ && now - scraped_.at <= stale_after;
}

EndpointSnapshot EndpointState::Snapshot(size_t index, SteadyTime now,
                                         std::chrono::nanoseconds stale_after) const {
  EndpointSnapshot s;
  s.index = index;
  s.url = &cfg_.url;
  s.labels = &cfg_.labels;
  s.healthy = reachable() && health_ok();
  s.in_flight = in_flight();
  s.in_flight_prompt_tokens = in_flight_prompt_tokens();
  s.in_flight_prefilling = prefilling();
  s.in_flight_prefill_tokens = prefill_tokens();
  s.capacity = cfg_.capacity;
  std::lock_guard lock(mu_);
  // A server that reports its KV cache's size (vLLM's cache_config_info) is sized by it when
  // the config gives no hardware: the size does not change while it runs, so stale is fine.
  if (s.capacity.kv_cache_tokens == 0 && have_scraped_ && scraped_.kv_cache_tokens > 0) {
    s.capacity.kv_cache_tokens = static_cast<uint64_t>(scraped_.kv_cache_tokens);
  }
  s.ttft_ewma_seconds = ttft_ewma_;
  s.metrics_fresh = have_scraped_ && now - scraped_.at <= stale_after;
  if (s.metrics_fresh) {
    s.num_requests_running = scraped_.running;
    s.num_requests_waiting = scraped_.waiting;
    s.kv_cache_usage = scraped_.kv_usage;
  }
  return s;
}

FlowSettings FlowSettingsFrom(const config::Gateway& cfg) {
  namespace flow = scheduling::flow;
  FlowSettings f;
  const auto& fc = cfg.flow_control;
  f.enabled = fc.enabled;
  f.thresholds.max_requests = fc.saturation.max_requests_per_endpoint;
  f.thresholds.kv_cache_utilization = fc.saturation.kv_cache_utilization;
  f.thresholds.queue_depth = fc.saturation.queue_depth;
  auto classes =
      cfg.tenancy.classes.empty() ? config::DefaultPriorityClasses() : cfg.tenancy.classes;
  for (const auto& c : classes) {
    f.classes.push_back(flow::ClassSpec{c.name, c.priority, c.sheddable,
                                        std::chrono::duration<double>(c.max_queue_wait).count()});
  }
  for (const auto& t : cfg.tenancy.tenants) f.tenants.push_back({t.name, t.weight});
  f.queue.max_queued = fc.max_queued_requests;
  f.queue.queue_timeout_s = std::chrono::duration<double>(fc.queue_timeout).count();
  f.queue.prefer_continuing_sessions = fc.prefer_continuing_sessions;
  f.queue.new_session_max_delay_s = std::chrono::duration<double>(fc.new_session_max_delay).count();
  return f;
}

PoolState::PoolState(config::Pool cfg, std::unique_ptr<scheduling::Scheduler> scheduler,
                     std::vector<EndpointState*> endpoints, std::chrono::nanoseconds stale_after,
                     FlowSettings flow)
    : cfg_(std::move(cfg)),
      scheduler_(std::move(scheduler)),
      endpoints_(std::move(endpoints)),
      stale_after_(stale_after),
      flow_enabled_(flow.enabled),
      thresholds_(flow.thresholds),
      queue_(flow.classes, flow.tenants, flow.queue) {}

double PoolState::Now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_).count();
}

std::vector<EndpointState*> PoolState::endpoints() const {
  std::lock_guard lock(mu_);
  return endpoints_;
}

void PoolState::AddEndpoint(EndpointState* e) {
  std::lock_guard lock(mu_);
  endpoints_.push_back(e);
}

PoolState::Pick PoolState::Schedule(const RequestInfo& req, uint32_t output_tokens) {
  std::lock_guard lock(mu_);
  return ScheduleLocked(req, output_tokens, /*only_with_room=*/false);
}

PoolState::Pick PoolState::Retry(const RequestInfo& req, uint32_t output_tokens,
                                 std::span<EndpointState* const> exclude) {
  std::lock_guard lock(mu_);
  Pick pick = ScheduleLocked(req, output_tokens, /*only_with_room=*/true, exclude);
  if (pick.saturated) pick = ScheduleLocked(req, output_tokens, false, exclude);
  return pick;
}

PoolState::Pick PoolState::ScheduleLocked(const RequestInfo& req, uint32_t output_tokens,
                                          bool only_with_room,
                                          std::span<EndpointState* const> exclude) {
  Pick pick;
  auto now = std::chrono::steady_clock::now();
  scratch_.clear();
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    // Draining and removed endpoints are not candidates at all; unhealthy ones are (marked),
    // so a pool with none healthy answers at once rather than queueing.
    if (endpoints_[i]->admin() != AdminState::kActive) continue;
    if (std::find(exclude.begin(), exclude.end(), endpoints_[i]) != exclude.end()) continue;
    scratch_.push_back(endpoints_[i]->Snapshot(i, now, stale_after_));
  }
  std::span<const EndpointSnapshot> candidates = scratch_;
  if (only_with_room) {
    bool wait = scheduling::flow::SelectWithRoom(
        scratch_,
        [&](size_t i) {
          return endpoints_[scratch_[i].index]->PeakKvWith(req.prompt_tokens_estimate,
                                                           output_tokens);
        },
        thresholds_, &roomy_);
    if (wait) {
      pick.saturated = true;
      return pick;
    }
    candidates = roomy_;
  }
  auto d = scheduler_->Schedule(req, candidates);
  pick.used_stale_metrics = d.stale_candidates > 0;
  if (!d.endpoint) {
    pick.reason = d.reason;
    return pick;
  }
  pick.index = candidates[*d.endpoint].index;
  pick.endpoint = endpoints_[pick.index];
  double cached = std::min<double>(d.cached_tokens, req.prompt_tokens_estimate);
  pick.prefill_tokens = req.prompt_tokens_estimate - static_cast<uint32_t>(cached);
  pick.output_tokens = output_tokens;
  pick.live =
      pick.endpoint->OnStart(req.prompt_tokens_estimate, pick.prefill_tokens, output_tokens);
  if (publish_) {
    RoutingRecord r;
    r.pool = cfg_.name;
    r.endpoint_url = pick.endpoint->url();
    r.session_key = req.session_key;
    r.prompt_tokens = req.prompt_tokens_estimate;
    if (const auto* prefix = scheduler_->shared().prefix()) {
      auto keys = prefix->keys();
      r.prefix_keys.assign(keys.begin(), keys.end());
    }
    publish_(std::move(r));
  }
  return pick;
}

void PoolState::SetPublisher(std::function<void(RoutingRecord)> publish) {
  std::lock_guard lock(mu_);
  publish_ = std::move(publish);
}

void PoolState::Observe(const RoutingRecord& r, double now_s) {
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    if (endpoints_[i]->url() != r.endpoint_url) continue;
    RequestInfo req;
    req.model = "";
    req.pool = cfg_.name;
    req.session_key = r.session_key;
    req.prompt_tokens_estimate = r.prompt_tokens;
    req.now_seconds = now_s;
    scheduler_->Observe(req, i, r.prefix_keys);
    return;
  }
}

void PoolState::Export(std::vector<RoutingRecord>* out) const {
  std::lock_guard lock(mu_);
  for (const auto& ws : scheduler_->scorers()) {
    ws.scorer->ForEachSession([&](const Scorer::SessionHome& h) {
      if (h.endpoint >= endpoints_.size()) return;
      RoutingRecord r;
      r.pool = cfg_.name;
      r.endpoint_url = endpoints_[h.endpoint]->url();
      r.session_key = *h.key;
      r.prompt_tokens = static_cast<uint32_t>(h.tokens);
      out->push_back(std::move(r));
    });
  }
  auto* prefix = const_cast<scheduling::Scheduler&>(*scheduler_).shared().prefix();
  if (prefix == nullptr) return;
  // Oldest first in chunks, each chunk head (most recent) first as Commit records them.
  constexpr size_t kChunk = 256;
  std::vector<BlockHash> entries;
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    entries.clear();
    prefix->index().Entries(i, &entries);
    for (size_t at = 0; at < entries.size(); at += kChunk) {
      size_t end = std::min(entries.size(), at + kChunk);
      RoutingRecord r;
      r.pool = cfg_.name;
      r.endpoint_url = endpoints_[i]->url();
      r.prefix_keys.assign(entries.rbegin() + (entries.size() - end),
                           entries.rbegin() + (entries.size() - at));
      out->push_back(std::move(r));
    }
  }
}

bool PoolState::FinishRemoval(EndpointState* e, bool deadline_passed) {
  std::lock_guard lock(mu_);
  if (e->admin() != AdminState::kDraining || e->removal_asked() == SteadyTime{}) return false;
  if (e->in_flight() > 0 && !deadline_passed) return false;
  if (!e->MoveAdmin(AdminState::kDraining, AdminState::kRemoved)) return false;
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    if (endpoints_[i] == e) scheduler_->ForgetEndpoint(i);
  }
  return true;
}

void PoolState::ForgetEndpoint(EndpointState* e) {
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    if (endpoints_[i] == e) scheduler_->ForgetEndpoint(i);
  }
}

std::optional<PoolState::Pick> PoolState::AdmitNow(const RequestInfo& req, uint32_t output_tokens,
                                                   const scheduling::flow::FairQueue::Arrival& a) {
  std::lock_guard lock(mu_);
  if (closed_ || queue_.size() > 0) return std::nullopt;
  Pick pick = ScheduleLocked(req, output_tokens, /*only_with_room=*/true);
  if (pick.saturated) return std::nullopt;
  scheduling::flow::FairQueue::Arrival now = a;
  now.now_s = Now();
  queue_.NoteAdmitted(now);
  return pick;
}

PoolState::Enqueued PoolState::Enqueue(std::shared_ptr<Waiter> w,
                                       scheduling::flow::FairQueue::Arrival a) {
  Enqueued e;
  std::lock_guard lock(mu_);
  a.user = w.get();
  a.now_s = Now();
  if (closed_) {
    e.refusal = scheduling::flow::Refusal::kQueueFull;
    return e;
  }
  auto pushed = queue_.Push(a);
  e.refusal = pushed.refusal;
  e.expected_wait_s = pushed.expected_wait_s;
  e.deadline_s = pushed.deadline_s;
  if (pushed.refusal != scheduling::flow::Refusal::kNone) return e;
  w->id = pushed.id;
  waiting_.emplace(pushed.id, std::move(w));
  DispatchLocked();
  return e;
}

void PoolState::Dispatch() {
  std::lock_guard lock(mu_);
  if (!closed_) DispatchLocked();
}

void PoolState::Close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  for (auto& [id, w] : waiting_) queue_.Remove(id);
  waiting_.clear();
}

void PoolState::DispatchLocked() {
  double now = Now();
  while (const auto* next = queue_.Peek(now)) {
    auto* w = static_cast<Waiter*>(next->user);
    Pick pick = ScheduleLocked(w->info, w->output_tokens, /*only_with_room=*/true);
    if (pick.saturated) {
      saturated_.store(true, std::memory_order_relaxed);
      return;
    }
    // Released with an endpoint, or with the reason none can serve it (answered as before).
    queue_.Pop(now);
    auto it = waiting_.find(w->id);
    std::shared_ptr<Waiter> owned = std::move(it->second);
    waiting_.erase(it);
    owned->pick = std::move(pick);
    owned->released = true;
    http::asio::post(owned->timer.get_executor(), [owned] { owned->timer.cancel(); });
  }
  saturated_.store(false, std::memory_order_relaxed);
}

bool PoolState::IsReleased(const Waiter& w) const {
  std::lock_guard lock(mu_);
  return w.released;
}

bool PoolState::Withdraw(Waiter& w) {
  std::lock_guard lock(mu_);
  if (w.released) return false;
  queue_.Remove(w.id);
  waiting_.erase(w.id);
  return true;
}

void PoolState::Correct(const std::string& tenant, const std::string& klass, double estimated,
                        double actual) {
  std::lock_guard lock(mu_);
  queue_.Correct(tenant, klass, estimated, actual);
}

void PoolState::Reconfigure(const FlowSettings& flow) {
  std::lock_guard lock(mu_);
  thresholds_ = flow.thresholds;
  queue_.Reconfigure(flow.classes, flow.tenants, flow.queue);
  // Turning flow control off admits new requests directly; what is queued still drains.
  flow_enabled_ = flow.enabled;
  if (!closed_) DispatchLocked();
}

size_t PoolState::queued() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

size_t PoolState::queued(const std::string& tenant, const std::string& klass) const {
  std::lock_guard lock(mu_);
  return queue_.queued(tenant, klass);
}

void PoolState::OnCompleted(const RequestInfo& req, EndpointState* endpoint, const Completion& c) {
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    if (endpoints_[i] == endpoint) {
      scheduler_->OnCompleted(req, i, c);
      return;
    }
  }
}

bool PoolState::Ready() const {
  std::lock_guard lock(mu_);
  for (const auto* e : endpoints_) {
    if (e->serving()) return true;
  }
  return false;
}

}  // namespace infergrid::gateway
