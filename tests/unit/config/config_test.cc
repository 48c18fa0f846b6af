#include "config/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduling/registry.h"

namespace infergrid::config {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

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

namespace infergrid::config {
namespace {

// Three distinct SHA-256 digests (of "a", "b" and "c").
const std::string kDigestA = "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb";
const std::string kDigestB = "3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d";
const std::string kDigestC = "2e7d2c03a9507ae265ecf5b5356885a53393a2029d241394997265a1a25aefc6";

const char* kPoolA = "  pools:\n  - {name: a, models: [m], endpoints: [\"http://h:1\"]}\n";

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

TEST(ConfigTenancy, ParsesEveryField) {
  // Classes come after the tenants that name them.
  std::string y = std::string(kHead) +
                  "  tenancy:\n"
                  "    requireApiKey: true\n"
                  "    tenantHeader: X-Tenant-ID\n"
                  "    defaultTenant: team-a\n"
                  "    tenants:\n"
                  "    - name: team-a\n"
                  "      apiKeySha256: [" +
                  Upper(kDigestA) + ", " + kDigestB +
                  "]\n"
                  "      priorityClass: gold\n"
                  "      weight: 2.5\n"
                  "      limits:\n"
                  "        maxConcurrentRequests: 64\n"
                  "        requestsPerMinute: 600\n"
                  "        tokensPerMinute: 2000000000000\n"
                  "    - name: team-b\n"
                  "      apiKeySha256: " +
                  kDigestC +
                  "\n"
                  "    priorityClasses:\n"
                  "    - {name: gold, priority: 5, maxQueueWait: 2s}\n"
                  "    - {name: standard, priority: 1}\n"
                  "    - {name: batch, priority: -1, sheddable: true, maxQueueWait: 500ms}\n"
                  "  flowControl:\n"
                  "    enabled: false\n"
                  "    maxQueuedRequests: 500\n"
                  "    queueTimeout: 30s\n"
                  "    preferContinuingSessions: false\n"
                  "    newSessionMaxDelay: 0s\n"
                  "    saturation:\n"
                  "      maxRequestsPerEndpoint: 32\n"
                  "      kvCacheUtilization: 0.8\n"
                  "      queueDepth: 0\n"
                  "      outputTokensEstimate: 512\n" +
                  kPoolA;
  auto g = ParseGateway(y, "t.yaml");
  ASSERT_TRUE(g.ok()) << g.status().message();
  const Tenancy& t = g->tenancy;
  EXPECT_TRUE(t.require_api_key);
  EXPECT_EQ(t.tenant_header, "x-tenant-id");  // stored lowercase
  EXPECT_EQ(t.default_tenant, "team-a");
  ASSERT_EQ(t.classes.size(), 3u);
  EXPECT_EQ(t.classes[0].name, "gold");
  EXPECT_EQ(t.classes[0].priority, 5);
  EXPECT_FALSE(t.classes[0].sheddable);
  EXPECT_EQ(t.classes[0].max_queue_wait, std::chrono::seconds(2));
  EXPECT_EQ(t.classes[0].path, "spec.tenancy.priorityClasses[0]");
  EXPECT_EQ(t.classes[0].mark.line, 20);
  EXPECT_EQ(t.classes[1].name, "standard");
  EXPECT_EQ(t.classes[1].max_queue_wait, Duration(0));
  EXPECT_EQ(t.classes[2].priority, -1);
  EXPECT_TRUE(t.classes[2].sheddable);
  EXPECT_EQ(t.classes[2].max_queue_wait, std::chrono::milliseconds(500));
  ASSERT_EQ(t.tenants.size(), 2u);
  const Tenant& a = t.tenants[0];
  EXPECT_EQ(a.name, "team-a");
  EXPECT_EQ(a.api_key_sha256, (std::vector<std::string>{kDigestA, kDigestB}));  // lowercased
  EXPECT_EQ(a.priority_class, "gold");
  EXPECT_EQ(a.weight, 2.5);
  EXPECT_EQ(a.limits.max_concurrent_requests, 64u);
  EXPECT_EQ(a.limits.requests_per_minute, 600u);
  EXPECT_EQ(a.limits.tokens_per_minute, 2000000000000u);
  EXPECT_EQ(a.path, "spec.tenancy.tenants[0]");
  const Tenant& b = t.tenants[1];
  EXPECT_EQ(b.api_key_sha256, std::vector<std::string>{kDigestC});  // a single string
  EXPECT_EQ(b.priority_class, "standard");
  EXPECT_EQ(b.weight, 1);
  EXPECT_EQ(b.limits.max_concurrent_requests, 0u);
  EXPECT_EQ(b.limits.tokens_per_minute, 0u);
  const FlowControl& f = g->flow_control;
  EXPECT_FALSE(f.enabled);
  EXPECT_EQ(f.max_queued_requests, 500u);
  EXPECT_EQ(f.queue_timeout, std::chrono::seconds(30));
  EXPECT_FALSE(f.prefer_continuing_sessions);
  EXPECT_EQ(f.new_session_max_delay, Duration(0));
  EXPECT_EQ(f.saturation.max_requests_per_endpoint, 32u);
  EXPECT_EQ(f.saturation.kv_cache_utilization, 0.8);
  EXPECT_EQ(f.saturation.queue_depth, 0u);
  EXPECT_EQ(f.saturation.output_tokens_estimate, 512u);
}

void ExpectDefaultClasses(const std::vector<PriorityClass>& c) {
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].name, "critical");
  EXPECT_EQ(c[0].priority, 2);
  EXPECT_FALSE(c[0].sheddable);
  EXPECT_EQ(c[1].name, "standard");
  EXPECT_EQ(c[1].priority, 1);
  EXPECT_FALSE(c[1].sheddable);
  EXPECT_EQ(c[2].name, "sheddable");
  EXPECT_EQ(c[2].priority, 0);
  EXPECT_TRUE(c[2].sheddable);
  EXPECT_EQ(c[2].max_queue_wait, Duration(0));
}

TEST(ConfigTenancy, Defaults) {
  ExpectDefaultClasses(DefaultPriorityClasses());
  auto g = ParseGateway(std::string(kHead) + kPoolA, "t.yaml");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_FALSE(g->tenancy.require_api_key);
  EXPECT_EQ(g->tenancy.tenant_header, "");
  EXPECT_EQ(g->tenancy.default_tenant, "default");
  EXPECT_TRUE(g->tenancy.tenants.empty());
  ExpectDefaultClasses(g->tenancy.classes);
  const FlowControl& f = g->flow_control;
  EXPECT_TRUE(f.enabled);
  EXPECT_EQ(f.max_queued_requests, 10000u);
  EXPECT_EQ(f.queue_timeout, std::chrono::seconds(60));
  EXPECT_TRUE(f.prefer_continuing_sessions);
  EXPECT_EQ(f.new_session_max_delay, std::chrono::seconds(10));
  EXPECT_EQ(f.saturation.max_requests_per_endpoint, 0u);
  EXPECT_EQ(f.saturation.kv_cache_utilization, 0.95);
  EXPECT_EQ(f.saturation.queue_depth, 5u);
  EXPECT_EQ(f.saturation.output_tokens_estimate, 256u);

  // An empty list of classes means the defaults; a tenant's class defaults to `standard`.
  g = ParseGateway(std::string(kHead) +
                       "  tenancy:\n"
                       "    priorityClasses: []\n"
                       "    tenants:\n"
                       "    - name: default\n"
                       "  flowControl: {}\n" +
                       kPoolA,
                   "t.yaml");
  ASSERT_TRUE(g.ok()) << g.status().message();
  ExpectDefaultClasses(g->tenancy.classes);
  ASSERT_EQ(g->tenancy.tenants.size(), 1u);
  EXPECT_EQ(g->tenancy.tenants[0].priority_class, "standard");
  EXPECT_TRUE(g->tenancy.tenants[0].api_key_sha256.empty());
  EXPECT_EQ(g->flow_control.queue_timeout, std::chrono::seconds(60));

  auto flags = FromFlags("m", {"http://127.0.0.1:1"}, "127.0.0.1:0");
  ASSERT_TRUE(flags.ok()) << flags.status().message();
  ExpectDefaultClasses(flags->tenancy.classes);
  EXPECT_TRUE(flags->flow_control.enabled);
}

// The error for a spec holding `body` (lines from 4) and one pool.
std::string SpecError(const std::string& body) {
  return ErrorOf(std::string(kHead) + body + kPoolA);
}

TEST(ConfigTenancy, UnknownFieldsHavePositions) {
  EXPECT_EQ(SpecError("  tenancy:\n    requireKey: true\n"),
            "bad.yaml:5:5: spec.tenancy.requireKey: unknown field 'requireKey'; expected one of: "
            "defaultTenant, priorityClasses, requireApiKey, tenantHeader, tenants");
  EXPECT_EQ(SpecError("  tenancy:\n    tenants:\n    - name: a\n      apiKey: x\n"),
            "bad.yaml:7:7: spec.tenancy.tenants[0].apiKey: unknown field 'apiKey'; expected one "
            "of: apiKeySha256, limits, name, priorityClass, weight");
  EXPECT_EQ(SpecError("  tenancy:\n    tenants:\n    - name: a\n      limits: {rpm: 5}\n"),
            "bad.yaml:7:16: spec.tenancy.tenants[0].limits.rpm: unknown field 'rpm'; expected "
            "one of: maxConcurrentRequests, requestsPerMinute, tokensPerMinute");
  EXPECT_EQ(SpecError("  tenancy:\n    priorityClasses:\n    - {name: a, priority: 1, "
                      "weight: 2}\n"),
            "bad.yaml:6:30: spec.tenancy.priorityClasses[0].weight: unknown field 'weight'; "
            "expected one of: maxQueueWait, name, priority, sheddable");
  EXPECT_EQ(SpecError("  flowControl:\n    saturation:\n      kvCache: 0.5\n"),
            "bad.yaml:6:7: spec.flowControl.saturation.kvCache: unknown field 'kvCache'; "
            "expected one of: kvCacheUtilization, maxRequestsPerEndpoint, outputTokensEstimate, "
            "queueDepth");
  EXPECT_EQ(SpecError("  flowControl:\n    queueSize: 5\n"),
            "bad.yaml:5:5: spec.flowControl.queueSize: unknown field 'queueSize'; expected one "
            "of: enabled, maxQueuedRequests, newSessionMaxDelay, preferContinuingSessions, "
            "queueTimeout, saturation");
}

TEST(ConfigTenancy, BadKeyDigests) {
  // Too short: the value itself is never echoed (it may be a key pasted by mistake).
  std::string err =
      SpecError("  tenancy:\n    tenants:\n    - name: a\n      apiKeySha256: [sk-secret]\n");
  EXPECT_EQ(err,
            "bad.yaml:7:22: spec.tenancy.tenants[0].apiKeySha256[0]: expected the key's SHA-256 "
            "as 64 hex digits (printf %s \"$KEY\" | sha256sum), got 9 characters");
  EXPECT_THAT(err, Not(HasSubstr("sk-secret")));
  std::string not_hex = kDigestA;
  not_hex[10] = 'g';
  EXPECT_EQ(
      SpecError("  tenancy:\n    tenants:\n    - name: a\n      apiKeySha256: " + not_hex + "\n"),
      "bad.yaml:7:21: spec.tenancy.tenants[0].apiKeySha256: expected the key's SHA-256 as "
      "64 hex digits (printf %s \"$KEY\" | sha256sum), got a character that is not a hex "
      "digit at offset 10");
  EXPECT_THAT(SpecError("  tenancy:\n    tenants:\n    - name: a\n      apiKeySha256: {x: 1}\n"),
              HasSubstr("bad.yaml:7:21: spec.tenancy.tenants[0].apiKeySha256: expected a list"));
}

TEST(ConfigTenancy, DuplicateKeyDigestNamesBothTenants) {
  std::string y =
      "  tenancy:\n"
      "    tenants:\n"
      "    - name: team-a\n"
      "      apiKeySha256: [" +
      kDigestA + ", " + kDigestB +
      "]\n"
      "    - name: team-b\n"
      "      apiKeySha256:\n"
      "      - " +
      kDigestC +
      "\n"
      "      - " +
      Upper(kDigestB) + "\n";
  EXPECT_EQ(SpecError(y),
            "bad.yaml:11:9: spec.tenancy.tenants[1].apiKeySha256[1]: tenant 'team-b' has the "
            "same key digest as tenant 'team-a'; a key belongs to one tenant");
  y = "  tenancy:\n"
      "    tenants:\n"
      "    - name: team-a\n"
      "      apiKeySha256: [" +
      kDigestA + ", " + kDigestA + "]\n";
  EXPECT_EQ(SpecError(y),
            "bad.yaml:7:88: spec.tenancy.tenants[0].apiKeySha256[1]: this key digest is listed "
            "twice");
}

TEST(ConfigTenancy, DuplicateAndEmptyNames) {
  EXPECT_EQ(SpecError("  tenancy:\n    tenants:\n    - name: a\n    - name: b\n    - name: a\n"),
            "bad.yaml:8:13: spec.tenancy.tenants[2].name: tenant 'a' is defined twice");
  EXPECT_EQ(SpecError("  tenancy:\n"
                      "    priorityClasses:\n"
                      "    - {name: standard, priority: 1}\n"
                      "    - {name: standard, priority: 2}\n"),
            "bad.yaml:7:14: spec.tenancy.priorityClasses[1].name: priority class 'standard' is "
            "defined twice");
  EXPECT_EQ(SpecError("  tenancy:\n    tenants:\n    - name: \"\"\n"),
            "bad.yaml:6:13: spec.tenancy.tenants[0].name: a tenant name must not be empty");
  EXPECT_EQ(SpecError("  tenancy:\n    tenants:\n    - weight: 2\n"),
            "bad.yaml:6:7: spec.tenancy.tenants[0]: missing required field 'name'");
  EXPECT_EQ(SpecError("  tenancy:\n    priorityClasses:\n    - name: gold\n"),
            "bad.yaml:6:7: spec.tenancy.priorityClasses[0]: missing required field 'priority' "
            "(an integer; higher goes first)");
  EXPECT_THAT(SpecError("  tenancy:\n    priorityClasses:\n    - {name: x, priority: 1000001}\n"),
              HasSubstr("bad.yaml:6:27: spec.tenancy.priorityClasses[0].priority: expected an "
                        "integer from -1000000 to 1000000, got 1000001"));
}

TEST(ConfigTenancy, UnknownPriorityClass) {
  // Named explicitly: the error is at the field, listing the classes.
  EXPECT_EQ(SpecError("  tenancy:\n    tenants:\n    - name: a\n      priorityClass: gold\n"),
            "bad.yaml:7:22: spec.tenancy.tenants[0].priorityClass: no priority class named "
            "'gold'; expected one of: critical, standard, sheddable");
  // Classes listed after the tenants are known to them.
  EXPECT_EQ(SpecError("  tenancy:\n"
                      "    tenants:\n"
                      "    - {name: a, priorityClass: gold}\n"
                      "    - {name: b, priorityClass: silver}\n"
                      "    priorityClasses:\n"
                      "    - {name: gold, priority: 1}\n"
                      "    - {name: default-ish, priority: 0}\n"),
            "bad.yaml:7:32: spec.tenancy.tenants[1].priorityClass: no priority class named "
            "'silver'; expected one of: gold, default-ish");
  // The default class `standard` must exist for a tenant that names none.
  EXPECT_EQ(SpecError("  tenancy:\n"
                      "    tenants:\n"
                      "    - {name: default, priorityClass: gold}\n"
                      "    - name: b\n"
                      "    priorityClasses:\n"
                      "    - {name: gold, priority: 1}\n"),
            "bad.yaml:7:7: spec.tenancy.tenants[1]: priorityClass: no class named 'standard' (the "
            "default); give the tenant one of: gold");
  // ... and for the implicit tenant `default`, unless keys are required.
  EXPECT_EQ(SpecError("  tenancy:\n    priorityClasses:\n    - {name: gold, priority: 1}\n"),
            "bad.yaml:6:5: spec.tenancy.priorityClasses: no class named 'standard', the class of "
            "the implicit tenant 'default'; add one, or define tenant 'default' in "
            "spec.tenancy.tenants with its priorityClass");
  EXPECT_EQ(SpecError("  tenancy:\n"
                      "    tenants:\n"
                      "    - {name: default, priorityClass: gold}\n"
                      "    priorityClasses:\n"
                      "    - {name: gold, priority: 1}\n"),
            "");
}

TEST(ConfigTenancy, RequireApiKeyNeedsKeys) {
  EXPECT_EQ(SpecError("  tenancy:\n    requireApiKey: true\n    tenants:\n    - name: a\n"),
            "bad.yaml:5:20: spec.tenancy.requireApiKey: true, but no tenant has apiKeySha256; "
            "every request would be refused");
  EXPECT_EQ(SpecError("  tenancy:\n    requireApiKey: true\n    tenants:\n    - name: a\n"
                      "      apiKeySha256: " +
                      kDigestA + "\n"),
            "");
}

TEST(ConfigTenancy, DefaultTenantMustExistUnlessImplicit) {
  EXPECT_EQ(SpecError("  tenancy:\n    defaultTenant: guests\n    tenants:\n    - name: a\n"),
            "bad.yaml:5:20: spec.tenancy.defaultTenant: no tenant named 'guests' in "
            "spec.tenancy.tenants");
  EXPECT_EQ(SpecError("  tenancy:\n    defaultTenant: guests\n    tenants:\n    - name: guests\n"),
            "");
  EXPECT_EQ(SpecError("  tenancy:\n    defaultTenant: default\n"), "");
}

TEST(ConfigTenancy, OutOfRangeValues) {
  EXPECT_EQ(SpecError("  tenancy:\n    tenants:\n    - {name: a, weight: 0}\n"),
            "bad.yaml:6:25: spec.tenancy.tenants[0].weight: expected a number from 0.001 to "
            "1000000, got 0");
  EXPECT_EQ(SpecError("  tenancy:\n    tenants:\n    - {name: a, weight: 2000000}\n"),
            "bad.yaml:6:25: spec.tenancy.tenants[0].weight: expected a number from 0.001 to "
            "1000000, got 2000000");
  EXPECT_THAT(SpecError("  tenancy:\n    tenants:\n    - name: a\n      limits: "
                        "{maxConcurrentRequests: -1}\n"),
              HasSubstr("bad.yaml:7:39: spec.tenancy.tenants[0].limits.maxConcurrentRequests: "
                        "expected an integer from 0 to 10000000, got -1"));
  EXPECT_THAT(SpecError("  flowControl:\n    maxQueuedRequests: 0\n"),
              HasSubstr("bad.yaml:5:24: spec.flowControl.maxQueuedRequests: expected an integer "
                        "from 1 to 10000000, got 0"));
  EXPECT_EQ(SpecError("  flowControl:\n    queueTimeout: 0s\n"),
            "bad.yaml:5:19: spec.flowControl.queueTimeout: must be greater than zero");
  EXPECT_THAT(SpecError("  flowControl:\n    saturation: {kvCacheUtilization: 1.5}\n"),
              HasSubstr("bad.yaml:5:38: spec.flowControl.saturation.kvCacheUtilization: expected "
                        "a number from 0.05 to 1, got 1.5"));
  EXPECT_THAT(SpecError("  flowControl:\n    saturation: {outputTokensEstimate: 0}\n"),
              HasSubstr("spec.flowControl.saturation.outputTokensEstimate: expected an integer "
                        "from 1 to 10000000, got 0"));
  EXPECT_THAT(SpecError("  flowControl:\n    enabled: yes\n"),
              HasSubstr("bad.yaml:5:14: spec.flowControl.enabled: expected true or false"));
}

TEST(ConfigTenancy, BadHeaderName) {
  EXPECT_EQ(SpecError("  tenancy:\n    tenantHeader: \"x tenant\"\n"),
            "bad.yaml:5:19: spec.tenancy.tenantHeader: expected an HTTP header name (letters, "
            "digits, '-' and '_'), got 'x tenant'");
  EXPECT_EQ(SpecError("  tenancy:\n    tenantHeader: \"x-tenant:\"\n"),
            "bad.yaml:5:19: spec.tenancy.tenantHeader: expected an HTTP header name (letters, "
            "digits, '-' and '_'), got 'x-tenant:'");
  EXPECT_THAT(SpecError("  tenancy:\n    tenantHeader: \"\"\n"),
              HasSubstr("spec.tenancy.tenantHeader: expected an HTTP header name"));
}

}  // namespace
}  // namespace infergrid::config

namespace infergrid::config {
namespace {

TEST(ConfigOperations, Defaults) {
  auto g = ParseGateway(std::string(kHead) + kPoolA, "o.yaml");
  ASSERT_TRUE(g.ok()) << g.status().message();
  const PassiveHealth& p = g->health.passive;
  EXPECT_TRUE(p.enabled);
  EXPECT_EQ(p.consecutive_failures, 3u);
  EXPECT_EQ(p.base_ejection, std::chrono::seconds(5));
  EXPECT_EQ(p.max_ejection, std::chrono::seconds(60));
  const ActiveHealth& a = g->health.active;
  EXPECT_TRUE(a.enabled);
  EXPECT_EQ(a.path, "/health");
  EXPECT_EQ(a.interval, std::chrono::seconds(2));
  EXPECT_EQ(a.timeout, std::chrono::seconds(1));
  EXPECT_EQ(a.healthy_threshold, 1u);
  EXPECT_EQ(a.unhealthy_threshold, 2u);
  EXPECT_EQ(g->retries.max_retries, 2u);
  EXPECT_EQ(g->retries.budget_percent, 20);
  EXPECT_EQ(g->retries.min_retry_reserve, 3u);
  EXPECT_EQ(g->lifecycle.shutdown_timeout, std::chrono::seconds(30));
  EXPECT_EQ(g->lifecycle.drain_timeout, std::chrono::seconds(300));
  EXPECT_EQ(g->lifecycle.config_watch_interval, std::chrono::seconds(2));
  EXPECT_TRUE(g->admin.api_key_sha256.empty());
  EXPECT_EQ(g->ha.listen_host, "");
  EXPECT_EQ(g->ha.listen_port, 0);
  EXPECT_TRUE(g->ha.peers.empty());
  EXPECT_EQ(g->ha.resolve_interval, std::chrono::seconds(5));
  EXPECT_EQ(g->ha.replica_id, "");

  // Empty sections are the defaults too.
  g = ParseGateway(std::string(kHead) +
                       "  health: {passive: {}, active: {}}\n"
                       "  retries: {}\n"
                       "  lifecycle: {}\n"
                       "  admin: {apiKeySha256: []}\n"
                       "  ha: {peers: []}\n" +
                       kPoolA,
                   "o.yaml");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->health.passive.max_ejection, std::chrono::seconds(60));
  EXPECT_EQ(g->health.active.interval, std::chrono::seconds(2));
  EXPECT_EQ(g->retries.max_retries, 2u);
  EXPECT_EQ(g->lifecycle.drain_timeout, std::chrono::seconds(300));
  EXPECT_TRUE(g->admin.api_key_sha256.empty());
  EXPECT_EQ(g->ha.listen_host, "");

  auto flags = FromFlags("m", {"http://127.0.0.1:1"}, "127.0.0.1:0");
  ASSERT_TRUE(flags.ok()) << flags.status().message();
  EXPECT_EQ(flags->health.passive.consecutive_failures, 3u);
  EXPECT_EQ(flags->retries.max_retries, 2u);
  EXPECT_TRUE(flags->ha.peers.empty());
}

TEST(ConfigOperations, ParsesEveryField) {
  std::string y = std::string(kHead) +
                  "  health:\n"
                  "    passive:\n"
                  "      enabled: false\n"
                  "      consecutiveFailures: 7\n"
                  "      baseEjection: 250ms\n"
                  "      maxEjection: 2m\n"
                  "    active:\n"
                  "      enabled: false\n"
                  "      path: /v1/models\n"
                  "      interval: 10s\n"
                  "      timeout: 10s\n"
                  "      healthyThreshold: 4\n"
                  "      unhealthyThreshold: 5\n"
                  "  retries:\n"
                  "    maxRetries: 10\n"
                  "    budgetPercent: 12.5\n"
                  "    minRetryReserve: 0\n"
                  "  lifecycle:\n"
                  "    shutdownTimeout: 0s\n"
                  "    drainTimeout: 90s\n"
                  "    configWatchInterval: 0s\n"
                  "  admin:\n"
                  "    apiKeySha256: [" +
                  Upper(kDigestA) + ", " + kDigestB +
                  "]\n"
                  "  ha:\n"
                  "    listen: 0.0.0.0:7946\n"
                  "    peers: [\"gw-0.gw:7946\", \"10.0.0.5:7946\", \"[fd00::1]:7000\"]\n"
                  "    resolveInterval: 1500ms\n"
                  "    replicaId: gw-a\n" +
                  kPoolA;
  auto g = ParseGateway(y, "o.yaml");
  ASSERT_TRUE(g.ok()) << g.status().message();
  const PassiveHealth& p = g->health.passive;
  EXPECT_FALSE(p.enabled);
  EXPECT_EQ(p.consecutive_failures, 7u);
  EXPECT_EQ(p.base_ejection, std::chrono::milliseconds(250));
  EXPECT_EQ(p.max_ejection, std::chrono::minutes(2));
  const ActiveHealth& a = g->health.active;
  EXPECT_FALSE(a.enabled);
  EXPECT_EQ(a.path, "/v1/models");
  EXPECT_EQ(a.interval, std::chrono::seconds(10));
  EXPECT_EQ(a.timeout, std::chrono::seconds(10));  // equal to the interval is allowed
  EXPECT_EQ(a.healthy_threshold, 4u);
  EXPECT_EQ(a.unhealthy_threshold, 5u);
  EXPECT_EQ(g->retries.max_retries, 10u);
  EXPECT_EQ(g->retries.budget_percent, 12.5);
  EXPECT_EQ(g->retries.min_retry_reserve, 0u);
  EXPECT_EQ(g->lifecycle.shutdown_timeout, Duration(0));
  EXPECT_EQ(g->lifecycle.drain_timeout, std::chrono::seconds(90));
  EXPECT_EQ(g->lifecycle.config_watch_interval, Duration(0));
  EXPECT_EQ(g->admin.api_key_sha256, (std::vector<std::string>{kDigestA, kDigestB}));
  EXPECT_EQ(g->ha.listen_host, "0.0.0.0");
  EXPECT_EQ(g->ha.listen_port, 7946);
  EXPECT_EQ(g->ha.peers,
            (std::vector<std::string>{"gw-0.gw:7946", "10.0.0.5:7946", "[fd00::1]:7000"}));
  EXPECT_EQ(g->ha.resolve_interval, std::chrono::milliseconds(1500));
  EXPECT_EQ(g->ha.replica_id, "gw-a");

  // One admin digest as a string; a listen address of port 0 (any free port) and no host.
  g = ParseGateway(std::string(kHead) + "  admin: {apiKeySha256: " + kDigestC +
                       "}\n  ha: {listen: \":0\"}\n" + kPoolA,
                   "o.yaml");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->admin.api_key_sha256, std::vector<std::string>{kDigestC});
  EXPECT_EQ(g->ha.listen_host, "0.0.0.0");
  EXPECT_EQ(g->ha.listen_port, 0);
}

TEST(ConfigOperations, UnknownFieldsHavePositions) {
  EXPECT_EQ(SpecError("  health:\n    passiv: {}\n"),
            "bad.yaml:5:5: spec.health.passiv: unknown field 'passiv'; expected one of: active, "
            "passive");
  EXPECT_EQ(SpecError("  health:\n    active:\n    timeout: 1s\n"),
            "bad.yaml:6:5: spec.health.timeout: unknown field 'timeout'; expected one of: active, "
            "passive");
  EXPECT_EQ(SpecError("  health:\n    active: {intervalSeconds: 2}\n"),
            "bad.yaml:5:14: spec.health.active.intervalSeconds: unknown field 'intervalSeconds'; "
            "expected one of: enabled, healthyThreshold, interval, path, timeout, "
            "unhealthyThreshold");
  EXPECT_EQ(SpecError("  retries: {attempts: 2}\n"),
            "bad.yaml:4:13: spec.retries.attempts: unknown field 'attempts'; expected one of: "
            "budgetPercent, maxRetries, minRetryReserve");
  EXPECT_EQ(SpecError("  ha: {seeds: []}\n"),
            "bad.yaml:4:8: spec.ha.seeds: unknown field 'seeds'; expected one of: listen, peers, "
            "replicaId, resolveInterval");
  EXPECT_THAT(
      SpecError("  healthChecks: {}\n"),
      HasSubstr("bad.yaml:4:3: spec.healthChecks: unknown field 'healthChecks'; expected "
                "one of: admin, endpointMetrics, flowControl, ha, health, lifecycle, "
                "limits, listen, pools, recording, retries, schedulingProfiles, tenancy, timeouts, "
                "upstream, workers"));
}

TEST(ConfigOperations, HealthErrors) {
  // A probe that outlasts its interval: at the timeout, or at the interval if only it is given.
  EXPECT_EQ(SpecError("  health:\n    active:\n      interval: 1s\n      timeout: 1500ms\n"),
            "bad.yaml:7:16: spec.health.active.timeout: must be at most interval (1s), got 1500ms");
  EXPECT_EQ(SpecError("  health:\n    active: {interval: 500ms}\n"),
            "bad.yaml:5:24: spec.health.active.interval: must be at least timeout (1s, the "
            "default), got 500ms");
  // Ejections that cannot grow: at maxEjection, or at baseEjection if only it is given.
  EXPECT_EQ(SpecError("  health:\n    passive:\n      baseEjection: 10s\n      maxEjection: 5s\n"),
            "bad.yaml:7:20: spec.health.passive.maxEjection: must be at least baseEjection (10s), "
            "got 5s");
  EXPECT_EQ(SpecError("  health:\n    passive: {baseEjection: 2m}\n"),
            "bad.yaml:5:29: spec.health.passive.baseEjection: must be at most maxEjection (60s, "
            "the default), got 120s");
  EXPECT_EQ(SpecError("  health:\n    passive: {baseEjection: 0s}\n"),
            "bad.yaml:5:29: spec.health.passive.baseEjection: must be greater than zero");
  EXPECT_THAT(SpecError("  health:\n    passive: {consecutiveFailures: 0}\n"),
              HasSubstr("bad.yaml:5:36: spec.health.passive.consecutiveFailures: expected an "
                        "integer from 1 to 1000000, got 0"));
  EXPECT_EQ(SpecError("  health:\n    active: {path: health}\n"),
            "bad.yaml:5:20: spec.health.active.path: expected a path starting with '/', got "
            "'health'");
  EXPECT_THAT(SpecError("  health:\n    active: {interval: 0s}\n"),
              HasSubstr("bad.yaml:5:24: spec.health.active.interval: must be greater than zero"));
  EXPECT_THAT(SpecError("  health:\n    active: {unhealthyThreshold: 0}\n"),
              HasSubstr("bad.yaml:5:34: spec.health.active.unhealthyThreshold: expected an "
                        "integer from 1 to 1000000, got 0"));
  EXPECT_THAT(
      SpecError("  health:\n    active: {enabled: on}\n"),
      HasSubstr("bad.yaml:5:23: spec.health.active.enabled: expected true or false, got 'on'"));
}

TEST(ConfigOperations, RetriesAndLifecycleErrors) {
  EXPECT_THAT(SpecError("  retries: {maxRetries: 11}\n"),
              HasSubstr("bad.yaml:4:25: spec.retries.maxRetries: expected an integer from 0 to "
                        "10, got 11"));
  EXPECT_THAT(SpecError("  retries: {budgetPercent: 101}\n"),
              HasSubstr("bad.yaml:4:28: spec.retries.budgetPercent: expected a number from 0 to "
                        "100, got 101"));
  EXPECT_THAT(SpecError("  retries: {minRetryReserve: -1}\n"),
              HasSubstr("bad.yaml:4:30: spec.retries.minRetryReserve: expected an integer from 0 "
                        "to 1000000, got -1"));
  EXPECT_EQ(SpecError("  lifecycle:\n    drainTimeout: 0s\n"),
            "bad.yaml:5:19: spec.lifecycle.drainTimeout: must be greater than zero");
  EXPECT_THAT(SpecError("  lifecycle:\n    shutdownTimeout: 30\n"),
              HasSubstr("bad.yaml:5:22: spec.lifecycle.shutdownTimeout: '30' has no valid unit"));
}

TEST(ConfigOperations, AdminKeyDigests) {
  // Checked as tenants' digests are, never echoing the value.
  std::string err = SpecError("  admin:\n    apiKeySha256: [" + kDigestA + ", sk-admin]\n");
  EXPECT_EQ(err,
            "bad.yaml:5:86: spec.admin.apiKeySha256[1]: expected the key's SHA-256 as 64 hex "
            "digits (printf %s \"$KEY\" | sha256sum), got 8 characters");
  EXPECT_THAT(err, Not(HasSubstr("sk-admin")));
  std::string not_hex = kDigestB;
  not_hex[63] = 'z';
  EXPECT_EQ(SpecError("  admin:\n    apiKeySha256: " + not_hex + "\n"),
            "bad.yaml:5:19: spec.admin.apiKeySha256: expected the key's SHA-256 as 64 hex digits "
            "(printf %s \"$KEY\" | sha256sum), got a character that is not a hex digit at offset "
            "63");
  EXPECT_EQ(SpecError("  admin:\n    apiKeySha256:\n    - " + kDigestA + "\n    - " +
                      Upper(kDigestA) + "\n"),
            "bad.yaml:7:7: spec.admin.apiKeySha256[1]: this key digest is listed twice");
}

TEST(ConfigOperations, HaErrors) {
  EXPECT_EQ(SpecError("  ha:\n    peers: [\"gw-0.gw:7946\"]\n"),
            "bad.yaml:5:12: spec.ha.peers: peering needs spec.ha.listen (the address peers "
            "connect to), which is not set");
  EXPECT_EQ(SpecError("  ha:\n    listen: :7946\n    peers: [\"gw-0.gw\"]\n"),
            "bad.yaml:6:13: spec.ha.peers[0]: expected HOST:PORT such as gw-0.gw:7946 or "
            "10.0.0.5:7946, got 'gw-0.gw'");
  EXPECT_EQ(SpecError("  ha:\n    listen: :7946\n    peers: [\"gw-0.gw:1\", \"10.0.0.5:0\"]\n"),
            "bad.yaml:6:26: spec.ha.peers[1]: port must be 1-65535, got '10.0.0.5:0'");
  EXPECT_THAT(SpecError("  ha:\n    listen: :7946\n    peers: [\"10.0.0.5:70000\"]\n"),
              HasSubstr("spec.ha.peers[0]: expected HOST:PORT"));
  EXPECT_THAT(SpecError("  ha:\n    listen: :7946\n    peers: [\":7946\"]\n"),
              HasSubstr("spec.ha.peers[0]: expected HOST:PORT"));
  EXPECT_THAT(SpecError("  ha:\n    listen: :7946\n    peers: [\"http://gw-0:7946\"]\n"),
              HasSubstr("spec.ha.peers[0]: expected HOST:PORT"));
  EXPECT_EQ(SpecError("  ha:\n    listen: :7946\n    peers: [\"a:1\", \"a:1\"]\n"),
            "bad.yaml:6:20: spec.ha.peers[1]: peer 'a:1' is listed twice");
  EXPECT_EQ(SpecError("  ha:\n    listen: 7946\n"),
            "bad.yaml:5:13: spec.ha.listen: '7946' is not HOST:PORT");
  EXPECT_EQ(SpecError("  ha:\n    listen: :7946\n    resolveInterval: 0s\n"),
            "bad.yaml:6:22: spec.ha.resolveInterval: must be greater than zero");
  EXPECT_EQ(SpecError("  ha:\n    replicaId: \"\"\n"),
            "bad.yaml:5:16: spec.ha.replicaId: must not be empty (leave it out to have one "
            "generated)");
  EXPECT_THAT(SpecError("  ha:\n    peers: gw-0.gw:7946\n"),
              HasSubstr("bad.yaml:5:12: spec.ha.peers: expected a list"));
}

TEST(ConfigRecording, ParsesAndValidates) {
  auto g = ParseGateway(
      "apiVersion: infergrid.dev/v1\nkind: Gateway\nspec:\n"
      "  recording: {enabled: true, path: /tmp/t.jsonl, maxFileBytes: 1048576, maxFiles: 3, "
      "blockSize: 64}\n  pools:\n  - name: p\n    models: [m]\n    endpoints: [http://a:1]\n",
      "r.yaml");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE(g->recording.enabled);
  EXPECT_EQ(g->recording.path, "/tmp/t.jsonl");
  EXPECT_EQ(g->recording.max_file_bytes, 1048576u);
  EXPECT_EQ(g->recording.max_files, 3u);
  EXPECT_EQ(g->recording.block_size, 64u);
  auto bad = [](const std::string& rec) {
    auto r =
        ParseGateway("apiVersion: infergrid.dev/v1\nkind: Gateway\nspec:\n  recording: " + rec +
                         "\n  pools:\n  - name: p\n    models: [m]\n    endpoints: "
                         "[http://a:1]\n",
                     "r.yaml");
    return r.ok() ? std::string("ok") : r.status().message();
  };
  EXPECT_THAT(bad("{enabled: true}"), HasSubstr("recording.enabled needs a path"));
  EXPECT_THAT(bad("{path: x, blockSize: 100}"),
              HasSubstr("spec.recording.blockSize: must be a multiple of 16"));
  EXPECT_THAT(bad("{path: x, maxFiles: 0}"), HasSubstr("spec.recording.maxFiles"));
  EXPECT_THAT(bad("{path: x, rotate: daily}"), HasSubstr("rotate"));
}

}  // namespace
}  // namespace infergrid::config
