#include "plan/baselines/dynamo.h"

#include <algorithm>
#include <cmath>

namespace infergrid::plan {

DynamoPolicy::DynamoPolicy(const PolicyContext& ctx, double overlap_weight)
    : Policy("dynamo"),
      engines_(ctx.engines),
      block_size_(ctx.fleet->block_size),
      overlap_weight_(overlap_weight),
      workers_(ctx.engines.size()),
      rng_(ctx.seed) {}

uint32_t DynamoPolicy::ActivePrefix(const Worker& w, std::span<const BlockHash> chain) const {
  // Sampled positions kStride-1, 2*kStride-1, ...: the longest run present, in blocks.
  uint32_t n = 0;
  for (size_t i = kStride - 1; i < chain.size(); i += kStride) {
    if (w.active.count(chain[i]) == 0) break;
    n = static_cast<uint32_t>(i + 1);
  }
  return n;
}

std::optional<Routed> DynamoPolicy::Route(uint64_t id, const RequestInfo& req,
                                          std::span<const EndpointSnapshot> endpoints) {
  if (endpoints.empty()) return std::nullopt;
  std::span<const BlockHash> chain = req.prompt_block_hashes;
  const double isl = req.prompt_tokens_estimate;
  const double request_blocks = std::ceil(isl / block_size_);
  logit_.assign(endpoints.size(), 0);
  std::vector<double>& new_prefill = new_prefill_;
  new_prefill.assign(endpoints.size(), 0);
  double best = INFINITY;
  for (size_t w = 0; w < endpoints.size(); ++w) {
    uint32_t overlap = CachedPrefixBlocks(*engines_[w], chain);
    new_prefill[w] = std::max(0.0, isl - double(overlap) * block_size_);
    double prefill_blocks = (new_prefill[w] + workers_[w].prefill_tokens) / block_size_;
    double active_blocks = double(workers_[w].active.size()) * kStride;
    double new_blocks = request_blocks - ActivePrefix(workers_[w], chain);
    logit_[w] = overlap_weight_ * prefill_blocks + active_blocks + new_blocks;
    best = std::min(best, logit_[w]);
  }
  std::vector<size_t>& ties = ties_;
  ties.clear();
  size_t fewest = SIZE_MAX;
  for (size_t w = 0; w < endpoints.size(); ++w) {
    if (logit_[w] != best) continue;
    size_t cached = engines_[w]->pool().num_cached();
    if (cached < fewest) {
      fewest = cached;
      ties.clear();
    }
    if (cached == fewest) ties.push_back(w);
  }
  size_t chosen = ties[std::uniform_int_distribution<size_t>(0, ties.size() - 1)(rng_)];
  InFlight f{chosen, new_prefill[chosen], true, {}};
  for (size_t i = kStride - 1; i < chain.size(); i += kStride) {
    f.sampled.push_back(chain[i]);
    ++workers_[chosen].active[chain[i]];
  }
  workers_[chosen].prefill_tokens += f.prefill_tokens;
  in_flight_.emplace(id, std::move(f));
  return Routed{chosen, isl - new_prefill[chosen]};
}

void DynamoPolicy::OnFirstToken(uint64_t id, size_t) {
  auto it = in_flight_.find(id);
  if (it == in_flight_.end() || !it->second.prefilling) return;
  it->second.prefilling = false;
  workers_[it->second.server].prefill_tokens -= it->second.prefill_tokens;
}

void DynamoPolicy::OnCompleted(uint64_t id, const RequestInfo&, size_t, const Completion&) {
  auto it = in_flight_.find(id);
  if (it == in_flight_.end()) return;
  OnFirstToken(id, it->second.server);
  Worker& w = workers_[it->second.server];
  for (BlockHash h : it->second.sampled) {
    auto a = w.active.find(h);
    if (--a->second == 0) w.active.erase(a);
  }
  in_flight_.erase(it);
}

}  // namespace infergrid::plan
