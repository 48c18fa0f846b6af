#pragma once
// `llm-d`: the default scheduling profile of llm-d's inference scheduler (the Gateway API
// Inference Extension's endpoint picker), re-implemented from its source and configuration
// (kubernetes-sigs/gateway-api-inference-extension pkg/epp/config/loader/defaults.go and the
// prefix-cache, queue and kv-cache-utilization scorers; docs/routing.md):
//
//   score = 3 * prefix + 2 * queue + 2 * kv; the highest wins, ties at random.
//   prefix: leading blocks of the prompt held by the pod (an approximate per-pod LRU of what
//           was routed there, 31250 blocks each) over the prompt's blocks; blocks of 64
//           characters (16 tokens here), at most the first 256 of them.
//   queue:  (max - waiting) / (max - min) over the pods' scraped vllm:num_requests_waiting;
//           1 for all when they are equal.
//   kv:     1 - scraped vllm:kv_cache_usage_perc.

#include <random>

#include "plan/policy.h"
#include "scheduling/prefix_index/prefix_index.h"

namespace infergrid::plan {

class LlmdPolicy : public Policy {
 public:
  LlmdPolicy(size_t servers, uint32_t block_size, uint64_t seed);
  std::optional<Routed> Route(uint64_t id, const RequestInfo& req,
                              std::span<const EndpointSnapshot> endpoints) override;

 private:
  static constexpr size_t kMaxBlocks = 256;
  static constexpr size_t kLruBlocks = 31250;
  uint32_t block_size_;
  scheduling::PrefixIndex index_;
  std::mt19937_64 rng_;
  std::vector<BlockHash> chain_, keys_;
  std::vector<std::pair<uint32_t, uint32_t>> matches_;
  std::vector<double> prefix_;
};

}  // namespace infergrid::plan
