#include "scheduling/scheduler.h"

#include <gtest/gtest.h>

#include "scheduling/filters/healthy/healthy_filter.h"
#include "scheduling/pickers/max_score/max_score_picker.h"
#include "scheduling/registry.h"
#include "unit/scheduling/test_util.h"

namespace infergrid::scheduling {
namespace {

using testutil::Endpoints;

// A scorer that prefers one endpoint and remembers what it was told.
class FixedScorer : public Scorer {
 public:
  FixedScorer(size_t favourite, int* picked, int* completed)
      : favourite_(favourite), picked_(picked), completed_(completed) {}
  std::string_view name() const override { return "fixed"; }
  void Score(const RequestInfo&, std::span<const EndpointSnapshot> eps,
             std::span<const size_t> cands, std::span<double> scores) override {
    for (size_t i = 0; i < cands.size(); ++i)
      scores[i] = eps[cands[i]].index == favourite_ ? 1.0 : 0.0;
  }
  void OnPicked(const RequestInfo&, const EndpointSnapshot& chosen) override {
    ++*picked_;
    last_picked = chosen.index;
  }
  void OnCompleted(const RequestInfo&, size_t, const Completion&) override { ++*completed_; }
  size_t last_picked = 99;

 private:
  size_t favourite_;
  int* picked_;
  int* completed_;
};

Scheduler Make(size_t fav_a, double w_a, size_t fav_b, double w_b, int* picked, int* completed) {
  std::vector<WeightedScorer> scorers;
  scorers.push_back({std::make_unique<FixedScorer>(fav_a, picked, completed), w_a});
  scorers.push_back({std::make_unique<FixedScorer>(fav_b, picked, completed), w_b});
  std::vector<std::unique_ptr<Filter>> filters;
  filters.push_back(std::make_unique<HealthyFilter>());
  return Scheduler("p", std::move(filters), std::move(scorers),
                   std::make_unique<MaxScorePicker>(1e-9), 7);
}

TEST(Scheduler, TheHeavierScorerWins) {
  int picked = 0, completed = 0;
  auto eps = Endpoints(3);
  Scheduler s = Make(0, 1.0, 2, 3.0, &picked, &completed);
  auto d = s.Schedule(RequestInfo{}, eps);
  ASSERT_TRUE(d.endpoint);
  EXPECT_EQ(*d.endpoint, 2u);
  EXPECT_DOUBLE_EQ(d.score, 3.0);
  Scheduler t = Make(0, 5.0, 2, 3.0, &picked, &completed);
  EXPECT_EQ(*t.Schedule(RequestInfo{}, eps).endpoint, 0u);
}

TEST(Scheduler, StatefulScorersHearOfPicksAndCompletions) {
  int picked = 0, completed = 0;
  auto eps = Endpoints(3);
  Scheduler s = Make(1, 1.0, 1, 1.0, &picked, &completed);
  auto d = s.Schedule(RequestInfo{}, eps);
  EXPECT_EQ(picked, 2);  // both scorers
  s.OnCompleted(RequestInfo{}, *d.endpoint, Completion{true, 0.1, 0.2});
  EXPECT_EQ(completed, 2);
}

TEST(Scheduler, FiltersRunFirstAndExplainEmptyResults) {
  int picked = 0, completed = 0;
  auto eps = Endpoints(3);
  eps[2].healthy = false;
  Scheduler s = Make(2, 1.0, 2, 1.0, &picked, &completed);
  auto d = s.Schedule(RequestInfo{}, eps);
  ASSERT_TRUE(d.endpoint);
  EXPECT_NE(*d.endpoint, 2u);  // the favourite is unhealthy
  for (auto& e : eps) e.healthy = false;
  d = s.Schedule(RequestInfo{}, eps);
  EXPECT_FALSE(d.endpoint);
  EXPECT_EQ(d.reason, "no endpoint passed the 'healthy' filter");
  std::vector<EndpointSnapshot> none;
  EXPECT_EQ(s.Schedule(RequestInfo{}, none).reason, "the pool has no endpoints");
}

TEST(Scheduler, RegistryBuildsTheDefaultProfile) {
  auto s = BuiltinRegistry().Build(config::DefaultProfile(), "t", 1);
  ASSERT_TRUE(s.ok()) << s.status().message();
  auto eps = Endpoints(2);
  for (auto& e : eps) e.capacity.prefill_tokens_per_s = 10000;
  // Endpoint 0 has 2 s of prefill queued: a new prompt goes to the idle one.
  eps[0].in_flight = eps[0].in_flight_prefilling = 5;
  eps[0].in_flight_prefill_tokens = 20000;
  RequestInfo r = testutil::Prompt(1, 1000);
  r.session_key = "s";
  EXPECT_EQ(*(*s)->Schedule(r, eps).endpoint, 1u);
  // The session stays on its home although the other endpoint is idle now.
  std::swap(eps[0].in_flight_prefill_tokens, eps[1].in_flight_prefill_tokens);
  std::swap(eps[0].in_flight, eps[1].in_flight);
  std::swap(eps[0].in_flight_prefilling, eps[1].in_flight_prefilling);
  eps[1].in_flight_prefill_tokens = 5000;  // 0.5 s queued at home: not overloaded
  r = testutil::Prompt(1, 1200);
  r.session_key = "s";
  EXPECT_EQ(*(*s)->Schedule(r, eps).endpoint, 1u);
}

}  // namespace
}  // namespace infergrid::scheduling
