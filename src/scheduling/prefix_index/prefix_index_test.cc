#include "scheduling/prefix_index/prefix_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <list>
#include <map>
#include <random>
#include <set>

namespace infergrid::scheduling {
namespace {

using Matches = std::vector<std::pair<uint32_t, uint32_t>>;

std::vector<BlockHash> Chain(uint64_t seed, size_t n, std::vector<BlockHash> prefix = {}) {
  std::vector<BlockHash> c = std::move(prefix);
  for (size_t i = 0; i < n; ++i) c.push_back(seed * 1000003 + i + 1);
  return c;
}

std::map<uint32_t, uint32_t> AsMap(const Matches& m) {
  std::map<uint32_t, uint32_t> out;
  for (auto [e, n] : m) {
    EXPECT_EQ(out.count(e), 0u) << "endpoint " << e << " reported twice";
    out[e] = n;
  }
  return out;
}

TEST(PrefixIndex, FindsEachEndpointsLongestPrefix) {
  PrefixIndex idx(1000);
  auto a = Chain(1, 10);
  idx.Insert(0, a);
  idx.Insert(1, std::span(a).first(4));
  idx.Insert(2, Chain(2, 10));  // another prompt entirely
  Matches m;
  idx.Match(a, &m);
  EXPECT_EQ(AsMap(m), (std::map<uint32_t, uint32_t>{{0, 10}, {1, 4}}));
  EXPECT_EQ(idx.MatchOne(0, a), 10u);
  EXPECT_EQ(idx.MatchOne(1, a), 4u);
  EXPECT_EQ(idx.MatchOne(2, a), 0u);
  EXPECT_EQ(idx.Holders(a[0]), 2u);
  EXPECT_EQ(idx.Holders(a[5]), 1u);
}

TEST(PrefixIndex, SharedHeadThenDivergingTails) {
  PrefixIndex idx(1000);
  auto head = Chain(7, 5);
  auto x = Chain(8, 6, head), y = Chain(9, 3, head);
  idx.Insert(0, x);
  idx.Insert(1, y);
  idx.Insert(2, head);
  Matches m;
  idx.Match(x, &m);
  EXPECT_EQ(AsMap(m), (std::map<uint32_t, uint32_t>{{0, 11}, {1, 5}, {2, 5}}));
}

TEST(PrefixIndex, EvictsTheLeastRecentTailFirstSoWhatIsHeldStaysAPrefix) {
  PrefixIndex idx(6);
  auto a = Chain(1, 4), b = Chain(2, 4);
  idx.Insert(0, a);
  idx.Insert(0, b);  // 8 blocks > 6: a's last two go
  EXPECT_EQ(idx.size(0), 6u);
  EXPECT_EQ(idx.MatchOne(0, a), 2u);
  EXPECT_EQ(idx.MatchOne(0, b), 4u);
  idx.Insert(0, a);  // a is recent again; b's tail goes
  EXPECT_EQ(idx.MatchOne(0, a), 4u);
  EXPECT_EQ(idx.MatchOne(0, b), 2u);
}

TEST(PrefixIndex, ALongerChainThanTheCapacityKeepsItsHead) {
  PrefixIndex idx(3);
  auto a = Chain(1, 10);
  idx.Insert(0, a);
  EXPECT_EQ(idx.MatchOne(0, a), 3u);
  EXPECT_EQ(idx.size(0), 3u);
}

TEST(PrefixIndex, CapacityChangesAndClear) {
  PrefixIndex idx(100);
  auto a = Chain(1, 10);
  idx.Insert(0, a);
  idx.Insert(1, a);
  idx.SetCapacity(0, 4);
  EXPECT_EQ(idx.MatchOne(0, a), 4u);
  idx.Clear(1);
  EXPECT_EQ(idx.size(1), 0u);
  Matches m;
  idx.Match(a, &m);
  EXPECT_EQ(AsMap(m), (std::map<uint32_t, uint32_t>{{0, 4}}));
  idx.SetCapacity(2, 0);  // an endpoint that remembers nothing
  idx.Insert(2, a);
  EXPECT_EQ(idx.size(2), 0u);
}

// A plain model of the index: per endpoint an LRU list of hashes.
class Reference {
 public:
  Reference(size_t endpoints, std::vector<size_t> caps) : lru_(endpoints), cap_(std::move(caps)) {}
  void Insert(size_t e, std::span<const BlockHash> blocks) {
    size_t n = std::min(blocks.size(), cap_[e]);
    for (size_t i = n; i-- > 0;) {
      lru_[e].remove(blocks[i]);
      lru_[e].push_front(blocks[i]);
      if (lru_[e].size() > cap_[e]) lru_[e].pop_back();
    }
  }
  uint32_t MatchOne(size_t e, std::span<const BlockHash> blocks) const {
    std::set<BlockHash> held(lru_[e].begin(), lru_[e].end());
    uint32_t n = 0;
    while (n < blocks.size() && held.count(blocks[n])) ++n;
    return n;
  }
  size_t size(size_t e) const { return lru_[e].size(); }

 private:
  std::vector<std::list<BlockHash>> lru_;
  std::vector<size_t> cap_;
};

// The property test the issue asks for: under random traffic (shared heads, diverging tails,
// repeats), the index never exceeds its memory bound or any endpoint's capacity, and matches
// exactly what a plain per-endpoint LRU would hold.
TEST(PrefixIndex, PropertyNeverExceedsItsMemoryBoundAndMatchesAPlainLru) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    std::mt19937_64 rng(seed);
    const size_t endpoints = 1 + rng() % 12;
    std::vector<size_t> caps(endpoints);
    PrefixIndex idx(0);
    for (size_t e = 0; e < endpoints; ++e) {
      caps[e] = rng() % 4 == 0 ? 1 + rng() % 8 : 20 + rng() % 300;
      idx.SetCapacity(e, caps[e]);
    }
    Reference ref(endpoints, caps);
    // A pool of heads (system prompts, documents) and conversations growing from them.
    std::vector<std::vector<BlockHash>> convs;
    for (int i = 0; i < 20; ++i) convs.push_back(Chain(1000 * seed + i, 1 + rng() % 40));
    for (int step = 0; step < 3000; ++step) {
      auto& c = convs[rng() % convs.size()];
      if (rng() % 3 == 0) c = Chain(rng(), 1 + rng() % 30, c);  // the conversation grows
      if (rng() % 50 == 0) c = Chain(rng(), 1 + rng() % 60);    // a new one
      size_t e = rng() % endpoints;
      idx.Insert(e, c);
      ref.Insert(e, c);
      ASSERT_LE(idx.MemoryBytes(), idx.MemoryBound()) << "seed " << seed << " step " << step;
      for (size_t k = 0; k < endpoints; ++k) ASSERT_LE(idx.size(k), caps[k]);
      if (step % 7 == 0) {
        auto& probe = convs[rng() % convs.size()];
        Matches m;
        idx.Match(probe, &m);
        auto got = AsMap(m);
        for (size_t k = 0; k < endpoints; ++k) {
          uint32_t want = ref.MatchOne(k, probe);
          ASSERT_EQ(idx.MatchOne(k, probe), want) << "seed " << seed << " endpoint " << k;
          ASSERT_EQ(got.count(k) ? got[k] : 0u, want) << "seed " << seed << " endpoint " << k;
          ASSERT_EQ(idx.size(k), ref.size(k));
        }
      }
    }
  }
}

TEST(PrefixIndex, MemoryPerEntryAtScale) {
  PrefixIndex idx(200000);
  idx.Reserve(8);
  std::mt19937_64 rng(3);
  for (int i = 0; i < 2000; ++i) idx.Insert(rng() % 8, Chain(rng(), 400));
  EXPECT_GT(idx.size(), 500000u);
  EXPECT_LE(idx.MemoryBytes(), idx.MemoryBound());
  EXPECT_LE(double(idx.MemoryBytes()) / idx.size(), double(PrefixIndex::kMaxBytesPerEntry));
}

TEST(PrefixIndex, EntriesListWhatAnEndpointHoldsLeastRecentFirst) {
  PrefixIndex idx(100);
  idx.Insert(0, Chain(1, 3));  // its head most recent: 1, then 2, then 3
  idx.Insert(0, Chain(2, 1));
  std::vector<BlockHash> out;
  idx.Entries(0, &out);
  auto a = Chain(1, 3), b = Chain(2, 1);
  EXPECT_EQ(out, (std::vector<BlockHash>{a[2], a[1], a[0], b[0]}));
  // Inserted again in that order, one at a time, another index ends in the same recency.
  PrefixIndex copy(100);
  for (BlockHash h : out) copy.Insert(0, std::span<const BlockHash>(&h, 1));
  std::vector<BlockHash> again;
  copy.Entries(0, &again);
  EXPECT_EQ(again, out);
  out.clear();
  idx.Entries(5, &out);  // an endpoint it never heard of holds nothing
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace infergrid::scheduling
