#include "scheduling/scorers/prefix_cache/prefix_cache_scorer.h"

#include <algorithm>

#include "scheduling/registry.h"

namespace infergrid::scheduling {

Result<std::unique_ptr<Scorer>> PrefixCacheScorer::Create(const PluginContext& ctx) {
  IG_RETURN_IF_ERROR(ctx.CheckParams({"blockSize", "indexBlockSize", "lruCapacityPerServer"}));
  IG_ASSIGN_OR_RETURN(PrefixParams p, ctx.PrefixParameters());
  std::unique_ptr<PrefixState> own;
  IG_ASSIGN_OR_RETURN(PrefixState * state, ctx.Prefix(p, &own));
  return std::unique_ptr<Scorer>(new PrefixCacheScorer(own ? nullptr : state, std::move(own)));
}

void PrefixCacheScorer::Score(const RequestInfo& req, std::span<const EndpointSnapshot> endpoints,
                              std::span<const size_t> candidates, std::span<double> scores) {
  if (own_) state_->BeginDecision();  // alone, it runs the decision protocol itself
  state_->Prepare(req, endpoints);
  const double len = state_->PromptTokens();
  for (size_t i = 0; i < candidates.size(); ++i) {
    scores[i] = std::min(1.0, state_->CachedTokens(endpoints[candidates[i]].index) / len);
  }
}

void PrefixCacheScorer::OnPicked(const RequestInfo&, const EndpointSnapshot& chosen) {
  if (own_) state_->Commit(chosen.index);
}

}  // namespace infergrid::scheduling
