#include "scheduling/scheduler.h"

namespace infergrid::scheduling {

Scheduler::Scheduler(std::string profile_name, std::vector<std::unique_ptr<Filter>> filters,
                     std::vector<WeightedScorer> scorers, std::unique_ptr<Picker> picker,
                     uint64_t seed, std::unique_ptr<SharedState> shared)
    : profile_name_(std::move(profile_name)),
      filters_(std::move(filters)),
      scorers_(std::move(scorers)),
      picker_(std::move(picker)),
      shared_(shared ? std::move(shared) : std::make_unique<SharedState>()),
      rng_(seed) {
  for (const auto& ws : scorers_) uses_metrics_ = uses_metrics_ || ws.scorer->uses_metrics();
}

Decision Scheduler::Schedule(const RequestInfo& req, std::span<const EndpointSnapshot> endpoints) {
  Decision d;
  PrefixState* prefix = shared_->prefix();
  if (prefix) prefix->BeginDecision();
  candidates_.clear();
  for (size_t i = 0; i < endpoints.size(); ++i) candidates_.push_back(i);
  if (candidates_.empty()) {
    d.reason = "the pool has no endpoints";
    return d;
  }
  for (auto& f : filters_) {
    f->Apply(req, endpoints, &candidates_);
    if (candidates_.empty()) {
      d.reason = "no endpoint passed the '" + std::string(f->name()) + "' filter";
      return d;
    }
  }
  if (uses_metrics_) {
    for (size_t c : candidates_) d.stale_candidates += endpoints[c].metrics_fresh ? 0 : 1;
  }
  total_.assign(candidates_.size(), 0.0);
  for (auto& ws : scorers_) {
    partial_.assign(candidates_.size(), 0.0);
    ws.scorer->Score(req, endpoints, candidates_, partial_);
    for (size_t i = 0; i < candidates_.size(); ++i) total_[i] += ws.weight * partial_[i];
  }
  auto pos = picker_->Pick(candidates_, total_, rng_);
  if (!pos) {
    d.reason = "the picker chose no endpoint";
    return d;
  }
  d.endpoint = candidates_[*pos];
  d.score = total_[*pos];
  if (prefix && prefix->prepared()) {
    d.cached_tokens = prefix->CachedTokens(endpoints[*d.endpoint].index);
    prefix->Commit(endpoints[*d.endpoint].index);
  }
  for (auto& ws : scorers_) ws.scorer->OnPicked(req, endpoints[*d.endpoint]);
  return d;
}

void Scheduler::OnCompleted(const RequestInfo& req, size_t endpoint_index, const Completion& c) {
  for (auto& ws : scorers_) ws.scorer->OnCompleted(req, endpoint_index, c);
}

void Scheduler::Observe(const RequestInfo& req, size_t endpoint_index,
                        std::span<const BlockHash> prefix_keys) {
  if (PrefixState* prefix = shared_->prefix(); prefix && !prefix_keys.empty())
    prefix->Record(endpoint_index, prefix_keys);
  for (auto& ws : scorers_) ws.scorer->OnObserved(req, endpoint_index);
}

void Scheduler::ForgetEndpoint(size_t endpoint_index) {
  if (PrefixState* prefix = shared_->prefix()) prefix->Forget(endpoint_index);
}

}  // namespace infergrid::scheduling
