#include "scheduling/scorers/hardware_cost/hardware_cost_scorer.h"

#include <algorithm>
#include <limits>

#include "scheduling/load_model.h"
#include "scheduling/registry.h"

namespace infergrid::scheduling {

Result<std::unique_ptr<Scorer>> HardwareCostScorer::Create(const PluginContext& ctx) {
  IG_RETURN_IF_ERROR(ctx.CheckParams({"ttftObjectiveSeconds"}));
  IG_ASSIGN_OR_RETURN(double o, ctx.Number("ttftObjectiveSeconds", 0, 0, 3600));
  return std::unique_ptr<Scorer>(new HardwareCostScorer(o));
}

double HardwareCostScorer::CostPerToken(const EndpointSnapshot& e) {
  if (e.capacity.price_per_hour <= 0 || e.capacity.decode_tokens_per_s <= 0) return 0;
  return e.capacity.price_per_hour / 3600.0 / e.capacity.decode_tokens_per_s;
}

double HardwareCostScorer::ExpectedTtft(const RequestInfo& req, const EndpointSnapshot& e) {
  return LoadOf(e).prefill_seconds + req.prompt_tokens_estimate / PrefillRate(e);
}

void HardwareCostScorer::Score(const RequestInfo& req, std::span<const EndpointSnapshot> endpoints,
                               std::span<const size_t> candidates, std::span<double> scores) {
  double objective = req.ttft_objective_seconds > 0 ? req.ttft_objective_seconds : objective_s_;
  double cheapest = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < candidates.size(); ++i) {
    const EndpointSnapshot& e = endpoints[candidates[i]];
    bool feasible = objective <= 0 || ExpectedTtft(req, e) <= objective;
    double cost = CostPerToken(e);
    scores[i] = feasible ? 1.0 : 0.0;
    if (feasible && cost > 0) cheapest = std::min(cheapest, cost);
  }
  if (cheapest == std::numeric_limits<double>::infinity()) return;
  for (size_t i = 0; i < candidates.size(); ++i) {
    double cost = CostPerToken(endpoints[candidates[i]]);
    if (scores[i] > 0 && cost > 0) scores[i] = cheapest / cost;
  }
}

}  // namespace infergrid::scheduling
