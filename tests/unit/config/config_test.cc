#include "config/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduling/registry.h"

namespace infergrid::config {
namespace {

using ::testing::HasSubstr;

const char* kFull = R"(apiVersion: infergrid.dev/v1
kind: Gateway
metadata:
  name: test
spec:
  listen: 127.0.0.1:9000
  workers: 3
  timeouts:
    connect: 250ms
    firstByte: 30s
    idle: 10s
    requestHeaders: 2s
  limits:
    maxRequestBodyBytes: 65536
    maxRequestHeaderBytes: 8192
  upstream:
    maxConnectionsPerEndpoint: 64
    maxIdleConnectionsPerEndpoint: 8
  endpointMetrics:
    interval: 500ms
    staleAfter: 3s
  schedulingProfiles:
  - name: rr
    filters: [healthy]
    scorers:
    - name: least-load
      weight: 2
      parameters:
        promptTokensPerRequest: 1024
    picker:
      name: round-robin
  pools:
  - name: llama
    schedulingProfile: rr
    models:
    - name: meta-llama/Llama-3.1-8B-Instruct
      aliases: [llama-8b]
    endpoints:
    - url: http://10.0.0.1:8000
      labels:
        accelerator: h200
    - http://10.0.0.2:8000/
)";

TEST(Config, ParsesEveryField) {
  auto g = ParseGateway(kFull, "full.yaml");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->name, "test");
  EXPECT_EQ(g->listen_host, "127.0.0.1");
  EXPECT_EQ(g->listen_port, 9000);
  EXPECT_EQ(g->workers, 3u);
  EXPECT_EQ(g->timeouts.connect, std::chrono::milliseconds(250));
  EXPECT_EQ(g->timeouts.first_byte, std::chrono::seconds(30));
  EXPECT_EQ(g->timeouts.request_headers, std::chrono::seconds(2));
  EXPECT_EQ(g->limits.max_request_body_bytes, 65536u);
  EXPECT_EQ(g->limits.max_request_header_bytes, 8192u);
  EXPECT_EQ(g->upstream.max_connections_per_endpoint, 64u);
  EXPECT_EQ(g->scrape.interval, std::chrono::milliseconds(500));
  ASSERT_EQ(g->pools.size(), 1u);
  const Pool& p = g->pools[0];
  EXPECT_EQ(p.scheduling_profile, "rr");
  ASSERT_EQ(p.models.size(), 1u);
  EXPECT_EQ(p.models[0].aliases, std::vector<std::string>{"llama-8b"});
  ASSERT_EQ(p.endpoints.size(), 2u);
  EXPECT_EQ(p.endpoints[0].labels.at("accelerator"), "h200");
  EXPECT_EQ(p.endpoints[1].url, "http://10.0.0.2:8000");  // trailing slash dropped
  // The named profile plus the implicit default one.
  ASSERT_EQ(g->profiles.size(), 2u);
  EXPECT_EQ(g->profiles[0].scorers[0].weight, 2);
  EXPECT_EQ(g->profiles[0].scorers[0].parameters.at("promptTokensPerRequest").value, "1024");
  EXPECT_EQ(g->profiles[0].picker.name, "round-robin");
  EXPECT_TRUE(scheduling::ValidateProfiles(*g).ok());
}

std::string ErrorOf(const std::string& yaml) {
  auto g = ParseGateway(yaml, "bad.yaml");
  if (g.ok()) {
    auto s = scheduling::ValidateProfiles(*g);
    return s.ok() ? "" : s.message();
  }
  return g.status().message();
}

const char* kHead = "apiVersion: infergrid.dev/v1\nkind: Gateway\nspec:\n";

TEST(Config, UnknownFieldNamesFileLineColumnAndPath) {
  std::string y = std::string(kHead) +
                  "  pools:\n"
                  "  - name: a\n"
                  "    models: [m]\n"
                  "    endpoints: [http://h:1]\n"
                  "    replicas: 3\n";
  EXPECT_EQ(ErrorOf(y),
            "bad.yaml:8:5: spec.pools[0].replicas: unknown field 'replicas'; expected one of: "
            "endpoints, hardware, models, "
            "name, schedulingProfile");
}

TEST(Config, WrongTypeIsReported) {
  std::string y = std::string(kHead) + "  workers: many\n  pools: []\n";
  EXPECT_THAT(ErrorOf(y),
              HasSubstr("bad.yaml:4:12: spec.workers: expected an integer, got 'many'"));
  y = std::string(kHead) + "  pools:\n    name: a\n";
  EXPECT_THAT(ErrorOf(y), HasSubstr("spec.pools: expected a list"));
}

TEST(Config, BadDurationAndUrl) {
  std::string y = std::string(kHead) + "  timeouts:\n    connect: 5\n  pools: []\n";
  EXPECT_THAT(ErrorOf(y), HasSubstr("bad.yaml:5:14: spec.timeouts.connect: '5' has no valid unit"));
  y = std::string(kHead) +
      "  pools:\n  - name: a\n    models: [m]\n    endpoints: [\"ftp://h:1\"]\n";
  EXPECT_THAT(ErrorOf(y), HasSubstr("spec.pools[0].endpoints[0]: expected an http:// URL"));
  y = std::string(kHead) +
      "  pools:\n  - name: a\n    models: [m]\n    endpoints: [\"http://h\"]\n";
  EXPECT_THAT(ErrorOf(y), HasSubstr("expected http://HOST:PORT"));
}

TEST(Config, MissingRequiredFields) {
  EXPECT_THAT(ErrorOf("kind: Gateway\nspec: {}\n"),
              HasSubstr("missing required field 'apiVersion'"));
  EXPECT_THAT(
      ErrorOf("apiVersion: infergrid.dev/v2\nkind: Gateway\nspec: {}\n"),
      HasSubstr("bad.yaml:1:13: apiVersion: expected 'infergrid.dev/v1', got 'infergrid.dev/v2'"));
  EXPECT_THAT(ErrorOf(std::string(kHead) + "  listen: :80\n"),
              HasSubstr("missing required field 'pools'"));
  EXPECT_THAT(ErrorOf(std::string(kHead) + "  pools:\n  - name: a\n    endpoints: []\n"),
              HasSubstr("spec.pools[0]: missing required field 'models'"));
}

TEST(Config, DuplicatesAndDanglingReferences) {
  std::string y = std::string(kHead) +
                  "  pools:\n"
                  "  - {name: a, models: [m], endpoints: [\"http://h:1\"]}\n"
                  "  - {name: b, models: [m], endpoints: [\"http://h:2\"]}\n";
  EXPECT_THAT(ErrorOf(y), HasSubstr("model name 'm' is already served by pool 'a'"));
  y = std::string(kHead) +
      "  pools:\n  - {name: a, models: [m], endpoints: [\"http://h:1\", \"http://h:1\"]}\n";
  EXPECT_THAT(ErrorOf(y), HasSubstr("endpoint 'http://h:1' is listed twice"));
  y = std::string(kHead) +
      "  pools:\n  - {name: a, models: [m], endpoints: [], schedulingProfile: fast}\n";
  EXPECT_THAT(ErrorOf(y), HasSubstr("no scheduling profile named 'fast'"));
}

TEST(Config, PluginErrorsCarryPositions) {
  std::string y = std::string(kHead) +
                  "  schedulingProfiles:\n"
                  "  - name: default\n"
                  "    scorers:\n"
                  "    - name: prefix-magic\n"
                  "  pools:\n  - {name: a, models: [m], endpoints: []}\n";
  EXPECT_THAT(ErrorOf(y),
              HasSubstr("bad.yaml:7:7: spec.schedulingProfiles[0].scorers[0]: unknown scorer "
                        "'prefix-magic'; expected one of: expected-ttft, hardware-cost, "
                        "kv-cache-utilization, least-load, load, prefix-cache, session-affinity"));
  y = std::string(kHead) +
      "  schedulingProfiles:\n"
      "  - name: default\n"
      "    scorers:\n"
      "    - name: least-load\n"
      "      parameters: {promptTokensPerRequest: lots}\n"
      "  pools:\n  - {name: a, models: [m], endpoints: []}\n";
  EXPECT_THAT(ErrorOf(y),
              HasSubstr("bad.yaml:8:44: spec.schedulingProfiles[0].scorers[0].parameters."
                        "promptTokensPerRequest: expected a number, got 'lots'"));
  y = std::string(kHead) +
      "  schedulingProfiles:\n"
      "  - name: default\n"
      "    picker: {name: max-score, parameters: {colour: red}}\n"
      "  pools:\n  - {name: a, models: [m], endpoints: []}\n";
  EXPECT_THAT(ErrorOf(y), HasSubstr("unknown parameter 'colour' of 'max-score'"));
}

TEST(Config, YamlSyntaxErrorHasPosition) {
  EXPECT_THAT(ErrorOf("apiVersion: infergrid.dev/v1\nkind: [Gateway\n"),
              HasSubstr("bad.yaml:3:1: invalid YAML"));
}

TEST(Config, DefaultProfileIsAddedAndUsed) {
  auto g = ParseGateway(
      std::string(kHead) + "  pools:\n  - {name: a, models: [m], endpoints: [\"http://h:1\"]}\n",
      "x.yaml");
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->profiles.size(), 1u);
  EXPECT_EQ(g->profiles[0].name, "default");
  ASSERT_EQ(g->profiles[0].scorers.size(), 2u);
  EXPECT_EQ(g->profiles[0].scorers[0].name, "session-affinity");
  EXPECT_EQ(g->profiles[0].scorers[1].name, "expected-ttft");
  EXPECT_EQ(g->listen_port, 8000);
}

TEST(Config, FromFlags) {
  auto g = FromFlags("m", {"http://127.0.0.1:1", "http://127.0.0.1:2/"}, "127.0.0.1:0");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->pools[0].endpoints[1].url, "http://127.0.0.1:2");
  EXPECT_EQ(g->listen_port, 0);
  EXPECT_FALSE(FromFlags("", {"http://h:1"}, ":8000").ok());
  EXPECT_THAT(FromFlags("m", {"localhost:1"}, ":8000").status().message(),
              HasSubstr("--endpoint 'localhost:1'"));
}

}  // namespace
}  // namespace infergrid::config

namespace infergrid::config {
namespace {

TEST(Config, HardwareResolvesToCapacityFromTheProfiles) {
  auto g =
      ParseGateway(std::string(kHead) +
                       "  pools:\n"
                       "  - name: a\n"
                       "    models: [m]\n"
                       "    hardware: {accelerator: h200, model: llama-3.1-70b, tp: 8, "
                       "pricePerHour: 28}\n"
                       "    endpoints:\n"
                       "    - http://h:1\n"
                       "    - url: http://h:2\n"
                       "      hardware: {prefillTokensPerSecond: 5000, kvCacheTokens: 100000}\n",
                   "x.yaml");
  ASSERT_TRUE(g.ok()) << g.status().message();
  const auto& a = g->pools[0].endpoints[0].capacity;
  EXPECT_GT(a.prefill_tokens_per_s, 10000);  // 8 x H200 prefill 70B at tens of thousands/s
  EXPECT_GT(a.kv_cache_tokens, 1000000u);
  EXPECT_EQ(a.price_per_hour, 28);
  const auto& b = g->pools[0].endpoints[1].capacity;  // its own figures, no profile
  EXPECT_EQ(b.prefill_tokens_per_s, 5000);
  EXPECT_EQ(b.kv_cache_tokens, 100000u);
}

TEST(Config, HardwareErrorsNameTheField) {
  auto err = [](const std::string& hw) {
    auto g = ParseGateway(std::string(kHead) + "  pools:\n  - name: a\n    models: [m]\n" +
                              "    hardware: " + hw + "\n    endpoints: [\"http://h:1\"]\n",
                          "bad.yaml");
    return g.ok() ? std::string() : g.status().message();
  };
  EXPECT_THAT(err("{accelerator: h300, model: llama-3.1-8b}"),
              HasSubstr("bad.yaml:7:29: spec.pools[0].hardware.accelerator: unknown 'h300'"));
  EXPECT_THAT(err("{accelerator: h200, model: gpt-9}"),
              HasSubstr("spec.pools[0].hardware.model: unknown profile 'gpt-9'"));
  EXPECT_THAT(err("{accelerator: h100, model: llama-3.1-70b}"), HasSubstr("does not fit"));
  EXPECT_THAT(err("{accelerator: h200}"), HasSubstr("give both 'accelerator' and 'model'"));
  EXPECT_THAT(err("{accelerator: h200, model: llama-3.1-8b, kvCacheDtype: int4}"),
              HasSubstr("hardware.kvCacheDtype: expected auto, bf16 or fp8"));
}

}  // namespace
}  // namespace infergrid::config
