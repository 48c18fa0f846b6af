#pragma once
// The bench's request trace: what it sent, one JSON object per line, to record a run and
// replay it exactly (open loop, at the recorded times) through any gateway. docs/bench.md
// documents it:
//
//   {"t": 12.5, "session": "coding-agent-3-s2", "messages": [{"role": "user", "content": "..."}],
//    "max_tokens": 250}
//   {"t": 13.0, "prompt": "...", "max_tokens": 100}
//
// t: seconds from the start of the run (the fleet's time), non-decreasing; session: sent as
// x-session-id (optional); exactly one of messages (a chat completion) and prompt (a
// completion); max_tokens: at least 1.
//
// The reader also takes Mooncake-format lines (workload/mooncake.h; told apart by their
// `input_length`): each becomes a completion at its timestamp (from the first one's), whose
// prompt is its text_input, else one word per token (text.h) with each hash id's block drawn
// from the id alone, so the servers see the trace's exact sharing; max_tokens its
// output_length; session its session_id. Turns given only by a delay are not replayed over
// HTTP (the planner replays them). Pure.

#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace infergrid::bench {

struct TraceRequest {
  double t = 0;
  std::string session;
  bool chat = true;
  std::string messages_json;  // chat: the messages array, as JSON text
  std::string prompt;         // completion
  uint32_t max_tokens = 1;
};

// One line (no newline).
std::string TraceLine(const TraceRequest& r);
// Parses one line; errors name the field.
Result<TraceRequest> ParseTraceLine(std::string_view line);

// Reads a trace a line at a time (memory bounded by one request). Errors are
// "FILE:LINE: message"; blank lines are skipped.
class TraceReader {
 public:
  // `block_size`: tokens per hash id of Mooncake-format lines.
  static Result<std::unique_ptr<TraceReader>> Open(const std::string& path,
                                                   uint32_t block_size = 512);
  // The next request, nullopt at the end, or an error.
  Result<std::optional<TraceRequest>> Next();
  size_t line() const { return line_; }

 private:
  explicit TraceReader(std::string path) : path_(std::move(path)) {}
  std::string path_;
  std::ifstream in_;
  size_t line_ = 0;
  double last_t_ = 0;
  uint32_t block_size_ = 512;
  double mooncake_t0_ms_ = -1;  // the first Mooncake timestamp: time 0
};

// Reads the whole trace once, to report its first bad line before a run starts.
struct TraceInfo {
  size_t requests = 0;
  double last_t = 0;
};
Result<TraceInfo> ScanTrace(const std::string& path, uint32_t block_size = 512);

}  // namespace infergrid::bench
