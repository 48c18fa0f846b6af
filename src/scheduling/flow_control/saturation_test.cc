#include "scheduling/flow_control/saturation.h"

#include <gtest/gtest.h>

namespace infergrid::scheduling::flow {
namespace {

EndpointSnapshot Busy() {
  EndpointSnapshot e;
  e.in_flight = 4;
  e.in_flight_kv_tokens = 40000;
  e.capacity.kv_cache_tokens = 100000;
  e.capacity.max_num_seqs = 8;
  return e;
}

TEST(Saturation, EachBoundFillsAnEndpoint) {
  SaturationThresholds t;
  EXPECT_EQ(RoomFor(Busy(), 1000, t), Full::kNone);
  auto e = Busy();
  e.in_flight = 8;
  EXPECT_EQ(RoomFor(e, 1000, t), Full::kRequests);  // its max_num_seqs
  t.max_requests = 16;
  EXPECT_EQ(RoomFor(e, 1000, t), Full::kNone);  // the configured bound replaces it
  // Prompt plus expected output reserved past 90% of its KV cache.
  EXPECT_EQ(RoomFor(Busy(), 50001, t), Full::kKvReserved);
  EXPECT_EQ(RoomFor(Busy(), 50000, t), Full::kNone);
  e = Busy();
  e.metrics_fresh = true;
  e.kv_cache_usage = 0.95;
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
  e.in_flight_kv_tokens = 10;
  EXPECT_EQ(RoomFor(e, 5000, {}), Full::kKvReserved);
}

TEST(Saturation, UnknownCapacityIsBoundedOnlyByWhatIsKnown) {
  EndpointSnapshot e;
  e.in_flight = 1000;
  e.in_flight_kv_tokens = 1 << 30;
  EXPECT_EQ(RoomFor(e, 1e9, {}), Full::kNone);
}

}  // namespace
}  // namespace infergrid::scheduling::flow
