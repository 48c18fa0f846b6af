#include "workload/distribution.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace infergrid::workload {

double Distribution::Sample(std::mt19937_64& rng) const {
  double v = mean;
  switch (kind) {
    case Kind::kConstant:
      return mean;
    case Kind::kUniform:
      return std::uniform_real_distribution<double>(min, max)(rng);
    case Kind::kExponential:
      v = mean > 0 ? std::exponential_distribution<double>(1.0 / mean)(rng) : 0;
      break;
    case Kind::kLognormal: {
      // Mean m and cv c: sigma^2 = ln(1 + c^2), mu = ln(m) - sigma^2 / 2.
      double s2 = std::log1p(cv * cv);
      v = mean > 0
              ? std::lognormal_distribution<double>(std::log(mean) - s2 / 2, std::sqrt(s2))(rng)
              : 0;
      break;
    }
  }
  return std::clamp(v, min, max);
}

Result<Distribution> ParseDistribution(const config::Node& n, double lo, double hi) {
  if (n.IsScalar()) {
    IG_ASSIGN_OR_RETURN(double v, n.Double(lo, hi));
    return Distribution::Constant(v);
  }
  if (!n.IsMap()) return n.Error("expected a number or a mapping such as {mean: 800, cv: 0.5}");
  IG_RETURN_IF_ERROR(n.CheckKeys({"dist", "mean", "cv", "min", "max"}));
  Distribution d;
  std::string kind = "";
  if (n.Has("dist")) {
    IG_ASSIGN_OR_RETURN(kind, n.Get("dist").String());
    if (kind != "constant" && kind != "uniform" && kind != "exponential" && kind != "lognormal") {
      return n.Get("dist").Error(fmt::format(
          "unknown distribution '{}'; expected one of: constant, exponential, lognormal, uniform",
          kind));
    }
  }
  if (n.Has("min")) {
    IG_ASSIGN_OR_RETURN(d.min, n.Get("min").Double(lo, hi));
  } else {
    d.min = lo;
  }
  if (n.Has("max")) {
    IG_ASSIGN_OR_RETURN(d.max, n.Get("max").Double(lo, hi));
  } else {
    d.max = hi;
  }
  if (d.min > d.max) return n.Error(fmt::format("min {} is above max {}", d.min, d.max));
  if (n.Has("cv")) {
    IG_ASSIGN_OR_RETURN(d.cv, n.Get("cv").Double(0, 100));
  }
  if (kind.empty()) kind = d.cv > 0 ? "lognormal" : "constant";
  if (kind == "uniform") {
    if (!n.Has("min") || !n.Has("max")) return n.Error("a uniform distribution needs min and max");
    if (n.Has("mean") || n.Has("cv"))
      return n.Error("a uniform distribution takes only min and max");
    d.kind = Distribution::Kind::kUniform;
    return d;
  }
  if (!n.Has("mean")) return n.Error("missing required field 'mean'");
  IG_ASSIGN_OR_RETURN(d.mean, n.Get("mean").Double(lo, hi));
  if (kind == "constant") {
    if (n.Has("cv")) return n.Error("a constant has no cv");
    d.kind = Distribution::Kind::kConstant;
    d.min = d.max = d.mean;
  } else if (kind == "exponential") {
    if (n.Has("cv")) return n.Error("an exponential distribution has no cv (it is 1)");
    d.kind = Distribution::Kind::kExponential;
    d.cv = 1;
  } else {
    if (d.cv <= 0) return n.Error("a lognormal distribution needs cv > 0");
    d.kind = Distribution::Kind::kLognormal;
  }
  return d;
}

}  // namespace infergrid::workload
