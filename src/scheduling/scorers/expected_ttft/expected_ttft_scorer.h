#pragma once
// `expected-ttft`: prefers the endpoint where this request's first token is expected soonest,
// in seconds, so that cache reuse and queueing are traded in one unit:
//
//   ttft(e) = queued prefill on e (load_model.h: prompt tokens not yet prefilled, over its
//             prefill rate)  +  this prompt's tokens not cached on e, over its prefill rate
//
// The cached part comes from the profile's shared prefix index (prefix_state.h), the queue
// from the gateway's own accounting (which counts each request's uncached tokens until its
// first token), blended with scraped metrics when fresh. An endpoint whose KV cache would pass
// 1 - kvHeadroom with this prompt (from the scraped usage, or the gateway's in-flight prompt
// tokens over its KV size) is charged overloadSeconds per headroom's worth of overflow, since
// there it would wait for blocks or preempt. Score: (best + floor) / (ttft(e) + floor), 1 for
// the best endpoint, scale-free across hardware and prompt sizes.
//
// Parameters:
//   floorSeconds (default 0.05): added to both sides, so near-idle endpoints score alike.
//   kvHeadroom (default 0.1), overloadSeconds (default 30).
//   blockSize, indexBlockSize, lruCapacityPerServer: as prefix-cache (the shared index).

#include <memory>
#include <vector>

#include "common/result.h"
#include "infergrid/scheduling.h"
#include "scheduling/prefix_state.h"

namespace infergrid::scheduling {
struct PluginContext;

class ExpectedTtftScorer : public Scorer {
 public:
  struct Options {
    double miss_weight = 1;
    double floor_s = 0.05;
    double kv_headroom = 0.1;
    double overload_s = 30;
  };
  ExpectedTtftScorer(Options o, PrefixState* state, std::unique_ptr<PrefixState> own)
      : o_(o), state_(state ? state : own.get()), own_(std::move(own)) {}
  static Result<std::unique_ptr<Scorer>> Create(const PluginContext& ctx);

  std::string_view name() const override { return "expected-ttft"; }
  bool uses_metrics() const override { return true; }
  void Score(const RequestInfo& req, std::span<const EndpointSnapshot> endpoints,
             std::span<const size_t> candidates, std::span<double> scores) override;
  void OnPicked(const RequestInfo& req, const EndpointSnapshot& chosen) override;

  // The estimate for one endpoint, given the prompt tokens it holds.
  double ExpectedTtft(const RequestInfo& req, const EndpointSnapshot& e, double cached) const;

 private:
  Options o_;
  PrefixState* state_;
  std::unique_ptr<PrefixState> own_;
  std::vector<double> est_;
};

}  // namespace infergrid::scheduling
