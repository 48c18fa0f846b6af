#pragma once
// Records the traffic the gateway serves as a Mooncake-format trace (workload/mooncake.h), so
// a user can replay their own traffic in the planner (`infergrid plan --trace`) or the bench:
// one line a request served, with its arrival (ms from the recorder's start), prompt and output
// tokens from the usage the server reported, the session key it was routed on, and hash ids
// from the gateway's own chained 16-token prefix-block hashes, one per `blockSize` tokens,
// remapped to small integers in order of first sight. The prompt's text is never written.
//
// Equal prefixes give equal leading ids (the hash at a block's end covers everything before
// it). A last, partial block's id stands for the chain up to its last full 16-token block and
// its length. When the server counts more prompt tokens than the gateway's tokenizer did (a
// different tokenizer), the blocks beyond get ids of their own; when fewer, the list is cut.
//
// Rotated by size: past maxFileBytes, PATH becomes PATH.1 (PATH.1 becomes PATH.2, and so on up
// to maxFiles), and a new PATH starts. Lines are buffered and flushed every 64 records and when
// the recorder closes. Thread-safe: one mutex around the formatting and the write.

#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>

#include "common/block_hash.h"
#include "common/result.h"
#include "config/config.h"

namespace infergrid::gateway {

class TraceRecorder {
 public:
  static Result<std::unique_ptr<TraceRecorder>> Open(const config::Recording& cfg);
  ~TraceRecorder();

  // A request served. `blocks16`: its prompt's chained 16-token block hashes as the gateway
  // computed them; `own_tokens`: its prompt's length in the gateway's tokens.
  void Record(std::chrono::steady_clock::time_point arrival, std::span<const BlockHash> blocks16,
              uint32_t own_tokens, uint32_t prompt_tokens, uint32_t output_tokens,
              const std::string& session);
  uint64_t records() const;
  void Flush();

 private:
  explicit TraceRecorder(config::Recording cfg) : cfg_(std::move(cfg)) {}
  Status OpenFile();
  void Rotate();
  uint32_t IdOf(uint64_t key);

  config::Recording cfg_;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  mutable std::mutex mu_;
  std::ofstream out_;
  uint64_t bytes_ = 0;
  uint64_t records_ = 0;
  std::unordered_map<uint64_t, uint32_t> ids_;
  uint32_t next_id_ = 0;
  std::string line_;  // reused
};

}  // namespace infergrid::gateway
