#include "engine_model/block_pool.h"

#include <gtest/gtest.h>

#include <numeric>

namespace infergrid::engine_model {
namespace {

std::vector<uint32_t> Tokens(uint32_t from, size_t n) {
  std::vector<uint32_t> t(n);
  std::iota(t.begin(), t.end(), from);
  return t;
}

TEST(BlockHash, ChainsOnTheParentAndCoversOnlyFullBlocks) {
  auto a = Tokens(0, 40);
  auto hashes = HashBlocks(a, 16);
  ASSERT_EQ(hashes.size(), 2u);  // 40 tokens: two full blocks, a partial one unhashed
  // The same tokens under a different parent hash differently: a block is its whole prefix.
  std::span<const uint32_t> second(a.data() + 16, 16);
  EXPECT_EQ(hashes[1], HashBlock(hashes[0], second));
  EXPECT_NE(HashBlock(0, second), hashes[1]);
  // Equal prefixes give equal chains; a change in block 0 changes every later hash.
  auto b = a;
  b[39] = 999;  // in the partial block: no full block changes
  EXPECT_EQ(HashBlocks(b, 16), hashes);
  b[3] = 999;
  auto changed = HashBlocks(b, 16);
  EXPECT_NE(changed[0], hashes[0]);
  EXPECT_NE(changed[1], hashes[1]);
}

TEST(BlockPool, AllocatesUntilFullAndRefusesWithoutTakingAnything) {
  BlockPool pool(4);
  auto got = pool.Allocate(3);
  ASSERT_TRUE(got);
  EXPECT_EQ(pool.num_free(), 1u);
  EXPECT_FALSE(pool.Allocate(2));
  EXPECT_EQ(pool.num_free(), 1u);
  EXPECT_DOUBLE_EQ(pool.usage(), 0.75);
  pool.Release(*got);
  EXPECT_EQ(pool.num_free(), 4u);
}

TEST(BlockPool, FreedBlocksStayCachedUntilEvicted) {
  BlockPool pool(4);
  auto tokens = Tokens(0, 32);
  auto hashes = HashBlocks(tokens, 16);
  auto blocks = *pool.Allocate(2);
  pool.Commit(blocks[0], hashes[0]);
  pool.Commit(blocks[1], hashes[1]);
  pool.Release(blocks);
  // Both blocks are free, yet a request with the same prompt finds its whole prefix.
  EXPECT_EQ(pool.num_free(), 4u);
  EXPECT_EQ(pool.CachedPrefix(hashes), 2u);
  auto reused = pool.Acquire(hashes, 2);
  EXPECT_EQ(reused, blocks);
  EXPECT_EQ(pool.num_free(), 2u);
  EXPECT_EQ(pool.evictions(), 0u);
}

TEST(BlockPool, EvictsLeastRecentlyFreedFirst) {
  BlockPool pool(3);
  auto h = HashBlocks(Tokens(0, 48), 16);
  auto blocks = *pool.Allocate(3);
  for (int i = 0; i < 3; ++i) pool.Commit(blocks[i], h[i]);
  // Free last-first, as the engine does: the chain's tail becomes the eviction candidate.
  std::vector<BlockId> reversed(blocks.rbegin(), blocks.rend());
  pool.Release(reversed);
  auto one = *pool.Allocate(1);
  EXPECT_EQ(one[0], blocks[2]);
  EXPECT_EQ(pool.evictions(), 1u);
  EXPECT_EQ(pool.CachedPrefix(h), 2u);  // the shared head survives
  EXPECT_FALSE(pool.hash_of(blocks[2]));
}

TEST(BlockPool, SharedPrefixesAreReferenceCounted) {
  BlockPool pool(4);
  auto h = HashBlocks(Tokens(0, 16), 16);
  auto first = *pool.Allocate(1);
  pool.Commit(first[0], h[0]);
  auto second = pool.Acquire(h, 1);  // a second request on the same prefix
  EXPECT_EQ(second[0], first[0]);
  EXPECT_EQ(pool.ref_count(first[0]), 2u);
  pool.Release(first);
  EXPECT_EQ(pool.num_free(), 3u);  // still held by the second request
  pool.Release(second);
  EXPECT_EQ(pool.num_free(), 4u);
  EXPECT_EQ(pool.CachedPrefix(h), 1u);
}

TEST(BlockPool, AHitOnAFreeBlockProtectsItFromEviction) {
  BlockPool pool(2);
  auto h = HashBlocks(Tokens(0, 16), 16);
  auto a = *pool.Allocate(1);
  pool.Commit(a[0], h[0]);
  pool.Release(a);
  auto hit = pool.Acquire(h, 1);
  // The only free block now is the other one: allocating it must not evict the hit.
  auto b = *pool.Allocate(1);
  EXPECT_NE(b[0], hit[0]);
  EXPECT_EQ(pool.CachedPrefix(h), 1u);
  EXPECT_FALSE(pool.Allocate(1));
}

}  // namespace
}  // namespace infergrid::engine_model
