#pragma once
// `session-affinity`, the agent-aware part: the requests of one conversation or agent (its
// session key: x-session-id, OpenAI's prompt_cache_key, or user) stay on the endpoint that
// holds their context. The session's home scores 1 and every other endpoint 0, while the
// home is not overloaded; once it is, the other scorers choose, and the endpoint chosen
// becomes the new home. So a conversation that must move moves once, to the best endpoint,
// and stays there: it never flaps back.
//
// A session that has no home yet (or must leave one) is placed where the active sessions'
// contexts take the smallest share of the KV cache: an agent between turns queues nothing,
// but it will be back in seconds expecting its context still cached, so the contexts homed
// on an endpoint are the cache it needs to come. Footprint(e) = (the last prompt tokens of
// the sessions active on e, plus this prompt) / e's KV cache tokens; those requests score
// balanceWeight * (0.05 + least footprint) / (0.05 + footprint(e)). Where KV sizes are
// unknown, active sessions per unit of prefill rate stand in.
//
// Memory is bounded: at most maxSessions sessions, least recently seen forgotten first, and
// a session idle for ttlSeconds is forgotten.
//
// Parameters:
//   overloadThreshold (default 1): the home's load (load_model.h, Combined) at which the
//     session moves.
//   kvUsageThreshold (default 0.9): ... or its KV cache usage with this prompt added.
//   prefillHorizonSeconds (default 1), as in `load`.
//   balanceWeight (default 0: off): the placement score of a session without a home.
//   activeSeconds (default 60): a session seen this recently counts as active.
//   ttlSeconds (default 600), maxSessions (default 1000000).

#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "infergrid/scheduling.h"

namespace infergrid::scheduling {
struct PluginContext;

class SessionAffinityScorer : public Scorer {
 public:
  struct Options {
    double overload = 1;
    double kv_threshold = 0.9;
    double horizon_s = 1;
    double balance_weight = 0;
    double active_s = 60;
    double ttl_s = 600;
    size_t max_sessions = 1000000;
  };
  explicit SessionAffinityScorer(Options o) : o_(o) {}
  static Result<std::unique_ptr<Scorer>> Create(const PluginContext& ctx);

  std::string_view name() const override { return "session-affinity"; }
  bool uses_metrics() const override { return true; }
  void Score(const RequestInfo& req, std::span<const EndpointSnapshot> endpoints,
             std::span<const size_t> candidates, std::span<double> scores) override;
  void OnPicked(const RequestInfo& req, const EndpointSnapshot& chosen) override;
  void OnObserved(const RequestInfo& req, size_t endpoint_index) override;
  void ForEachSession(const std::function<void(const SessionHome&)>& fn) const override;

  size_t num_sessions() const { return sessions_.size(); }
  uint64_t moves() const { return moves_; }  // sessions that left an overloaded home
  // The last prompt tokens of the sessions seen in the last activeSeconds whose home is
  // `endpoint` (as of the last count, plus picks since).
  double ActiveTokens(size_t endpoint) const {
    return endpoint < active_tokens_.size() ? active_tokens_[endpoint] : 0;
  }
  // Whether `e` is too loaded to keep a session: queued work past overloadThreshold, or its
  // KV cache past kvUsageThreshold with this prompt added.
  bool Overloaded(const RequestInfo& req, const EndpointSnapshot& e) const;

 private:
  struct Entry {
    size_t endpoint;
    double last_seen;
    double tokens;  // its last prompt
    bool active;    // counted in active_ and active_tokens_
    std::list<std::string>::iterator lru;
  };
  void Recount(double now);
  void Balance(const RequestInfo& req, std::span<const EndpointSnapshot> endpoints,
               std::span<const size_t> candidates, std::span<double> scores);
  void Count(const Entry& e, double sign);
  void Home(const RequestInfo& req, size_t endpoint, bool count_move);

  Options o_;
  std::unordered_map<std::string, Entry> sessions_;
  std::list<std::string> lru_;                  // front: most recent
  std::vector<double> active_, active_tokens_;  // per endpoint
  double counted_at_ = -1e300;
  uint64_t moves_ = 0;
};

}  // namespace infergrid::scheduling
