#include "plan/stats.h"

#include <algorithm>
#include <cmath>

namespace infergrid::plan {

double Percentile(std::vector<double>* v, double q) {
  if (v->empty()) return 0;
  std::sort(v->begin(), v->end());
  // Nearest rank: the smallest value with at least q of the sample at or below it.
  size_t rank = static_cast<size_t>(std::ceil(q * v->size()));
  rank = std::clamp<size_t>(rank, 1, v->size());
  return (*v)[rank - 1];
}

LogHistogram::LogHistogram(double min, double max, double ratio)
    : min_(min), log_min_(std::log(min)), log_ratio_(std::log(ratio)) {
  buckets_.assign(static_cast<size_t>(std::ceil((std::log(max) - log_min_) / log_ratio_)) + 1, 0);
}

void LogHistogram::Add(double v) {
  ++count_;
  sum_ += v;
  double x = std::max(v, min_);
  size_t i = static_cast<size_t>((std::log(x) - log_min_) / log_ratio_);
  ++buckets_[std::min(i, buckets_.size() - 1)];
}

double LogHistogram::Quantile(double q) const {
  if (count_ == 0) return 0;
  uint64_t rank = static_cast<uint64_t>(std::ceil(q * count_));
  rank = std::clamp<uint64_t>(rank, 1, count_);
  uint64_t seen = 0;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (seen >= rank) return std::exp(log_min_ + (i + 0.5) * log_ratio_);
  }
  return std::exp(log_min_ + (buckets_.size() - 0.5) * log_ratio_);
}

}  // namespace infergrid::plan
