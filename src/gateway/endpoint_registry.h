#pragma once
// The gateway's live view of its fleet: per endpoint, its own accounting (in-flight requests
// and prompt tokens, recent TTFT) and the gauges scraped from the server; per pool, its
// scheduler. Thread-safe: counters are atomics, scraped values and the scheduler are guarded.

#include <atomic>
#include <chrono>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "config/config.h"
#include "gateway/health.h"
#include "gateway/peer_mesh.h"
#include "http/asio.h"
#include "http/url.h"
#include "infergrid/endpoint.h"
#include "metrics/registry.h"
#include "scheduling/flow_control/fair_queue.h"
#include "scheduling/flow_control/saturation.h"
#include "scheduling/scheduler.h"

namespace infergrid::gateway {

using SteadyTime = std::chrono::steady_clock::time_point;

struct ScrapedMetrics {
  double running = 0;
  double waiting = 0;
  double kv_usage = 0;
  double prefix_queries = 0;  // counters, cumulative since the server started
  double prefix_hits = 0;
  double kv_cache_tokens = 0;  // from vllm:cache_config_info; 0 if not reported
  SteadyTime at{};
};

// A request in flight on an endpoint, as its KV cache sees it: its prompt, the most it may
// generate, and what it has generated so far (updated by its handler as tokens stream back).
struct LiveRequest {
  uint32_t prompt_tokens = 0;
  uint32_t max_output_tokens = 0;
  std::atomic<uint32_t> generated{0};
};

// Where an endpoint is in its life (docs/zero-downtime.md): active endpoints get requests;
// draining ones keep their in-flight streams and get nothing new; removed ones are gone (their
// slot stays, so a URL added back reuses it).
enum class AdminState : uint8_t { kActive, kDraining, kRemoved };
const char* AdminStateName(AdminState s);

class EndpointState {
 public:
  EndpointState(size_t id, std::string pool, config::Endpoint cfg, http::HostPort target)
      : id_(id), pool_(std::move(pool)), cfg_(std::move(cfg)), target_(std::move(target)) {}

  size_t id() const { return id_; }  // unique across pools; indexes per-worker upstream pools
  const std::string& pool() const { return pool_; }
  const std::string& url() const { return cfg_.url; }
  const std::map<std::string, std::string>& labels() const { return cfg_.labels; }
  const http::HostPort& target() const { return target_; }

  // A request was sent: `prefill_tokens` of its prompt are expected not to be cached there,
  // and it may generate `max_output_tokens`. The returned entry lives until OnFinish.
  LiveRequest* OnStart(uint32_t prompt_tokens, uint32_t prefill_tokens, uint32_t max_output_tokens);
  // Its first token came back: its prefill no longer queues there.
  void OnFirstToken(uint32_t prefill_tokens);
  // It ended; `prefilling` if no first token ever came.
  void OnFinish(LiveRequest* live, uint32_t prefill_tokens, bool prefilling);
  // The most KV cache the in-flight requests and one more (`prompt_tokens`, up to
  // `max_output_tokens` generated) would hold together (scheduling::flow::PeakKvTokens).
  double PeakKvWith(uint32_t prompt_tokens, uint32_t max_output_tokens) const;
  void RecordTtft(double seconds);

  // Reachability: false after a failed connect (by a request or a scrape), true after success.
  void SetReachable(bool reachable) { reachable_.store(reachable, std::memory_order_relaxed); }
  bool reachable() const { return reachable_.load(std::memory_order_relaxed); }

  AdminState admin() const { return admin_.load(std::memory_order_acquire); }
  void SetAdmin(AdminState s);  // back to active also cancels an asked removal
  // Moves from `from` to `to` only if it is still in `from`.
  bool MoveAdmin(AdminState from, AdminState to) {
    return admin_.compare_exchange_strong(from, to, std::memory_order_acq_rel);
  }
  // When a removal was asked for (the drain's deadline runs from here); epoch if not.
  SteadyTime removal_asked() const;
  void AskRemoval(SteadyTime now);
  void CancelRemoval();

  // Health (gateway/health.h), judged by requests (passive) and probes (active).
  using HealthChange = EndpointHealth::Change;
  HealthChange RecordRequest(bool ok, double now_s, const HealthPolicy& p);
  HealthChange RecordProbe(bool ok, double now_s, const HealthPolicy& p);
  HealthChange TickHealth(double now_s, const HealthPolicy& p);
  bool health_ok() const { return health_ok_.load(std::memory_order_relaxed); }
  uint64_t ejections() const;
  // Requests may go there: active, reachable, healthy.
  bool serving() const { return admin() == AdminState::kActive && reachable() && health_ok(); }

  // Stores a scrape; true if the server's cumulative counters went backwards since the last
  // one (it restarted: its cache is empty).
  bool SetScraped(const ScrapedMetrics& m);
  // Whether scraped metrics are newer than `stale_after`, and a copy of them.
  bool Scraped(SteadyTime now, std::chrono::nanoseconds stale_after, ScrapedMetrics* out) const;

  EndpointSnapshot Snapshot(size_t index, SteadyTime now,
                            std::chrono::nanoseconds stale_after) const;

  uint32_t in_flight() const { return in_flight_.load(std::memory_order_relaxed); }
  uint64_t in_flight_prompt_tokens() const {
    return in_flight_tokens_.load(std::memory_order_relaxed);
  }
  uint32_t prefilling() const { return prefilling_.load(std::memory_order_relaxed); }
  uint64_t prefill_tokens() const { return prefill_tokens_.load(std::memory_order_relaxed); }
  uint64_t kv_tokens() const { return kv_tokens_.load(std::memory_order_relaxed); }
  double ttft_ewma() const;

  // Metric children resolved once (the request path does no label lookups on success).
  metrics::Counter* decisions = nullptr;                  // this endpoint chosen
  std::unordered_map<std::string, metrics::Counter*> ok;  // by model name: code 200

 private:
  size_t id_;
  std::string pool_;
  config::Endpoint cfg_;
  http::HostPort target_;
  std::atomic<uint32_t> in_flight_{0};
  std::atomic<uint64_t> in_flight_tokens_{0};
  std::atomic<uint32_t> prefilling_{0};
  std::atomic<uint64_t> prefill_tokens_{0};
  std::atomic<uint64_t> kv_tokens_{0};
  std::atomic<bool> reachable_{true};
  std::atomic<AdminState> admin_{AdminState::kActive};
  std::atomic<bool> health_ok_{true};
  // Runs `judge` on the health state under mu_ and publishes whether requests may go there.
  template <typename Judge>
  HealthChange UpdateHealth(Judge judge);
  SteadyTime removal_asked_{};  // under mu_
  EndpointHealth health_;       // under mu_
  mutable std::mutex live_mu_;
  std::list<LiveRequest> live_;
  std::list<LiveRequest> spare_;                                        // finished entries, reused
  mutable std::vector<scheduling::flow::RunningRequest> peak_scratch_;  // under live_mu_
  mutable std::mutex mu_;
  double ttft_ewma_ = 0;
  bool have_ttft_ = false;
  ScrapedMetrics scraped_;
  bool have_scraped_ = false;
};

// How a pool admits requests when it is saturated (docs/qos.md).
struct FlowSettings {
  bool enabled = true;
  scheduling::flow::SaturationThresholds thresholds;
  std::vector<scheduling::flow::ClassSpec> classes;
  std::vector<scheduling::flow::TenantSpec> tenants;
  scheduling::flow::FairQueueOptions queue;
};
FlowSettings FlowSettingsFrom(const config::Gateway& cfg);

class PoolState {
 public:
  PoolState(config::Pool cfg, std::unique_ptr<scheduling::Scheduler> scheduler,
            std::vector<EndpointState*> endpoints, std::chrono::nanoseconds stale_after,
            FlowSettings flow);

  const config::Pool& config() const { return cfg_; }
  // Every endpoint ever in the pool, removed ones too (a copy: endpoints may be added).
  std::vector<EndpointState*> endpoints() const;
  // Adds an endpoint (at the end: positions never change).
  void AddEndpoint(EndpointState* e);
  const std::string& profile_name() const { return scheduler_->profile_name(); }

  struct Pick {
    EndpointState* endpoint = nullptr;
    size_t index = 0;  // the endpoint's position in the pool
    std::string reason;
    bool used_stale_metrics = false;  // a scorer wanted metrics that were missing or stale
    uint32_t prefill_tokens = 0;      // the prompt less what the endpoint is expected to hold
    uint32_t output_tokens = 0;       // the most it may generate
    LiveRequest* live = nullptr;      // its entry on the endpoint, for OnFinish
    bool saturated = false;           // none: every endpoint is busy or at a hard bound
  };
  // Snapshots the endpoints and runs the scheduler; the chosen endpoint's in-flight
  // accounting is taken before the lock is released, so concurrent decisions see each other.
  // Serialised per pool. The caller must call endpoint->OnFinish() when the request ends
  // (and OnFirstToken() when its first token comes back), then Dispatch().
  Pick Schedule(const RequestInfo& req, uint32_t output_tokens);
  // A retry: like Schedule, never on an endpoint of `exclude`, where there is room if any has
  // room, else anywhere serving (the request has had its turn already).
  Pick Retry(const RequestInfo& req, uint32_t output_tokens,
             std::span<EndpointState* const> exclude);

  // Sharing decisions with other replicas (gateway/peer_mesh.h): every decision is handed to
  // `publish` (called under the pool's lock; it must not block).
  void SetPublisher(std::function<void(RoutingRecord)> publish);
  // A decision of another replica; ignored if its endpoint is not in this pool.
  void Observe(const RoutingRecord& r, double now_s);
  // What this pool's scheduler knows (sessions' homes, then the prefix index per endpoint),
  // as records, oldest first.
  void Export(std::vector<RoutingRecord>* out) const;
  // The endpoint's server restarted: the prefix index forgets what it held.
  void ForgetEndpoint(EndpointState* e);
  // A draining endpoint whose removal was asked for becomes removed once nothing is in flight
  // there, or regardless when `deadline_passed`. Under the pool's lock, so no decision can
  // send it a request in between. True if it was removed now.
  bool FinishRemoval(EndpointState* e, bool deadline_passed);

  // A request waiting for admission. Shared by its handler (on its worker thread) and
  // whichever thread admits it: `timer` is woken (cancelled, on its own executor) when it is
  // released; the fields below are written under the pool's lock before that.
  struct Waiter {
    explicit Waiter(http::asio::any_io_executor ex) : timer(std::move(ex)) {}
    http::asio::steady_timer timer;
    RequestInfo info;
    uint32_t output_tokens = 0;  // the most it may generate (max_tokens, else an estimate)
    uint64_t id = 0;
    bool released = false;
    Pick pick;
    // The handler's, on its worker thread only.
    bool client_gone = false;
    bool watch_done = false;
  };
  struct Enqueued {
    scheduling::flow::Refusal refusal = scheduling::flow::Refusal::kNone;
    double expected_wait_s = 0;
    double deadline_s = 0;  // on the pool's clock
  };
  // The common case, with no waiter: nothing is queued and an endpoint has room, so the
  // request goes now (its pick; or, endpoint null, the reason none can serve). Nullopt: it
  // must queue (Enqueue).
  std::optional<Pick> AdmitNow(const RequestInfo& req, uint32_t output_tokens,
                               const scheduling::flow::FairQueue::Arrival& a);
  // Queues `w` (its tenant, class and cost in `a`) and releases whatever may go now; `w` may
  // come back already released. Flow control must be enabled.
  Enqueued Enqueue(std::shared_ptr<Waiter> w, scheduling::flow::FairQueue::Arrival a);
  // Releases queued requests, in the fair queue's order, while an endpoint has room for the
  // next. Called on arrivals, on completions, and on a tick (scrapes change room).
  void Dispatch();
  // Whether the waiter was released (read under the pool's lock, so its pick is visible).
  bool IsReleased(const Waiter& w) const;
  // Takes a waiter out of the queue (deadline passed or client gone): false if it was already
  // released (then it holds its pick and must be served or finished as usual).
  bool Withdraw(Waiter& w);
  // The request released with `estimated` tokens used `actual`: fairness is corrected.
  void Correct(const std::string& tenant, const std::string& klass, double estimated,
               double actual);
  void Reconfigure(const FlowSettings& flow);
  // Drops every queued waiter and releases nothing more (the gateway is stopping: their
  // timers' io_contexts are about to go).
  void Close();
  bool flow_enabled() const { return flow_enabled_; }

  // Seconds on the pool's clock (for deadlines and the queue).
  double Now() const;
  size_t queued() const;
  size_t queued(const std::string& tenant, const std::string& klass) const;
  bool saturated() const { return saturated_.load(std::memory_order_relaxed); }

  void OnCompleted(const RequestInfo& req, EndpointState* endpoint, const Completion& c);
  // Ready: at least one endpoint is reachable.
  bool Ready() const;

 private:
  Pick ScheduleLocked(const RequestInfo& req, uint32_t output_tokens, bool only_with_room,
                      std::span<EndpointState* const> exclude = {});
  void DispatchLocked();

  config::Pool cfg_;
  mutable std::mutex mu_;
  std::unique_ptr<scheduling::Scheduler> scheduler_;
  std::vector<EndpointState*> endpoints_;
  std::chrono::nanoseconds stale_after_;
  std::vector<EndpointSnapshot> scratch_;
  std::vector<EndpointSnapshot> roomy_;
  std::atomic<bool> flow_enabled_;
  scheduling::flow::SaturationThresholds thresholds_;
  scheduling::flow::FairQueue queue_;
  std::unordered_map<uint64_t, std::shared_ptr<Waiter>> waiting_;
  std::atomic<bool> saturated_{false};
  bool closed_ = false;
  std::function<void(RoutingRecord)> publish_;
  SteadyTime epoch_ = std::chrono::steady_clock::now();
};

}  // namespace infergrid::gateway
