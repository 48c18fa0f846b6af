#include "scheduling/pickers/max_score/max_score_picker.h"

#include <gtest/gtest.h>

#include <set>

namespace infergrid::scheduling {
namespace {

TEST(MaxScorePicker, PicksTheHighest) {
  MaxScorePicker p(1e-9);
  std::mt19937_64 rng(1);
  std::vector<size_t> cands = {4, 7, 9};
  std::vector<double> scores = {0.2, 0.9, 0.5};
  EXPECT_EQ(*p.Pick(cands, scores, rng), 1u);
}

TEST(MaxScorePicker, BreaksTiesAtRandomAmongTheBestOnly) {
  MaxScorePicker p(1e-9);
  std::mt19937_64 rng(1);
  std::vector<size_t> cands = {0, 1, 2};
  std::vector<double> scores = {1, 0.5, 1};
  std::set<size_t> seen;
  for (int i = 0; i < 200; ++i) seen.insert(*p.Pick(cands, scores, rng));
  EXPECT_EQ(seen, (std::set<size_t>{0, 2}));
}

TEST(MaxScorePicker, EmptyCandidates) {
  MaxScorePicker p(1e-9);
  std::mt19937_64 rng(1);
  EXPECT_FALSE(p.Pick({}, {}, rng));
}

}  // namespace
}  // namespace infergrid::scheduling
