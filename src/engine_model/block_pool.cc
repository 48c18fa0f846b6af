#include "engine_model/block_pool.h"

namespace infergrid::engine_model {

BlockPool::BlockPool(uint32_t num_blocks)
    : ref_(num_blocks, 0),
      prev_(num_blocks, kNone),
      next_(num_blocks, kNone),
      in_free_(num_blocks, false),
      hash_(num_blocks) {
  for (BlockId b = 0; b < num_blocks; ++b) PushTail(b);
}

void BlockPool::PushTail(BlockId b) {
  prev_[b] = tail_;
  next_[b] = kNone;
  if (tail_ != kNone) {
    next_[tail_] = b;
  } else {
    head_ = b;
  }
  tail_ = b;
  in_free_[b] = true;
  ++free_count_;
}

void BlockPool::Unlink(BlockId b) {
  if (prev_[b] != kNone) {
    next_[prev_[b]] = next_[b];
  } else {
    head_ = next_[b];
  }
  if (next_[b] != kNone) {
    prev_[next_[b]] = prev_[b];
  } else {
    tail_ = prev_[b];
  }
  prev_[b] = next_[b] = kNone;
  in_free_[b] = false;
  --free_count_;
}

size_t BlockPool::CachedPrefix(std::span<const BlockHash> hashes) const {
  size_t n = 0;
  while (n < hashes.size() && cached_.count(hashes[n]) > 0) ++n;
  return n;
}

size_t BlockPool::FreeAmong(std::span<const BlockHash> hashes, size_t n) const {
  size_t free = 0;
  for (size_t i = 0; i < n; ++i) free += in_free_[cached_.at(hashes[i])] ? 1 : 0;
  return free;
}

std::vector<BlockId> BlockPool::Acquire(std::span<const BlockHash> hashes, size_t n) {
  std::vector<BlockId> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    BlockId b = cached_.at(hashes[i]);
    if (in_free_[b]) Unlink(b);
    ++ref_[b];
    out.push_back(b);
  }
  return out;
}

std::optional<std::vector<BlockId>> BlockPool::Allocate(size_t n) {
  if (n > free_count_) return std::nullopt;
  std::vector<BlockId> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    BlockId b = head_;
    Unlink(b);
    if (hash_[b]) {
      // Reusing a block that still holds a cached prefix: that prefix is gone now.
      auto it = cached_.find(*hash_[b]);
      if (it != cached_.end() && it->second == b) {
        cached_.erase(it);
        evicted_.push_back(*hash_[b]);
      }
      hash_[b].reset();
      ++evictions_;
    }
    ref_[b] = 1;
    out.push_back(b);
  }
  return out;
}

bool BlockPool::Commit(BlockId block, BlockHash hash) {
  if (hash_[block]) return false;
  auto [it, inserted] = cached_.emplace(hash, block);
  if (inserted) hash_[block] = hash;
  return inserted;
}

void BlockPool::ClearCache() {
  cached_.clear();
  for (auto& h : hash_) h.reset();
}

void BlockPool::Release(std::span<const BlockId> blocks) {
  for (BlockId b : blocks) {
    if (ref_[b] == 0) continue;  // a double release is a caller bug; stay consistent
    if (--ref_[b] == 0) PushTail(b);
  }
}

std::optional<BlockHash> BlockPool::hash_of(BlockId b) const { return hash_[b]; }

}  // namespace infergrid::engine_model
