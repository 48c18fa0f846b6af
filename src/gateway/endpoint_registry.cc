#include "gateway/endpoint_registry.h"

#include <algorithm>

namespace infergrid::gateway {

void EndpointState::OnStart(uint32_t prompt_tokens, uint32_t prefill_tokens) {
  in_flight_.fetch_add(1, std::memory_order_relaxed);
  in_flight_tokens_.fetch_add(prompt_tokens, std::memory_order_relaxed);
  prefilling_.fetch_add(1, std::memory_order_relaxed);
  prefill_tokens_.fetch_add(prefill_tokens, std::memory_order_relaxed);
}

void EndpointState::OnFirstToken(uint32_t prefill_tokens) {
  prefilling_.fetch_sub(1, std::memory_order_relaxed);
  prefill_tokens_.fetch_sub(prefill_tokens, std::memory_order_relaxed);
}

void EndpointState::OnFinish(uint32_t prompt_tokens, uint32_t prefill_tokens, bool prefilling) {
  if (prefilling) OnFirstToken(prefill_tokens);
  in_flight_.fetch_sub(1, std::memory_order_relaxed);
  in_flight_tokens_.fetch_sub(prompt_tokens, std::memory_order_relaxed);
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

void EndpointState::SetScraped(const ScrapedMetrics& m) {
  std::lock_guard lock(mu_);
  scraped_ = m;
  have_scraped_ = true;
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
  s.healthy = reachable();
  s.in_flight = in_flight();
  s.in_flight_prompt_tokens = in_flight_prompt_tokens();
  s.in_flight_prefilling = prefilling();
  s.in_flight_prefill_tokens = prefill_tokens();
  s.capacity = cfg_.capacity;
  std::lock_guard lock(mu_);
  s.ttft_ewma_seconds = ttft_ewma_;
  s.metrics_fresh = have_scraped_ && now - scraped_.at <= stale_after;
  if (s.metrics_fresh) {
    s.num_requests_running = scraped_.running;
    s.num_requests_waiting = scraped_.waiting;
    s.kv_cache_usage = scraped_.kv_usage;
  }
  return s;
}

PoolState::Pick PoolState::Schedule(const RequestInfo& req) {
  Pick pick;
  auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  scratch_.clear();
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    scratch_.push_back(endpoints_[i]->Snapshot(i, now, stale_after_));
  }
  auto d = scheduler_->Schedule(req, scratch_);
  pick.used_stale_metrics = d.stale_candidates > 0;
  if (!d.endpoint) {
    pick.reason = d.reason;
    return pick;
  }
  pick.endpoint = endpoints_[*d.endpoint];
  pick.index = *d.endpoint;
  double cached = std::min<double>(d.cached_tokens, req.prompt_tokens_estimate);
  pick.prefill_tokens = req.prompt_tokens_estimate - static_cast<uint32_t>(cached);
  pick.endpoint->OnStart(req.prompt_tokens_estimate, pick.prefill_tokens);
  return pick;
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
  for (const auto* e : endpoints_) {
    if (e->reachable()) return true;
  }
  return false;
}

}  // namespace infergrid::gateway
