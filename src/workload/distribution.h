#pragma once
// A random quantity of a workload (a length in tokens, a think time in seconds), as written in
// a Workload file: a plain number is a constant; a mapping picks a distribution:
//
//   {mean: 800}                          constant 800 (no cv)
//   {mean: 800, cv: 0.8}                 lognormal with that mean and coefficient of variation
//   {dist: exponential, mean: 5}         exponential (think times, Poisson gaps)
//   {dist: uniform, min: 2, max: 10}     uniform on [min, max]
//   {..., min: 50, max: 8000}            any of them clipped to [min, max]
//
// Pure: sampling takes the caller's generator.

#include <limits>
#include <random>

#include "common/result.h"
#include "config/yaml_reader.h"

namespace infergrid::workload {

struct Distribution {
  enum class Kind { kConstant, kUniform, kExponential, kLognormal };
  Kind kind = Kind::kConstant;
  double mean = 0;
  double cv = 0;  // lognormal: standard deviation over mean
  double min = 0;
  double max = std::numeric_limits<double>::infinity();

  static Distribution Constant(double v) { return Distribution{Kind::kConstant, v, 0, v, v}; }
  static Distribution Exponential(double mean) {
    return Distribution{Kind::kExponential, mean, 1, 0, std::numeric_limits<double>::infinity()};
  }
  static Distribution Lognormal(double mean, double cv, double min, double max) {
    return Distribution{Kind::kLognormal, mean, cv, min, max};
  }

  double Sample(std::mt19937_64& rng) const;
  // The mean before clipping (for documentation and capacity estimates).
  double Mean() const { return kind == Kind::kUniform ? (min + max) / 2 : mean; }
};

// Parses a distribution whose values must lie in [lo, hi].
Result<Distribution> ParseDistribution(const config::Node& n, double lo, double hi);

}  // namespace infergrid::workload
