#pragma once
// One scheduling profile, built from config: filters, weighted scorers and a picker. Pure:
// no sockets, no threads, no wall clock; the same object runs in the gateway and the planner.
//
// Threading: not thread-safe; the caller serialises calls on one instance.

#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "infergrid/scheduling.h"
#include "scheduling/prefix_state.h"

namespace infergrid::scheduling {

struct WeightedScorer {
  std::unique_ptr<Scorer> scorer;
  double weight = 1.0;
};

struct Decision {
  std::optional<size_t> endpoint;  // index into the snapshot span; nullopt: none can serve
  std::string reason;              // why none could serve ("no healthy endpoint", ...)
  double score = 0;                // the winner's weighted score
  // Candidates whose scraped metrics were stale or missing while a scorer wanted them: the
  // decision fell back to the gateway's own accounting for them (counted by the caller).
  uint32_t stale_candidates = 0;
  // The prompt tokens the chosen endpoint is estimated to hold already (when the profile
  // keeps a prefix index; else 0): the caller accounts the rest as prefill queued there.
  double cached_tokens = 0;
};

class Scheduler {
 public:
  Scheduler(std::string profile_name, std::vector<std::unique_ptr<Filter>> filters,
            std::vector<WeightedScorer> scorers, std::unique_ptr<Picker> picker, uint64_t seed,
            std::unique_ptr<SharedState> shared = nullptr);

  const std::string& profile_name() const { return profile_name_; }

  // Chooses an endpoint for `req`. On success every scorer's OnPicked is called.
  Decision Schedule(const RequestInfo& req, std::span<const EndpointSnapshot> endpoints);

  // Reports that a request scheduled earlier on `endpoint_index` has finished.
  void OnCompleted(const RequestInfo& req, size_t endpoint_index, const Completion& c);

  // Another replica sent `req` (its session key, prompt tokens and time) to `endpoint_index`,
  // with these prefix index keys: recorded as if this scheduler had chosen it.
  void Observe(const RequestInfo& req, size_t endpoint_index,
               std::span<const BlockHash> prefix_keys);
  // The endpoint's server restarted: what it was thought to cache is forgotten.
  void ForgetEndpoint(size_t endpoint_index);

  const std::vector<WeightedScorer>& scorers() const { return scorers_; }
  // What the profile's plugins share (its prefix index, if any plugin keeps one).
  SharedState& shared() { return *shared_; }

 private:
  std::string profile_name_;
  std::vector<std::unique_ptr<Filter>> filters_;
  std::vector<WeightedScorer> scorers_;
  std::unique_ptr<Picker> picker_;
  std::unique_ptr<SharedState> shared_;
  bool uses_metrics_ = false;
  std::mt19937_64 rng_;
  // Scratch space reused across decisions to keep the hot path allocation-free.
  std::vector<size_t> candidates_;
  std::vector<double> total_;
  std::vector<double> partial_;
};

}  // namespace infergrid::scheduling
