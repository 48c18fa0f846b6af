#include "scheduling/scorers/load/load_scorer.h"

#include "scheduling/load_model.h"
#include "scheduling/registry.h"

namespace infergrid::scheduling {

Result<std::unique_ptr<Scorer>> LoadScorer::Create(const PluginContext& ctx) {
  IG_RETURN_IF_ERROR(ctx.CheckParams({"prefillHorizonSeconds"}));
  IG_ASSIGN_OR_RETURN(double h, ctx.Number("prefillHorizonSeconds", 1, 1e-3, 3600));
  return std::unique_ptr<Scorer>(new LoadScorer(h));
}

void LoadScorer::Score(const RequestInfo&, std::span<const EndpointSnapshot> endpoints,
                       std::span<const size_t> candidates, std::span<double> scores) {
  for (size_t i = 0; i < candidates.size(); ++i) {
    scores[i] = 1.0 / (1.0 + LoadOf(endpoints[candidates[i]]).Combined(horizon_s_));
  }
}

}  // namespace infergrid::scheduling
