#pragma once
// A flat hash map from non-zero 64-bit keys (already well mixed, such as block hashes) to
// 32-bit values: open addressing with linear probing and backward-shift deletion, about
// 12 bytes a slot and no allocation per entry. Grows to keep at most half its slots full.
// For the hot paths of the engine model and the planner, where std::unordered_map's node
// allocations and pointer chasing dominated.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace infergrid {

class U64Map {
 public:
  static constexpr uint32_t kAbsent = UINT32_MAX;

  explicit U64Map(size_t expected = 0) { Rehash(SlotsFor(expected)); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // The value of `key`, or kAbsent.
  uint32_t Find(uint64_t key) const {
    for (size_t i = Home(key);; i = (i + 1) & mask_) {
      if (keys_[i] == key) return values_[i];
      if (keys_[i] == 0) return kAbsent;
    }
  }
  bool Contains(uint64_t key) const { return Find(key) != kAbsent; }
  // Inserts key -> value unless the key is there; returns the value now stored and whether it
  // was inserted.
  std::pair<uint32_t, bool> Insert(uint64_t key, uint32_t value) {
    if ((size_ + 1) * 2 > keys_.size()) Rehash(keys_.size() * 2);
    size_t i = Home(key);
    for (; keys_[i] != 0; i = (i + 1) & mask_) {
      if (keys_[i] == key) return {values_[i], false};
    }
    keys_[i] = key;
    values_[i] = value;
    ++size_;
    return {value, true};
  }
  // A reference to key's value, inserted as `init` if absent.
  uint32_t& operator()(uint64_t key, uint32_t init) {
    if ((size_ + 1) * 2 > keys_.size()) Rehash(keys_.size() * 2);
    size_t i = Home(key);
    for (; keys_[i] != 0; i = (i + 1) & mask_) {
      if (keys_[i] == key) return values_[i];
    }
    keys_[i] = key;
    values_[i] = init;
    ++size_;
    return values_[i];
  }
  bool Erase(uint64_t key) {
    size_t i = Home(key);
    for (; keys_[i] != key; i = (i + 1) & mask_) {
      if (keys_[i] == 0) return false;
    }
    // Backward shift: pull later entries of the probe run into the gap.
    for (size_t j = i;;) {
      j = (j + 1) & mask_;
      if (keys_[j] == 0) break;
      size_t k = Home(keys_[j]);
      bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
      if (!stays) {
        keys_[i] = keys_[j];
        values_[i] = values_[j];
        i = j;
      }
    }
    keys_[i] = 0;
    --size_;
    return true;
  }
  void Clear() {
    std::fill(keys_.begin(), keys_.end(), 0);
    size_ = 0;
  }
  size_t MemoryBytes() const { return keys_.capacity() * 8 + values_.capacity() * 4; }

 private:
  static size_t SlotsFor(size_t n) {
    size_t s = 16;
    while (s < n * 2) s *= 2;
    return s;
  }
  size_t Home(uint64_t key) const { return (key ^ (key >> 29)) & mask_; }
  void Rehash(size_t slots) {
    std::vector<uint64_t> old_keys = std::move(keys_);
    std::vector<uint32_t> old_values = std::move(values_);
    keys_.assign(slots, 0);
    values_.assign(slots, 0);
    mask_ = slots - 1;
    for (size_t j = 0; j < old_keys.size(); ++j) {
      if (old_keys[j] == 0) continue;
      size_t i = Home(old_keys[j]);
      while (keys_[i] != 0) i = (i + 1) & mask_;
      keys_[i] = old_keys[j];
      values_[i] = old_values[j];
    }
  }

  std::vector<uint64_t> keys_;  // 0: empty
  std::vector<uint32_t> values_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace infergrid
