#pragma once
// `sglang`: SGLang router's cache_aware policy, re-implemented from its source
// (sgl-project/sglang, sgl-router/src/policies/cache_aware.rs; docs/routing.md), with the
// defaults its command line runs (router_args.py): cache_threshold 0.3, balance_abs_threshold
// 64, balance_rel_threshold 1.5, max_tree_size 2^26 characters per worker.
//
//   load(w) = the router's own in-flight requests on w.
//   If max(load) - min(load) > abs AND max(load) > min(load) * rel: the least loaded worker.
//   Else: the worker whose approximate tree holds the longest prefix of the prompt; if that
//   prefix is at most cache_threshold of the prompt, the worker with the smallest tree.
//   Either way the prompt is inserted into the chosen worker's tree.
//
// SGLang's tree is a radix tree over characters; here it is a prefix index over 64-token
// blocks (about 256 characters), sized to max_tree_size / 4 characters per token.

#include <random>

#include "plan/policy.h"
#include "scheduling/prefix_index/prefix_index.h"

namespace infergrid::plan {

class SglangPolicy : public Policy {
 public:
  struct Options {
    double cache_threshold = 0.3;
    double balance_abs_threshold = 64;
    double balance_rel_threshold = 1.5;
    double max_tree_chars = double(1 << 26);
  };
  SglangPolicy(size_t servers, uint32_t block_size, Options o, uint64_t seed);
  std::optional<Routed> Route(uint64_t id, const RequestInfo& req,
                              std::span<const EndpointSnapshot> endpoints) override;

 private:
  Options o_;
  uint32_t block_size_, stride_;
  scheduling::PrefixIndex tree_;
  std::mt19937_64 rng_;
  std::vector<BlockHash> chain_, keys_;
  std::vector<std::pair<uint32_t, uint32_t>> matches_;
};

}  // namespace infergrid::plan
