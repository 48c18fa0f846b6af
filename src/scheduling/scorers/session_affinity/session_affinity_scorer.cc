#include "scheduling/scorers/session_affinity/session_affinity_scorer.h"

#include <algorithm>

#include "scheduling/load_model.h"
#include "scheduling/registry.h"

namespace infergrid::scheduling {

Result<std::unique_ptr<Scorer>> SessionAffinityScorer::Create(const PluginContext& ctx) {
  IG_RETURN_IF_ERROR(ctx.CheckParams({"overloadThreshold", "kvUsageThreshold",
                                      "prefillHorizonSeconds", "ttlSeconds", "maxSessions"}));
  IG_ASSIGN_OR_RETURN(double overload, ctx.Number("overloadThreshold", 1, 0, 1e6));
  IG_ASSIGN_OR_RETURN(double kv, ctx.Number("kvUsageThreshold", 0.9, 0, 1));
  IG_ASSIGN_OR_RETURN(double h, ctx.Number("prefillHorizonSeconds", 1, 1e-3, 3600));
  IG_ASSIGN_OR_RETURN(double ttl, ctx.Number("ttlSeconds", 600, 1, 1e7));
  IG_ASSIGN_OR_RETURN(double max, ctx.Number("maxSessions", 1e6, 1, 1e9));
  return std::unique_ptr<Scorer>(
      new SessionAffinityScorer(overload, kv, h, ttl, static_cast<size_t>(max)));
}

void SessionAffinityScorer::Score(const RequestInfo& req,
                                  std::span<const EndpointSnapshot> endpoints,
                                  std::span<const size_t> candidates, std::span<double> scores) {
  std::fill(scores.begin(), scores.end(), 0.0);
  if (req.session_key.empty()) return;
  auto it = sessions_.find(req.session_key);
  if (it == sessions_.end()) return;
  if (req.now_seconds - it->second.last_seen > ttl_s_) return;  // forgotten at OnPicked
  size_t home = it->second.endpoint;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (candidates[i] != home) continue;
    if (!Overloaded(req, endpoints[home])) scores[i] = 1.0;
    return;
  }
}

bool SessionAffinityScorer::Overloaded(const RequestInfo& req, const EndpointSnapshot& e) const {
  if (LoadOf(e).Combined(horizon_s_) >= overload_) return true;
  if (e.capacity.kv_cache_tokens == 0) return false;
  // The server's KV usage with this prompt added (all of it: a conservative bound).
  double usage = e.metrics_fresh
                     ? e.kv_cache_usage
                     : double(e.in_flight_prompt_tokens) / double(e.capacity.kv_cache_tokens);
  return usage + double(req.prompt_tokens_estimate) / double(e.capacity.kv_cache_tokens) >=
         kv_threshold_;
}

void SessionAffinityScorer::OnPicked(const RequestInfo& req, const EndpointSnapshot& chosen) {
  if (req.session_key.empty()) return;
  auto it = sessions_.find(req.session_key);
  if (it != sessions_.end()) {
    Entry& e = it->second;
    if (e.endpoint != chosen.index && req.now_seconds - e.last_seen <= ttl_s_) ++moves_;
    e.endpoint = chosen.index;
    e.last_seen = req.now_seconds;
    lru_.splice(lru_.begin(), lru_, e.lru);
    return;
  }
  lru_.push_front(req.session_key);
  sessions_.emplace(req.session_key, Entry{chosen.index, req.now_seconds, lru_.begin()});
  // Forget the least recently seen beyond the bound, and any idle past the TTL.
  while (!lru_.empty() &&
         (sessions_.size() > max_sessions_ ||
          req.now_seconds - sessions_.at(lru_.back()).last_seen > ttl_s_)) {
    sessions_.erase(lru_.back());
    lru_.pop_back();
  }
}

}  // namespace infergrid::scheduling
