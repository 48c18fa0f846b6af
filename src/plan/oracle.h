#pragma once
// `oracle`: the bound. A router that reads every server's true state from the engine models:
// the exact prefix of the prompt in each KV cache, the blocks in use, and the exact prefill
// work queued there. It sends each request where its time to first token is least:
//
//   ttft(w) = (queued prefill tokens(w) + prompt tokens not cached on w) / prefill rate(w)
//
// among servers whose KV cache can take the prompt without preempting anyone (blocks in use
// + blocks of requests queued there + this prompt's <= all blocks); when none can, the one
// that overflows least. Ties go to the longest cached prefix, then at random. No real router
// can see this much, so how close a policy gets to it is how close it is to the limit.

#include <random>
#include <unordered_map>

#include "plan/policy.h"

namespace infergrid::plan {

class OraclePolicy : public Policy {
 public:
  explicit OraclePolicy(const PolicyContext& ctx);
  std::optional<Routed> Route(uint64_t id, const RequestInfo& req,
                              std::span<const EndpointSnapshot> endpoints) override;
  void OnFirstToken(uint64_t id, size_t server) override;
  void OnCompleted(uint64_t id, const RequestInfo& req, size_t server,
                   const Completion& c) override;

 private:
  struct Pending {
    size_t server;
    double tokens;  // prompt tokens it must prefill
    double blocks;  // KV blocks it will take when admitted
  };
  std::span<const engine_model::Engine* const> engines_;
  const Fleet* fleet_;
  std::vector<double> queued_tokens_, queued_blocks_;
  std::unordered_map<uint64_t, Pending> pending_;
  std::mt19937_64 rng_;
  std::vector<double> uncached_;  // scratch, per decision
  std::vector<size_t> ties_;
};

}  // namespace infergrid::plan
