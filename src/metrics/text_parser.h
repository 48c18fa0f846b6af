#pragma once
// Parses the Prometheus text exposition format as model servers serve it, to read vLLM's
// gauges and counters. Pure: no I/O.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace infergrid::metrics {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Returns every sample, or an error naming the first malformed line. Comment lines (# HELP,
// # TYPE, others) are skipped.
Result<std::vector<Sample>> ParseText(std::string_view text);

}  // namespace infergrid::metrics
