#pragma once
// Latency statistics for the planner's reports: exact percentiles of a sample, and a
// log-bucketed histogram (0.5% relative resolution) for the tens of millions of
// inter-token gaps a run produces. Pure.

#include <cstdint>
#include <vector>

namespace infergrid::plan {

// The q-quantile (0..1) of `v` by the nearest-rank method on sorted data; 0 when empty.
// Sorts `v` in place.
double Percentile(std::vector<double>* v, double q);

class LogHistogram {
 public:
  // Values from `min` to `max` (clamped), buckets `ratio` apart.
  LogHistogram(double min = 1e-5, double max = 1e4, double ratio = 1.005);
  void Add(double v);
  uint64_t count() const { return count_; }
  double mean() const { return count_ ? sum_ / count_ : 0; }
  // The q-quantile, as the geometric middle of its bucket (within ratio/2 of the truth).
  double Quantile(double q) const;

 private:
  double min_, log_min_, log_ratio_;
  std::vector<uint64_t> buckets_;
  uint64_t count_ = 0;
  double sum_ = 0;
};

}  // namespace infergrid::plan
