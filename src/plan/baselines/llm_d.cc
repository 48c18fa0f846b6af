#include "plan/baselines/llm_d.h"

#include <algorithm>

#include "scheduling/prefix_state.h"

namespace infergrid::plan {

LlmdPolicy::LlmdPolicy(size_t servers, uint32_t block_size, uint64_t seed)
    : Policy("llm-d"), block_size_(block_size), index_(kLruBlocks), rng_(seed) {
  index_.Reserve(servers);
}

std::optional<Routed> LlmdPolicy::Route(uint64_t, const RequestInfo& req,
                                        std::span<const EndpointSnapshot> endpoints) {
  if (endpoints.empty()) return std::nullopt;
  // 64-character blocks are about 16 tokens: one server block per hash, the first 256.
  scheduling::PrefixKeys(req, block_size_, std::max(1u, 16 / block_size_), &chain_, &keys_);
  if (keys_.size() > kMaxBlocks) keys_.resize(kMaxBlocks);
  prefix_.assign(endpoints.size(), 0);
  matches_.clear();
  index_.Match(keys_, &matches_);
  for (auto [e, n] : matches_) prefix_[e] = keys_.empty() ? 0 : double(n) / keys_.size();

  double qmin = INFINITY, qmax = -INFINITY;
  for (const auto& e : endpoints) {
    qmin = std::min(qmin, e.num_requests_waiting);
    qmax = std::max(qmax, e.num_requests_waiting);
  }
  double best = -INFINITY;
  std::vector<size_t> top;
  for (size_t i = 0; i < endpoints.size(); ++i) {
    const auto& e = endpoints[i];
    double queue = qmax > qmin ? (qmax - e.num_requests_waiting) / (qmax - qmin) : 1.0;
    double kv = 1.0 - std::clamp(e.kv_cache_usage, 0.0, 1.0);
    double s = 3 * prefix_[i] + 2 * queue + 2 * kv;
    if (s > best) {
      best = s;
      top.clear();
    }
    if (s == best) top.push_back(i);
  }
  size_t chosen = top[std::uniform_int_distribution<size_t>(0, top.size() - 1)(rng_)];
  index_.Insert(chosen, keys_);
  return Routed{chosen};
}

}  // namespace infergrid::plan
