#pragma once
// A routing policy under test in the planner: infergrid's scheduling profiles (the very code
// the live gateway runs, through SchedulerPolicy) and the baselines re-implemented from their
// published descriptions (docs/routing.md cites each). Pure: no I/O, no clock; the planner
// calls one policy from one thread.

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "config/config.h"
#include "engine_model/engine.h"
#include "infergrid/endpoint.h"
#include "infergrid/request.h"
#include "plan/fleet.h"

namespace infergrid::plan {

// A routing decision: the server, and the prompt tokens the policy expects it to hold (0 when
// the policy does not estimate; the planner then accounts the whole prompt as queued prefill).
struct Routed {
  size_t server = 0;
  double cached_tokens = 0;
};

class Policy {
 public:
  virtual ~Policy() = default;
  const std::string& name() const { return name_; }

  // Chooses a server for request `id`; nullopt when none can serve.
  virtual std::optional<Routed> Route(uint64_t id, const RequestInfo& req,
                                      std::span<const EndpointSnapshot> endpoints) = 0;
  // The request's first token came back (its prefill is done).
  virtual void OnFirstToken(uint64_t id, size_t server) {}
  virtual void OnCompleted(uint64_t id, const RequestInfo& req, size_t server,
                           const Completion& c) {}

 protected:
  explicit Policy(std::string name) : name_(std::move(name)) {}

 private:
  std::string name_;
};

// What a policy may be built from: the fleet, a seed for its randomness, and the engines
// themselves (ground truth, read only by the oracle and by routers that in reality learn the
// same from KV-cache events, i.e. Dynamo's).
struct PolicyContext {
  const Fleet* fleet = nullptr;
  std::span<const engine_model::Engine* const> engines;
  uint64_t seed = 1;
};

// The built-in names (docs/routing.md): infergrid, round-robin, least-conn, least-load,
// session-hash,
// sglang, dynamo, llm-d, oracle; "profile:<name>" takes a scheduling profile from `gateway`.
std::vector<std::string> BuiltinPolicyNames();
Result<std::unique_ptr<Policy>> MakePolicy(const std::string& name, const PolicyContext& ctx,
                                           const config::Gateway* gateway);

// The longest prefix of `blocks` in a server's KV cache, read from its engine: exponential
// search, as vLLM's cache is prefix-closed (a request's blocks are freed tail first).
uint32_t CachedPrefixBlocks(const engine_model::Engine& e, std::span<const BlockHash> blocks);

}  // namespace infergrid::plan
