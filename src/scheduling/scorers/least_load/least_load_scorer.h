#pragma once
// `least-load`: prefers the endpoint with the least outstanding work. Load is the larger of
// the gateway's own in-flight count and the server's scraped running+waiting requests (so
// traffic from other clients counts too, without counting ours twice), plus in-flight prompt
// tokens expressed in requests. Stale metrics fall back to the gateway's accounting alone.
//
// Parameters:
//   promptTokensPerRequest (default 2048): this many in-flight prompt tokens weigh as one request.
//   waitingWeight (default 1): how much a request waiting on the server weighs against a running
//   one.

#include <memory>

#include "common/result.h"
#include "infergrid/scheduling.h"

namespace infergrid::scheduling {
struct PluginContext;

class LeastLoadScorer : public Scorer {
 public:
  LeastLoadScorer(double prompt_tokens_per_request, double waiting_weight)
      : prompt_tokens_per_request_(prompt_tokens_per_request), waiting_weight_(waiting_weight) {}
  static Result<std::unique_ptr<Scorer>> Create(const PluginContext& ctx);

  std::string_view name() const override { return "least-load"; }
  void Score(const RequestInfo& req, std::span<const EndpointSnapshot> endpoints,
             std::span<const size_t> candidates, std::span<double> scores) override;

  // The load figure of one endpoint, exposed for tests and the planner.
  double Load(const EndpointSnapshot& e) const;

 private:
  double prompt_tokens_per_request_;
  double waiting_weight_;
};

}  // namespace infergrid::scheduling
