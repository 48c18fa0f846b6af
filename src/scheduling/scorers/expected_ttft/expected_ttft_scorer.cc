#include "scheduling/scorers/expected_ttft/expected_ttft_scorer.h"

#include <algorithm>
#include <cmath>

#include "scheduling/load_model.h"
#include "scheduling/registry.h"

namespace infergrid::scheduling {

Result<std::unique_ptr<Scorer>> ExpectedTtftScorer::Create(const PluginContext& ctx) {
  IG_RETURN_IF_ERROR(ctx.CheckParams({"missWeight", "floorSeconds", "kvHeadroom", "overloadSeconds",
                                      "blockSize", "indexBlockSize", "lruCapacityPerServer"}));
  Options o;
  IG_ASSIGN_OR_RETURN(o.miss_weight, ctx.Number("missWeight", 1, 0, 1000));
  IG_ASSIGN_OR_RETURN(o.floor_s, ctx.Number("floorSeconds", 0.05, 1e-6, 3600));
  IG_ASSIGN_OR_RETURN(o.kv_headroom, ctx.Number("kvHeadroom", 0.1, 0.001, 1));
  IG_ASSIGN_OR_RETURN(o.overload_s, ctx.Number("overloadSeconds", 30, 0, 1e6));
  IG_ASSIGN_OR_RETURN(PrefixParams p, ctx.PrefixParameters());
  std::unique_ptr<PrefixState> own;
  IG_ASSIGN_OR_RETURN(PrefixState * state, ctx.Prefix(p, &own));
  return std::unique_ptr<Scorer>(new ExpectedTtftScorer(o, own ? nullptr : state, std::move(own)));
}

double ExpectedTtftScorer::ExpectedTtft(const RequestInfo& req, const EndpointSnapshot& e,
                                        double cached) const {
  const double prompt = std::max<double>(req.prompt_tokens_estimate, cached);
  const double rate = PrefillRate(e);
  double t = LoadOf(e).prefill_seconds + o_.miss_weight * (prompt - cached) / rate;
  if (e.capacity.kv_cache_tokens > 0) {
    const double kv = double(e.capacity.kv_cache_tokens);
    // The server's own figure when fresh (it counts shared prefixes once); else ours.
    double usage = e.metrics_fresh ? e.kv_cache_usage : double(e.in_flight_prompt_tokens) / kv;
    double after = usage + (prompt - cached) / kv;
    double over = after - (1.0 - o_.kv_headroom);
    if (over > 0) t += o_.overload_s * over / o_.kv_headroom;
  }
  return t;
}

void ExpectedTtftScorer::Score(const RequestInfo& req, std::span<const EndpointSnapshot> endpoints,
                               std::span<const size_t> candidates, std::span<double> scores) {
  if (own_) state_->BeginDecision();
  state_->Prepare(req, endpoints);
  est_.resize(candidates.size());
  double best = INFINITY;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const EndpointSnapshot& e = endpoints[candidates[i]];
    est_[i] = ExpectedTtft(req, e, state_->CachedTokens(e.index));
    best = std::min(best, est_[i]);
  }
  for (size_t i = 0; i < candidates.size(); ++i) {
    scores[i] = (best + o_.floor_s) / (est_[i] + o_.floor_s);
  }
}

void ExpectedTtftScorer::OnPicked(const RequestInfo&, const EndpointSnapshot& chosen) {
  if (own_) state_->Commit(chosen.index);
}

}  // namespace infergrid::scheduling
