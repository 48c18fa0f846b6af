#pragma once
// The bench's statistics, from what its clients measured: latency summaries (nearest-rank
// percentiles, the same definition as the planner's, so live and predicted figures compare),
// the empirical CDF for the report's plot, and counts over time for rates and throughput
// plots. Pure.

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace infergrid::bench {

struct Summary {
  uint64_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};

// Sorts `v` in place.
Summary Summarize(std::vector<double>* v);

// At most `max_points` points (value, fraction of the sample at or below it) of the empirical
// CDF of sorted `v`, evenly spaced in rank, always with the first and the last; empty when `v`
// is.
std::vector<std::pair<double, double>> CdfPoints(const std::vector<double>& sorted,
                                                 size_t max_points);

// Amounts added at times (seconds from the start), summed per bucket of `interval_s`.
class TimeSeries {
 public:
  explicit TimeSeries(double interval_s = 1) : interval_(interval_s) {}
  void Add(double t, double amount = 1);
  double interval_s() const { return interval_; }
  // Per bucket, the amount per second.
  std::vector<double> Rates() const;
  // The amount added in [from, to), from whole buckets: `from` and `to` are rounded down to
  // bucket boundaries.
  double Sum(double from, double to) const;

 private:
  double interval_;
  std::vector<double> buckets_;
};

// `amount` over `seconds` (0 for an empty window).
double PerSecond(double amount, double seconds);

}  // namespace infergrid::bench
