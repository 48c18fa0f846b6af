#include "scheduling/scorers/session_affinity/session_affinity_scorer.h"

#include <algorithm>
#include <cmath>

#include "scheduling/load_model.h"
#include "scheduling/registry.h"

namespace infergrid::scheduling {

Result<std::unique_ptr<Scorer>> SessionAffinityScorer::Create(const PluginContext& ctx) {
  IG_RETURN_IF_ERROR(
      ctx.CheckParams({"overloadThreshold", "kvUsageThreshold", "prefillHorizonSeconds",
                       "balanceWeight", "activeSeconds", "ttlSeconds", "maxSessions"}));
  Options o;
  IG_ASSIGN_OR_RETURN(o.overload, ctx.Number("overloadThreshold", 1, 0, 1e6));
  IG_ASSIGN_OR_RETURN(o.kv_threshold, ctx.Number("kvUsageThreshold", 0.9, 0, 1));
  IG_ASSIGN_OR_RETURN(o.horizon_s, ctx.Number("prefillHorizonSeconds", 1, 1e-3, 3600));
  IG_ASSIGN_OR_RETURN(o.balance_weight, ctx.Number("balanceWeight", 0, 0, 1e6));
  IG_ASSIGN_OR_RETURN(o.active_s, ctx.Number("activeSeconds", 60, 1e-3, 1e7));
  IG_ASSIGN_OR_RETURN(o.ttl_s, ctx.Number("ttlSeconds", 600, 1, 1e7));
  IG_ASSIGN_OR_RETURN(double max, ctx.Number("maxSessions", 1e6, 1, 1e9));
  o.max_sessions = static_cast<size_t>(max);
  return std::unique_ptr<Scorer>(new SessionAffinityScorer(o));
}

void SessionAffinityScorer::Score(const RequestInfo& req,
                                  std::span<const EndpointSnapshot> endpoints,
                                  std::span<const size_t> candidates, std::span<double> scores) {
  std::fill(scores.begin(), scores.end(), 0.0);
  if (req.session_key.empty()) return;
  auto it = sessions_.find(req.session_key);
  if (it != sessions_.end() && req.now_seconds - it->second.last_seen <= o_.ttl_s) {
    // The home is an endpoint's index in its pool; `endpoints` may be a subset of the pool
    // (flow control passes only those with room), so compare indexes, not positions.
    size_t home = it->second.endpoint;
    for (size_t i = 0; i < candidates.size(); ++i) {
      const EndpointSnapshot& e = endpoints[candidates[i]];
      if (e.index == home && !Overloaded(req, e)) {
        scores[i] = 1.0;
        return;
      }
    }
  }
  if (o_.balance_weight > 0) {
    if (req.now_seconds - counted_at_ > o_.active_s / 10) Recount(req.now_seconds);
    Balance(req, endpoints, candidates, scores);
  }
}

void SessionAffinityScorer::Count(const Entry& e, double sign) {
  if (active_.size() <= e.endpoint) {
    active_.resize(e.endpoint + 1, 0);
    active_tokens_.resize(e.endpoint + 1, 0);
  }
  active_[e.endpoint] += sign;
  active_tokens_[e.endpoint] += sign * e.tokens;
}

void SessionAffinityScorer::Balance(const RequestInfo& req,
                                    std::span<const EndpointSnapshot> endpoints,
                                    std::span<const size_t> candidates, std::span<double> scores) {
  size_t needed = 0;
  for (size_t c : candidates) needed = std::max(needed, endpoints[c].index + 1);
  if (active_.size() < needed) {
    active_.resize(needed, 0);
    active_tokens_.resize(needed, 0);
  }
  bool kv_known = true;
  double rate_sum = 0, sessions = 0;
  for (size_t c : candidates) {
    kv_known = kv_known && endpoints[c].capacity.kv_cache_tokens > 0;
    rate_sum += PrefillRate(endpoints[c]);
    sessions += active_[endpoints[c].index];
  }
  const double n = double(std::max<size_t>(1, candidates.size()));
  const double mean_rate = rate_sum / n;
  const double per_endpoint = std::max(1.0, sessions / n);
  double least = INFINITY;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const EndpointSnapshot& e = endpoints[candidates[i]];
    if (kv_known) {
      scores[i] = (active_tokens_[e.index] + req.prompt_tokens_estimate) /
                  double(e.capacity.kv_cache_tokens);
    } else {  // sessions per unit of prefill rate, as a share of the average endpoint's
      scores[i] = (active_[e.index] + 1) * mean_rate / PrefillRate(e) / per_endpoint;
    }
    least = std::min(least, scores[i]);
  }
  constexpr double kFloor = 0.05;
  for (size_t i = 0; i < candidates.size(); ++i) {
    scores[i] = o_.balance_weight * (kFloor + least) / (kFloor + scores[i]);
  }
}

void SessionAffinityScorer::Recount(double now) {
  std::fill(active_.begin(), active_.end(), 0);
  std::fill(active_tokens_.begin(), active_tokens_.end(), 0);
  // The LRU is in order of last sighting: the active ones are a prefix of it.
  bool active = true;
  for (const std::string& key : lru_) {
    Entry& e = sessions_.at(key);
    active = active && now - e.last_seen <= o_.active_s;
    if (!active && !e.active) break;  // everything older is already uncounted
    e.active = active;
    if (active) Count(e, +1);
  }
  counted_at_ = now;
}

bool SessionAffinityScorer::Overloaded(const RequestInfo& req, const EndpointSnapshot& e) const {
  if (LoadOf(e).Combined(o_.horizon_s) >= o_.overload) return true;
  if (e.capacity.kv_cache_tokens == 0) return false;
  // The server's KV usage with this prompt added (all of it: a conservative bound).
  double usage = e.metrics_fresh
                     ? e.kv_cache_usage
                     : double(e.in_flight_prompt_tokens) / double(e.capacity.kv_cache_tokens);
  return usage + double(req.prompt_tokens_estimate) / double(e.capacity.kv_cache_tokens) >=
         o_.kv_threshold;
}

void SessionAffinityScorer::OnPicked(const RequestInfo& req, const EndpointSnapshot& chosen) {
  Home(req, chosen.index, /*count_move=*/true);
}

void SessionAffinityScorer::OnObserved(const RequestInfo& req, size_t endpoint_index) {
  Home(req, endpoint_index, /*count_move=*/false);
}

void SessionAffinityScorer::ForEachSession(
    const std::function<void(const SessionHome&)>& fn) const {
  for (auto it = lru_.rbegin(); it != lru_.rend(); ++it) {
    const Entry& e = sessions_.at(*it);
    fn(SessionHome{&*it, e.endpoint, e.tokens});
  }
}

void SessionAffinityScorer::Home(const RequestInfo& req, size_t endpoint, bool count_move) {
  if (req.session_key.empty()) return;
  const double tokens = req.prompt_tokens_estimate;
  auto it = sessions_.find(req.session_key);
  if (it != sessions_.end()) {
    Entry& e = it->second;
    if (count_move && e.endpoint != endpoint && req.now_seconds - e.last_seen <= o_.ttl_s) ++moves_;
    if (e.active) Count(e, -1);
    e.endpoint = endpoint;
    e.last_seen = req.now_seconds;
    e.tokens = tokens;
    e.active = true;
    Count(e, +1);
    lru_.splice(lru_.begin(), lru_, e.lru);
    return;
  }
  lru_.push_front(req.session_key);
  auto ins = sessions_.emplace(req.session_key,
                               Entry{endpoint, req.now_seconds, tokens, true, lru_.begin()});
  Count(ins.first->second, +1);
  // Forget the least recently seen beyond the bound, and any idle past the TTL.
  while (!lru_.empty() && (sessions_.size() > o_.max_sessions ||
                           req.now_seconds - sessions_.at(lru_.back()).last_seen > o_.ttl_s)) {
    auto old = sessions_.find(lru_.back());
    if (old->second.active) Count(old->second, -1);
    sessions_.erase(old);
    lru_.pop_back();
  }
}

}  // namespace infergrid::scheduling
