// Multi-tenant QoS through the live gateway (docs/qos.md): fairness, isolation, priority,
// shedding, limits, auth, and a client that leaves while queued. Saturation is made
// deterministic with `maxRequestsPerEndpoint` and the fake server's per-request delay.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "fake_vllm.h"
#include "gateway/gateway.h"
#include "gateway/tenancy.h"
#include "http_client.h"

namespace infergrid::gateway {
namespace {

using nlohmann::json;
using testing::FakeVllm;
using testing::FakeVllmOptions;
using testing::HttpResult;
using testing::PostJson;
using testing::WaitFor;
using Clock = std::chrono::steady_clock;

const std::string kChat =
    R"({"model":"test-model","messages":[{"role":"user","content":"hi"}],"max_tokens":4})";

class QosTest : public ::testing::Test {
 protected:
  // One fake server and a gateway with `spec` (tenancy and flow control) over it.
  void Start(const std::string& spec) {
    fake_ = std::make_unique<FakeVllm>(FakeVllmOptions{});
    ASSERT_TRUE(fake_->Start().ok());
    StartGateway(Yaml(spec));
  }
  // A gateway from a whole document.
  void StartGateway(const std::string& yaml) {
    auto cfg = config::ParseGateway(yaml, "qos.yaml");
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    auto gw = Gateway::Create(*cfg);
    ASSERT_TRUE(gw.ok()) << gw.status().message();
    gw_ = std::move(gw).value();
    ASSERT_TRUE(gw_->Start().ok());
    port_ = gw_->port();
  }
  std::string Yaml(const std::string& spec) {
    return "apiVersion: infergrid.dev/v1\nkind: Gateway\nspec:\n  listen: 127.0.0.1:0\n"
           "  workers: 2\n  endpointMetrics:\n    enabled: false\n" +
           spec + "  pools:\n  - name: main\n    models: [test-model]\n    endpoints:\n    - " +
           fake_->url() + "\n";
  }
  void TearDown() override {
    if (gw_) gw_->Stop();
    if (fake_) fake_->Stop();
  }
  double Metric(const std::string& needle) {
    std::string text = gw_->registry().Render();
    size_t pos = text.find(needle + " ");
    if (pos == std::string::npos) return 0;
    return std::stod(text.substr(pos + needle.size() + 1));
  }
  HttpResult As(const std::string& tenant, int delay_ms, const std::string& body = kChat,
                std::map<std::string, std::string> extra = {}) {
    extra["x-tenant-id"] = tenant;
    if (delay_ms > 0) extra["x-fake-delay-ms"] = std::to_string(delay_ms);
    return PostJson(port_, "/v1/chat/completions", body, extra);
  }

  std::unique_ptr<FakeVllm> fake_;
  std::unique_ptr<Gateway> gw_;
  uint16_t port_ = 0;
};

// Closed-loop clients per tenant until `total` responses have come back; returns, per tenant,
// the responses among the `window` after the first `skip` (all clients saturating by then).
std::map<std::string, int> Saturate(const std::function<HttpResult(const std::string&)>& send,
                                    const std::map<std::string, int>& clients, int skip,
                                    int window) {
  std::mutex mu;
  std::vector<std::string> order;
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (const auto& [tenant, n] : clients) {
    for (int i = 0; i < n; ++i) {
      threads.emplace_back([&, tenant = tenant] {
        while (!stop) {
          HttpResult r = send(tenant);
          if (r.status != 200) continue;
          std::lock_guard lock(mu);
          order.push_back(tenant);
          if (static_cast<int>(order.size()) >= skip + window) stop = true;
        }
      });
    }
  }
  for (auto& t : threads) t.join();
  std::map<std::string, int> got;
  for (int i = skip; i < skip + window; ++i) ++got[order[i]];
  return got;
}

double P99(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(0.99 * v.size()));
  return v[std::max<size_t>(rank, 1) - 1];
}

// Latencies of `n` requests sent one after another by `tenant`.
std::vector<double> Sequential(QosTest* t, int n, const std::function<HttpResult()>& send) {
  std::vector<double> out;
  for (int i = 0; i < n; ++i) {
    auto t0 = Clock::now();
    HttpResult r = send();
    EXPECT_EQ(r.status, 200) << r.body;
    out.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return out;
}

const std::string kTwoTenants =
    "  tenancy:\n    tenantHeader: x-tenant-id\n    tenants:\n"
    "    - {name: light, weight: 1}\n    - {name: heavy, weight: 2}\n";

TEST_F(QosTest, SaturatingTenantsShareThroughputByWeight) {
  Start(kTwoTenants + "  flowControl:\n    saturation: {maxRequestsPerEndpoint: 2}\n");
  auto got = Saturate([&](const std::string& t) { return As(t, 15); }, {{"light", 6}, {"heavy", 6}},
                      40, 300);
  double ratio = double(got["heavy"]) / std::max(1, got["light"]);
  EXPECT_NEAR(ratio, 2.0, 0.2) << "heavy " << got["heavy"] << " light " << got["light"];
  EXPECT_GT(Metric("infergrid_tenant_admitted_requests_total{tenant=\"light\",class=\"standard\"}"),
            0);
  EXPECT_GT(Metric("infergrid_tenant_tokens_total{tenant=\"heavy\",class=\"standard\",kind="
                   "\"completion\"}"),
            0);
}

TEST_F(QosTest, ALowWeightTenantIsNotStarved) {
  Start(
      "  tenancy:\n    tenantHeader: x-tenant-id\n    tenants:\n"
      "    - {name: small, weight: 1}\n    - {name: big, weight: 20}\n"
      "  flowControl:\n    saturation: {maxRequestsPerEndpoint: 2}\n");
  auto got = Saturate([&](const std::string& t) { return As(t, 10); }, {{"small", 4}, {"big", 8}},
                      40, 420);
  // Its share is 1/21 of 420: 20. Starvation would be zero.
  EXPECT_GE(got["small"], 14) << "small " << got["small"] << " big " << got["big"];
  EXPECT_LE(got["small"], 30);
}

// Service times spread from 50 to 250 ms, so that a flood's requests end one by one rather
// than in lockstep (identical delays would free every slot at once, then none for a while).
int FloodDelay() {
  static std::atomic<uint64_t> n{0};
  return 50 + static_cast<int>((n.fetch_add(1) * 7919) % 201);
}

// p99 of a calm tenant's requests alone, then beside a flooding neighbour.
void ExpectIsolated(QosTest* t, const std::function<HttpResult()>& calm,
                    const std::function<HttpResult()>& flood, int flood_clients) {
  std::vector<double> alone = Sequential(t, 30, calm);
  std::atomic<bool> stop{false};
  std::atomic<int> flooded{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < flood_clients; ++i) {
    threads.emplace_back([&] {
      while (!stop) {
        flood();
        ++flooded;
      }
    });
  }
  // The flood is going: the queue is full of it before the calm tenant starts.
  ASSERT_TRUE(WaitFor([&] { return flooded > 2 * flood_clients; }));
  std::vector<double> beside = Sequential(t, 30, calm);
  stop = true;
  for (auto& th : threads) th.join();
  EXPECT_LE(P99(beside), 1.5 * P99(alone))
      << "alone p99 " << P99(alone) << " beside a flood p99 " << P99(beside);
}

TEST_F(QosTest, AWellBehavedTenantsLatencyHoldsBesideAFlood) {
  Start(
      "  tenancy:\n    tenantHeader: x-tenant-id\n    tenants:\n"
      "    - {name: calm}\n    - {name: flood}\n"
      "  flowControl:\n    saturation: {maxRequestsPerEndpoint: 16}\n");
  ExpectIsolated(
      this, [&] { return As("calm", 150); }, [&] { return As("flood", FloodDelay()); }, 40);
  EXPECT_GT(Metric("infergrid_tenant_queue_wait_seconds_count{tenant=\"flood\",class="
                   "\"standard\"}"),
            0);
}

TEST_F(QosTest, CriticalTrafficIsUnaffectedByASheddableFlood) {
  Start(
      "  tenancy:\n    tenantHeader: x-tenant-id\n    tenants:\n"
      "    - {name: pager, priorityClass: critical}\n"
      "    - {name: batch, priorityClass: sheddable}\n"
      "  flowControl:\n    saturation: {maxRequestsPerEndpoint: 16}\n");
  ExpectIsolated(
      this, [&] { return As("pager", 150); }, [&] { return As("batch", FloodDelay()); }, 40);
}

TEST_F(QosTest, SheddableRequestsAreRefusedEarlyWhenTheirWaitWouldBeTooLong) {
  Start(
      "  tenancy:\n    tenantHeader: x-tenant-id\n    priorityClasses:\n"
      "    - {name: standard, priority: 1}\n"
      "    - {name: sheddable, priority: 0, sheddable: true, maxQueueWait: 150ms}\n"
      "    tenants:\n    - {name: batch, priorityClass: sheddable}\n"
      "  flowControl:\n    saturation: {maxRequestsPerEndpoint: 1}\n");
  std::atomic<int> ok{0}, shed{0};
  std::mutex mu;
  HttpResult example;
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      for (int j = 0; j < 8; ++j) {
        HttpResult r = As("batch", 60);
        if (r.status == 200) ++ok;
        if (r.status == 429) {
          ++shed;
          std::lock_guard lock(mu);
          example = r;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_GT(ok, 0);
  EXPECT_GT(shed, 0);
  json j = json::parse(example.body, nullptr, false);
  ASSERT_TRUE(j.contains("error")) << example.body;
  EXPECT_THAT(j["error"]["code"].get<std::string>(),
              ::testing::AnyOf("expected_wait_exceeded", "queue_timeout"));
  EXPECT_GE(std::stoi(example.headers["retry-after"]), 1);
  EXPECT_GT(Metric("infergrid_tenant_shed_requests_total{tenant=\"batch\",class=\"sheddable\","
                   "reason=\"expected_wait\"}"),
            0);
}

TEST_F(QosTest, AQueuedRequestPastItsTimeoutIs503) {
  Start("  flowControl:\n    queueTimeout: 300ms\n    saturation: {maxRequestsPerEndpoint: 1}\n");
  std::thread busy([&] { EXPECT_EQ(As("", 2000).status, 200); });
  ASSERT_TRUE(WaitFor([&] { return fake_->stats().active == 1; }));
  auto t0 = Clock::now();
  HttpResult r = As("", 0);
  double waited = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_THAT(r.body, ::testing::HasSubstr("queue_timeout"));
  EXPECT_EQ(r.headers["retry-after"], "1");
  EXPECT_GE(waited, 0.29);
  EXPECT_LT(waited, 1.5);
  busy.join();
  EXPECT_EQ(fake_->stats().requests, 1u);  // the timed-out request never reached the server
}

TEST_F(QosTest, AClientThatLeavesWhileQueuedLeavesTheQueueAtOnce) {
  Start("  flowControl:\n    saturation: {maxRequestsPerEndpoint: 1}\n");
  std::thread busy([&] { EXPECT_EQ(As("", 1500).status, 200); });
  ASSERT_TRUE(WaitFor([&] { return fake_->stats().active == 1; }));
  std::thread leaver([&] {
    std::string req =
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: " +
        std::to_string(kChat.size()) + "\r\n\r\n" + kChat;
    // Sends, waits 200 ms without an answer (it is queued), and closes.
    testing::RawExchange(port_, req, std::chrono::milliseconds(200));
  });
  const std::string queued =
      "infergrid_tenant_queued_requests{tenant=\"default\",class=\"standard\"}";
  ASSERT_TRUE(WaitFor([&] { return Metric(queued) == 1; }));
  leaver.join();
  // Gone from the queue within the watch's reaction, long before the busy request ends.
  EXPECT_TRUE(WaitFor([&] { return Metric(queued) == 0; }, std::chrono::milliseconds(1000)));
  EXPECT_EQ(Metric("infergrid_tenant_shed_requests_total{tenant=\"default\",class=\"standard\","
                   "reason=\"client_gone\"}"),
            1);
  busy.join();
  EXPECT_EQ(fake_->stats().requests, 1u);
  EXPECT_EQ(As("", 0).status, 200);  // and the gateway goes on serving
}

TEST_F(QosTest, EveryLimitIsA429ThatNamesItWithRetryAfter) {
  Start(
      "  tenancy:\n    tenantHeader: x-tenant-id\n    tenants:\n"
      "    - {name: conc, limits: {maxConcurrentRequests: 2}}\n"
      "    - {name: rpm, limits: {requestsPerMinute: 3}}\n"
      "    - {name: tpm, limits: {tokensPerMinute: 40}}\n");
  // Concurrency: two in flight, the third is refused at once.
  std::vector<std::thread> two;
  for (int i = 0; i < 2; ++i) two.emplace_back([&] { EXPECT_EQ(As("conc", 800).status, 200); });
  ASSERT_TRUE(WaitFor([&] { return fake_->stats().active == 2; }));
  HttpResult r = As("conc", 0);
  EXPECT_EQ(r.status, 429);
  EXPECT_THAT(r.body, ::testing::HasSubstr("maxConcurrentRequests"));
  EXPECT_THAT(r.body, ::testing::HasSubstr("rate_limit_exceeded"));
  EXPECT_EQ(r.headers["retry-after"], "1");
  for (auto& t : two) t.join();
  EXPECT_EQ(As("conc", 0).status, 200);

  // Requests per minute: three, then refused for about 20 s.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(As("rpm", 0).status, 200);
  r = As("rpm", 0);
  EXPECT_EQ(r.status, 429);
  EXPECT_THAT(r.body, ::testing::HasSubstr("requestsPerMinute"));
  int retry = std::stoi(r.headers["retry-after"]);
  EXPECT_GE(retry, 19);
  EXPECT_LE(retry, 21);

  // Tokens per minute: the prompt (a few tokens) plus max_tokens 4 fit; with max_tokens 30
  // the second does not.
  const std::string big =
      R"({"model":"test-model","messages":[{"role":"user","content":"hi"}],"max_tokens":30})";
  EXPECT_EQ(As("tpm", 0, big).status, 200);
  r = As("tpm", 0, big);
  EXPECT_EQ(r.status, 429);
  EXPECT_THAT(r.body, ::testing::HasSubstr("tokensPerMinute"));
  EXPECT_GE(std::stoi(r.headers["retry-after"]), 1);
  EXPECT_EQ(Metric("infergrid_tenant_shed_requests_total{tenant=\"rpm\",class=\"standard\","
                   "reason=\"requestsPerMinute\"}"),
            1);
  // Other tenants are not limited by them.
  EXPECT_EQ(As("someone-else", 0).status, 401);  // an unknown tenant header is refused
  EXPECT_EQ(As("", 0).status, 200);              // the default tenant
}

TEST_F(QosTest, ApiKeysIdentifyTenantsAndUnknownKeysAre401) {
  const std::string key = "sk-test-team-a-0123456789";
  Start(
      "  tenancy:\n    requireApiKey: true\n    tenants:\n    - name: team-a\n"
      "      priorityClass: standard\n      apiKeySha256: [" +
      Sha256Hex(key) + "]\n");
  auto with = [&](const std::string& auth, std::map<std::string, std::string> extra = {}) {
    if (!auth.empty()) extra["authorization"] = auth;
    return PostJson(port_, "/v1/chat/completions", kChat, extra);
  };
  HttpResult r = with("");
  EXPECT_EQ(r.status, 401);
  EXPECT_THAT(r.body, ::testing::HasSubstr("missing_api_key"));
  r = with("Bearer sk-wrong");
  EXPECT_EQ(r.status, 401);
  EXPECT_THAT(r.body, ::testing::HasSubstr("invalid_api_key"));
  EXPECT_THAT(r.body, ::testing::Not(::testing::HasSubstr("sk-wrong")));  // never echoed
  EXPECT_EQ(with("Bearer " + key).status, 200);
  EXPECT_EQ(with("bearer  " + key).status, 200);
  // A request may lower its priority, not raise it.
  EXPECT_EQ(with("Bearer " + key, {{"x-priority-class", "sheddable"}}).status, 200);
  r = with("Bearer " + key, {{"x-priority-class", "critical"}});
  EXPECT_EQ(r.status, 403);
  EXPECT_THAT(r.body, ::testing::HasSubstr("priority_not_allowed"));
  EXPECT_EQ(with("Bearer " + key, {{"x-priority-class", "gold"}}).status, 400);
  EXPECT_EQ(Metric("infergrid_auth_failures_total{reason=\"unknown_key\"}"), 1);
  EXPECT_EQ(Metric("infergrid_auth_failures_total{reason=\"missing_key\"}"), 1);
  EXPECT_EQ(Metric("infergrid_tenant_admitted_requests_total{tenant=\"team-a\",class="
                   "\"sheddable\"}"),
            1);
  EXPECT_EQ(fake_->stats().requests, 3u);
}

TEST_F(QosTest, ContinuingSessionsGoBeforeNewOnesWhenSaturated) {
  Start("  flowControl:\n    saturation: {maxRequestsPerEndpoint: 1}\n");
  auto chat = [&](const std::string& session, int delay) {
    return PostJson(port_, "/v1/chat/completions", kChat,
                    {{"x-session-id", session}, {"x-fake-delay-ms", std::to_string(delay)}});
  };
  EXPECT_EQ(chat("agent-1", 0).status, 200);  // its first turn: the session is now known
  std::thread busy([&] { EXPECT_EQ(chat("busy", 600).status, 200); });
  ASSERT_TRUE(WaitFor([&] { return fake_->stats().active == 1; }));
  std::mutex mu;
  std::vector<std::string> finished;
  auto run = [&](const std::string& s) {
    EXPECT_EQ(chat(s, 100).status, 200);
    std::lock_guard lock(mu);
    finished.push_back(s);
  };
  const std::string queued =
      "infergrid_tenant_queued_requests{tenant=\"default\",class=\"standard\"}";
  std::thread n1(run, "new-1");
  ASSERT_TRUE(WaitFor([&] { return Metric(queued) == 1; }));
  std::thread n2(run, "new-2");
  ASSERT_TRUE(WaitFor([&] { return Metric(queued) == 2; }));
  std::thread c(run, "agent-1");  // its second turn, queued last
  ASSERT_TRUE(WaitFor([&] { return Metric(queued) == 3; }));
  busy.join();
  n1.join();
  n2.join();
  c.join();
  ASSERT_EQ(finished.size(), 3u);
  EXPECT_EQ(finished[0], "agent-1");
  EXPECT_EQ(finished[1], "new-1");
}

// Eight requests of ~330 tokens (prompt plus max_tokens 320) against a server whose KV cache
// holds 1,000: two run at a time (three would pass 95% of it), the rest wait in the gateway.
void ExpectKvBound(QosTest* t, FakeVllm* fake, uint16_t port,
                   const std::function<double(const std::string&)>& metric) {
  const std::string body =
      R"({"model":"test-model","messages":[{"role":"user","content":"hi"}],"max_tokens":320})";
  std::atomic<int64_t> most{0};
  std::atomic<bool> done{false};
  // The gateway's own count of what it has sent and not seen finish. (The server's count
  // can briefly include a request whose response has been read but whose handler has not
  // yet returned: that one holds no KV cache any more.)
  const std::string in_flight =
      "infergrid_endpoint_in_flight_requests{pool=\"main\",endpoint=\"" + fake->url() + "\"}";
  std::thread watch([&] {
    while (!done) {
      most = std::max<int64_t>(most, static_cast<int64_t>(metric(in_flight)));
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  std::vector<std::thread> clients;
  std::atomic<int> ok{0};
  for (int i = 0; i < 8; ++i) {
    clients.emplace_back([&] {
      ok +=
          PostJson(port, "/v1/chat/completions", body, {{"x-fake-delay-ms", "150"}}).status == 200;
    });
  }
  EXPECT_TRUE(WaitFor([&] { return metric("infergrid_pool_saturated{pool=\"main\"}") == 1; }));
  for (auto& c : clients) c.join();
  done = true;
  watch.join();
  EXPECT_EQ(ok, 8);
  EXPECT_EQ(most, 2);
  EXPECT_EQ(fake->stats().requests, 8u);
}

TEST_F(QosTest, TheKvCacheIsReservedForPromptsAndOutputs) {
  // The KV size from the pool's hardware.
  fake_ = std::make_unique<FakeVllm>(FakeVllmOptions{});
  ASSERT_TRUE(fake_->Start().ok());
  std::string yaml =
      "apiVersion: infergrid.dev/v1\nkind: Gateway\nspec:\n  listen: 127.0.0.1:0\n"
      "  workers: 2\n  endpointMetrics:\n    enabled: false\n"
      "  pools:\n  - name: main\n    models: [test-model]\n"
      "    hardware: {kvCacheTokens: 1000, prefillTokensPerSecond: 10000}\n"
      "    endpoints:\n    - " +
      fake_->url() + "\n";
  StartGateway(yaml);
  ExpectKvBound(this, fake_.get(), port_, [this](const std::string& m) { return Metric(m); });
}

TEST_F(QosTest, TheKvCacheSizeIsLearnedFromTheServersMetrics) {
  // No hardware in the config: the server's vllm:cache_config_info says 62 blocks of 16.
  FakeVllmOptions o;
  o.num_gpu_blocks = 62;
  fake_ = std::make_unique<FakeVllm>(o);
  ASSERT_TRUE(fake_->Start().ok());
  std::string yaml =
      "apiVersion: infergrid.dev/v1\nkind: Gateway\nspec:\n  listen: 127.0.0.1:0\n"
      "  workers: 2\n  endpointMetrics: {interval: 20ms}\n"
      "  pools:\n  - name: main\n    models: [test-model]\n    endpoints:\n    - " +
      fake_->url() + "\n";
  StartGateway(yaml);
  // A scrape has landed (the counter of scrapes counts them as they start): its gauges show.
  ASSERT_TRUE(WaitFor([&] {
    return gw_->registry().Render().find(
               "infergrid_endpoint_num_requests_running{pool=\"main\","
               "endpoint=\"" +
               fake_->url() + "\"}") != std::string::npos;
  }));
  ExpectKvBound(this, fake_.get(), port_, [this](const std::string& m) { return Metric(m); });
}

TEST_F(QosTest, AReloadOfTenantsKeepsWhatIsQueued) {
  Start(kTwoTenants + "  flowControl:\n    saturation: {maxRequestsPerEndpoint: 1}\n");
  std::thread busy([&] { EXPECT_EQ(As("light", 800).status, 200); });
  ASSERT_TRUE(WaitFor([&] { return fake_->stats().active == 1; }));
  std::vector<std::thread> waiting;
  std::atomic<int> ok{0};
  for (int i = 0; i < 4; ++i) {
    waiting.emplace_back([&, i] { ok += As(i % 2 ? "light" : "heavy", 10).status == 200; });
  }
  ASSERT_TRUE(
      WaitFor([&] { return Metric("infergrid_pool_queued_requests{pool=\"main\"}") == 4; }));
  // New weights, a new tenant, and a key requirement dropped: the queue stays.
  auto cfg =
      config::ParseGateway(Yaml("  tenancy:\n    tenantHeader: x-tenant-id\n    tenants:\n"
                                "    - {name: light, weight: 3}\n    - {name: heavy, weight: 1}\n"
                                "    - {name: newcomer}\n"
                                "  flowControl:\n    saturation: {maxRequestsPerEndpoint: 1}\n"),
                           "reload.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  gw_->ReloadTenancy(*cfg);
  EXPECT_EQ(Metric("infergrid_pool_queued_requests{pool=\"main\"}"), 4);
  busy.join();
  for (auto& t : waiting) t.join();
  EXPECT_EQ(ok, 4);
  EXPECT_EQ(As("newcomer", 0).status, 200);
}

TEST_F(QosTest, StoppingWithRequestsQueuedLetsGoOfThemCleanly) {
  Start("  flowControl:\n    saturation: {maxRequestsPerEndpoint: 1}\n");
  std::vector<std::thread> clients;
  for (int i = 0; i < 4; ++i) clients.emplace_back([&] { As("", 1000); });
  ASSERT_TRUE(
      WaitFor([&] { return Metric("infergrid_pool_queued_requests{pool=\"main\"}") == 3; }));
  gw_->Stop();  // one in flight, three queued: their timers and frames go with the workers
  for (auto& t : clients) t.join();
  gw_.reset();
}

}  // namespace
}  // namespace infergrid::gateway
