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
// Lines are written in arrival order, as the format wants: a request registers at its arrival
// (Begin) and its line waits until no request that arrived before it is still in the gateway
// (each ends with Record or Abandon), so memory holds the requests in flight only.
//
// Rotated by size: past maxFileBytes, PATH becomes PATH.1 (PATH.1 becomes PATH.2, and so on up
// to maxFiles), and a new PATH starts; a PATH that exists at start is rotated first (its ids and
// times were another run's). Lines are buffered and flushed every 64 records and when the
// recorder closes. Thread-safe: one mutex around the formatting and the write.

#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <mutex>
#include <queue>
#include <set>
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

  using Time = std::chrono::steady_clock::time_point;
  // A request arrived; it must end with Record or Abandon (same `arrival`).
  void Begin(Time arrival);
  // It was served. `blocks16`: its prompt's chained 16-token block hashes as the gateway
  // computed them; `tokens`: its prompt in the gateway's tokens.
  void Record(Time arrival, std::span<const BlockHash> blocks16, std::span<const uint32_t> tokens,
              uint32_t prompt_tokens, uint32_t output_tokens, const std::string& session);
  // It was not served (refused, failed, or its client left): nothing is written for it.
  void Abandon(Time arrival);
  uint64_t records() const;
  void Flush();

 private:
  explicit TraceRecorder(config::Recording cfg) : cfg_(std::move(cfg)) {}
  Status OpenFile();
  void Rotate();
  uint32_t IdOf(uint64_t key);
  void EndLocked(Time arrival);
  void WriteReadyLocked();
  void WriteLocked(const std::string& line);

  config::Recording cfg_;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  mutable std::mutex mu_;
  std::ofstream out_;
  uint64_t bytes_ = 0;
  uint64_t records_ = 0;
  std::unordered_map<uint64_t, uint32_t> ids_;
  uint32_t next_id_ = 0;
  std::string line_;                // reused
  std::multiset<Time> in_gateway_;  // arrivals of requests not yet ended
  struct Held {
    Time arrival;
    uint64_t seq;
    std::string line;
    bool operator>(const Held& o) const {
      return arrival != o.arrival ? arrival > o.arrival : seq > o.seq;
    }
  };
  std::priority_queue<Held, std::vector<Held>, std::greater<>> held_;  // ended, not yet written
  uint64_t seq_ = 0;
};

}  // namespace infergrid::gateway
