#include "gateway/health.h"

#include <gtest/gtest.h>

namespace infergrid::gateway {
namespace {

using Change = EndpointHealth::Change;

HealthPolicy Passive() {
  HealthPolicy p;
  p.active = false;
  p.consecutive_failures = 3;
  p.base_ejection_s = 5;
  p.max_ejection_s = 20;
  return p;
}

TEST(EndpointHealth, ConsecutiveFailuresEjectAndASuccessResetsTheCount) {
  EndpointHealth h;
  auto p = Passive();
  EXPECT_EQ(h.OnRequest(false, 0, p), Change::kNone);
  EXPECT_EQ(h.OnRequest(false, 0, p), Change::kNone);
  EXPECT_EQ(h.OnRequest(true, 0, p), Change::kNone);  // not in a row
  EXPECT_EQ(h.OnRequest(false, 1, p), Change::kNone);
  EXPECT_EQ(h.OnRequest(false, 1, p), Change::kNone);
  EXPECT_TRUE(h.available());
  EXPECT_EQ(h.OnRequest(false, 1, p), Change::kEjected);
  EXPECT_FALSE(h.available());
  EXPECT_DOUBLE_EQ(h.ejected_until(), 6);
}

TEST(EndpointHealth, EjectionsInARowDoubleUpToTheMaximumAndGoodTimeForgives) {
  EndpointHealth h;
  auto p = Passive();
  p.consecutive_failures = 1;
  EXPECT_EQ(h.OnRequest(false, 0, p), Change::kEjected);
  EXPECT_DOUBLE_EQ(h.ejected_until(), 5);
  EXPECT_EQ(h.Tick(4.9, p), Change::kNone);
  EXPECT_EQ(h.Tick(5, p), Change::kRejoined);
  EXPECT_EQ(h.OnRequest(false, 6, p), Change::kEjected);
  EXPECT_DOUBLE_EQ(h.ejected_until(), 16);  // 10 s: the second in a row
  EXPECT_EQ(h.Tick(16, p), Change::kRejoined);
  EXPECT_EQ(h.OnRequest(false, 16, p), Change::kEjected);
  EXPECT_DOUBLE_EQ(h.ejected_until(), 36);  // 20 s: capped
  EXPECT_EQ(h.Tick(36, p), Change::kRejoined);
  EXPECT_EQ(h.OnRequest(false, 37, p), Change::kEjected);
  EXPECT_DOUBLE_EQ(h.ejected_until(), 57);  // still capped
  EXPECT_EQ(h.Tick(57, p), Change::kRejoined);
  // A max_ejection of good behaviour starts the doubling over.
  EXPECT_EQ(h.OnRequest(false, 80, p), Change::kEjected);
  EXPECT_DOUBLE_EQ(h.ejected_until(), 85);
  EXPECT_EQ(h.ejections(), 5u);
}

TEST(EndpointHealth, WithActiveChecksAnEjectedEndpointNeedsAPassingProbeAfterItsTime) {
  EndpointHealth h;
  auto p = Passive();
  p.active = true;
  p.consecutive_failures = 1;
  h.OnRequest(false, 0, p);
  EXPECT_EQ(h.Tick(10, p), Change::kNone);              // time alone is not enough
  EXPECT_EQ(h.OnProbe(true, 3, p), Change::kNone);      // its time is not up
  EXPECT_EQ(h.OnProbe(true, 5, p), Change::kRejoined);  // up, and the probe passed
  EXPECT_TRUE(h.available());
}

TEST(EndpointHealth, ProbesTakeOutAndBringBackByThresholds) {
  EndpointHealth h;
  HealthPolicy p;
  p.unhealthy_threshold = 2;
  p.healthy_threshold = 2;
  EXPECT_EQ(h.OnProbe(false, 0, p), Change::kNone);
  EXPECT_EQ(h.OnProbe(false, 1, p), Change::kEjected);
  EXPECT_TRUE(h.probe_down());
  EXPECT_EQ(h.OnProbe(true, 2, p), Change::kNone);
  EXPECT_EQ(h.OnProbe(true, 3, p), Change::kRejoined);
  EXPECT_TRUE(h.available());
}

TEST(EndpointHealth, PassiveOffIgnoresRequests) {
  EndpointHealth h;
  HealthPolicy p;
  p.passive = false;
  for (int i = 0; i < 10; ++i) EXPECT_EQ(h.OnRequest(false, i, p), Change::kNone);
  EXPECT_TRUE(h.available());
}

TEST(EndpointHealth, TurningActiveChecksOffForgetsWhatProbesSaid) {
  EndpointHealth h;
  HealthPolicy p;
  p.unhealthy_threshold = 1;
  EXPECT_EQ(h.OnProbe(false, 0, p), Change::kEjected);
  EXPECT_EQ(h.Tick(1, p), Change::kNone);  // still probing: still out
  p.active = false;
  EXPECT_EQ(h.Tick(2, p), Change::kRejoined);
  EXPECT_TRUE(h.available());
}

TEST(RetryBudget, RetriesAreAtMostTheShareOfRequestsPlusTheReserve) {
  RetryBudget b(20, 3);
  int retries = 0;
  for (int i = 0; i < 1000; ++i) {
    b.OnRequest();
    // Every request fails and wants a retry.
    if (b.TryRetry()) ++retries;
  }
  EXPECT_LE(retries, 3 + 200);
  EXPECT_GE(retries, 200);
  RetryBudget none(0, 0);
  none.Configure(0, 0);
  for (int i = 0; i < 100; ++i) none.OnRequest();
  EXPECT_FALSE(none.TryRetry());
}

}  // namespace
}  // namespace infergrid::gateway
