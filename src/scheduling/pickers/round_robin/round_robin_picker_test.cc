#include "scheduling/pickers/round_robin/round_robin_picker.h"

#include <gtest/gtest.h>

namespace infergrid::scheduling {
namespace {

TEST(RoundRobinPicker, RotatesIgnoringScores) {
  RoundRobinPicker p;
  std::mt19937_64 rng(1);
  std::vector<size_t> cands = {0, 1, 2};
  std::vector<double> scores = {0, 0, 1};
  std::vector<size_t> got;
  for (int i = 0; i < 6; ++i) got.push_back(cands[*p.Pick(cands, scores, rng)]);
  EXPECT_EQ(got, (std::vector<size_t>{0, 1, 2, 0, 1, 2}));
}

TEST(RoundRobinPicker, StaysFairWhenCandidatesChange) {
  RoundRobinPicker p;
  std::mt19937_64 rng(1);
  std::vector<size_t> all = {0, 1, 2, 3};
  std::vector<double> s4(4, 0);
  EXPECT_EQ(all[*p.Pick(all, s4, rng)], 0u);
  EXPECT_EQ(all[*p.Pick(all, s4, rng)], 1u);
  std::vector<size_t> some = {0, 3};  // 2 filtered out
  std::vector<double> s2(2, 0);
  EXPECT_EQ(some[*p.Pick(some, s2, rng)], 3u);
  EXPECT_EQ(some[*p.Pick(some, s2, rng)], 0u);
}

}  // namespace
}  // namespace infergrid::scheduling
