#include "bench/stats.h"

#include <algorithm>
#include <cmath>

#include "plan/stats.h"

namespace infergrid::bench {

Summary Summarize(std::vector<double>* v) {
  Summary s;
  if (v->empty()) return s;
  std::sort(v->begin(), v->end());
  s.count = v->size();
  double sum = 0;
  for (double x : *v) sum += x;
  s.mean = sum / v->size();
  s.p50 = plan::Percentile(v, 0.50);
  s.p90 = plan::Percentile(v, 0.90);
  s.p99 = plan::Percentile(v, 0.99);
  s.max = v->back();
  return s;
}

std::vector<std::pair<double, double>> CdfPoints(const std::vector<double>& sorted,
                                                 size_t max_points) {
  std::vector<std::pair<double, double>> out;
  const size_t n = sorted.size();
  if (n == 0 || max_points == 0) return out;
  const size_t points = std::min(n, std::max<size_t>(max_points, 2));
  out.reserve(points);
  for (size_t i = 0; i < points; ++i) {
    // Ranks 1..n, evenly spaced, the first and the last included.
    size_t rank = points == 1 ? n : 1 + (i * (n - 1) + (points - 1) / 2) / (points - 1);
    out.emplace_back(sorted[rank - 1], static_cast<double>(rank) / n);
  }
  return out;
}

void TimeSeries::Add(double t, double amount) {
  if (!(t >= 0) || !(interval_ > 0)) return;
  size_t b = static_cast<size_t>(t / interval_);
  if (b >= buckets_.size()) buckets_.resize(b + 1, 0);
  buckets_[b] += amount;
}

std::vector<double> TimeSeries::Rates() const {
  std::vector<double> r(buckets_.size());
  for (size_t i = 0; i < buckets_.size(); ++i) r[i] = buckets_[i] / interval_;
  return r;
}

double TimeSeries::Sum(double from, double to) const {
  if (!(interval_ > 0)) return 0;
  size_t a = static_cast<size_t>(std::max(0.0, from) / interval_);
  size_t b = std::min(buckets_.size(), static_cast<size_t>(std::max(0.0, to) / interval_));
  double s = 0;
  for (size_t i = a; i < b; ++i) s += buckets_[i];
  return s;
}

double PerSecond(double amount, double seconds) { return seconds > 0 ? amount / seconds : 0; }

}  // namespace infergrid::bench
