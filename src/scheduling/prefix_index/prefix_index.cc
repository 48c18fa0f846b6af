#include "scheduling/prefix_index/prefix_index.h"

#include <algorithm>

#include "common/gallop.h"
#include "common/hash.h"

namespace infergrid::scheduling {

namespace {
constexpr size_t kMinSlots = 16;
inline size_t SlotOf(uint64_t key, size_t mask) { return (key ^ (key >> 29)) & mask; }
}  // namespace

uint64_t PrefixIndex::PairKey(BlockHash h, uint32_t endpoint) {
  return h ^ Mix64(endpoint + 0x9e3779b97f4a7c15ull);
}

void PrefixIndex::Reserve(size_t n) {
  while (endpoints_.size() < n) {
    endpoints_.emplace_back();
    endpoints_.back().capacity = default_capacity_;
    capacity_sum_ += default_capacity_;
  }
  if (mark_.size() < n) mark_.resize(n, 0);
  peak_capacity_sum_ = std::max(peak_capacity_sum_, capacity_sum_);
}

void PrefixIndex::SetCapacity(size_t endpoint, size_t blocks) {
  Reserve(endpoint + 1);
  capacity_sum_ = capacity_sum_ - endpoints_[endpoint].capacity + blocks;
  peak_capacity_sum_ = std::max(peak_capacity_sum_, capacity_sum_);
  endpoints_[endpoint].capacity = blocks;
  while (endpoints_[endpoint].count > blocks) EvictTail(endpoint);
}

// --- the two tables -------------------------------------------------------------------------

size_t PrefixIndex::FindPair(BlockHash h, uint32_t endpoint) const {
  if (pair_slots_.empty()) return SIZE_MAX;
  const size_t mask = pair_slots_.size() - 1;
  for (size_t i = SlotOf(PairKey(h, endpoint), mask);; i = (i + 1) & mask) {
    uint32_t id = pair_slots_[i];
    if (id == kNil) return SIZE_MAX;
    if (nodes_[id].hash == h && nodes_[id].endpoint == endpoint) return i;
  }
}

size_t PrefixIndex::FindHash(BlockHash h) const {
  if (hash_slots_.empty()) return SIZE_MAX;
  const size_t mask = hash_slots_.size() - 1;
  for (size_t i = SlotOf(h, mask);; i = (i + 1) & mask) {
    uint32_t id = hash_slots_[i];
    if (id == kNil) return SIZE_MAX;
    if (nodes_[id].hash == h) return i;
  }
}

void PrefixIndex::Grow(std::vector<uint32_t>* slots, std::vector<uint32_t>* counts,
                       const std::vector<Node>& nodes, bool by_pair) {
  std::vector<uint32_t> old = std::move(*slots);
  std::vector<uint32_t> old_counts;
  if (counts) old_counts = std::move(*counts);
  size_t n = std::max(kMinSlots, old.size() * 2);
  slots->assign(n, kNil);
  if (counts) counts->assign(n, 0);
  const size_t mask = n - 1;
  for (size_t j = 0; j < old.size(); ++j) {
    uint32_t id = old[j];
    if (id == kNil) continue;
    const Node& node = nodes[id];
    uint64_t key = by_pair ? PairKey(node.hash, node.endpoint) : node.hash;
    size_t i = SlotOf(key, mask);
    while ((*slots)[i] != kNil) i = (i + 1) & mask;
    (*slots)[i] = id;
    if (counts) (*counts)[i] = old_counts[j];
  }
}

void PrefixIndex::InsertPair(uint32_t id) {
  if ((pair_size_ + 1) * 2 > pair_slots_.size()) Grow(&pair_slots_, nullptr, nodes_, true);
  const size_t mask = pair_slots_.size() - 1;
  size_t i = SlotOf(PairKey(nodes_[id].hash, nodes_[id].endpoint), mask);
  while (pair_slots_[i] != kNil) i = (i + 1) & mask;
  pair_slots_[i] = id;
  ++pair_size_;
}

namespace {
// Backward-shift deletion for linear probing: closes the gap at `i` so every remaining key
// stays reachable from its home slot.
template <typename HomeOf>
void EraseSlot(std::vector<uint32_t>* slots, std::vector<uint32_t>* counts, size_t i,
               HomeOf home_of) {
  const size_t mask = slots->size() - 1;
  size_t j = i;
  for (;;) {
    j = (j + 1) & mask;
    uint32_t id = (*slots)[j];
    if (id == UINT32_MAX) break;
    size_t k = home_of(id, mask);
    // Move it back unless its home lies cyclically in (i, j].
    bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
    if (!stays) {
      (*slots)[i] = id;
      if (counts) (*counts)[i] = (*counts)[j];
      i = j;
    }
  }
  (*slots)[i] = UINT32_MAX;
  if (counts) (*counts)[i] = 0;
}
}  // namespace

void PrefixIndex::ErasePair(uint32_t id) {
  size_t i = FindPair(nodes_[id].hash, nodes_[id].endpoint);
  EraseSlot(&pair_slots_, nullptr, i, [this](uint32_t x, size_t mask) {
    return SlotOf(PairKey(nodes_[x].hash, nodes_[x].endpoint), mask);
  });
  --pair_size_;
}

void PrefixIndex::AddHolder(uint32_t id) {
  size_t s = FindHash(nodes_[id].hash);
  if (s != SIZE_MAX) {
    nodes_[id].hnext = hash_slots_[s];
    hash_slots_[s] = id;
    ++hash_counts_[s];
    return;
  }
  if ((hash_size_ + 1) * 2 > hash_slots_.size()) Grow(&hash_slots_, &hash_counts_, nodes_, false);
  const size_t mask = hash_slots_.size() - 1;
  size_t i = SlotOf(nodes_[id].hash, mask);
  while (hash_slots_[i] != kNil) i = (i + 1) & mask;
  nodes_[id].hnext = kNil;
  hash_slots_[i] = id;
  hash_counts_[i] = 1;
  ++hash_size_;
}

void PrefixIndex::RemoveHolder(uint32_t id) {
  size_t s = FindHash(nodes_[id].hash);
  if (hash_slots_[s] == id) {
    hash_slots_[s] = nodes_[id].hnext;
  } else {
    uint32_t p = hash_slots_[s];
    while (nodes_[p].hnext != id) p = nodes_[p].hnext;
    nodes_[p].hnext = nodes_[id].hnext;
  }
  if (--hash_counts_[s] > 0) return;
  // The slot's key is read through its head node, which is gone: erase by position, reading
  // the other slots' keys from their own heads.
  EraseSlot(&hash_slots_, &hash_counts_, s,
            [this](uint32_t x, size_t mask) { return SlotOf(nodes_[x].hash, mask); });
  --hash_size_;
}

uint32_t PrefixIndex::CountAt(BlockHash h) const {
  size_t s = FindHash(h);
  return s == SIZE_MAX ? 0 : hash_counts_[s];
}

uint32_t PrefixIndex::Holders(BlockHash block) const { return CountAt(block); }

// --- LRU lists ------------------------------------------------------------------------------

void PrefixIndex::Unlink(uint32_t id) {
  Node& n = nodes_[id];
  EndpointLru& e = endpoints_[n.endpoint];
  if (n.prev != kNil)
    nodes_[n.prev].next = n.next;
  else
    e.head = n.next;
  if (n.next != kNil)
    nodes_[n.next].prev = n.prev;
  else
    e.tail = n.prev;
  n.prev = n.next = kNil;
}

void PrefixIndex::PushFront(uint32_t id) {
  Node& n = nodes_[id];
  EndpointLru& e = endpoints_[n.endpoint];
  n.prev = kNil;
  n.next = e.head;
  if (e.head != kNil)
    nodes_[e.head].prev = id;
  else
    e.tail = id;
  e.head = id;
}

void PrefixIndex::EvictTail(size_t endpoint) {
  EndpointLru& e = endpoints_[endpoint];
  uint32_t id = e.tail;
  if (id == kNil) return;
  Unlink(id);
  ErasePair(id);
  RemoveHolder(id);
  free_nodes_.push_back(id);
  --e.count;
}

void PrefixIndex::Insert(size_t endpoint, std::span<const BlockHash> blocks) {
  Reserve(endpoint + 1);
  const size_t cap = endpoints_[endpoint].capacity;
  if (cap == 0) return;
  const uint32_t ep = static_cast<uint32_t>(endpoint);
  // Deepest first, so the chain's head ends up most recent.
  for (size_t i = std::min(blocks.size(), cap); i-- > 0;) {
    size_t s = FindPair(blocks[i], ep);
    if (s != SIZE_MAX) {
      uint32_t id = pair_slots_[s];
      Unlink(id);
      PushFront(id);
      continue;
    }
    uint32_t id;
    if (!free_nodes_.empty()) {
      id = free_nodes_.back();
      free_nodes_.pop_back();
    } else {
      // Grow by half, not double, to keep the per-entry bound.
      if (nodes_.size() == nodes_.capacity()) nodes_.reserve(nodes_.size() * 3 / 2 + 16);
      id = static_cast<uint32_t>(nodes_.size());
      nodes_.emplace_back();
    }
    nodes_[id] = Node{blocks[i], ep, kNil, kNil, kNil};
    InsertPair(id);
    AddHolder(id);
    PushFront(id);
    if (++endpoints_[endpoint].count > cap) EvictTail(endpoint);
  }
}

void PrefixIndex::Clear(size_t endpoint) {
  if (endpoint >= endpoints_.size()) return;
  while (endpoints_[endpoint].count > 0) EvictTail(endpoint);
}

void PrefixIndex::Entries(size_t endpoint, std::vector<BlockHash>* out) const {
  if (endpoint >= endpoints_.size()) return;
  for (uint32_t id = endpoints_[endpoint].tail; id != kNil; id = nodes_[id].prev) {
    out->push_back(nodes_[id].hash);
  }
}

// --- matching -------------------------------------------------------------------------------

void PrefixIndex::Match(std::span<const BlockHash> blocks,
                        std::vector<std::pair<uint32_t, uint32_t>>* out) {
  const size_t n = blocks.size();
  if (n == 0) return;
  size_t s = FindHash(blocks[0]);
  if (s == SIZE_MAX) return;
  cur_.clear();
  for (uint32_t id = hash_slots_[s]; id != kNil; id = nodes_[id].hnext) {
    cur_.push_back(nodes_[id].endpoint);
  }
  uint32_t c = hash_counts_[s];
  size_t pos = 0;
  for (;;) {
    size_t j = GallopLastTrue(pos, n, [&](size_t k) { return CountAt(blocks[k]) >= c; });
    if (j + 1 == n) {
      for (uint32_t e : cur_) out->emplace_back(e, static_cast<uint32_t>(n));
      return;
    }
    // Fewer endpoints hold block j+1: those of cur_ not among them matched j+1 blocks.
    ++stamp_;
    size_t hs = FindHash(blocks[j + 1]);
    c = 0;
    if (hs != SIZE_MAX) {
      c = hash_counts_[hs];
      for (uint32_t id = hash_slots_[hs]; id != kNil; id = nodes_[id].hnext) {
        mark_[nodes_[id].endpoint] = stamp_;
      }
    }
    next_.clear();
    for (uint32_t e : cur_) {
      if (mark_[e] == stamp_) {
        next_.push_back(e);
      } else {
        out->emplace_back(e, static_cast<uint32_t>(j + 1));
      }
    }
    if (next_.empty() || c == 0) {
      for (uint32_t e : next_) out->emplace_back(e, static_cast<uint32_t>(j + 1));
      return;
    }
    std::swap(cur_, next_);
    pos = j + 1;
  }
}

uint32_t PrefixIndex::MatchOne(size_t endpoint, std::span<const BlockHash> blocks) const {
  const uint32_t ep = static_cast<uint32_t>(endpoint);
  if (blocks.empty() || FindPair(blocks[0], ep) == SIZE_MAX) return 0;
  size_t j = GallopLastTrue(0, blocks.size(),
                            [&](size_t k) { return FindPair(blocks[k], ep) != SIZE_MAX; });
  return static_cast<uint32_t>(j + 1);
}

size_t PrefixIndex::MemoryBytes() const {
  return nodes_.capacity() * sizeof(Node) + free_nodes_.capacity() * sizeof(uint32_t) +
         pair_slots_.capacity() * sizeof(uint32_t) +
         (hash_slots_.capacity() + hash_counts_.capacity()) * sizeof(uint32_t) +
         endpoints_.capacity() * sizeof(EndpointLru) + mark_.capacity() * sizeof(uint64_t) +
         (cur_.capacity() + next_.capacity()) * sizeof(uint32_t);
}

size_t PrefixIndex::MemoryBound() const {
  // Tables never shrink, so the bound is by the largest total capacity there has been.
  size_t cap = peak_capacity_sum_;
  // Fixed: the tables' first slots and per-endpoint state (LRU heads, marks, scratch).
  size_t fixed =
      2 * kMinSlots * 2 * sizeof(uint32_t) + 16 * sizeof(Node) +
      endpoints_.capacity() * (sizeof(EndpointLru) + sizeof(uint64_t) + 4 * sizeof(uint32_t));
  return cap * kMaxBytesPerEntry + fixed;
}

}  // namespace infergrid::scheduling
