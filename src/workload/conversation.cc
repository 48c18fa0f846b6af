#include "workload/conversation.h"

namespace infergrid::workload {

void TokenConversation::Clear() {
  blocks_.clear();
  tail_.clear();
}

void TokenConversation::Append(std::span<const uint32_t> tokens) {
  size_t i = 0;
  while (i < tokens.size()) {
    size_t take = std::min<size_t>(block_size_ - tail_.size(), tokens.size() - i);
    tail_.insert(tail_.end(), tokens.begin() + i, tokens.begin() + i + take);
    i += take;
    if (tail_.size() == block_size_) {
      blocks_.push_back(HashBlock(blocks_.empty() ? 0 : blocks_.back(), tail_));
      tail_.clear();
    }
  }
}

void TokenConversation::AppendSegment(const Segment& s) {
  scratch_.clear();
  SegmentTokens(s.seed, s.tokens, &scratch_);
  Append(scratch_);
}

}  // namespace infergrid::workload
