#include "engine_model/block_pool.h"

#include <algorithm>

namespace infergrid::engine_model {

BlockPool::BlockPool(uint32_t num_blocks)
    : ref_(num_blocks, 0),
      prev_(num_blocks, kNone),
      next_(num_blocks, kNone),
      in_free_(num_blocks, 0),
      hash_(num_blocks, 0),
      cached_(num_blocks) {
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
  in_free_[b] = 1;
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
  in_free_[b] = 0;
  --free_count_;
}

size_t BlockPool::CachedPrefix(std::span<const BlockHash> hashes, std::vector<BlockId>* ids) const {
  if (ids) ids->clear();
  size_t n = 0;
  for (; n < hashes.size(); ++n) {
    uint32_t b = cached_.Find(hashes[n]);
    if (b == U64Map::kAbsent) break;
    if (ids) ids->push_back(b);
  }
  return n;
}

size_t BlockPool::ExtendCachedPrefix(std::span<const BlockHash> hashes,
                                     std::vector<BlockId>* ids) const {
  for (size_t n = ids->size(); n < hashes.size(); ++n) {
    uint32_t b = cached_.Find(hashes[n]);
    if (b == U64Map::kAbsent) break;
    ids->push_back(b);
  }
  return ids->size();
}

size_t BlockPool::FreeAmong(std::span<const BlockId> ids) const {
  size_t free = 0;
  for (BlockId b : ids) free += in_free_[b];
  return free;
}

std::vector<BlockId> BlockPool::Acquire(std::span<const BlockHash> hashes, size_t n) {
  std::vector<BlockId> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(cached_.Find(hashes[i]));
  Acquire(out);
  return out;
}

void BlockPool::Acquire(std::span<const BlockId> ids) {
  for (BlockId b : ids) {
    if (in_free_[b]) Unlink(b);
    ++ref_[b];
  }
}

std::optional<std::vector<BlockId>> BlockPool::Allocate(size_t n) {
  if (n > free_count_) return std::nullopt;
  std::vector<BlockId> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    BlockId b = head_;
    Unlink(b);
    if (hash_[b] != 0) {
      // Reusing a block that still holds a cached prefix: that prefix is gone now.
      if (cached_.Find(hash_[b]) == b) {
        cached_.Erase(hash_[b]);
        evicted_.push_back(hash_[b]);
      }
      hash_[b] = 0;
      ++evictions_;
    }
    ref_[b] = 1;
    out.push_back(b);
  }
  return out;
}

bool BlockPool::Commit(BlockId block, BlockHash hash) {
  if (hash_[block] != 0) return false;
  bool inserted = cached_.Insert(hash, block).second;
  if (inserted) hash_[block] = hash;
  return inserted;
}

void BlockPool::ClearCache() {
  ++resets_;
  cached_.Clear();
  std::fill(hash_.begin(), hash_.end(), 0);
}

void BlockPool::Release(std::span<const BlockId> blocks) {
  for (BlockId b : blocks) {
    if (ref_[b] == 0) continue;  // a double release is a caller bug; stay consistent
    if (--ref_[b] == 0) PushTail(b);
  }
}

void BlockPool::ReleaseLastFirst(std::span<const BlockId> blocks) {
  for (size_t i = blocks.size(); i-- > 0;) {
    BlockId b = blocks[i];
    if (ref_[b] == 0) continue;
    if (--ref_[b] == 0) PushTail(b);
  }
}

std::optional<BlockHash> BlockPool::hash_of(BlockId b) const {
  if (hash_[b] == 0) return std::nullopt;
  return hash_[b];
}

}  // namespace infergrid::engine_model
