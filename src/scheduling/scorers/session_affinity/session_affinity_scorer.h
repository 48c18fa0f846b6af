#pragma once
// `session-affinity`, the agent-aware part: the requests of one conversation or agent (its
// session key: x-session-id, OpenAI's prompt_cache_key, or user) stay on the endpoint that
// holds their context. The session's home scores 1 and every other endpoint 0, while the
// home is not overloaded; once it is, all score 0 and the other scorers choose, and the
// endpoint chosen becomes the new home. So a conversation that must move moves once, to the
// best endpoint, and stays there: it never flaps back.
//
// Memory is bounded: at most maxSessions sessions, least recently seen forgotten first, and
// a session idle for ttlSeconds is forgotten.
//
// Parameters:
//   overloadThreshold (default 1): the home's load (load_model.h, Combined) beyond which the
//     session moves.
//   prefillHorizonSeconds (default 1), as in `load`.
//   ttlSeconds (default 600), maxSessions (default 1000000).

#include <list>
#include <memory>
#include <string>
#include <unordered_map>

#include "common/result.h"
#include "infergrid/scheduling.h"

namespace infergrid::scheduling {
struct PluginContext;

class SessionAffinityScorer : public Scorer {
 public:
  SessionAffinityScorer(double overload, double kv_threshold, double horizon_s, double ttl_s,
                        size_t max_sessions)
      : overload_(overload),
        kv_threshold_(kv_threshold),
        horizon_s_(horizon_s),
        ttl_s_(ttl_s),
        max_sessions_(max_sessions) {}
  static Result<std::unique_ptr<Scorer>> Create(const PluginContext& ctx);

  std::string_view name() const override { return "session-affinity"; }
  bool uses_metrics() const override { return true; }
  void Score(const RequestInfo& req, std::span<const EndpointSnapshot> endpoints,
             std::span<const size_t> candidates, std::span<double> scores) override;
  void OnPicked(const RequestInfo& req, const EndpointSnapshot& chosen) override;

  size_t num_sessions() const { return sessions_.size(); }
  uint64_t moves() const { return moves_; }  // sessions that left an overloaded home
  // Whether `e` is too loaded to keep a session: queued work past overloadThreshold, or its
  // KV cache past kvUsageThreshold with this prompt added.
  bool Overloaded(const RequestInfo& req, const EndpointSnapshot& e) const;

 private:
  struct Entry {
    size_t endpoint;
    double last_seen;
    std::list<std::string>::iterator lru;
  };
  double overload_, kv_threshold_, horizon_s_, ttl_s_;
  size_t max_sessions_;
  std::unordered_map<std::string, Entry> sessions_;
  std::list<std::string> lru_;  // front: most recent
  uint64_t moves_ = 0;
};

}  // namespace infergrid::scheduling
