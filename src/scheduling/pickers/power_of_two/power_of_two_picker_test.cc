#include "scheduling/pickers/power_of_two/power_of_two_picker.h"

#include <gtest/gtest.h>

#include <map>

namespace infergrid::scheduling {
namespace {

TEST(PowerOfTwoPicker, TakesTheBetterOfTwoRandomCandidates) {
  PowerOfTwoPicker p;
  std::mt19937_64 rng(5);
  std::vector<size_t> cands = {0, 1, 2, 3};
  std::vector<double> scores = {0.1, 0.2, 0.3, 0.9};
  std::map<size_t, int> counts;
  for (int i = 0; i < 6000; ++i) ++counts[*p.Pick(cands, scores, rng)];
  // The worst wins no pair; the best wins every pair it is in (1/2 of draws); the second
  // best wins its pairs with the two below it (1/3 of draws); the third 1/6.
  EXPECT_EQ(counts.count(0), 0u);
  EXPECT_NEAR(counts[3] / 6000.0, 0.5, 0.03);
  EXPECT_NEAR(counts[2] / 6000.0, 1 / 3.0, 0.03);
  EXPECT_NEAR(counts[1] / 6000.0, 1 / 6.0, 0.03);
}

TEST(PowerOfTwoPicker, OneOrNoCandidates) {
  PowerOfTwoPicker p;
  std::mt19937_64 rng(1);
  std::vector<size_t> one = {7};
  std::vector<double> s = {0.5};
  EXPECT_EQ(*p.Pick(one, s, rng), 0u);
  EXPECT_FALSE(p.Pick({}, {}, rng));
}

}  // namespace
}  // namespace infergrid::scheduling
