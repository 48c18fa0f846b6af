// The gateway in-process in front of fake vLLM servers, over real loopback sockets.

#include "gateway/gateway.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "fake_vllm.h"
#include "http_client.h"
#include "plan/fleet.h"
#include "plan/simulator.h"
#include "workload/mooncake.h"

namespace infergrid::gateway {
namespace {

using nlohmann::json;
using testing::FakeVllm;
using testing::FakeVllmOptions;
using testing::Get;
using ::testing::HasSubstr;
using testing::PostJson;
using testing::RequestSpec;
using testing::WaitFor;

const std::string kChat =
    R"({"model":"test-model","messages":[{"role":"user","content":"hi"}],"max_tokens":4})";

class GatewayTest : public ::testing::Test {
 protected:
  // Starts `n` fake servers and a gateway whose spec is `extra_spec` plus one pool over them.
  void Start(int n, const std::string& extra_spec = "", const std::string& pool_extra = "",
             std::vector<std::string> extra_endpoints = {}, int workers = 2) {
    for (int i = 0; i < n; ++i) {
      auto f = std::make_unique<FakeVllm>(FakeVllmOptions{});
      ASSERT_TRUE(f->Start().ok());
      fakes_.push_back(std::move(f));
    }
    std::string eps;
    for (auto& f : fakes_) eps += "    - " + f->url() + "\n";
    for (auto& e : extra_endpoints) eps += "    - " + e + "\n";
    std::string yaml =
        "apiVersion: infergrid.dev/v1\nkind: Gateway\nspec:\n  listen: 127.0.0.1:0\n  workers: " +
        std::to_string(workers) + "\n" + extra_spec +
        "  pools:\n  - name: main\n    models:\n    - name: test-model\n      aliases: [tm]\n" +
        pool_extra + "    endpoints:\n" + eps;
    auto cfg = config::ParseGateway(yaml, "test.yaml");
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    auto gw = Gateway::Create(*cfg);
    ASSERT_TRUE(gw.ok()) << gw.status().message();
    gw_ = std::move(*gw);
    ASSERT_TRUE(gw_->Start().ok());
    port_ = gw_->port();
  }

  void TearDown() override {
    if (gw_) gw_->Stop();
    for (auto& f : fakes_) f->Stop();
  }

  double Metric(const std::string& needle) {
    std::string text = gw_->registry().Render();
    size_t pos = text.find("\n" + needle + " ");  // a sample's line, not its HELP text
    if (pos == std::string::npos) return 0;
    return std::stod(text.substr(pos + needle.size() + 2));
  }

  uint64_t TotalRequestsAtFakes() {
    uint64_t n = 0;
    for (auto& f : fakes_) n += f->stats().requests;
    return n;
  }

  std::vector<std::unique_ptr<FakeVllm>> fakes_;
  std::unique_ptr<Gateway> gw_;
  uint16_t port_ = 0;
};

RequestSpec Post(std::string target, std::string body) {
  RequestSpec s;
  s.method = "POST";
  s.target = std::move(target);
  s.body = std::move(body);
  return s;
}

json ParseBody(const testing::HttpResult& r) {
  json j = json::parse(r.body, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.body;
  return j;
}

void ExpectOpenAiError(const testing::HttpResult& r, int status, const std::string& code) {
  EXPECT_EQ(r.status, status) << r.body;
  json j = ParseBody(r);
  ASSERT_TRUE(j.contains("error")) << r.body;
  EXPECT_TRUE(j["error"]["message"].is_string());
  EXPECT_TRUE(j["error"]["type"].is_string());
  EXPECT_TRUE(j["error"].contains("param"));
  EXPECT_EQ(j["error"]["code"], code) << r.body;
  EXPECT_EQ(r.headers.at("content-type"), "application/json");
}

TEST_F(GatewayTest, ChatIsForwardedWithTheBodyUnchanged) {
  Start(1);
  // Odd spacing and a field the gateway does not know: both must reach the server as sent.
  std::string body =
      R"({ "model" : "test-model", "messages":[{"role":"user","content":"hi"}],  "max_tokens":3,
    "vendor_extension": {"x": [1, 2]} })";
  auto r = PostJson(port_, "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  json j = ParseBody(r);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["usage"]["completion_tokens"], 3);
  EXPECT_EQ(fakes_[0]->stats().last_body, body);
  EXPECT_FALSE(r.chunked);  // a content-length response stays one
}

TEST_F(GatewayTest, ChunkedUploadsAreForwardedWhole) {
  Start(1);
  std::string body = kChat;
  std::string raw =
      "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
  for (size_t i = 0; i < body.size(); i += 10) {
    std::string part = body.substr(i, 10);
    char len[16];
    std::snprintf(len, sizeof(len), "%zx\r\n", part.size());
    raw += len + part + "\r\n";
  }
  raw += "0\r\n\r\n";
  std::string got = testing::RawExchange(port_, raw, std::chrono::seconds(5));
  EXPECT_THAT(got, HasSubstr("HTTP/1.1 200"));
  EXPECT_THAT(got, HasSubstr("\"chat.completion\""));
  EXPECT_EQ(fakes_[0]->stats().last_body, body);
}

TEST_F(GatewayTest, LargeBodiesAndStreamsArriveWhole) {
  Start(1);
  auto r = PostJson(
      port_, "/v1/chat/completions",
      R"({"model":"test-model","messages":[{"role":"user","content":"hi"}],"max_tokens":6000})");
  ASSERT_EQ(r.status, 200);
  ASSERT_TRUE(r.complete);
  json j = ParseBody(r);
  EXPECT_EQ(j["choices"][0]["message"]["content"].get<std::string>().size(), 6000u * 4);
  RequestSpec s = Post("/v1/completions",
                       R"({"model":"test-model","prompt":"x","max_tokens":3000,"stream":true})");
  r = testing::Request(port_, s);
  ASSERT_EQ(r.status, 200);
  EXPECT_TRUE(r.complete);
  size_t events = 0;
  for (size_t pos = 0; (pos = r.body.find("data: ", pos)) != std::string::npos; ++pos) ++events;
  EXPECT_EQ(events, 3001u);  // every token, then [DONE]
}

TEST_F(GatewayTest, CloseDelimitedUpstreamBodiesAreReframed) {
  Start(1,
        "  endpointMetrics:\n    enabled: false\n  health:\n    active:\n      enabled: false\n");
  for (int i = 0; i < 2; ++i) {
    auto r = PostJson(port_, "/v1/chat/completions", kChat, {{"x-fake-close-delimited", "1"}});
    ASSERT_EQ(r.status, 200);
    EXPECT_TRUE(r.complete);
    EXPECT_TRUE(r.chunked);  // an HTTP/1.1 client gets a framed body it can keep alive after
    EXPECT_EQ(ParseBody(r)["object"], "chat.completion");
  }
  // Such a connection cannot be reused: one per request.
  EXPECT_EQ(fakes_[0]->stats().connections, 2u);
}

TEST_F(GatewayTest, CompletionsAndAliasesRoute) {
  Start(1);
  auto r = PostJson(port_, "/v1/completions", R"({"model":"tm","prompt":"hello","max_tokens":2})");
  // The alias reaches the pool; the server (which serves only the real name) answers 404 in
  // vLLM's shape and the gateway relays it unchanged.
  EXPECT_EQ(r.status, 404);
  r = PostJson(port_, "/v1/completions",
               R"({"model":"test-model","prompt":"hello","max_tokens":2})");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(ParseBody(r)["object"], "text_completion");
  EXPECT_EQ(TotalRequestsAtFakes(), 2u);
}

TEST_F(GatewayTest, ModelsListsEveryNameAndAlias) {
  Start(1);
  auto r = Get(port_, "/v1/models");
  ASSERT_EQ(r.status, 200);
  json j = ParseBody(r);
  EXPECT_EQ(j["object"], "list");
  std::set<std::string> ids;
  for (auto& m : j["data"]) {
    ids.insert(m["id"]);
    EXPECT_EQ(m["object"], "model");
  }
  EXPECT_EQ(ids, (std::set<std::string>{"test-model", "tm"}));
}

TEST_F(GatewayTest, StreamsArriveChunkByChunkWithUsageAndDone) {
  Start(1);
  auto start = std::chrono::steady_clock::now();
  std::vector<double> arrivals;
  RequestSpec s = Post(
      "/v1/chat/completions",
      R"({"model":"test-model","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"stream":true,
               "stream_options":{"include_usage":true}})");
  s.headers["x-fake-token-delay-ms"] = "150";
  s.on_piece = [&](const std::string&) {
    arrivals.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return true;
  };
  auto r = testing::Request(port_, s);
  ASSERT_EQ(r.status, 200);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.headers.at("content-type"), "text/event-stream");
  EXPECT_THAT(r.body, HasSubstr("\"usage\":{\"completion_tokens\":5"));
  EXPECT_THAT(r.body, HasSubstr("data: [DONE]\n\n"));
  EXPECT_EQ(r.body.find("data: [DONE]"), r.body.size() - std::string("data: [DONE]\n\n").size());
  // Relayed as produced: the first token reached the client well before the last one was made.
  ASSERT_GE(arrivals.size(), 3u);
  EXPECT_LT(arrivals.front() + 0.4, arrivals.back());
}

TEST_F(GatewayTest, UnknownModelIs404InOpenAiShape) {
  Start(1);
  auto r = PostJson(port_, "/v1/chat/completions",
                    R"({"model":"gpt-99","messages":[{"role":"user","content":"hi"}]})");
  ExpectOpenAiError(r, 404, "model_not_found");
  EXPECT_EQ(ParseBody(r)["error"]["param"], "model");
  EXPECT_EQ(TotalRequestsAtFakes(), 0u);
  EXPECT_EQ(Metric("infergrid_client_errors_total{kind=\"model_not_found\"}"), 1);
}

TEST_F(GatewayTest, BadBodiesAre400AndTheGatewayKeepsServing) {
  Start(1);
  ExpectOpenAiError(PostJson(port_, "/v1/chat/completions", "{\"model\": "), 400, "invalid_json");
  ExpectOpenAiError(
      PostJson(port_, "/v1/chat/completions", R"({"model":"test-model","messages":"hi"})"), 400,
      "invalid_type");
  ExpectOpenAiError(PostJson(port_, "/v1/chat/completions", R"({"messages":[{"role":"user"}]})"),
                    400, "missing_required_parameter");
  EXPECT_EQ(TotalRequestsAtFakes(), 0u);
  EXPECT_EQ(PostJson(port_, "/v1/chat/completions", kChat).status, 200);
}

TEST_F(GatewayTest, OversizedBodyIs413) {
  Start(1, "  limits:\n    maxRequestBodyBytes: 4096\n");
  std::string big = R"({"model":"test-model","messages":[{"role":"user","content":")" +
                    std::string(8000, 'a') + "\"}]}";
  ExpectOpenAiError(PostJson(port_, "/v1/chat/completions", big), 413, "request_too_large");
  // Chunked uploads are cut off at the limit too.
  std::string chunked =
      "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 10; ++i) chunked += "3e8\r\n" + std::string(1000, 'a') + "\r\n";
  chunked += "0\r\n\r\n";
  EXPECT_THAT(testing::RawExchange(port_, chunked, std::chrono::seconds(5)), HasSubstr("413"));
  EXPECT_EQ(PostJson(port_, "/v1/chat/completions", kChat).status, 200);
  EXPECT_EQ(Metric("infergrid_client_errors_total{kind=\"body_too_large\"}"), 2);
}

TEST_F(GatewayTest, OversizedHeadersAre431) {
  Start(1, "  limits:\n    maxRequestHeaderBytes: 2048\n");
  auto r = PostJson(port_, "/v1/chat/completions", kChat, {{"x-junk", std::string(4000, 'h')}});
  ExpectOpenAiError(r, 431, "request_header_fields_too_large");
  EXPECT_EQ(PostJson(port_, "/v1/chat/completions", kChat).status, 200);
}

TEST_F(GatewayTest, SlowHeadersAre408) {
  Start(1, "  timeouts:\n    requestHeaders: 300ms\n");
  std::string req = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
  std::string got = testing::RawExchange(port_, req, std::chrono::seconds(5), 20,
                                         std::chrono::milliseconds(1500));
  EXPECT_THAT(got, HasSubstr("HTTP/1.1 408"));
  EXPECT_THAT(got, HasSubstr("\"code\":\"request_timeout\""));
  EXPECT_EQ(PostJson(port_, "/v1/chat/completions", kChat).status, 200);
}

TEST_F(GatewayTest, ConnectionCloseAndHttp10AreHonoured) {
  Start(1);
  std::string body =
      R"({"model":"test-model","messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true})";
  std::string req =
      "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  auto t0 = std::chrono::steady_clock::now();
  std::string got = testing::RawExchange(port_, req, std::chrono::seconds(20));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));  // the server closed
  EXPECT_THAT(got, HasSubstr("Connection: close"));
  EXPECT_THAT(got, HasSubstr("data: [DONE]"));
  // An HTTP/1.0 client cannot read chunked framing: it gets the raw stream, ended by close.
  req = "POST /v1/chat/completions HTTP/1.0\r\nHost: x\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body;
  got = testing::RawExchange(port_, req, std::chrono::seconds(20));
  EXPECT_THAT(got, HasSubstr("HTTP/1.0 200"));
  EXPECT_THAT(got, ::testing::Not(HasSubstr("chunked")));
  EXPECT_THAT(got, HasSubstr("\n\ndata: [DONE]\n\n"));
}

TEST_F(GatewayTest, ExpectContinueIsAnsweredOnceAndNotForwarded) {
  Start(1);
  std::string req =
      "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nConnection: "
      "close\r\n"
      "Content-Length: " +
      std::to_string(kChat.size()) + "\r\n\r\n" + kChat;
  std::string got = testing::RawExchange(port_, req, std::chrono::seconds(20));
  EXPECT_EQ(got.find("HTTP/1.1 100 Continue"), 0u) << got;
  EXPECT_EQ(got.find("HTTP/1.1 100", 5), std::string::npos) << got;  // not relayed a second time
  EXPECT_THAT(got, HasSubstr("HTTP/1.1 200"));
  EXPECT_EQ(fakes_[0]->stats().last_body, kChat);
  EXPECT_TRUE(fakes_[0]->stats().last_expect.empty());
}

TEST_F(GatewayTest, IdleClientConnectionsAreClosed) {
  Start(1, "  timeouts:\n    clientIdle: 200ms\n");
  std::string req = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";  // keep-alive by default
  auto t0 = std::chrono::steady_clock::now();
  std::string got = testing::RawExchange(port_, req, std::chrono::seconds(20));
  // The server, not our 20 s deadline, ended the exchange.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  EXPECT_THAT(got, HasSubstr("HTTP/1.1 200"));
}

TEST_F(GatewayTest, UnknownPathIs404AndWrongMethodIs405) {
  Start(1);
  ExpectOpenAiError(Get(port_, "/v2/everything"), 404, "unknown_url");
  auto r = Get(port_, "/v1/chat/completions");
  ExpectOpenAiError(r, 405, "method_not_allowed");
  EXPECT_EQ(r.headers.at("allow"), "POST");
  r = PostJson(port_, "/v1/models", "{}");
  ExpectOpenAiError(r, 405, "method_not_allowed");
  EXPECT_EQ(r.headers.at("allow"), "GET");
}

TEST_F(GatewayTest, UpstreamResetMidStreamEndsTheStreamWithAnErrorEvent) {
  Start(1);
  RequestSpec s = Post(
      "/v1/chat/completions",
      R"({"model":"test-model","messages":[{"role":"user","content":"hi"}],"max_tokens":8,"stream":true})");
  s.headers["x-fake-reset-after"] = "2";
  auto r = testing::Request(port_, s);
  EXPECT_EQ(r.status, 200);
  EXPECT_THAT(r.body, HasSubstr("\"content\":\"tok \""));
  EXPECT_THAT(r.body, HasSubstr("data: {\"error\":{"));
  EXPECT_THAT(r.body, HasSubstr("\"code\":\"reset_mid_stream\""));
  EXPECT_EQ(r.body.find("[DONE]"), std::string::npos);
  EXPECT_TRUE(WaitFor([&] {
    return Metric("infergrid_upstream_errors_total{endpoint=\"" + fakes_[0]->url() +
                  "\",kind=\"reset_mid_stream\"}") == 1;
  }));
  EXPECT_EQ(PostJson(port_, "/v1/chat/completions", kChat).status, 200);
}

TEST_F(GatewayTest, ClientThatLeavesWhileWaitingCancelsUpstream) {
  Start(1);
  RequestSpec s = Post("/v1/chat/completions", kChat);
  s.headers["x-fake-delay-ms"] = "20000";
  s.timeout = std::chrono::milliseconds(300);  // the client gives up and closes
  auto r = testing::Request(port_, s);
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(WaitFor([&] { return fakes_[0]->stats().cancelled == 1; }, std::chrono::seconds(5)));
  EXPECT_TRUE(WaitFor([&] {
    return Metric("infergrid_client_disconnects_total{phase=\"before_response\"}") == 1;
  }));
  EXPECT_TRUE(WaitFor([&] {
    return Metric("infergrid_endpoint_in_flight_requests{pool=\"main\",endpoint=\"" +
                  fakes_[0]->url() + "\"}") == 0;
  }));
}

TEST_F(GatewayTest, ClientThatLeavesMidStreamCancelsUpstream) {
  Start(1);
  RequestSpec s = Post(
      "/v1/chat/completions",
      R"({"model":"test-model","messages":[{"role":"user","content":"hi"}],"max_tokens":200,"stream":true})");
  s.headers["x-fake-token-delay-ms"] = "50";
  int pieces = 0;
  s.on_piece = [&](const std::string&) { return ++pieces < 2; };
  testing::Request(port_, s);
  EXPECT_TRUE(WaitFor([&] { return fakes_[0]->stats().cancelled == 1; }, std::chrono::seconds(5)));
  EXPECT_EQ(fakes_[0]->stats().completed, 0u);
}

TEST_F(GatewayTest, FirstByteTimeoutIs504AndCancelsUpstream) {
  Start(1, "  timeouts:\n    firstByte: 300ms\n");
  RequestSpec s = Post("/v1/chat/completions", kChat);
  s.headers["x-fake-hang"] = "1";
  auto r = testing::Request(port_, s);
  ExpectOpenAiError(r, 504, "first_byte_timeout");
  EXPECT_TRUE(WaitFor([&] { return fakes_[0]->stats().cancelled == 1; }, std::chrono::seconds(5)));
}

TEST_F(GatewayTest, UnreachableEndpointIs502AndIsAvoidedAfterwards) {
  // A port bound but never listened on: connects are refused, and no other test can take it.
  http::asio::io_context io;
  http::tcp::socket holder(io);
  holder.open(http::tcp::v4());
  holder.bind(http::tcp::endpoint(http::asio::ip::make_address("127.0.0.1"), 0));
  uint16_t dead = holder.local_endpoint().port();
  std::string dead_url = "http://127.0.0.1:" + std::to_string(dead);
  // No scrapes or probes: the request itself is the first to find it down.
  Start(0, "  endpointMetrics:\n    enabled: false\n  health:\n    active:\n      enabled: false\n",
        "", {dead_url});
  auto r = PostJson(port_, "/v1/chat/completions", kChat);
  ExpectOpenAiError(r, 502, "connect_failed");
  // Accounting happens just after the response is written: wait for it.
  EXPECT_TRUE(WaitFor([&] {
    return Metric("infergrid_upstream_errors_total{endpoint=\"" + dead_url +
                  "\",kind=\"connect_failed\"}") == 1;
  }));
  // The only endpoint is now known unreachable: not ready, and requests fail fast with 503.
  EXPECT_TRUE(WaitFor([&] { return Get(port_, "/ready").status == 503; }));
  EXPECT_EQ(Get(port_, "/health").status, 200);
  ExpectOpenAiError(PostJson(port_, "/v1/chat/completions", kChat), 503, "no_endpoint_available");
}

TEST_F(GatewayTest, LeastLoadSpreadsConcurrentRequestsEvenly) {
  Start(2,
        "  schedulingProfiles:\n  - name: ll\n    scorers: [{name: least-load}]\n"
        "    picker: {name: max-score}\n",
        "    schedulingProfile: ll\n");
  std::vector<std::future<int>> done;
  for (int i = 0; i < 8; ++i) {
    done.push_back(std::async(std::launch::async, [&] {
      return PostJson(port_, "/v1/chat/completions", kChat, {{"x-fake-delay-ms", "1500"}}).status;
    }));
  }
  // Every request is in flight at once, so least-load must split them 4 and 4.
  for (auto& d : done) EXPECT_EQ(d.get(), 200);
  EXPECT_EQ(fakes_[0]->stats().requests, 4u);
  EXPECT_EQ(fakes_[1]->stats().requests, 4u);
}

TEST_F(GatewayTest, ConcurrentMixedTrafficLosesNothing) {
  Start(2);
  constexpr int kClients = 8, kEach = 40;
  std::vector<std::future<int>> done;
  for (int c = 0; c < kClients; ++c) {
    done.push_back(std::async(std::launch::async, [&, c] {
      int ok = 0;
      for (int i = 0; i < kEach; ++i) {
        RequestSpec s;
        s.method = "POST";
        bool stream = (c + i) % 2 == 0;
        s.target = i % 3 == 0 ? "/v1/completions" : "/v1/chat/completions";
        s.body =
            i % 3 == 0
                ? R"({"model":"test-model","prompt":"p","max_tokens":5,"stream":)" +
                      std::string(stream ? "true" : "false") + "}"
                : R"({"model":"test-model","messages":[{"role":"user","content":"m"}],"max_tokens":5,"stream":)" +
                      std::string(stream ? "true" : "false") + "}";
        s.headers["x-fake-token-delay-ms"] = i % 5 == 0 ? "2" : "0";
        auto r = testing::Request(port_, s);
        bool complete = r.status == 200 && r.complete &&
                        (!stream || r.body.find("data: [DONE]") != std::string::npos);
        ok += complete ? 1 : 0;
      }
      return ok;
    }));
  }
  int ok = 0;
  for (auto& d : done) ok += d.get();
  EXPECT_EQ(ok, kClients * kEach);
  EXPECT_TRUE(WaitFor([&] {
    return fakes_[0]->stats().completed + fakes_[1]->stats().completed ==
           static_cast<uint64_t>(kClients * kEach);
  }));
  for (auto& f : fakes_) {
    EXPECT_TRUE(WaitFor([&] {
      return Metric("infergrid_endpoint_in_flight_requests{pool=\"main\",endpoint=\"" + f->url() +
                    "\"}") == 0;
    }));
  }
}

// A long system prompt and a conversation behind it, as a coding agent sends them.
std::string Conversation(int topic, int turns, const std::string& extra = "") {
  std::string system;
  for (int i = 0; i < 600; ++i) system += "rule" + std::to_string(topic * 1000 + i) + " ";
  json messages = json::array({{{"role", "system"}, {"content", system}}});
  for (int t = 0; t < turns; ++t) {
    messages.push_back({{"role", "user"}, {"content", "step " + std::to_string(t) + " please"}});
    if (t + 1 < turns)
      messages.push_back({{"role", "assistant"}, {"content", "done " + std::to_string(t)}});
  }
  json body = {{"model", "test-model"}, {"messages", messages}, {"max_tokens", 2}};
  if (!extra.empty()) body.update(json::parse(extra));
  return body.dump();
}

size_t ServedBy(const std::vector<std::unique_ptr<FakeVllm>>& fakes, std::vector<uint64_t>* seen) {
  size_t which = SIZE_MAX;
  for (size_t i = 0; i < fakes.size(); ++i) {
    uint64_t n = fakes[i]->stats().requests;
    if (n != (*seen)[i]) which = i;
    (*seen)[i] = n;
  }
  return which;
}

TEST_F(GatewayTest, TheDefaultProfileKeepsAConversationWhereItsPrefixIsCached) {
  Start(4);
  std::vector<uint64_t> seen(4, 0);
  ASSERT_EQ(PostJson(port_, "/v1/chat/completions", Conversation(1, 1)).status, 200);
  size_t home = ServedBy(fakes_, &seen);
  ASSERT_NE(home, SIZE_MAX);
  // Its later turns (no session key at all) follow the cached prefix.
  for (int t = 2; t <= 8; ++t) {
    ASSERT_EQ(PostJson(port_, "/v1/chat/completions", Conversation(1, t)).status, 200);
    EXPECT_EQ(ServedBy(fakes_, &seen), home) << "turn " << t;
  }
  // The gateway expected most of those prompts cached where it sent them.
  double prompt = Metric("infergrid_routing_prompt_tokens_total{pool=\"main\"}");
  double cached = Metric("infergrid_routing_cached_prompt_tokens_total{pool=\"main\"}");
  EXPECT_GT(cached, 0.8 * prompt * 7 / 8);
  // Unrelated conversations are not all sent to the same place.
  std::set<size_t> others;
  for (int topic = 2; topic < 14; ++topic) {
    ASSERT_EQ(PostJson(port_, "/v1/chat/completions", Conversation(topic, 1)).status, 200);
    others.insert(ServedBy(fakes_, &seen));
  }
  EXPECT_GE(others.size(), 2u);
}

TEST_F(GatewayTest, SessionKeysPinConversationsAndNewSessionsSpread) {
  Start(4);
  std::vector<uint64_t> seen(4, 0);
  // Four agents, each by a different kind of key, and prompts that share nothing.
  std::vector<std::pair<std::map<std::string, std::string>, std::string>> agents = {
      {{{"x-session-id", "agent-a"}}, ""},
      {{}, R"({"prompt_cache_key":"agent-b"})"},
      {{}, R"({"user":"agent-c"})"},
      {{{"x-session-id", "agent-d"}}, R"({"user":"someone-else"})"},
  };
  std::vector<size_t> home(agents.size());
  for (size_t a = 0; a < agents.size(); ++a) {
    ASSERT_EQ(PostJson(port_, "/v1/chat/completions", Conversation(100 + a, 1, agents[a].second),
                       agents[a].first)
                  .status,
              200);
    home[a] = ServedBy(fakes_, &seen);
  }
  // New sessions are placed where the fewest sessions live: one each.
  EXPECT_EQ(std::set<size_t>(home.begin(), home.end()).size(), 4u);
  for (int round = 0; round < 3; ++round) {
    for (size_t a = 0; a < agents.size(); ++a) {
      // A prompt unrelated to the last: only the session key ties it to its home.
      ASSERT_EQ(PostJson(port_, "/v1/chat/completions",
                         Conversation(200 + round * 10 + a, 1, agents[a].second), agents[a].first)
                    .status,
                200);
      EXPECT_EQ(ServedBy(fakes_, &seen), home[a]) << "agent " << a << " round " << round;
    }
  }
}

TEST_F(GatewayTest, QueuedPrefillIsAccountedUntilTheFirstToken) {
  Start(1);
  std::string body = Conversation(1, 1, R"({"stream":true})");
  auto pending = std::async(std::launch::async, [&] {
    return PostJson(port_, "/v1/chat/completions", body, {{"x-fake-delay-ms", "800"}}).status;
  });
  std::string gauge = "infergrid_endpoint_queued_prefill_tokens{pool=\"main\",endpoint=\"" +
                      fakes_[0]->url() + "\"}";
  EXPECT_TRUE(WaitFor([&] { return Metric(gauge) > 500; }));  // the whole prompt: nothing cached
  EXPECT_EQ(pending.get(), 200);
  EXPECT_TRUE(WaitFor([&] { return Metric(gauge) == 0; }));
}

TEST_F(GatewayTest, HardwareCostSendsToTheCheapestThatMeetsTheRequestsObjective) {
  std::vector<std::unique_ptr<FakeVllm>> fakes;
  std::vector<std::string> eps;
  for (double price : {10.0, 2.0}) {  // the same hardware; the second costs a fifth
    fakes.push_back(std::make_unique<FakeVllm>(FakeVllmOptions{}));
    ASSERT_TRUE(fakes.back()->Start().ok());
    eps.push_back("{url: " + fakes.back()->url() +
                  ", hardware: {prefillTokensPerSecond: 1000, decodeTokensPerSecond: 1000, "
                  "pricePerHour: " +
                  std::to_string(price) + "}}");
  }
  Start(0,
        "  schedulingProfiles:\n  - name: cost\n    scorers: [{name: hardware-cost}]\n"
        "    picker: {name: max-score}\n",
        "    schedulingProfile: cost\n", eps);
  for (auto& f : fakes) fakes_.push_back(std::move(f));
  ASSERT_EQ(PostJson(port_, "/v1/chat/completions", kChat).status, 200);
  EXPECT_EQ(fakes_[1]->stats().requests, 1u);  // the cheaper one
  // Queue about 0.6 s of prefill on the cheap one (a 600-token prompt at 1,000 tokens/s).
  auto busy = std::async(std::launch::async, [&] {
    return PostJson(port_, "/v1/chat/completions", Conversation(1, 1, R"({"stream":true})"),
                    {{"x-fake-delay-ms", "1500"}})
        .status;
  });
  ASSERT_TRUE(WaitFor([&] { return fakes_[1]->stats().requests == 2; }));
  // A request that must see its first token within 500 ms goes to the dearer one...
  ASSERT_EQ(PostJson(port_, "/v1/chat/completions", kChat, {{"x-ttft-objective-ms", "500"}}).status,
            200);
  EXPECT_EQ(fakes_[0]->stats().requests, 1u);
  // ...one that can wait still goes to the cheap one.
  ASSERT_EQ(
      PostJson(port_, "/v1/chat/completions", kChat, {{"x-ttft-objective-ms", "60000"}}).status,
      200);
  EXPECT_EQ(fakes_[1]->stats().requests, 3u);
  EXPECT_EQ(busy.get(), 200);
  auto bad = PostJson(port_, "/v1/chat/completions", kChat, {{"x-ttft-objective-ms", "soon"}});
  ExpectOpenAiError(bad, 400, "invalid_header");
  EXPECT_EQ(TotalRequestsAtFakes(), 4u);  // the bad one never left the gateway
}

TEST_F(GatewayTest, RoundRobinProfileAlternates) {
  Start(2, "  schedulingProfiles:\n  - name: rr\n    picker: {name: round-robin}\n",
        "    schedulingProfile: rr\n");
  for (int i = 0; i < 6; ++i) ASSERT_EQ(PostJson(port_, "/v1/chat/completions", kChat).status, 200);
  EXPECT_EQ(fakes_[0]->stats().requests, 3u);
  EXPECT_EQ(fakes_[1]->stats().requests, 3u);
  EXPECT_EQ(Metric("infergrid_routing_decisions_total{pool=\"main\",profile=\"rr\",endpoint=\"" +
                   fakes_[0]->url() + "\"}"),
            3);
}

TEST_F(GatewayTest, ConnectionPoolIsBoundedAndWaitersAreServedInTurn) {
  Start(1,
        "  endpointMetrics:\n    enabled: false\n  health:\n    active:\n      enabled: false\n"
        "  upstream:\n    maxConnectionsPerEndpoint: 1\n",
        "", {}, 1);
  std::vector<std::future<int>> done;
  for (int i = 0; i < 3; ++i) {
    done.push_back(std::async(std::launch::async, [&] {
      return PostJson(port_, "/v1/chat/completions", kChat, {{"x-fake-delay-ms", "200"}}).status;
    }));
  }
  // One connection at a time: the others wait for it (within the connect timeout) rather than
  // opening more.
  for (auto& d : done) EXPECT_EQ(d.get(), 200);
  EXPECT_EQ(fakes_[0]->stats().connections, 1u);
  EXPECT_EQ(fakes_[0]->stats().requests, 3u);
}

TEST_F(GatewayTest, ExhaustedPoolIs503AfterTheConnectTimeout) {
  Start(1,
        "  endpointMetrics:\n    enabled: false\n  upstream:\n    maxConnectionsPerEndpoint: 1\n"
        "  timeouts:\n    connect: 200ms\n",
        "", {}, 1);
  auto slow = std::async(std::launch::async, [&] {
    return PostJson(port_, "/v1/chat/completions", kChat, {{"x-fake-delay-ms", "3000"}}).status;
  });
  ASSERT_TRUE(WaitFor([&] { return fakes_[0]->stats().active == 1; }));
  ExpectOpenAiError(PostJson(port_, "/v1/chat/completions", kChat), 503, "pool_exhausted");
  EXPECT_EQ(slow.get(), 200);
}

TEST_F(GatewayTest, SilenceMidStreamIsAnIdleTimeout) {
  Start(1, "  timeouts:\n    idle: 300ms\n");
  RequestSpec s = Post(
      "/v1/chat/completions",
      R"({"model":"test-model","messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true})");
  s.headers["x-fake-token-delay-ms"] = "2000";
  auto r = testing::Request(port_, s);
  // The first token never came within the idle timeout: nothing was sent, so a clean error.
  ExpectOpenAiError(r, 504, "idle_timeout");
  EXPECT_TRUE(WaitFor([&] { return fakes_[0]->stats().cancelled == 1; }, std::chrono::seconds(5)));
}

TEST_F(GatewayTest, UpstreamConnectionsAreKeptAlive) {
  // Scrapes and health probes use connections of their own.
  Start(1,
        "  endpointMetrics:\n    enabled: false\n  health:\n    active:\n      enabled: false\n");
  for (int i = 0; i < 20; ++i)
    ASSERT_EQ(PostJson(port_, "/v1/chat/completions", kChat).status, 200);
  // Twenty requests over at most one pooled connection per gateway worker.
  EXPECT_LE(fakes_[0]->stats().connections, 2u);
  EXPECT_EQ(fakes_[0]->stats().requests, 20u);
}

TEST_F(GatewayTest, ScrapesVllmGaugesIntoItsOwnMetrics) {
  Start(1, "  endpointMetrics:\n    interval: 50ms\n");
  std::string running = "infergrid_endpoint_num_requests_running{pool=\"main\",endpoint=\"" +
                        fakes_[0]->url() + "\"}";
  std::string hits =
      "infergrid_endpoint_prefix_cache_hits{pool=\"main\",endpoint=\"" + fakes_[0]->url() + "\"}";
  EXPECT_TRUE(WaitFor([&] { return Metric(hits) == 40; }));
  // While a slow request runs, the scraped running gauge sees it.
  auto slow = std::async(std::launch::async, [&] {
    return PostJson(port_, "/v1/chat/completions", kChat, {{"x-fake-delay-ms", "1500"}}).status;
  });
  EXPECT_TRUE(WaitFor([&] { return Metric(running) == 1; }));
  EXPECT_EQ(slow.get(), 200);
  EXPECT_TRUE(WaitFor([&] { return Metric(running) == 0; }));
  EXPECT_GE(Metric("infergrid_endpoint_scrapes_total{endpoint=\"" + fakes_[0]->url() + "\"}"), 2);
}

TEST_F(GatewayTest, ReadyAndHealth) {
  Start(1);
  EXPECT_EQ(Get(port_, "/health").status, 200);
  EXPECT_EQ(Get(port_, "/ready").status, 200);
  auto m = Get(port_, "/metrics");
  EXPECT_EQ(m.status, 200);
  EXPECT_THAT(m.headers.at("content-type"), HasSubstr("text/plain; version=0.0.4"));
}

TEST_F(GatewayTest, MetricsCountRequestsByPoolModelEndpointAndStatus) {
  Start(1);
  ASSERT_EQ(PostJson(port_, "/v1/chat/completions", kChat).status, 200);
  ASSERT_EQ(PostJson(port_, "/v1/chat/completions", kChat).status, 200);
  std::string key = "infergrid_requests_total{pool=\"main\",model=\"test-model\",endpoint=\"" +
                    fakes_[0]->url() + "\",code=\"200\"}";
  EXPECT_TRUE(WaitFor([&] { return Metric(key) == 2; }));
  EXPECT_EQ(
      Metric("infergrid_time_to_first_byte_seconds_count{pool=\"main\",model=\"test-model\"}"), 2);
  EXPECT_EQ(Metric("infergrid_request_duration_seconds_count{pool=\"main\",model=\"test-model\"}"),
            2);
}

TEST_F(GatewayTest, RecordsItsTrafficAsAMooncakeTraceThatThePlannerReplays) {
  std::string path = ::testing::TempDir() + "/recorded_trace.jsonl";
  std::remove(path.c_str());
  Start(1, "  recording:\n    enabled: true\n    path: " + path + "\n    blockSize: 64\n");
  // Two groups of requests, each behind its own long system prompt.
  auto words = [](const std::string& w, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += w + std::to_string(i % 97) + " ";
    return out;
  };
  const std::string sys[2] = {words("alpha", 400), words("beta", 400)};
  uint64_t prompt_total = 0, output_total = 0;
  for (int i = 0; i < 8; ++i) {
    json body = {{"model", "test-model"},
                 {"max_tokens", 3 + i % 2},
                 {"messages",
                  {{{"role", "system"}, {"content", sys[i % 2]}},
                   {{"role", "user"}, {"content", "question " + std::to_string(i)}}}}};
    auto r = PostJson(port_, "/v1/chat/completions", body.dump(),
                      {{"x-session-id", i % 2 ? "agent-b" : "agent-a"}});
    ASSERT_EQ(r.status, 200) << r.body;
    json j = ParseBody(r);
    prompt_total += j["usage"]["prompt_tokens"].get<uint64_t>();
    output_total += j["usage"]["completion_tokens"].get<uint64_t>();
  }
  ASSERT_TRUE(WaitFor([&] { return Metric("infergrid_recorded_requests") == 8; }));
  gw_->Stop();  // flushes

  // The trace as a Mooncake reader sees it: what the server reported, the sessions, and the
  // sharing (each group's requests begin with the same ids; the groups share none).
  auto reader = workload::MooncakeReader::Open(path, 64);
  ASSERT_TRUE(reader.ok());
  std::vector<workload::MooncakeRequest> got;
  while (true) {
    auto n = (*reader)->Next();
    ASSERT_TRUE(n.ok()) << n.status().message();
    if (!n->has_value()) break;
    got.push_back(std::move(**n));
  }
  ASSERT_EQ(got.size(), 8u);
  uint64_t prompts = 0, outputs = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    prompts += got[i].input_length;
    outputs += got[i].output_length;
    EXPECT_EQ(got[i].session_id, i % 2 ? "agent-b" : "agent-a");
    ASSERT_GE(got[i].hash_ids.size(), 5u);
    for (size_t k = 0; k < 5; ++k) EXPECT_EQ(got[i].hash_ids[k], got[i % 2].hash_ids[k]);
  }
  EXPECT_EQ(prompts, prompt_total);
  EXPECT_EQ(outputs, output_total);
  EXPECT_NE(got[0].hash_ids[0], got[1].hash_ids[0]);
  EXPECT_EQ(
      std::string(std::istreambuf_iterator<char>(std::ifstream(path).rdbuf()), {}).find("alpha"),
      std::string::npos);  // never the text

  // The planner replays it: the same requests and tokens, and the sharing shows as its bound.
  plan::TraceReplay t;
  t.path = path;
  t.block_size = 64;
  auto facts = plan::ScanTrace(t);
  ASSERT_TRUE(facts.ok()) << facts.status().message();
  EXPECT_EQ(facts->requests, 8u);
  EXPECT_EQ(facts->prompt_tokens, prompt_total);
  EXPECT_EQ(facts->output_tokens, output_total);
  EXPECT_GT(facts->bound_hit_rate, 0.3);
  auto fleet_spec = plan::ParseFleet(
      "apiVersion: infergrid.dev/v1\nkind: Fleet\nspec:\n  servers:\n"
      "  - {name: s, count: 2, accelerator: h100, model: llama-3.1-8b}\n",
      "f.yaml");
  ASSERT_TRUE(fleet_spec.ok());
  auto fleet = plan::BuildFleet(*fleet_spec);
  ASSERT_TRUE(fleet.ok());
  auto replay = plan::SimulateTrace(*fleet, t, *facts, "infergrid", plan::SimOptions{}, nullptr);
  ASSERT_TRUE(replay.ok()) << replay.status().message();
  EXPECT_EQ(replay->requests, 8u);
  EXPECT_EQ(replay->output_tokens, output_total);
  std::remove(path.c_str());
}

TEST_F(GatewayTest, TheRecordedTraceIsInArrivalOrderWhateverOrderRequestsEnd) {
  std::string path = ::testing::TempDir() + "/recorded_order.jsonl";
  std::remove(path.c_str());
  Start(1, "  recording:\n    enabled: true\n    path: " + path + "\n");
  // The first to arrive is the last to end; one more is refused (unknown model: not recorded).
  std::vector<std::future<int>> done;
  for (int i = 0; i < 4; ++i) {
    std::map<std::string, std::string> h;
    if (i == 0) h["x-fake-delay-ms"] = "400";
    done.push_back(std::async(std::launch::async, [this, h] {
      return PostJson(port_, "/v1/chat/completions", kChat, h).status;
    }));
    if (i == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));  // arrives first
  }
  EXPECT_EQ(PostJson(port_, "/v1/chat/completions",
                     R"({"model":"nope","messages":[{"role":"user","content":"x"}]})")
                .status,
            404);
  for (auto& d : done) EXPECT_EQ(d.get(), 200);
  ASSERT_TRUE(WaitFor([&] { return Metric("infergrid_recorded_requests") == 4; }));
  gw_->Stop();
  auto reader = workload::MooncakeReader::Open(path);
  ASSERT_TRUE(reader.ok());
  double last = -1;
  int n = 0;
  while (true) {
    auto r = (*reader)->Next();
    ASSERT_TRUE(r.ok()) << r.status().message();
    if (!r->has_value()) break;
    EXPECT_GE((*r)->timestamp_ms, last);
    last = (*r)->timestamp_ms;
    ++n;
  }
  EXPECT_EQ(n, 4);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace infergrid::gateway
