#include "metrics/text_parser.h"

#include <gtest/gtest.h>

#include <cmath>

namespace infergrid::metrics {
namespace {

TEST(TextParser, ReadsVllmExposition) {
  const char* text =
      "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
      "# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running{engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B\"} 3.0\n"
      "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"x\"} 0.25 1700000000000\n"
      "vllm:prefix_cache_hits_total{model_name=\"a,b\",x=\"q\\\"uote\"} 1e3\n"
      "up +Inf\n"
      "\n";
  auto s = ParseText(text);
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->size(), 4u);
  EXPECT_EQ((*s)[0].name, "vllm:num_requests_running");
  EXPECT_EQ((*s)[0].labels.at("model_name"), "meta-llama/Llama-3.1-8B");
  EXPECT_DOUBLE_EQ((*s)[0].value, 3);
  EXPECT_DOUBLE_EQ((*s)[1].value, 0.25);  // the timestamp is ignored
  EXPECT_EQ((*s)[2].labels.at("model_name"), "a,b");
  EXPECT_EQ((*s)[2].labels.at("x"), "q\"uote");
  EXPECT_DOUBLE_EQ((*s)[2].value, 1000);
  EXPECT_TRUE(std::isinf((*s)[3].value));
}

TEST(TextParser, ReportsTheBadLine) {
  auto s = ParseText("ok 1\nbroken{a=\"x} 2\n");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "line 2: malformed labels");
  s = ParseText("ok 1\nalso_ok 2\nname notanumber\n");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "line 3: 'notanumber' is not a number");
}

}  // namespace
}  // namespace infergrid::metrics
