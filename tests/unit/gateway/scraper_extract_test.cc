#include <gtest/gtest.h>

#include "gateway/scraper.h"

namespace infergrid::gateway {
namespace {

ScrapedMetrics Extract(const char* text) {
  auto samples = metrics::ParseText(text);
  EXPECT_TRUE(samples.ok());
  auto m = ExtractVllmMetrics(*samples);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? *m : ScrapedMetrics{};
}

TEST(ExtractVllmMetrics, SumsEnginesAndTakesTheFullestCache) {
  auto m = Extract(
      "vllm:num_requests_running{engine=\"0\"} 3\n"
      "vllm:num_requests_running{engine=\"1\"} 4\n"
      "vllm:num_requests_waiting{engine=\"0\"} 2\n"
      "vllm:kv_cache_usage_perc{engine=\"0\"} 0.5\n"
      "vllm:kv_cache_usage_perc{engine=\"1\"} 0.75\n"
      "vllm:prefix_cache_queries_total{engine=\"0\"} 1000\n"
      "vllm:prefix_cache_hits_total{engine=\"0\"} 250\n");
  EXPECT_DOUBLE_EQ(m.running, 7);
  EXPECT_DOUBLE_EQ(m.waiting, 2);
  EXPECT_DOUBLE_EQ(m.kv_usage, 0.75);
  EXPECT_DOUBLE_EQ(m.prefix_queries, 1000);
  EXPECT_DOUBLE_EQ(m.prefix_hits, 250);
}

TEST(ExtractVllmMetrics, ReadsTheKvCacheSizeFromCacheConfigInfo) {
  auto m = Extract(
      "vllm:num_requests_running{engine=\"0\"} 1\n"
      "vllm:cache_config_info{block_size=\"16\",cache_dtype=\"auto\",engine=\"0\","
      "num_gpu_blocks=\"4812\",gpu_memory_utilization=\"0.9\"} 1\n");
  EXPECT_DOUBLE_EQ(m.kv_cache_tokens, 4812 * 16);
  EXPECT_DOUBLE_EQ(Extract("vllm:num_requests_running 1\n").kv_cache_tokens, 0);
}

TEST(ExtractVllmMetrics, ReadsOlderServersNames) {
  auto m = Extract(
      "vllm:num_requests_running 1\n"
      "vllm:gpu_cache_usage_perc 0.4\n"
      "vllm:gpu_prefix_cache_queries_total 10\n"
      "vllm:gpu_prefix_cache_hits_total 5\n");
  EXPECT_DOUBLE_EQ(m.kv_usage, 0.4);
  EXPECT_DOUBLE_EQ(m.prefix_queries, 10);
  EXPECT_DOUBLE_EQ(m.prefix_hits, 5);
}

TEST(ExtractVllmMetrics, PrefersTheNewKvGaugeWhenBothArePresent) {
  auto m = Extract("vllm:gpu_cache_usage_perc 0.9\nvllm:kv_cache_usage_perc 0.2\n");
  EXPECT_DOUBLE_EQ(m.kv_usage, 0.2);
}

TEST(ExtractVllmMetrics, FailsWithoutSchedulerGauges) {
  auto samples = metrics::ParseText("process_cpu_seconds_total 3\n");
  ASSERT_TRUE(samples.ok());
  EXPECT_FALSE(ExtractVllmMetrics(*samples).ok());
}

}  // namespace
}  // namespace infergrid::gateway
