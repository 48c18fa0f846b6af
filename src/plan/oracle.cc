#include "plan/oracle.h"

#include <algorithm>
#include <cmath>

namespace infergrid::plan {

OraclePolicy::OraclePolicy(const PolicyContext& ctx)
    : Policy("oracle"),
      engines_(ctx.engines),
      fleet_(ctx.fleet),
      queued_tokens_(ctx.engines.size(), 0),
      queued_blocks_(ctx.engines.size(), 0),
      rng_(ctx.seed) {}

std::optional<Routed> OraclePolicy::Route(uint64_t id, const RequestInfo& req,
                                          std::span<const EndpointSnapshot> endpoints) {
  if (endpoints.empty()) return std::nullopt;
  const double bs = fleet_->block_size;
  const double prompt = req.prompt_tokens_estimate;
  double best = INFINITY;
  uint32_t best_overlap = 0;
  std::vector<size_t>& ties = ties_;
  ties.clear();
  std::vector<double>& uncached = uncached_;
  uncached.assign(endpoints.size(), 0);
  for (size_t w = 0; w < endpoints.size(); ++w) {
    const engine_model::Engine& e = *engines_[w];
    uint32_t overlap = CachedPrefixBlocks(e, req.prompt_block_hashes);
    uncached[w] = std::max(0.0, prompt - overlap * bs);
    double rate = std::max(1.0, fleet_->servers[w].capacity.prefill_tokens_per_s);
    double ttft = (queued_tokens_[w] + uncached[w]) / rate;
    double total = e.pool().num_blocks();
    double in_use = total - e.pool().num_free();
    double demand = in_use + queued_blocks_[w] + std::ceil(prompt / bs) + 1;
    if (demand > total) ttft += 1e6 * (demand / total);  // would wait or preempt
    if (ttft < best || (ttft == best && overlap > best_overlap)) {
      best = ttft;
      best_overlap = overlap;
      ties.clear();
    }
    if (ttft == best && overlap == best_overlap) ties.push_back(w);
  }
  size_t chosen = ties[std::uniform_int_distribution<size_t>(0, ties.size() - 1)(rng_)];
  Pending p{chosen, uncached[chosen], std::ceil(prompt / bs) + 1};
  queued_tokens_[chosen] += p.tokens;
  queued_blocks_[chosen] += p.blocks;
  pending_.emplace(id, p);
  return Routed{chosen, prompt - uncached[chosen]};
}

void OraclePolicy::OnFirstToken(uint64_t id, size_t) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  queued_tokens_[it->second.server] -= it->second.tokens;
  queued_blocks_[it->second.server] -= it->second.blocks;
  pending_.erase(it);
}

void OraclePolicy::OnCompleted(uint64_t id, const RequestInfo&, size_t server, const Completion&) {
  OnFirstToken(id, server);
}

}  // namespace infergrid::plan
