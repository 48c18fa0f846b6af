#pragma once
// `dynamo`: NVIDIA Dynamo's KV router, re-implemented from its source (ai-dynamo/dynamo,
// lib/llm/src/kv_router/scheduler.rs; docs/routing.md), with its defaults: overlap_score_weight
// 1.0, router_temperature 0 (deterministic), KV events on, active blocks tracked.
//
//   overlap(w)      = leading blocks of the prompt cached on w (Dynamo learns this from the
//                     servers' KV-cache events; the planner reads the engines, the same facts)
//   prefill(w)      = (prompt tokens - overlap(w) * block) + prompt tokens still to prefill of
//                     the router's requests on w that have no first token yet
//   decode(w)       = blocks held by the router's in-flight requests on w (each block once)
//                     + the prompt's blocks not among them
//   logit(w)        = 1.0 * prefill(w) / block + decode(w); the lowest wins; ties go to the
//                     worker with the fewest cached blocks, then at random.
//
// To keep the planner fast, the in-flight blocks are counted on every 16th block of each
// chain (chains are prefix-closed, so this is exact to within 15 blocks per request).

#include <random>
#include <unordered_map>

#include "plan/policy.h"

namespace infergrid::plan {

class DynamoPolicy : public Policy {
 public:
  DynamoPolicy(const PolicyContext& ctx, double overlap_weight);
  std::optional<Routed> Route(uint64_t id, const RequestInfo& req,
                              std::span<const EndpointSnapshot> endpoints) override;
  void OnFirstToken(uint64_t id, size_t server) override;
  void OnCompleted(uint64_t id, const RequestInfo& req, size_t server,
                   const Completion& c) override;

 private:
  static constexpr uint32_t kStride = 16;
  struct Worker {
    double prefill_tokens = 0;                       // of requests with no first token yet
    std::unordered_map<BlockHash, uint32_t> active;  // sampled block -> in-flight requests
  };
  struct InFlight {
    size_t server;
    double prefill_tokens;
    bool prefilling = true;
    std::vector<BlockHash> sampled;
  };
  uint32_t ActivePrefix(const Worker& w, std::span<const BlockHash> chain) const;

  std::span<const engine_model::Engine* const> engines_;
  uint32_t block_size_;
  double overlap_weight_;
  std::vector<Worker> workers_;
  std::unordered_map<uint64_t, InFlight> in_flight_;
  std::mt19937_64 rng_;
  std::vector<double> logit_, new_prefill_;  // scratch, per decision
  std::vector<size_t> ties_;
};

}  // namespace infergrid::plan
