#include "scheduling/flow_control/fair_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

namespace infergrid::scheduling::flow {
namespace {

std::vector<ClassSpec> Classes() {
  return {{"critical", 2, false, 0}, {"standard", 1, false, 0}, {"sheddable", 0, true, 2}};
}

FairQueue::Arrival A(const std::string& tenant, double now = 0, double cost = 100,
                     const std::string& klass = "standard", uint64_t session = 0) {
  FairQueue::Arrival a;
  a.tenant = tenant;
  a.klass = klass;
  a.cost = cost;
  a.now_s = now;
  a.session = session;
  return a;
}

TEST(FairQueue, BackloggedTenantsShareByWeight) {
  FairQueue q(Classes(), {{"a", 1}, {"b", 2}}, {});
  for (int i = 0; i < 400; ++i) {
    ASSERT_EQ(q.Push(A("a")).refusal, Refusal::kNone);
    ASSERT_EQ(q.Push(A("b")).refusal, Refusal::kNone);
  }
  std::map<std::string, int> served;
  for (int i = 0; i < 300; ++i) ++served[q.Pop(i).tenant];
  EXPECT_EQ(served["a"], 100);
  EXPECT_EQ(served["b"], 200);
}

TEST(FairQueue, SharesAreInTokensNotRequests) {
  // b sends requests four times as large: with equal weights, equal tokens, so a quarter of
  // the requests.
  FairQueue q(Classes(), {{"a", 1}, {"b", 1}}, {});
  for (int i = 0; i < 400; ++i) {
    q.Push(A("a", 0, 100));
    q.Push(A("b", 0, 400));
  }
  std::map<std::string, double> tokens;
  for (int i = 0; i < 250; ++i) {
    auto item = q.Pop(i);
    tokens[item.tenant] += item.cost;
  }
  EXPECT_NEAR(tokens["a"] / tokens["b"], 1.0, 0.02);
}

TEST(FairQueue, AnIdleTenantBanksNoCredit) {
  FairQueue q(Classes(), {{"a", 1}, {"b", 1}}, {});
  for (int i = 0; i < 100; ++i) q.Push(A("a"));
  for (int i = 0; i < 50; ++i) EXPECT_EQ(q.Pop(i).tenant, "a");  // b idle all along
  for (int i = 0; i < 50; ++i) q.Push(A("b"));
  // b does not now get 50 in a row for the time it was idle: they alternate.
  std::map<std::string, int> served;
  for (int i = 0; i < 20; ++i) ++served[q.Pop(50 + i).tenant];
  EXPECT_EQ(served["a"], 10);
  EXPECT_EQ(served["b"], 10);
}

TEST(FairQueue, ALowWeightTenantIsNeverStarved) {
  FairQueue q(Classes(), {{"big", 100}, {"small", 1}}, {});
  for (int i = 0; i < 5000; ++i) q.Push(A("big"));
  for (int i = 0; i < 20; ++i) q.Push(A("small"));
  // Within every 101 releases the small tenant gets one.
  int since_small = 0, small = 0;
  for (int i = 0; i < 2020; ++i) {
    if (q.Pop(i).tenant == "small") {
      ++small;
      EXPECT_LE(since_small, 101);
      since_small = 0;
    } else {
      ++since_small;
    }
  }
  EXPECT_EQ(small, 20);
}

TEST(FairQueue, HigherClassesGoFirstStrictly) {
  FairQueue q(Classes(), {{"a", 1}, {"b", 1}}, {});
  for (int i = 0; i < 10; ++i) q.Push(A("a", 0, 100, "sheddable"));
  for (int i = 0; i < 10; ++i) q.Push(A("a", 0, 100, "standard"));
  for (int i = 0; i < 3; ++i) q.Push(A("b", 0, 100, "critical"));
  std::vector<std::string> order;
  for (int i = 0; i < 23; ++i) order.push_back(q.Pop(i).klass);
  EXPECT_EQ(std::count(order.begin(), order.begin() + 3, "critical"), 3);
  EXPECT_EQ(std::count(order.begin() + 3, order.begin() + 13, "standard"), 10);
  EXPECT_EQ(std::count(order.begin() + 13, order.end(), "sheddable"), 10);
}

TEST(FairQueue, FifoWithinATenantAndContinuingTurnsFirst) {
  FairQueueOptions o;
  o.new_session_max_delay_s = 5;
  FairQueue q(Classes(), {{"a", 1}}, o);
  // Sessions 1 and 2 were seen before (their first turns went through).
  q.Push(A("a", 0, 100, "standard", 1));
  q.Push(A("a", 0, 100, "standard", 2));
  q.Pop(0);
  q.Pop(0);
  auto n1 = q.Push(A("a", 1, 100, "standard", 7));  // new session
  auto n2 = q.Push(A("a", 1, 100, "standard", 8));  // new session
  auto c1 = q.Push(A("a", 2, 100, "standard", 1));  // continuing
  auto c2 = q.Push(A("a", 2, 100, "standard", 2));  // continuing
  EXPECT_FALSE(n1.continuing);
  EXPECT_TRUE(c1.continuing);
  EXPECT_EQ(q.Pop(2).id, c1.id);
  EXPECT_EQ(q.Pop(2).id, c2.id);
  EXPECT_EQ(q.Pop(2).id, n1.id);
  EXPECT_EQ(q.Pop(2).id, n2.id);
}

TEST(FairQueue, ANewSessionWaitsNoLongerThanItsMaximumDelay) {
  FairQueueOptions o;
  o.new_session_max_delay_s = 5;
  FairQueue q(Classes(), {{"a", 1}}, o);
  q.Push(A("a", 0, 100, "standard", 1));
  q.Pop(0);
  auto fresh = q.Push(A("a", 1, 100, "standard", 9));
  auto cont = q.Push(A("a", 2, 100, "standard", 1));
  EXPECT_EQ(q.Peek(3)->id, cont.id);   // 2 s waited: continuing first
  EXPECT_EQ(q.Peek(6)->id, fresh.id);  // 5 s waited: plain FIFO again
  o.prefer_continuing_sessions = false;
  q.Reconfigure(Classes(), {{"a", 1}}, o);
  EXPECT_EQ(q.Peek(3)->id, fresh.id);
}

TEST(FairQueue, SheddableRequestsAreRefusedWhenTheirWaitWouldBeTooLong) {
  FairQueue q(Classes(), {{"a", 1}}, {});
  // A release rate of 100 tokens/s.
  for (int i = 0; i <= 10; ++i) {
    q.Push(A("a", i, 100));
    q.Pop(i);
  }
  EXPECT_NEAR(q.ReleaseRate(10), 100, 1);
  for (int i = 0; i < 3; ++i) q.Push(A("a", 10, 100));  // 3 s of work queued
  auto shed = q.Push(A("a", 10, 100, "sheddable"));
  EXPECT_EQ(shed.refusal, Refusal::kExpectedWaitTooLong);  // its limit is 2 s
  EXPECT_NEAR(shed.expected_wait_s, 3, 0.1);
  // Standard requests are not sheddable: they queue.
  EXPECT_EQ(q.Push(A("a", 10, 100)).refusal, Refusal::kNone);
  // Sheddable requests are not behind lower classes: with less queued ahead, it is taken.
  FairQueue q2(Classes(), {{"a", 1}}, {});
  for (int i = 0; i <= 10; ++i) {
    q2.Push(A("a", i, 100));
    q2.Pop(i);
  }
  q2.Push(A("a", 10, 100));
  EXPECT_EQ(q2.Push(A("a", 10, 100, "sheddable")).refusal, Refusal::kNone);
}

TEST(FairQueue, RequestsThatWentAtOnceCountForSessionsAndTheRate) {
  FairQueue q(Classes(), {{"a", 1}}, {});
  for (int i = 0; i <= 10; ++i) q.NoteAdmitted(A("a", i, 100, "standard", 42));
  EXPECT_NEAR(q.ReleaseRate(10), 100, 1);
  EXPECT_TRUE(q.Push(A("a", 11, 100, "standard", 42)).continuing);  // seen while not queued
  EXPECT_FALSE(q.Push(A("a", 11, 100, "standard", 43)).continuing);
}

TEST(FairQueue, BoundedAndRemovable) {
  FairQueueOptions o;
  o.max_queued = 3;
  FairQueue q(Classes(), {{"a", 1}, {"b", 1}}, o);
  auto x = q.Push(A("a"));
  auto y = q.Push(A("b"));
  q.Push(A("a"));
  EXPECT_EQ(q.Push(A("b")).refusal, Refusal::kQueueFull);
  EXPECT_EQ(q.Push(A("a", 0, 1, "platinum")).refusal, Refusal::kUnknownClass);
  QueuedItem gone;
  EXPECT_TRUE(q.Remove(y.id, &gone));
  EXPECT_EQ(gone.tenant, "b");
  EXPECT_FALSE(q.Remove(y.id));
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(q.Pop(0).id, x.id);
  EXPECT_EQ(q.Pop(0).tenant, "a");
  EXPECT_EQ(q.Peek(0), nullptr);
}

TEST(FairQueue, DeadlinesFollowTheClass) {
  FairQueueOptions o;
  o.queue_timeout_s = 30;
  FairQueue q(Classes(), {{"a", 1}}, o);
  EXPECT_DOUBLE_EQ(q.Push(A("a", 5)).deadline_s, 35);
  EXPECT_DOUBLE_EQ(q.Push(A("a", 5, 100, "sheddable")).deadline_s, 7);
}

TEST(FairQueue, ReconfigurationKeepsWhatIsQueued) {
  FairQueue q(Classes(), {{"a", 1}, {"b", 1}}, {});
  for (int i = 0; i < 30; ++i) {
    q.Push(A("a"));
    q.Push(A("b"));
  }
  // b's weight goes to 2 and class "standard" is renamed away: everything queued is served.
  q.Reconfigure({{"critical", 2, false, 0}, {"bulk", 0, false, 0}}, {{"a", 1}, {"b", 2}}, {});
  EXPECT_EQ(q.size(), 60u);
  EXPECT_EQ(q.FindClass("standard"), nullptr);  // no new arrivals in it
  EXPECT_EQ(q.Push(A("a")).refusal, Refusal::kUnknownClass);
  std::map<std::string, int> served;
  for (int i = 0; i < 30; ++i) ++served[q.Pop(i).tenant];
  EXPECT_NEAR(served["b"], 20, 1);
  while (q.size() > 0) q.Pop(0);
}

TEST(FairQueue, CorrectionsFromUsageRebalance) {
  FairQueue q(Classes(), {{"a", 1}, {"b", 1}}, {});
  for (int i = 0; i < 100; ++i) {
    q.Push(A("a"));
    q.Push(A("b"));
  }
  // a's requests turn out to cost three times their estimate.
  std::map<std::string, double> used;
  for (int i = 0; i < 100; ++i) {
    auto item = q.Pop(i);
    double actual = item.tenant == "a" ? 300 : 100;
    used[item.tenant] += actual;
    q.Correct(item.tenant, item.klass, item.cost, actual);
  }
  EXPECT_NEAR(used["a"] / used["b"], 1.0, 0.1);
}

// The isolation property in virtual time: a server that runs 8 requests at once, each 1 s;
// a flooding tenant keeps 200 queued; a well-behaved one sends a request, waits for it, and
// sends the next. Its wait is at most one release interval, never the flood's backlog.
TEST(FairQueue, AWellBehavedTenantWaitsOnlyForTheNextFreeSlotBesideAFlood) {
  FairQueue q(Classes(), {{"calm", 1}, {"flood", 1}}, {});
  std::vector<double> slot_free(8);
  for (int i = 0; i < 8; ++i) slot_free[i] = i / 8.0;  // requests end one every 1/8 s
  for (int i = 0; i < 200; ++i) q.Push(A("flood", 0));
  double calm_next = 0.25;  // when calm's next request arrives
  bool calm_queued = false;
  double calm_arrival = 0, worst_wait = 0;
  int calm_served = 0;
  double now = 0;
  for (int step = 0; step < 3000; ++step) {
    // The next event: a slot frees, or calm's request arrives.
    auto slot = std::min_element(slot_free.begin(), slot_free.end());
    if (!calm_queued && calm_next <= *slot) {
      now = calm_next;
      q.Push(A("calm", now));
      calm_queued = true;
      calm_arrival = now;
      continue;
    }
    now = *slot;
    while (q.size() < 200) q.Push(A("flood", now));  // the flood never lets up
    auto item = q.Pop(now);
    *slot = now + 1.0;
    if (item.tenant == "calm") {
      worst_wait = std::max(worst_wait, now - calm_arrival);
      ++calm_served;
      calm_queued = false;
      calm_next = now + 1.0 + 0.01;  // served for 1 s, then the next request
    }
  }
  EXPECT_GT(calm_served, 50);
  EXPECT_LE(worst_wait, 1.0 / 8 + 1e-9);
}

}  // namespace
}  // namespace infergrid::scheduling::flow
