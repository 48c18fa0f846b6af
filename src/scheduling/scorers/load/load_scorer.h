#pragma once
// `load`: prefers the endpoint with the least outstanding work relative to what it can do, so
// an H200 and a Trainium2 compare fairly: seconds of queued prefill (prompt tokens over its
// prefill rate) over a horizon, plus the share of its decode batch in use (load_model.h).
// Score 1 / (1 + load): 1 when idle, 0.5 at one horizon of queued prefill or a full batch.
// An absolute scale (not min-max across candidates), so its weight means the same whatever
// the rest of the fleet is doing.
//
// Parameters:
//   prefillHorizonSeconds (default 1): queued prefill that counts as fully loaded.

#include <memory>

#include "common/result.h"
#include "infergrid/scheduling.h"

namespace infergrid::scheduling {
struct PluginContext;

class LoadScorer : public Scorer {
 public:
  explicit LoadScorer(double horizon_s) : horizon_s_(horizon_s) {}
  static Result<std::unique_ptr<Scorer>> Create(const PluginContext& ctx);

  std::string_view name() const override { return "load"; }
  bool uses_metrics() const override { return true; }
  void Score(const RequestInfo& req, std::span<const EndpointSnapshot> endpoints,
             std::span<const size_t> candidates, std::span<double> scores) override;

 private:
  double horizon_s_;
};

}  // namespace infergrid::scheduling
