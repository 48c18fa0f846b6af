#include "scheduling/scorers/least_load/least_load_scorer.h"

#include <algorithm>

#include "scheduling/registry.h"

namespace infergrid::scheduling {

Result<std::unique_ptr<Scorer>> LeastLoadScorer::Create(const PluginContext& ctx) {
  IG_RETURN_IF_ERROR(ctx.CheckParams({"promptTokensPerRequest", "waitingWeight"}));
  IG_ASSIGN_OR_RETURN(double tokens, ctx.Number("promptTokensPerRequest", 2048, 1, 1e9));
  IG_ASSIGN_OR_RETURN(double waiting, ctx.Number("waitingWeight", 1, 0, 1000));
  return std::unique_ptr<Scorer>(new LeastLoadScorer(tokens, waiting));
}

double LeastLoadScorer::Load(const EndpointSnapshot& e) const {
  double requests = e.in_flight;
  if (e.metrics_fresh) {
    requests =
        std::max(requests, e.num_requests_running + waiting_weight_ * e.num_requests_waiting);
  }
  return requests + static_cast<double>(e.in_flight_prompt_tokens) / prompt_tokens_per_request_;
}

void LeastLoadScorer::Score(const RequestInfo&, std::span<const EndpointSnapshot> endpoints,
                            std::span<const size_t> candidates, std::span<double> scores) {
  double max_load = 0;
  for (size_t c : candidates) max_load = std::max(max_load, Load(endpoints[c]));
  for (size_t i = 0; i < candidates.size(); ++i) {
    // Linear in load: the idlest scores near 1, the busiest 0; all equal when all idle.
    scores[i] = max_load <= 0 ? 1.0 : 1.0 - Load(endpoints[candidates[i]]) / max_load;
  }
}

}  // namespace infergrid::scheduling
