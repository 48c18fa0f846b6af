#include "common/duration.h"

#include <gtest/gtest.h>

namespace infergrid {
namespace {

TEST(Duration, ParsesUnits) {
  EXPECT_EQ(ParseDuration("250ms").value(), std::chrono::milliseconds(250));
  EXPECT_EQ(ParseDuration("2s").value(), std::chrono::seconds(2));
  EXPECT_EQ(ParseDuration("1.5s").value(), std::chrono::milliseconds(1500));
  EXPECT_EQ(ParseDuration("3m").value(), std::chrono::minutes(3));
  EXPECT_EQ(ParseDuration("1h").value(), std::chrono::hours(1));
  EXPECT_EQ(ParseDuration("10us").value(), std::chrono::microseconds(10));
}

TEST(Duration, RejectsMissingOrUnknownUnit) {
  EXPECT_FALSE(ParseDuration("5").ok());
  EXPECT_FALSE(ParseDuration("5 days").ok());
  EXPECT_FALSE(ParseDuration("").ok());
  EXPECT_FALSE(ParseDuration("ms").ok());
  EXPECT_NE(ParseDuration("5").status().message().find("unit"), std::string::npos);
}

TEST(Duration, FormatsRoundTrip) {
  EXPECT_EQ(FormatDuration(std::chrono::seconds(3)), "3s");
  EXPECT_EQ(FormatDuration(std::chrono::milliseconds(250)), "250ms");
}

}  // namespace
}  // namespace infergrid
