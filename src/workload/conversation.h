#pragma once
// A conversation as the model servers see it, without its text: the chained hashes of its full
// KV blocks (common/block_hash.h) and the token ids of its last, partial block. The planner
// grows one per client as turns append segments and replies, and hands the hashes to the
// engine model and the router; appending costs O(new tokens), and a prompt of any length is
// never materialised.

#include <cstdint>
#include <span>
#include <vector>

#include "common/block_hash.h"
#include "workload/workload.h"

namespace infergrid::workload {

class TokenConversation {
 public:
  explicit TokenConversation(uint32_t block_size) : block_size_(block_size) {}

  void Clear();
  void Append(std::span<const uint32_t> tokens);
  void AppendSegment(const Segment& s);

  uint32_t block_size() const { return block_size_; }
  const std::vector<BlockHash>& blocks() const { return blocks_; }
  const std::vector<uint32_t>& tail() const { return tail_; }
  uint64_t length() const { return blocks_.size() * uint64_t{block_size_} + tail_.size(); }

 private:
  uint32_t block_size_;
  std::vector<BlockHash> blocks_;
  std::vector<uint32_t> tail_;
  std::vector<uint32_t> scratch_;
};

}  // namespace infergrid::workload
