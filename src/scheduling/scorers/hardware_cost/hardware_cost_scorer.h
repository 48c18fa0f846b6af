#pragma once
// `hardware-cost`: prefers the cheapest endpoint per output token, among those expected to
// meet the request's time-to-first-token objective. Cost per token is the server's price per
// hour (config) over its decode throughput (its hardware profile). The expected TTFT is its
// queued prefill plus this prompt's prefill, in seconds (load_model.h). Score: the cheapest
// feasible cost over this endpoint's (1 for the cheapest), 0 for an endpoint that would miss
// the objective; when price or throughput is unknown, endpoints score alike.
//
// Parameters:
//   ttftObjectiveSeconds (default 0: none): the objective when the request carries none.

#include <memory>

#include "common/result.h"
#include "infergrid/scheduling.h"

namespace infergrid::scheduling {
struct PluginContext;

class HardwareCostScorer : public Scorer {
 public:
  explicit HardwareCostScorer(double objective_s) : objective_s_(objective_s) {}
  static Result<std::unique_ptr<Scorer>> Create(const PluginContext& ctx);

  std::string_view name() const override { return "hardware-cost"; }
  bool uses_metrics() const override { return true; }
  void Score(const RequestInfo& req, std::span<const EndpointSnapshot> endpoints,
             std::span<const size_t> candidates, std::span<double> scores) override;

  // Price per output token; 0 when unknown.
  static double CostPerToken(const EndpointSnapshot& e);
  static double ExpectedTtft(const RequestInfo& req, const EndpointSnapshot& e);

 private:
  double objective_s_;
};

}  // namespace infergrid::scheduling
