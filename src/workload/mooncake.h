#pragma once
// Mooncake-format request traces (docs/planner.md): the JSONL format of the Mooncake FAST'25
// trace release, which NVIDIA's AIPerf replays and LiteLLM exports. One request a line:
//   timestamp      arrival, milliseconds from the trace's start (optional with session_id and
//                  delay, as AIPerf accepts)
//   input_length   prompt tokens
//   output_length  output tokens
//   hash_ids       one id per block of `block_size` tokens of the prompt (the last block may be
//                  partial): the same id at the same position is the same block, and a shared
//                  leading run of ids is a shared prefix
//   session_id     optional: the conversation it belongs to
//   delay          optional: milliseconds after the previous turn of the same session ended
//   text_input     optional: the prompt itself, used as is
//
// The reader streams: one line at a time, so memory does not grow with the trace. A bad line
// is an error naming its line and field; nothing is ever half-loaded silently.
//
// Prompts are synthesised so the trace's reuse structure is exact: each hash id maps to one
// block of token ids drawn from the id alone (workload::SegmentTokens), so equal ids are equal
// token blocks wherever they appear, and the last block is the leading part of its id's block,
// cut to the remaining length. Pure apart from reading the file.

#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace infergrid::workload {

struct MooncakeRequest {
  double timestamp_ms = -1;  // -1: not given (then session_id and delay are)
  uint32_t input_length = 0;
  uint32_t output_length = 0;
  std::vector<uint64_t> hash_ids;
  std::string session_id;  // empty: none
  double delay_ms = -1;    // -1: not given
  std::optional<std::string> text_input;
  size_t line = 0;  // 1-based, in its file
};

// Parses one line. `block_size`: the tokens each hash id stands for. Errors read
// "SOURCE:LINE: FIELD: what was expected".
Result<MooncakeRequest> ParseMooncakeLine(std::string_view text, size_t line,
                                          const std::string& source, uint32_t block_size);

class MooncakeReader {
 public:
  static Result<std::unique_ptr<MooncakeReader>> Open(const std::string& path,
                                                      uint32_t block_size = 512);
  // The next request; nullopt at the end of the file; an error for a bad line (after which
  // the reader is done). Blank lines are skipped.
  Result<std::optional<MooncakeRequest>> Next();
  size_t lines_read() const { return line_; }

 private:
  MooncakeReader(std::string path, uint32_t block_size)
      : path_(std::move(path)), block_size_(block_size) {}
  std::string path_;
  uint32_t block_size_;
  std::ifstream in_;
  size_t line_ = 0;
  bool failed_ = false;
};

// The prompt's token ids: block i is SegmentTokens(BlockSeed(hash_ids[i]), ...), each of
// `block_size` tokens but the last, cut to what remains of input_length. A request without
// hash ids gets input_length tokens of its own (seeded by its line), shared with nothing.
void SynthesizePromptTokens(const MooncakeRequest& r, uint32_t block_size,
                            std::vector<uint32_t>* out);
uint64_t BlockSeed(uint64_t hash_id);

// One line of the format, for writers (the gateway's recorder, the bench's --record).
std::string MooncakeLine(const MooncakeRequest& r);

}  // namespace infergrid::workload
