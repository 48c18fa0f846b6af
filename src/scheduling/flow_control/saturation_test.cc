#include "scheduling/flow_control/saturation.h"

#include <gtest/gtest.h>

namespace infergrid::scheduling::flow {
namespace {

EndpointSnapshot Busy() {
  EndpointSnapshot e;
  e.in_flight = 4;
  e.capacity.kv_cache_tokens = 100000;
  e.capacity.max_num_seqs = 8;
  return e;
}

TEST(Saturation, EachBoundFillsAnEndpoint) {
  SaturationThresholds t;
  EXPECT_EQ(RoomFor(Busy(), 1000, t), Full::kNone);
  auto e = Busy();
  e.in_flight = 8;
  EXPECT_EQ(RoomFor(e, 1000, t), Full::kBatchFull);  // its max_num_seqs: busy, not a bound
  EXPECT_FALSE(IsHard(Full::kBatchFull));
  t.max_requests = 8;
  EXPECT_EQ(RoomFor(e, 1000, t), Full::kRequests);  // a configured bound is hard
  EXPECT_TRUE(IsHard(Full::kRequests));
  t.max_requests = 0;
  // Its requests and this one would together hold more than 95% of its KV cache.
  EXPECT_EQ(RoomFor(Busy(), 95001, t), Full::kKvReserved);
  EXPECT_EQ(RoomFor(Busy(), 95000, t), Full::kNone);
  e = Busy();
  e.metrics_fresh = true;
  e.kv_cache_usage = 0.96;
  EXPECT_EQ(RoomFor(e, 1, t), Full::kKvUsage);
  e.kv_cache_usage = 0.1;
  e.num_requests_waiting = 5;
  EXPECT_EQ(RoomFor(e, 1, t), Full::kQueueDepth);
  e.metrics_fresh = false;  // stale gauges are not read
  EXPECT_EQ(RoomFor(e, 1, t), Full::kNone);
  e.healthy = false;
  EXPECT_EQ(RoomFor(e, 1, t), Full::kUnhealthy);
  EXPECT_EQ(FullName(Full::kKvReserved), "kv_reserved");
}

TEST(Saturation, AnIdleEndpointTakesEvenAnOversizedRequest) {
  EndpointSnapshot e;
  e.capacity.kv_cache_tokens = 1000;
  EXPECT_EQ(RoomFor(e, 5000, {}), Full::kNone);
  e.in_flight = 1;
  EXPECT_EQ(RoomFor(e, 5010, {}), Full::kKvReserved);
}

TEST(Saturation, UnknownCapacityIsBoundedOnlyByWhatIsKnown) {
  EndpointSnapshot e;
  e.in_flight = 1000;
  EXPECT_EQ(RoomFor(e, 1e9, {}), Full::kNone);
}

TEST(Saturation, PeakKvIsWhenTheRequestsStillRunningHoldTheMost) {
  std::vector<RunningRequest> none;
  EXPECT_EQ(PeakKvTokens(none), 0);
  // One request: it grows to its prompt plus all its output.
  std::vector<RunningRequest> one = {{1000, 500}};
  EXPECT_EQ(PeakKvTokens(one), 1500);
  // A long request beside a short one: 2200 at step 100 (1100 + 1100), when the short one
  // ends; the long one alone reaches only 1900. Less than the sum of their own peaks (3000).
  std::vector<RunningRequest> two = {{1000, 900}, {1000, 100}};
  EXPECT_EQ(PeakKvTokens(two), 2200);
  std::vector<RunningRequest> late = {{100, 900}, {3000, 100}};
  EXPECT_EQ(PeakKvTokens(late), 3300);  // at step 100: 200 + 3100
  std::vector<RunningRequest> three = {{0, 1000}, {0, 1000}, {4000, 1}};
  EXPECT_EQ(PeakKvTokens(three), 4003);  // at step 1: 4001 + 1 + 1
  three = {{0, 1000}, {0, 1000}, {1000, 1}};
  EXPECT_EQ(PeakKvTokens(three), 2000);  // at step 1000, the big one long gone
  // Never more than the sum of every request's own peak.
  std::vector<RunningRequest> mix = {{700, 30}, {50, 400}, {2000, 10}, {10, 10}};
  EXPECT_LE(PeakKvTokens(mix), 730 + 450 + 2010 + 20);
}

TEST(Saturation, RequestsGoToBusyEndpointsButNeverPastAHardBound) {
  SaturationThresholds t;
  std::vector<EndpointSnapshot> eps(3, Busy());
  for (size_t i = 0; i < eps.size(); ++i) eps[i].index = i;
  eps[0].metrics_fresh = true;
  eps[0].num_requests_waiting = 9;                 // busy (soft)
  std::vector<double> peak = {1000, 99000, 1000};  // endpoint 1 would pass its KV (hard)
  auto peak_of = [&](size_t i) { return peak[i]; };
  std::vector<EndpointSnapshot> out;
  EXPECT_FALSE(SelectWithRoom(eps, peak_of, t, &out));
  ASSERT_EQ(out.size(), 2u);  // the busy one stays a candidate: its cache may be the best
  EXPECT_EQ(out[0].index, 0u);
  EXPECT_EQ(out[1].index, 2u);
  // Every endpoint busy or at a bound: the request waits.
  eps[2].metrics_fresh = true;
  eps[2].kv_cache_usage = 0.99;
  EXPECT_TRUE(SelectWithRoom(eps, peak_of, t, &out));
  // Every endpoint down: not saturated; the scheduler gets them all, to say why.
  for (auto& e : eps) e.healthy = false;
  EXPECT_FALSE(SelectWithRoom(eps, peak_of, t, &out));
  EXPECT_EQ(out.size(), 3u);
}

}  // namespace
}  // namespace infergrid::scheduling::flow
