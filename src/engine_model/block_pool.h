#pragma once
// The paged KV cache of one model server, as vLLM's v1 engine manages it: N blocks of B
// tokens; a full block is identified by a chained hash of (its parent block's hash, its token
// ids), so equal prefixes map to equal hash chains; freed blocks keep their contents and stay
// findable by hash until they are evicted, least recently freed first.
//
// Pure and deterministic: no I/O, no clock, no randomness. Not thread-safe. Part of the
// engine model shared by the simulator and the planner (issue 3).

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/block_hash.h"
#include "common/u64_map.h"

namespace infergrid::engine_model {

using infergrid::BlockHash;  // common/block_hash.h: shared with the gateway's prefix index
using infergrid::HashBlock;
using infergrid::HashBlocks;
using BlockId = uint32_t;

class BlockPool {
 public:
  explicit BlockPool(uint32_t num_blocks);

  uint32_t num_blocks() const { return static_cast<uint32_t>(ref_.size()); }
  // Blocks that can be handed out now: unreferenced ones, cached or not.
  uint32_t num_free() const { return free_count_; }
  double usage() const { return 1.0 - static_cast<double>(free_count_) / num_blocks(); }

  // Whether a block with this hash is cached (in use or free).
  bool Contains(BlockHash hash) const { return cached_.Contains(hash); }
  size_t num_cached() const { return cached_.size(); }

  // How many leading hashes are cached (in use or free), i.e. the reusable prefix in blocks;
  // with `ids`, also the blocks that hold them (for FreeAmong and Acquire without looking
  // them up again).
  size_t CachedPrefix(std::span<const BlockHash> hashes, std::vector<BlockId>* ids = nullptr) const;
  // CachedPrefix continued from the `ids->size()` blocks already found: valid while
  // generation() is unchanged since they were (nothing cached has been dropped since).
  size_t ExtendCachedPrefix(std::span<const BlockHash> hashes, std::vector<BlockId>* ids) const;
  // Bumped whenever a cached hash is dropped (an eviction or a reset).
  uint64_t generation() const { return evictions_ + resets_; }

  // Of these cached blocks, how many are unreferenced; then take a reference on each.
  size_t FreeAmong(std::span<const BlockId> ids) const;
  void Acquire(std::span<const BlockId> ids);

  // Takes a reference on each of the first `n` cached blocks of `hashes` (n from
  // CachedPrefix) and returns them; free ones leave the free queue.
  std::vector<BlockId> Acquire(std::span<const BlockHash> hashes, size_t n);

  // Hands out `n` blocks from the head of the free queue (least recently freed first),
  // evicting their cached contents. nullopt, and nothing taken, if fewer than `n` are free.
  std::optional<std::vector<BlockId>> Allocate(size_t n);

  // Records that `block` (referenced, now full) holds the block with `hash`, so later
  // requests can reuse it. A hash already cached elsewhere keeps its first block. True when
  // the hash became newly cached (what a KV-cache event reports as stored).
  bool Commit(BlockId block, BlockHash hash);

  // Drops one reference from each block, in order; a block reaching zero goes to the tail of
  // the free queue, still cached. (vLLM frees a request's blocks last-first, so the tail of a
  // sequence is evicted before its shared head: ReleaseLastFirst.)
  void Release(std::span<const BlockId> blocks);
  void ReleaseLastFirst(std::span<const BlockId> blocks);

  // Forgets every cached hash (blocks in use stay in use, now uncached). vLLM's
  // reset_prefix_cache; reported as AllBlocksCleared.
  void ClearCache();

  // The hashes evicted since the last call, oldest first (KV-cache BlockRemoved events).
  std::vector<BlockHash> TakeEvicted() { return std::exchange(evicted_, {}); }

  uint64_t evictions() const { return evictions_; }
  uint32_t ref_count(BlockId b) const { return ref_[b]; }
  std::optional<BlockHash> hash_of(BlockId b) const;

 private:
  static constexpr BlockId kNone = UINT32_MAX;
  void PushTail(BlockId b);
  void Unlink(BlockId b);

  std::vector<uint32_t> ref_;
  std::vector<BlockId> prev_, next_;  // the free queue, intrusive and doubly linked
  std::vector<uint8_t> in_free_;
  std::vector<BlockHash> hash_;  // 0: holds no cached prefix (hashes are never 0)
  BlockId head_ = kNone, tail_ = kNone;
  uint32_t free_count_ = 0;
  U64Map cached_;  // hash -> the block holding it
  uint64_t evictions_ = 0;
  uint64_t resets_ = 0;
  std::vector<BlockHash> evicted_;
};

}  // namespace infergrid::engine_model
