#include "common/duration.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace infergrid {

Result<Duration> ParseDuration(std::string_view text) {
  if (text.empty()) {
    return Status::Error("expected a duration such as 500ms, 2s or 1m");
  }
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    ++i;
  }
  std::string_view number = text.substr(0, i);
  std::string_view unit = text.substr(i);
  double value = 0;
  auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || ec != std::errc() || ptr != number.data() + number.size()) {
    return Status::Error(
        fmt::format("'{}' is not a duration; expected e.g. 500ms, 2s or 1m", text));
  }
  double scale = 0;
  if (unit == "ns") {
    scale = 1;
  } else if (unit == "us") {
    scale = 1e3;
  } else if (unit == "ms") {
    scale = 1e6;
  } else if (unit == "s") {
    scale = 1e9;
  } else if (unit == "m") {
    scale = 60e9;
  } else if (unit == "h") {
    scale = 3600e9;
  } else {
    return Status::Error(
        fmt::format("'{}' has no valid unit; expected one of ns, us, ms, s, m, h", text));
  }
  return Duration(static_cast<int64_t>(std::llround(value * scale)));
}

std::string FormatDuration(Duration d) {
  auto ns = d.count();
  if (ns % 1000000000 == 0) {
    return fmt::format("{}s", ns / 1000000000);
  }
  if (ns % 1000000 == 0) {
    return fmt::format("{}ms", ns / 1000000);
  }
  return fmt::format("{}us", ns / 1000);
}

double ToSeconds(Duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace infergrid
