#pragma once
// An approximate index of which prompt blocks each endpoint holds in its KV cache, built from
// what the router itself sent there (no server feedback needed): per endpoint a bounded LRU of
// chained block hashes (common/block_hash.h), capacity in blocks derived from its KV cache
// size. Shared by the prefix-cache scorer and the planner's baselines.
//
// A chain is inserted with its first block most recent, so eviction takes a chain's tail
// before its head and what an endpoint holds stays prefix-closed: if it holds block i of a
// chain it holds blocks 0..i-1 (vLLM's own cache keeps the same property: it frees a
// request's blocks tail first). So the number of endpoints holding block i never grows with
// i, and Match() finds every endpoint's longest prefix by galloping over the prompt's blocks
// to the few places where that number drops: O(log(blocks) + holders) per drop, never
// O(endpoints x blocks).
//
// Memory: one 24-byte node per (endpoint, block) entry plus two open-addressing tables kept
// at most half full; at most kMaxBytesPerEntry per entry in all (MemoryBytes(), checked by
// its property test), and at most sum(capacity) entries.
// Pure; not thread-safe.

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "common/block_hash.h"

namespace infergrid::scheduling {

class PrefixIndex {
 public:
  // The bytes one entry may cost, tables and their growth slack included.
  static constexpr size_t kMaxBytesPerEntry = 96;

  explicit PrefixIndex(size_t default_capacity_blocks)
      : default_capacity_(default_capacity_blocks) {}

  size_t num_endpoints() const { return endpoints_.size(); }
  // Grows the index to `n` endpoints (new ones get the default capacity). Never shrinks.
  void Reserve(size_t n);
  // Sets an endpoint's capacity in blocks, evicting its least recent blocks beyond it.
  void SetCapacity(size_t endpoint, size_t blocks);
  size_t capacity(size_t endpoint) const { return endpoints_[endpoint].capacity; }

  // Records that the chain `blocks` was sent to `endpoint`: every block becomes recent, the
  // first most of all; least recent blocks beyond capacity are evicted.
  void Insert(size_t endpoint, std::span<const BlockHash> blocks);
  // Forgets everything an endpoint holds (it restarted or reset its cache).
  void Clear(size_t endpoint);
  // Appends what `endpoint` holds, least recent first.
  void Entries(size_t endpoint, std::vector<BlockHash>* out) const;

  // Appends (endpoint, leading blocks of `blocks` it holds) for every endpoint holding at
  // least the first block. Not const: it reuses scratch space.
  void Match(std::span<const BlockHash> blocks, std::vector<std::pair<uint32_t, uint32_t>>* out);
  // The leading blocks of `blocks` that `endpoint` holds.
  uint32_t MatchOne(size_t endpoint, std::span<const BlockHash> blocks) const;
  // How many endpoints hold `block`.
  uint32_t Holders(BlockHash block) const;

  size_t size() const { return nodes_.size() - free_nodes_.size(); }
  size_t size(size_t endpoint) const { return endpoints_[endpoint].count; }
  // The heap it uses now.
  size_t MemoryBytes() const;
  // kMaxBytesPerEntry per entry it may hold (the largest sum of capacities so far), plus fixed
  // costs per endpoint.
  size_t MemoryBound() const;

 private:
  static constexpr uint32_t kNil = UINT32_MAX;
  struct Node {
    BlockHash hash;
    uint32_t endpoint;
    uint32_t prev, next;  // the endpoint's LRU list; head is most recent
    uint32_t hnext;       // the next node holding the same hash
  };
  struct EndpointLru {
    uint32_t head = kNil, tail = kNil;
    size_t count = 0;
    size_t capacity = 0;
  };

  // Open addressing with linear probing and backward-shift deletion; slots hold node ids and
  // keys are read from the nodes, so a slot costs 4 bytes (8 with the holder count).
  static uint64_t PairKey(BlockHash h, uint32_t endpoint);
  size_t FindPair(BlockHash h, uint32_t endpoint) const;  // slot, or SIZE_MAX
  size_t FindHash(BlockHash h) const;
  void InsertPair(uint32_t id);
  void ErasePair(uint32_t id);
  void AddHolder(uint32_t id);
  void RemoveHolder(uint32_t id);
  static void Grow(std::vector<uint32_t>* slots, std::vector<uint32_t>* counts,
                   const std::vector<Node>& nodes, bool by_pair);

  void Unlink(uint32_t id);
  void PushFront(uint32_t id);
  void EvictTail(size_t endpoint);
  uint32_t CountAt(BlockHash h) const;

  size_t default_capacity_;
  size_t capacity_sum_ = 0, peak_capacity_sum_ = 0;
  std::vector<EndpointLru> endpoints_;
  std::vector<Node> nodes_;
  std::vector<uint32_t> free_nodes_;
  std::vector<uint32_t> pair_slots_;  // (hash, endpoint) -> node
  size_t pair_size_ = 0;
  std::vector<uint32_t> hash_slots_;   // hash -> first node of its holder list
  std::vector<uint32_t> hash_counts_;  // holders per slot of hash_slots_
  size_t hash_size_ = 0;
  // Match()'s scratch.
  std::vector<uint32_t> cur_, next_;
  std::vector<uint64_t> mark_;
  uint64_t stamp_ = 0;
};

}  // namespace infergrid::scheduling
