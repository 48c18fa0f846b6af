#include "metrics/registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "metrics/text_parser.h"

namespace infergrid::metrics {
namespace {

using ::testing::HasSubstr;

TEST(Registry, CounterWithEscapedLabels) {
  Registry r;
  auto* c = r.AddCounter("x_total", "Help with \\ and\nnewline.", {"path"});
  c->With({"a\"b\\c\nd"})->Inc(2);
  std::string text = r.Render();
  EXPECT_THAT(text, HasSubstr("# HELP x_total Help with \\\\ and\\nnewline.\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE x_total counter\n"));
  EXPECT_THAT(text, HasSubstr("x_total{path=\"a\\\"b\\\\c\\nd\"} 2\n"));
  // Our own parser reads back what we render.
  auto samples = ParseText(text);
  ASSERT_TRUE(samples.ok());
  ASSERT_EQ(samples->size(), 1u);
  EXPECT_EQ((*samples)[0].labels.at("path"), "a\"b\\c\nd");
}

TEST(Registry, HistogramBucketsAreCumulative) {
  Registry r;
  auto* h = r.AddHistogram("lat_seconds", "Latency.", {"pool"}, {0.1, 1});
  auto* child = h->With({"p"});
  child->Observe(0.05);
  child->Observe(0.5);
  child->Observe(0.5);
  child->Observe(5);
  std::string text = r.Render();
  EXPECT_THAT(text, HasSubstr("lat_seconds_bucket{pool=\"p\",le=\"0.1\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("lat_seconds_bucket{pool=\"p\",le=\"1\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("lat_seconds_bucket{pool=\"p\",le=\"+Inf\"} 4\n"));
  EXPECT_THAT(text, HasSubstr("lat_seconds_sum{pool=\"p\"} 6.05\n"));
  EXPECT_THAT(text, HasSubstr("lat_seconds_count{pool=\"p\"} 4\n"));
}

TEST(Registry, ChildrenAreStableAndGaugeCallbacksRender) {
  Registry r;
  auto* g = r.AddGauge("g", "A gauge.", {});
  EXPECT_EQ(g->With({}), g->With({}));
  g->With({})->Set(1.5);
  r.AddGaugeCallback("cb", "Computed.", {"e"}, [] {
    return std::vector<GaugeSample>{{{"a"}, 3}, {{"b"}, 4}};
  });
  std::string text = r.Render();
  EXPECT_THAT(text, HasSubstr("g 1.5\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE cb gauge\ncb{e=\"a\"} 3\ncb{e=\"b\"} 4\n"));
}

}  // namespace
}  // namespace infergrid::metrics
