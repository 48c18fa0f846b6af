#include "plan/baselines/sglang.h"

#include <algorithm>

#include "scheduling/prefix_state.h"

namespace infergrid::plan {

namespace {
constexpr uint32_t kEntryTokens = 64;
constexpr double kCharsPerToken = 4;
}  // namespace

SglangPolicy::SglangPolicy(size_t servers, uint32_t block_size, Options o, uint64_t seed)
    : Policy("sglang"),
      o_(o),
      block_size_(block_size),
      stride_(std::max(1u, kEntryTokens / block_size)),
      tree_(static_cast<size_t>(o.max_tree_chars / kCharsPerToken / (block_size * stride_))),
      rng_(seed) {
  tree_.Reserve(servers);
}

std::optional<Routed> SglangPolicy::Route(uint64_t, const RequestInfo& req,
                                          std::span<const EndpointSnapshot> endpoints) {
  if (endpoints.empty()) return std::nullopt;
  scheduling::PrefixKeys(req, block_size_, stride_, &chain_, &keys_);
  const double entry = double(block_size_) * stride_;
  uint32_t max_load = 0, min_load = UINT32_MAX;
  size_t least = 0;
  for (size_t i = 0; i < endpoints.size(); ++i) {
    uint32_t l = endpoints[i].in_flight;
    max_load = std::max(max_load, l);
    if (l < min_load) {  // first index wins a tie, as min_by_key does
      min_load = l;
      least = i;
    }
  }
  size_t chosen;
  if (max_load - min_load > o_.balance_abs_threshold &&
      max_load > min_load * o_.balance_rel_threshold) {
    chosen = least;
  } else {
    matches_.clear();
    tree_.Match(keys_, &matches_);
    uint32_t best = 0;
    for (auto [e, n] : matches_) best = std::max(best, n);
    double rate = req.prompt_tokens_estimate > 0
                      ? std::min(1.0, best * entry / req.prompt_tokens_estimate)
                      : 0.0;
    if (best > 0 && rate > o_.cache_threshold) {
      // The deepest node's tenants; SGLang takes whichever its map yields first.
      std::vector<uint32_t> top;
      for (auto [e, n] : matches_) {
        if (n == best) top.push_back(e);
      }
      chosen = top[std::uniform_int_distribution<size_t>(0, top.size() - 1)(rng_)];
    } else {
      chosen = 0;  // the smallest tree (fewest characters); the first one seen on a tie
      for (size_t i = 1; i < endpoints.size(); ++i) {
        if (tree_.size(i) < tree_.size(chosen)) chosen = i;
      }
    }
  }
  tree_.Insert(chosen, keys_);
  return Routed{chosen};
}

}  // namespace infergrid::plan
