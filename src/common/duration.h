#pragma once
// Durations as written in configuration and on the command line: "250ms", "2s", "1m", "1h",
// "1.5s". A bare number is not accepted: the unit is part of the value.

#include <chrono>
#include <string>
#include <string_view>

#include "common/result.h"

namespace infergrid {

using Duration = std::chrono::nanoseconds;

Result<Duration> ParseDuration(std::string_view text);
std::string FormatDuration(Duration d);
double ToSeconds(Duration d);

}  // namespace infergrid
