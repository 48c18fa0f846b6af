#pragma once
// `prefix-cache` (approximate): prefers the endpoint that already holds the longest prefix of
// the request's prompt in its KV cache, as far as the router can tell from what it sent where.
// The prompt is hashed into chained blocks of the servers' block size with the servers'
// tokenizer (the gateway tokenizes once per request; the planner passes hashes); every k-th
// block hash is indexed, k = indexBlockSize / blockSize (the hash of block i names the whole
// prefix up to it, so a coarser index loses only granularity). The index is the profile's
// shared one (prefix_state.h): per endpoint a bounded LRU sized from its KV cache.
// Score: the cached prefix over the prompt's length, in [0, 1]. Cost per decision
// O(prompt blocks) to hash, O(log blocks + holders) to match; never O(endpoints x blocks).
//
// Parameters (the same for every plugin of a profile that reads the index):
//   blockSize (default 16): the servers' KV block size in tokens (vLLM's --block-size).
//   indexBlockSize (default 64): tokens per index entry, a multiple of blockSize.
//   lruCapacityPerServer (default 0): entries remembered per endpoint; 0 derives it from the
//     endpoint's KV cache size (its hardware profile), or 2M tokens' worth when unknown.

#include <memory>

#include "common/result.h"
#include "infergrid/scheduling.h"
#include "scheduling/prefix_state.h"

namespace infergrid::scheduling {
struct PluginContext;

class PrefixCacheScorer : public Scorer {
 public:
  // Uses `state`, which the caller keeps alive; or, when `state` is null, a private one.
  PrefixCacheScorer(PrefixState* state, std::unique_ptr<PrefixState> own)
      : state_(state ? state : own.get()), own_(std::move(own)) {}
  static Result<std::unique_ptr<Scorer>> Create(const PluginContext& ctx);

  std::string_view name() const override { return "prefix-cache"; }
  void Score(const RequestInfo& req, std::span<const EndpointSnapshot> endpoints,
             std::span<const size_t> candidates, std::span<double> scores) override;
  void OnPicked(const RequestInfo& req, const EndpointSnapshot& chosen) override;

  const PrefixState& state() const { return *state_; }

 private:
  PrefixState* state_;
  std::unique_ptr<PrefixState> own_;  // set when built outside a scheduler
};

}  // namespace infergrid::scheduling
