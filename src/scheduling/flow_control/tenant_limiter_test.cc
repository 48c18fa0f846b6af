#include "scheduling/flow_control/tenant_limiter.h"

#include <gtest/gtest.h>

namespace infergrid::scheduling::flow {
namespace {

TEST(TenantLimiter, ConcurrencyCountsUntilRelease) {
  TenantLimiter l({{"a", 2, 0, 0}});
  EXPECT_EQ(l.Admit("a", 10, 0).exceeded, Limit::kNone);
  EXPECT_EQ(l.Admit("a", 10, 0).exceeded, Limit::kNone);
  auto v = l.Admit("a", 10, 0);
  EXPECT_EQ(v.exceeded, Limit::kConcurrency);
  EXPECT_GT(v.retry_after_s, 0);
  EXPECT_STREQ(LimitName(v.exceeded), "maxConcurrentRequests");
  l.Release("a", 10, 10, true, 1);
  EXPECT_EQ(l.Admit("a", 10, 1).exceeded, Limit::kNone);
  EXPECT_EQ(l.in_gateway("a"), 2u);
  // Tenants without limits are never refused.
  for (int i = 0; i < 100; ++i) EXPECT_EQ(l.Admit("other", 1e9, 0).exceeded, Limit::kNone);
}

TEST(TenantLimiter, RequestsPerMinuteRefillContinuously) {
  TenantLimiter l({{"a", 0, 60, 0}});  // one a second
  for (int i = 0; i < 60; ++i) ASSERT_EQ(l.Admit("a", 1, 0).exceeded, Limit::kNone);
  auto v = l.Admit("a", 1, 0);
  EXPECT_EQ(v.exceeded, Limit::kRequestsPerMinute);
  EXPECT_NEAR(v.retry_after_s, 1.0, 1e-9);
  EXPECT_EQ(l.Admit("a", 1, 0.5).exceeded, Limit::kRequestsPerMinute);
  EXPECT_EQ(l.Admit("a", 1, 1.0).exceeded, Limit::kNone);
}

TEST(TenantLimiter, TokensPerMinuteAreCorrectedFromUsage) {
  TenantLimiter l({{"a", 0, 0, 1000}});
  EXPECT_EQ(l.Admit("a", 600, 0).exceeded, Limit::kNone);
  auto v = l.Admit("a", 600, 0);
  EXPECT_EQ(v.exceeded, Limit::kTokensPerMinute);
  EXPECT_NEAR(v.retry_after_s, 200 * 60.0 / 1000, 1e-9);
  // The first request used only 100: 500 come back.
  l.Release("a", 600, 100, true, 0);
  EXPECT_EQ(l.Admit("a", 600, 0).exceeded, Limit::kNone);
  // One that used more than estimated overdraws the bucket.
  l.Release("a", 600, 1500, true, 0);
  EXPECT_EQ(l.Admit("a", 10, 0).exceeded, Limit::kTokensPerMinute);
}

TEST(TenantLimiter, UnservedRequestsAreRefunded) {
  TenantLimiter l({{"a", 0, 2, 1000}});
  EXPECT_EQ(l.Admit("a", 900, 0).exceeded, Limit::kNone);
  l.Release("a", 900, 0, false, 0);  // shed from the queue
  EXPECT_EQ(l.Admit("a", 900, 0).exceeded, Limit::kNone);
  EXPECT_EQ(l.Admit("a", 10, 0).exceeded, Limit::kNone);
  EXPECT_EQ(l.Admit("a", 10, 0).exceeded, Limit::kRequestsPerMinute);
}

TEST(TenantLimiter, ARequestLargerThanAMinutesWorthPassesOnAFullBucket) {
  TenantLimiter l({{"a", 0, 0, 1000}});
  EXPECT_EQ(l.Admit("a", 5000, 0).exceeded, Limit::kNone);
  EXPECT_EQ(l.Admit("a", 5000, 30).exceeded, Limit::kTokensPerMinute);
}

TEST(TenantLimiter, ReconfigurationKeepsCountsAndLevels) {
  TenantLimiter l({{"a", 1, 0, 0}});
  EXPECT_EQ(l.Admit("a", 1, 0).exceeded, Limit::kNone);
  l.Reconfigure({{"a", 2, 0, 0}});
  EXPECT_EQ(l.in_gateway("a"), 1u);
  EXPECT_EQ(l.Admit("a", 1, 0).exceeded, Limit::kNone);
  EXPECT_EQ(l.Admit("a", 1, 0).exceeded, Limit::kConcurrency);
}

TEST(TenantLimiter, ATenantDroppedFromTheConfigHasNoLimitsLeft) {
  TenantLimiter l({{"a", 1, 1, 10}});
  EXPECT_EQ(l.Admit("a", 5, 0).exceeded, Limit::kNone);
  EXPECT_EQ(l.Admit("a", 5, 0).exceeded, Limit::kConcurrency);
  l.Reconfigure({});
  for (int i = 0; i < 5; ++i) EXPECT_EQ(l.Admit("a", 1000, 0).exceeded, Limit::kNone);
  EXPECT_EQ(l.in_gateway("a"), 6u);
}

TEST(TenantLimiter, ReplicasSplitEveryLimit) {
  TenantLimiter l({{"a", 5, 60, 1000}});
  l.SetShare(0.5);  // two replicas
  EXPECT_EQ(l.Admit("a", 400, 0).exceeded, Limit::kNone);
  EXPECT_EQ(l.Admit("a", 100, 0).exceeded, Limit::kNone);
  // Half of 1000 tokens a minute is spent.
  EXPECT_EQ(l.Admit("a", 10, 0).exceeded, Limit::kTokensPerMinute);
  l.SetShare(1.0 / 3);  // ceil(5/3) = 2 concurrent, and two are in the gateway
  EXPECT_EQ(l.Admit("a", 1, 0).exceeded, Limit::kConcurrency);
  l.SetShare(1);  // alone again: the whole limit, its bucket refilling at the whole rate
  EXPECT_EQ(l.Admit("a", 1, 0).exceeded, Limit::kTokensPerMinute);
  EXPECT_EQ(l.Admit("a", 10, 0.6).exceeded, Limit::kNone);  // 0.01 min x 1000 tokens
  EXPECT_EQ(l.in_gateway("a"), 3u);
}

}  // namespace
}  // namespace infergrid::scheduling::flow
