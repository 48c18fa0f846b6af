// Zero downtime through the live gateway (docs/zero-downtime.md): endpoints drained, removed
// and added at run time, health checks, retries, reloads, graceful shutdown, and replicas
// sharing their routing decisions. In-process gateways in front of fake vLLM servers, over
// real loopback sockets.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <future>
#include <nlohmann/json.hpp>
#include <set>
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
using testing::Get;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::PostJson;
using testing::RequestSpec;
using testing::WaitFor;

const std::string kChat =
    R"({"model":"test-model","messages":[{"role":"user","content":"hi"}],"max_tokens":2})";
const std::string kAdminKey = "admin-secret-1";
const std::string kRoundRobin =
    "  schedulingProfiles:\n  - name: rr\n    picker: {name: round-robin}\n";

std::string StreamBody(int tokens) {
  return R"({"model":"test-model","messages":[{"role":"user","content":"hi"}],"stream":true,"max_tokens":)" +
         std::to_string(tokens) + "}";
}

RequestSpec Post(std::string target, std::string body) {
  RequestSpec s;
  s.method = "POST";
  s.target = std::move(target);
  s.body = std::move(body);
  return s;
}

// A config with one pool of `urls`; `spec` goes under spec:, `pool` under the pool.
config::Gateway Config(const std::vector<std::string>& urls, const std::string& spec,
                       const std::string& pool = "") {
  std::string eps;
  for (const auto& u : urls) eps += "    - " + u + "\n";
  std::string yaml =
      "apiVersion: infergrid.dev/v1\nkind: Gateway\nspec:\n  listen: 127.0.0.1:0\n  workers: 2\n" +
      spec + "  pools:\n  - name: main\n    models:\n    - name: test-model\n" + pool +
      "    endpoints:\n" + eps;
  auto cfg = config::ParseGateway(yaml, "test.yaml");
  EXPECT_TRUE(cfg.ok()) << cfg.status().message();
  return cfg.ok() ? *cfg : config::Gateway{};
}

std::string AdminSpec() { return "  admin:\n    apiKeySha256: [" + Sha256Hex(kAdminKey) + "]\n"; }

class LifecycleTest : public ::testing::Test {
 protected:
  void StartFakes(int n, FakeVllmOptions o = {}) {
    for (int i = 0; i < n; ++i) {
      auto f = std::make_unique<FakeVllm>(o);
      ASSERT_TRUE(f->Start().ok());
      fakes_.push_back(std::move(f));
    }
  }
  std::vector<std::string> Urls() const {
    std::vector<std::string> out;
    for (auto& f : fakes_) out.push_back(f->url());
    return out;
  }
  std::unique_ptr<Gateway> StartGateway(const config::Gateway& cfg) {
    auto gw = Gateway::Create(cfg);
    EXPECT_TRUE(gw.ok()) << gw.status().message();
    if (!gw.ok()) return nullptr;
    EXPECT_TRUE((*gw)->Start().ok());
    return std::move(*gw);
  }
  void Start(int n, const std::string& spec, const std::string& pool = "") {
    StartFakes(n);
    gw_ = StartGateway(Config(Urls(), spec, pool));
    ASSERT_TRUE(gw_);
    port_ = gw_->port();
  }
  void TearDown() override {
    if (gw_) gw_->Stop();
    for (auto& f : fakes_) f->Stop();
  }
  double Metric(const std::string& needle, Gateway* g = nullptr) {
    std::string text = (g ? g : gw_.get())->registry().Render();
    size_t pos = text.find("\n" + needle + " ");
    if (pos == std::string::npos) return 0;
    return std::stod(text.substr(pos + needle.size() + 2));
  }
  testing::HttpResult Admin(const std::string& path, const std::string& body,
                            const std::string& key = kAdminKey) {
    RequestSpec s = Post(path, body);
    if (!key.empty()) s.headers["authorization"] = "Bearer " + key;
    return testing::Request(port_, s);
  }
  static std::string UrlBody(const std::string& url) { return json{{"url", url}}.dump(); }
  // A stream of `tokens` through the gateway, returned once its first piece has arrived.
  std::future<testing::HttpResult> StartStream(int tokens) {
    auto first = std::make_shared<std::promise<void>>();
    auto signalled = std::make_shared<bool>(false);
    RequestSpec s = Post("/v1/chat/completions", StreamBody(tokens));
    s.on_piece = [first, signalled](const std::string&) {
      if (!*signalled) first->set_value();
      *signalled = true;
      return true;
    };
    auto stream =
        std::async(std::launch::async, [port = port_, s] { return testing::Request(port, s); });
    first->get_future().wait();
    return stream;
  }

  std::vector<std::unique_ptr<FakeVllm>> fakes_;
  std::unique_ptr<Gateway> gw_;
  uint16_t port_ = 0;
};

TEST_F(LifecycleTest, AdminApiIsOffWithoutKeysAndOtherwiseNeedsTheKey) {
  StartFakes(1);
  gw_ = StartGateway(Config(Urls(), ""));
  port_ = gw_->port();
  auto off = Admin("/admin/endpoints/drain", UrlBody(fakes_[0]->url()));
  EXPECT_EQ(off.status, 403) << off.body;
  EXPECT_THAT(off.body, HasSubstr("admin_disabled"));
  gw_->Stop();

  gw_ = StartGateway(Config(Urls(), AdminSpec()));
  port_ = gw_->port();
  auto none = Admin("/admin/endpoints/drain", UrlBody(fakes_[0]->url()), "");
  EXPECT_EQ(none.status, 401);
  auto wrong = Admin("/admin/endpoints/drain", UrlBody(fakes_[0]->url()), "not-it");
  EXPECT_EQ(wrong.status, 401);
  EXPECT_THAT(wrong.body, Not(HasSubstr("not-it")));
  EXPECT_EQ(Admin("/admin/endpoints/drain", "{nope").status, 400);
  EXPECT_EQ(Admin("/admin/endpoints/drain", UrlBody("http://127.0.0.1:1")).status, 404);
  EXPECT_EQ(Admin("/admin/endpoints/explode", UrlBody(fakes_[0]->url())).status, 404);
  RequestSpec list;
  list.target = "/admin/endpoints";
  list.headers["authorization"] = "Bearer " + kAdminKey;
  auto r = testing::Request(port_, list);
  ASSERT_EQ(r.status, 200) << r.body;
  auto j = json::parse(r.body);
  ASSERT_EQ(j["endpoints"].size(), 1u);
  EXPECT_EQ(j["endpoints"][0]["state"], "active");
  // Every refusal left the gateway serving.
  EXPECT_EQ(PostJson(port_, "/v1/chat/completions", kChat).status, 200);
  EXPECT_EQ(Metric("infergrid_admin_requests_total{result=\"unauthorized\"}"), 2);
}

TEST_F(LifecycleTest, ADrainedEndpointFinishesItsStreamsAndGetsNothingNew) {
  FakeVllmOptions o;
  o.token_delay_ms = 20;
  StartFakes(2, o);
  gw_ = StartGateway(Config(Urls(), AdminSpec() + kRoundRobin, "    schedulingProfile: rr\n"));
  port_ = gw_->port();
  // A stream of 40 tokens (about 0.8 s) on fake 0 (round-robin starts there).
  auto stream = StartStream(40);
  ASSERT_EQ(fakes_[0]->stats().active, 1);
  auto d = Admin("/admin/endpoints/drain", UrlBody(fakes_[0]->url()));
  ASSERT_EQ(d.status, 200) << d.body;
  EXPECT_THAT(d.body, HasSubstr("\"state\":\"draining\""));
  uint64_t before = fakes_[0]->stats().requests;
  for (int i = 0; i < 6; ++i) ASSERT_EQ(PostJson(port_, "/v1/chat/completions", kChat).status, 200);
  EXPECT_EQ(fakes_[0]->stats().requests, before);  // nothing new went there
  auto r = stream.get();
  ASSERT_EQ(r.status, 200);
  EXPECT_TRUE(r.complete);
  EXPECT_THAT(r.body, HasSubstr("data: [DONE]"));  // its stream ran to the end
  // Back in rotation.
  ASSERT_EQ(Admin("/admin/endpoints/undrain", UrlBody(fakes_[0]->url())).status, 200);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(PostJson(port_, "/v1/chat/completions", kChat).status, 200);
  EXPECT_GT(fakes_[0]->stats().requests, before);
}

TEST_F(LifecycleTest, RemovalWaitsForTheDrainAndAddingServesAtOnce) {
  FakeVllmOptions o;
  o.token_delay_ms = 20;
  StartFakes(2, o);
  gw_ = StartGateway(Config({fakes_[0]->url()}, AdminSpec()));
  port_ = gw_->port();
  // Fake 1 joins through the admin API.
  ASSERT_EQ(Admin("/admin/endpoints/add", UrlBody(fakes_[1]->url())).status, 200);
  auto stream = StartStream(30);
  int busy = fakes_[0]->stats().active == 1 ? 0 : 1;
  ASSERT_EQ(fakes_[busy]->stats().active, 1);
  ASSERT_EQ(Admin("/admin/endpoints/remove", UrlBody(fakes_[busy]->url())).status, 200);
  const std::string state =
      "infergrid_endpoint_state{pool=\"main\",endpoint=\"" + fakes_[busy]->url() + "\",state=\"";
  // Still draining while its stream runs.
  EXPECT_EQ(Metric(state + "draining\"}"), 1);
  auto r = stream.get();
  EXPECT_TRUE(r.complete);
  EXPECT_TRUE(WaitFor([&] { return Metric(state + "removed\"}") == 1; }));
  // Everything now goes to the other one.
  uint64_t other_before = fakes_[1 - busy]->stats().requests;
  for (int i = 0; i < 4; ++i) ASSERT_EQ(PostJson(port_, "/v1/chat/completions", kChat).status, 200);
  EXPECT_EQ(fakes_[1 - busy]->stats().requests, other_before + 4);
}

TEST_F(LifecycleTest, RefusedConnectionsAreRetriedElsewhereWithinTheBudget) {
  // A port bound but never listened on: connects are refused.
  http::asio::io_context io;
  http::tcp::socket holder(io);
  holder.open(http::tcp::v4());
  holder.bind(http::tcp::endpoint(http::asio::ip::make_address("127.0.0.1"), 0));
  std::string dead = "http://127.0.0.1:" + std::to_string(holder.local_endpoint().port());
  StartFakes(1);
  // Health checks off, so only retries stand between the client and the dead endpoint.
  std::string spec = kRoundRobin +
                     "  endpointMetrics:\n    enabled: false\n"
                     "  health:\n    passive:\n      enabled: false\n    active:\n      enabled: "
                     "false\n";
  gw_ = StartGateway(Config({dead, fakes_[0]->url()}, spec, "    schedulingProfile: rr\n"));
  port_ = gw_->port();
  for (int i = 0; i < 10; ++i) {
    auto r = PostJson(port_, "/v1/chat/completions", kChat);
    ASSERT_EQ(r.status, 200) << r.body;
  }
  EXPECT_EQ(fakes_[0]->stats().requests, 10u);
  // Retried once; after that the endpoint is known unreachable and not chosen.
  EXPECT_TRUE(WaitFor([&] {
    return Metric("infergrid_request_retries_total{pool=\"main\",reason=\"connect_failed\"}") == 1;
  }));
  gw_->Stop();

  // With no budget the failure reaches the client, OpenAI-shaped, and is counted.
  gw_ = StartGateway(Config({dead, fakes_[0]->url()},
                            spec + "  retries:\n    budgetPercent: 0\n    minRetryReserve: 0\n",
                            "    schedulingProfile: rr\n"));
  port_ = gw_->port();
  auto r = PostJson(port_, "/v1/chat/completions", kChat);
  EXPECT_EQ(r.status, 502) << r.body;
  EXPECT_THAT(r.body, HasSubstr("connect_failed"));
  EXPECT_TRUE(WaitFor([&] {
    return Metric("infergrid_request_retries_refused_total{pool=\"main\",reason=\"budget\"}") == 1;
  }));
}

TEST_F(LifecycleTest, A503FromADrainingServerIsRetriedAndTheServerEjected) {
  StartFakes(2);
  std::string spec = kRoundRobin +
                     "  health:\n    passive:\n      consecutiveFailures: 2\n      baseEjection: "
                     "60s\n    active:\n      enabled: false\n";
  gw_ = StartGateway(Config(Urls(), spec, "    schedulingProfile: rr\n"));
  port_ = gw_->port();
  fakes_[0]->SetCompletionStatus(503);
  for (int i = 0; i < 8; ++i) {
    auto r = PostJson(port_, "/v1/chat/completions", kChat);
    ASSERT_EQ(r.status, 200) << r.body;
  }
  // Two 503s ejected it; after that nothing more was sent there.
  EXPECT_EQ(fakes_[0]->stats().requests, 2u);
  EXPECT_EQ(fakes_[1]->stats().requests, 8u);
  EXPECT_EQ(Metric("infergrid_endpoint_ejections_total{pool=\"main\",endpoint=\"" +
                   fakes_[0]->url() + "\",source=\"passive\"}"),
            1);
  EXPECT_EQ(
      Metric("infergrid_endpoint_healthy{pool=\"main\",endpoint=\"" + fakes_[0]->url() + "\"}"), 0);
}

TEST_F(LifecycleTest, AHungServerTimesOutIsEjectedAndRejoinsWhenItRecovers) {
  StartFakes(2);
  std::string spec = kRoundRobin +
                     "  timeouts:\n    firstByte: 300ms\n"
                     "  endpointMetrics:\n    enabled: false\n"
                     "  health:\n    passive:\n      consecutiveFailures: 2\n      baseEjection: "
                     "200ms\n    active:\n      interval: 100ms\n      timeout: 100ms\n";
  gw_ = StartGateway(Config(Urls(), spec, "    schedulingProfile: rr\n"));
  port_ = gw_->port();
  fakes_[0]->SetHang(true);
  // The probes time out and take it out; requests that reached it first got a clean 504.
  int timeouts = 0;
  for (int i = 0; i < 6; ++i) {
    auto r = PostJson(port_, "/v1/chat/completions", kChat);
    if (r.status == 504) {
      ++timeouts;
      EXPECT_THAT(r.body, HasSubstr("first_byte_timeout"));
    } else {
      EXPECT_EQ(r.status, 200) << r.body;
    }
  }
  EXPECT_TRUE(WaitFor([&] {
    return Metric("infergrid_endpoint_healthy{pool=\"main\",endpoint=\"" + fakes_[0]->url() +
                  "\"}") == 0;
  }));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(PostJson(port_, "/v1/chat/completions", kChat).status, 200);
  EXPECT_LE(timeouts, 2);
  // It recovers: probes pass, it rejoins and serves again.
  fakes_[0]->SetHang(false);
  EXPECT_TRUE(WaitFor([&] {
    return Metric("infergrid_endpoint_healthy{pool=\"main\",endpoint=\"" + fakes_[0]->url() +
                  "\"}") == 1;
  }));
  uint64_t before = fakes_[0]->stats().requests;
  for (int i = 0; i < 4; ++i) EXPECT_EQ(PostJson(port_, "/v1/chat/completions", kChat).status, 200);
  EXPECT_GT(fakes_[0]->stats().requests, before);
}

TEST_F(LifecycleTest, AServerKilledMidStreamGivesThatClientACleanErrorAndTheNextGoElsewhere) {
  FakeVllmOptions o;
  o.token_delay_ms = 20;
  StartFakes(2, o);
  gw_ = StartGateway(Config(Urls(), kRoundRobin + "  endpointMetrics:\n    enabled: false\n",
                            "    schedulingProfile: rr\n"));
  port_ = gw_->port();
  auto stream = StartStream(200);
  ASSERT_EQ(fakes_[0]->stats().active, 1);
  fakes_[0]->Stop();  // the server dies
  auto r = stream.get();
  ASSERT_EQ(r.status, 200);  // the stream had started
  // It ends with an error event the OpenAI clients raise, and a clean end of the body.
  EXPECT_THAT(r.body, HasSubstr("\"code\":\"reset_mid_stream\""));
  EXPECT_TRUE(r.complete);
  EXPECT_THAT(r.body, Not(HasSubstr("[DONE]")));
  // Every next request succeeds (the dead one is retried away from, then ejected).
  for (int i = 0; i < 8; ++i) {
    auto n = PostJson(port_, "/v1/chat/completions", kChat);
    EXPECT_EQ(n.status, 200) << n.body;
  }
}

TEST_F(LifecycleTest, ReloadsApplyEndpointsAndSettingsAndRefuseWhatNeedsARestart) {
  FakeVllmOptions o;
  o.token_delay_ms = 20;
  StartFakes(3, o);
  config::Gateway one = Config({fakes_[0]->url(), fakes_[1]->url()}, AdminSpec());
  gw_ = StartGateway(one);
  port_ = gw_->port();
  // A stream in flight across the reloads.
  RequestSpec s = Post("/v1/chat/completions", StreamBody(40));
  auto stream = std::async(std::launch::async, [&] { return testing::Request(port_, s); });
  ASSERT_TRUE(WaitFor([&] { return gw_->requests_in_gateway() == 1; }));

  // Fake 2 replaces fake 0 and 1.
  config::Gateway two = Config({fakes_[2]->url()}, AdminSpec());
  ASSERT_TRUE(gw_->Reload(two).ok());
  uint64_t before = fakes_[2]->stats().requests;
  for (int i = 0; i < 3; ++i) ASSERT_EQ(PostJson(port_, "/v1/chat/completions", kChat).status, 200);
  EXPECT_EQ(fakes_[2]->stats().requests, before + 3);
  // What needs a restart is refused whole, named, and counted; the running config stays.
  config::Gateway bad = Config({fakes_[0]->url()}, AdminSpec() + kRoundRobin);
  bad.workers = 7;
  Status st = gw_->Reload(bad);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("spec.workers"));
  for (int i = 0; i < 3; ++i) ASSERT_EQ(PostJson(port_, "/v1/chat/completions", kChat).status, 200);
  EXPECT_EQ(fakes_[2]->stats().requests, before + 6);
  EXPECT_EQ(Metric("infergrid_config_reloads_total{result=\"error\"}"), 1);
  EXPECT_EQ(Metric("infergrid_config_reloads_total{result=\"ok\"}"), 1);
  auto r = stream.get();
  EXPECT_TRUE(r.complete);
  EXPECT_THAT(r.body, HasSubstr("data: [DONE]"));
  // Back to the first: the removed endpoints come back.
  ASSERT_TRUE(gw_->Reload(one).ok());
  EXPECT_TRUE(WaitFor([&] {
    return Metric("infergrid_endpoint_state{pool=\"main\",endpoint=\"" + fakes_[2]->url() +
                  "\",state=\"removed\"}") == 1;
  }));
  for (int i = 0; i < 4; ++i) ASSERT_EQ(PostJson(port_, "/v1/chat/completions", kChat).status, 200);
  EXPECT_EQ(fakes_[2]->stats().requests, before + 6);
}

TEST_F(LifecycleTest, GracefulShutdownLetsStreamsFinishAndSaysConnectionClose) {
  FakeVllmOptions o;
  o.token_delay_ms = 20;
  StartFakes(1, o);
  gw_ = StartGateway(Config(Urls(), ""));
  port_ = gw_->port();
  RequestSpec s = Post("/v1/chat/completions", StreamBody(30));
  auto stream = std::async(std::launch::async, [&] { return testing::Request(port_, s); });
  ASSERT_TRUE(WaitFor([&] { return gw_->requests_in_gateway() == 1; }));
  auto left =
      std::async(std::launch::async, [&] { return gw_->Shutdown(std::chrono::seconds(10)); });
  auto r = stream.get();
  ASSERT_EQ(r.status, 200);
  EXPECT_TRUE(r.complete);
  EXPECT_THAT(r.body, HasSubstr("data: [DONE]"));
  EXPECT_EQ(left.get(), 0u);
  EXPECT_EQ(fakes_[0]->stats().completed, 1u);
  // No longer accepting.
  auto after = Get(port_, "/health");
  EXPECT_NE(after.status, 200);
}

// A TCP relay the test can cut and heal: a partition between two replicas, in one process.
class Relay {
 public:
  explicit Relay(uint16_t target) : target_(target), acceptor_(io_) {
    http::tcp::endpoint ep(http::asio::ip::make_address("127.0.0.1"), 0);
    acceptor_.open(ep.protocol());
    acceptor_.set_option(http::asio::socket_base::reuse_address(true));
    acceptor_.bind(ep);
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    Accept();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~Relay() {
    http::asio::post(io_, [this] {
      http::error_code ec;
      acceptor_.close(ec);
      CloseAll();
    });
    io_.stop();
    thread_.join();
  }
  uint16_t port() const { return port_; }
  // Every connection through it breaks, and new ones are closed at once, until Heal().
  void Cut() {
    http::asio::post(io_, [this] {
      cut_ = true;
      CloseAll();
    });
  }
  void Heal() {
    http::asio::post(io_, [this] { cut_ = false; });
  }

 private:
  using Socket = std::shared_ptr<http::tcp::socket>;
  void Accept() {
    acceptor_.async_accept([this](http::error_code ec, http::tcp::socket s) {
      if (ec) return;
      auto in = std::make_shared<http::tcp::socket>(std::move(s));
      if (cut_) {
        http::error_code ignored;
        in->close(ignored);
      } else {
        auto out = std::make_shared<http::tcp::socket>(io_);
        http::error_code cec;
        out->connect({http::asio::ip::make_address("127.0.0.1"), target_}, cec);
        if (cec) {
          in->close(cec);
        } else {
          sockets_.push_back(in);
          sockets_.push_back(out);
          Pump(in, out);
          Pump(out, in);
        }
      }
      Accept();
    });
  }
  void Pump(Socket from, Socket to) {
    auto buf = std::make_shared<std::array<char, 16384>>();
    from->async_read_some(
        http::asio::buffer(*buf), [this, from, to, buf](http::error_code ec, size_t n) {
          if (ec) {
            http::error_code ignored;
            to->close(ignored);
            from->close(ignored);
            return;
          }
          http::asio::async_write(*to, http::asio::buffer(buf->data(), n),
                                  [this, from, to, buf](http::error_code wec, size_t) {
                                    if (wec) {
                                      http::error_code ignored;
                                      from->close(ignored);
                                      return;
                                    }
                                    Pump(from, to);
                                  });
        });
  }
  void CloseAll() {
    for (auto& s : sockets_) {
      http::error_code ignored;
      s->close(ignored);
    }
    sockets_.clear();
  }
  uint16_t target_;
  http::asio::io_context io_;
  http::tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  bool cut_ = false;
  std::vector<Socket> sockets_;
  std::thread thread_;
};

// Two replicas that share routing decisions: a session routed by one is routed to the same
// endpoint by the other, and a restarted replica warms from its peer.
class PeeringTest : public LifecycleTest {
 protected:
  std::string PeerSpec(uint16_t peer_port) {
    std::string s = "  ha:\n    listen: 127.0.0.1:0\n";
    if (peer_port) s += "    peers: [\"127.0.0.1:" + std::to_string(peer_port) + "\"]\n";
    return s;
  }
  // The endpoint a session's request went to (the fake whose request count rose).
  int SendSession(uint16_t port, const std::string& session) {
    std::vector<uint64_t> before;
    for (auto& f : fakes_) before.push_back(f->stats().requests);
    auto r = PostJson(port, "/v1/chat/completions", kChat, {{"x-session-id", session}});
    EXPECT_EQ(r.status, 200) << r.body;
    for (size_t i = 0; i < fakes_.size(); ++i) {
      if (fakes_[i]->stats().requests > before[i]) return static_cast<int>(i);
    }
    return -1;
  }
};

TEST_F(PeeringTest, ReplicasShareSessionHomesAndARestartedReplicaWarmsFromItsPeer) {
  StartFakes(4);
  auto a = StartGateway(Config(Urls(), PeerSpec(0)));
  ASSERT_TRUE(a);
  auto b = StartGateway(Config(Urls(), PeerSpec(a->peer_port())));
  ASSERT_TRUE(b);
  // A dials B too (a reload may change the peers).
  config::Gateway a2 = Config(Urls(), PeerSpec(b->peer_port()));
  ASSERT_TRUE(a->Reload(a2).ok());
  ASSERT_TRUE(WaitFor([&] { return Metric("infergrid_peers_connected", a.get()) == 1; }));
  ASSERT_TRUE(WaitFor([&] { return Metric("infergrid_peers_connected", b.get()) == 1; }));

  // 20 sessions start on A; each continues on B, where it must find the same endpoint.
  std::vector<int> home(20);
  for (int i = 0; i < 20; ++i) home[i] = SendSession(a->port(), "s" + std::to_string(i));
  std::set<int> used(home.begin(), home.end());
  EXPECT_GE(used.size(), 2u);  // they were spread
  ASSERT_TRUE(WaitFor(
      [&] { return Metric("infergrid_peer_records{direction=\"received\"}", b.get()) >= 20; }));
  for (int i = 0; i < 20; ++i) EXPECT_EQ(SendSession(b->port(), "s" + std::to_string(i)), home[i]);

  // B restarts: a new replica on a new port, peered with A, learns every session from A's
  // snapshot before it serves any of them.
  b->Stop();
  b.reset();
  ASSERT_TRUE(WaitFor([&] { return Metric("infergrid_peers_connected", a.get()) == 0; }));
  // Meanwhile A keeps routing on its own, and new sessions start there.
  for (int i = 20; i < 30; ++i) home.push_back(SendSession(a->port(), "s" + std::to_string(i)));
  auto b2 = StartGateway(Config(Urls(), PeerSpec(a->peer_port())));
  ASSERT_TRUE(b2);
  EXPECT_EQ(Get(b2->port(), "/ready").status, 503);  // not before it has heard from its peer
  config::Gateway a3 = Config(Urls(), PeerSpec(b2->peer_port()));
  ASSERT_TRUE(a->Reload(a3).ok());
  ASSERT_TRUE(WaitFor(
      [&] { return Metric("infergrid_peer_records{direction=\"received\"}", b2.get()) >= 30; }));
  for (int i = 0; i < 30; ++i)
    EXPECT_EQ(SendSession(b2->port(), "s" + std::to_string(i)), home[i]) << i;
  // It reports ready once its peer's state came, not before.
  EXPECT_TRUE(WaitFor([&] { return Get(b2->port(), "/ready").status == 200; }));
  EXPECT_TRUE(b2->Warm());
  b2->Stop();
  a->Stop();
}

TEST_F(PeeringTest, ReplicasCutOffFromEachOtherKeepRoutingAndReconcileAfter) {
  StartFakes(4);
  auto a = StartGateway(Config(Urls(), PeerSpec(0)));
  auto b = StartGateway(Config(Urls(), PeerSpec(0)));
  ASSERT_TRUE(a && b);
  // Each dials the other through a relay that can be cut.
  Relay to_a(a->peer_port()), to_b(b->peer_port());
  ASSERT_TRUE(a->Reload(Config(Urls(), PeerSpec(to_b.port()))).ok());
  ASSERT_TRUE(b->Reload(Config(Urls(), PeerSpec(to_a.port()))).ok());
  ASSERT_TRUE(WaitFor([&] { return Metric("infergrid_peers_connected", a.get()) == 1; }));
  ASSERT_TRUE(WaitFor([&] { return Metric("infergrid_peers_connected", b.get()) == 1; }));

  to_a.Cut();
  to_b.Cut();
  ASSERT_TRUE(WaitFor([&] {
    return Metric("infergrid_peers_connected", a.get()) == 0 &&
           Metric("infergrid_peers_connected", b.get()) == 0;
  }));
  // Cut off, each keeps routing: new sessions start on both.
  std::vector<int> home_a, home_b;
  for (int i = 0; i < 12; ++i) home_a.push_back(SendSession(a->port(), "a" + std::to_string(i)));
  for (int i = 0; i < 12; ++i) home_b.push_back(SendSession(b->port(), "b" + std::to_string(i)));
  for (int h : home_a) EXPECT_GE(h, 0);
  for (int h : home_b) EXPECT_GE(h, 0);

  // Healed: the redialled connections carry each side's whole state, so each knows where the
  // other's sessions live.
  double received_a = Metric("infergrid_peer_records{direction=\"received\"}", a.get());
  double received_b = Metric("infergrid_peer_records{direction=\"received\"}", b.get());
  to_a.Heal();
  to_b.Heal();
  ASSERT_TRUE(WaitFor([&] {
    return Metric("infergrid_peer_records{direction=\"received\"}", a.get()) >= received_a + 12 &&
           Metric("infergrid_peer_records{direction=\"received\"}", b.get()) >= received_b + 12;
  }));
  for (int i = 0; i < 12; ++i)
    EXPECT_EQ(SendSession(a->port(), "b" + std::to_string(i)), home_b[i]);
  for (int i = 0; i < 12; ++i)
    EXPECT_EQ(SendSession(b->port(), "a" + std::to_string(i)), home_a[i]);
  a->Stop();
  b->Stop();
}

}  // namespace
}  // namespace infergrid::gateway
