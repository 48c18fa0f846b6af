#include "plan/stats.h"

#include <gtest/gtest.h>

namespace infergrid::plan {
namespace {

TEST(Stats, PercentilesByNearestRank) {
  std::vector<double> v = {5, 1, 4, 2, 3, 10, 9, 8, 7, 6};
  EXPECT_DOUBLE_EQ(Percentile(&v, 0.5), 5);    // rank 5 of 10
  EXPECT_DOUBLE_EQ(Percentile(&v, 0.9), 9);    // rank 9
  EXPECT_DOUBLE_EQ(Percentile(&v, 0.99), 10);  // rank ceil(9.9) = 10
  EXPECT_DOUBLE_EQ(Percentile(&v, 0.05), 1);
  std::vector<double> none;
  EXPECT_DOUBLE_EQ(Percentile(&none, 0.5), 0);
}

TEST(Stats, LogHistogramQuantilesWithinItsResolution) {
  LogHistogram h;
  for (int i = 1; i <= 1000; ++i) h.Add(i * 1e-3);  // 1 ms .. 1 s, uniform
  EXPECT_EQ(h.count(), 1000u);
  EXPECT_NEAR(h.mean(), 0.5005, 1e-9);
  EXPECT_NEAR(h.Quantile(0.5), 0.5, 0.5 * 0.006);
  EXPECT_NEAR(h.Quantile(0.99), 0.99, 0.99 * 0.006);
  EXPECT_NEAR(h.Quantile(0.001), 0.001, 0.001 * 0.006);
  h.Add(1e9);  // clamped into the last bucket, not lost
  EXPECT_EQ(h.count(), 1001u);
}

}  // namespace
}  // namespace infergrid::plan
