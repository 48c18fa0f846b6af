#include "common/u64_map.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

namespace infergrid {
namespace {

TEST(U64Map, InsertFindEraseAndGrow) {
  U64Map m;
  EXPECT_EQ(m.Find(7), U64Map::kAbsent);
  EXPECT_TRUE(m.Insert(7, 70).second);
  EXPECT_EQ(m.Insert(7, 71), (std::pair<uint32_t, bool>{70, false}));  // kept the first value
  m(8, 0) += 5;
  EXPECT_EQ(m.Find(8), 5u);
  EXPECT_TRUE(m.Erase(7));
  EXPECT_FALSE(m.Erase(7));
  EXPECT_FALSE(m.Contains(7));
  EXPECT_EQ(m.size(), 1u);
  m.Clear();
  EXPECT_TRUE(m.empty());
  EXPECT_FALSE(m.Contains(8));
}

// Against std::unordered_map under random inserts and erases, with keys that collide in the
// low bits, so probe runs are long and backward-shift deletion is exercised.
TEST(U64Map, MatchesAStandardMapUnderChurn) {
  std::mt19937_64 rng(3);
  U64Map m(4);
  std::unordered_map<uint64_t, uint32_t> ref;
  for (int i = 0; i < 200000; ++i) {
    uint64_t key = 1 + (rng() % 3000) * 1024;  // same low bits: clustered
    if (rng() % 3 == 0) {
      ASSERT_EQ(m.Erase(key), ref.erase(key) > 0);
    } else {
      uint32_t v = static_cast<uint32_t>(rng());
      auto [stored, inserted] = m.Insert(key, v);
      auto [it, ref_inserted] = ref.emplace(key, v);
      ASSERT_EQ(inserted, ref_inserted);
      ASSERT_EQ(stored, it->second);
    }
    if (i % 1000 == 0) {
      ASSERT_EQ(m.size(), ref.size());
      for (auto [k, v] : ref) ASSERT_EQ(m.Find(k), v);
    }
  }
}

}  // namespace
}  // namespace infergrid
