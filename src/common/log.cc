#include "common/log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <string>

namespace infergrid::log {
namespace {
std::atomic<int> g_level{static_cast<int>(Level::kInfo)};
const char* Name(Level l) {
  switch (l) {
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarn:
      return "warn";
    case Level::kError:
      return "error";
  }
  return "?";
}
}  // namespace

void SetLevel(Level level) { g_level.store(static_cast<int>(level)); }
bool Enabled(Level level) {
  return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed);
}

void Write(Level level, std::string_view line) {
  auto now = std::chrono::system_clock::now();
  auto t = std::chrono::system_clock::to_time_t(now);
  auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char ts[32];
  std::strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
  std::string out = fmt::format("{}.{:03d}Z {} {}\n", ts, ms, Name(level), line);
  // One write(2) per line so lines from several threads never interleave.
  [[maybe_unused]] auto n = ::write(2, out.data(), out.size());
}

}  // namespace infergrid::log
