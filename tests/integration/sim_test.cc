// The simulator's server over real sockets: one Replica in-process on its own thread.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "engine_model/profiles.h"
#include "http_client.h"
#include "metrics/text_parser.h"
#include "sim/replica.h"
#include "tokenizer/tokenizer.h"

namespace infergrid::sim {
namespace {

using infergrid::testing::Get;
using infergrid::testing::PostJson;
using infergrid::testing::WaitFor;
using nlohmann::json;

class SimTest : public ::testing::Test {
 protected:
  void Start(double time_scale = 1, std::function<void(ReplicaOptions&)> tweak = {}) {
    clock_ = std::make_unique<SimClock>(time_scale);
    ReplicaOptions o;
    o.served_names = {"sim", "sim-alias"};
    o.root = "meta-llama/Llama-3.1-8B-Instruct";
    o.hw.accelerator = engine_model::FindAccelerator("h100");
    o.hw.model = engine_model::FindModel("llama-3.1-8b");
    o.engine.num_blocks = 2000;
    o.engine.max_model_len = 4096;
    o.seed = 7;
    o.prompt_tokens_details = true;
    if (tweak) tweak(o);
    replica_ = std::make_unique<Replica>(*io_, *clock_, o, &zctx_);
    ASSERT_TRUE(replica_->Start().ok());
    port_ = replica_->port();
    thread_ = std::thread([this] {
      auto guard = http::asio::make_work_guard(*io_);
      io_->run();
    });
  }
  void TearDown() override {
    io_->stop();
    if (thread_.joinable()) thread_.join();
    if (replica_) replica_->Shutdown();
    io_.reset();
    replica_.reset();
  }
  double Metric(const std::string& name, const std::string& label = "") {
    auto r = Get(port_, "/metrics");
    double sum = 0;
    auto samples = metrics::ParseText(r.body);
    if (!samples.ok()) return -1;
    for (const auto& s : *samples) {
      if (s.name != name) continue;
      bool match = label.empty();
      for (const auto& [k, v] : s.labels) match |= (k + "=\"" + v + "\"") == label;
      if (match) sum += s.value;
    }
    return sum;
  }
  json Chat(const std::string& content, int max_tokens, json extra = json::object()) {
    json body{{"model", "sim"},
              {"messages", {{{"role", "user"}, {"content", content}}}},
              {"max_tokens", max_tokens}};
    body.update(extra);
    auto r = PostJson(port_, "/v1/chat/completions", body.dump());
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body, nullptr, false);
  }

  zmq::context_t zctx_{1};
  std::unique_ptr<http::asio::io_context> io_ = std::make_unique<http::asio::io_context>(1);
  std::unique_ptr<SimClock> clock_;
  std::unique_ptr<Replica> replica_;
  std::thread thread_;
  uint16_t port_ = 0;
};

TEST_F(SimTest, AnswersLikeVllmAndCountsTokens) {
  Start(10);
  json r = Chat("Hello there", 7);
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["usage"]["completion_tokens"], 7);
  auto tok = PostJson(
      port_, "/tokenize",
      json{{"model", "sim"}, {"messages", {{{"role", "user"}, {"content", "Hello there"}}}}}
          .dump());
  ASSERT_EQ(tok.status, 200);
  EXPECT_EQ(json::parse(tok.body)["count"], r["usage"]["prompt_tokens"]);
  // The same prompt and seed give the same text; the alias serves the same model.
  json again = Chat("Hello there", 7, {{"model", "sim-alias"}});
  EXPECT_EQ(again["choices"][0]["message"]["content"], r["choices"][0]["message"]["content"]);
  EXPECT_EQ(again["model"], "sim-alias");
  EXPECT_TRUE(WaitFor([&] { return Metric("vllm:generation_tokens_total") == 14; }));
  EXPECT_EQ(Metric("vllm:request_success_total", "finished_reason=\"length\""), 2);
  EXPECT_EQ(Metric("vllm:time_to_first_token_seconds_count"), 2);
}

TEST_F(SimTest, RejectsBadInputWithVllmErrors) {
  Start(10);
  auto bad = PostJson(port_, "/v1/completions", "{not json");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(json::parse(bad.body)["error"]["code"], 400);
  auto unknown = PostJson(port_, "/v1/completions", R"({"model":"x","prompt":"hi"})");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(json::parse(unknown.body)["error"]["type"], "NotFoundError");
  auto too_long =
      PostJson(port_, "/v1/completions", json{{"prompt", std::string(20000, 'a') + " b"}}.dump());
  EXPECT_EQ(too_long.status, 200) << "20000 letters are 2501 tokens, under 4096";
  auto over =
      PostJson(port_, "/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 5000}}.dump());
  EXPECT_EQ(over.status, 400);
  EXPECT_NE(over.body.find("is too large: 5000"), std::string::npos) << over.body;
  EXPECT_EQ(json::parse(over.body)["error"]["param"], "max_tokens");
  EXPECT_EQ(Get(port_, "/v1/completions").status, 405);
  EXPECT_EQ(Get(port_, "/nope").status, 404);
  auto detok = PostJson(port_, "/detokenize", R"({"tokens":[1,2]})");
  EXPECT_EQ(detok.status, 501);
  EXPECT_EQ(json::parse(detok.body)["error"]["type"], "NotImplementedError");
  EXPECT_EQ(Get(port_, "/health").status, 200);  // and it is still up
}

TEST_F(SimTest, ASharedPrefixIsServedFromTheCache) {
  Start(10);
  std::string shared(4000, 'x');  // 500 tokens of 8 letters
  json a = Chat(shared + " first", 2);
  json b = Chat(shared + " second", 2);
  EXPECT_EQ(a["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  EXPECT_GE(b["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 496);
  EXPECT_GE(Metric("vllm:prefix_cache_hits_total"), 496);
}

TEST_F(SimTest, TimeScaleRunsTheModelFasterThanTheWallClock) {
  Start(20);
  auto t0 = std::chrono::steady_clock::now();
  Chat("Tell me a long story", 300);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(WaitFor([&] { return Metric("vllm:e2e_request_latency_seconds_count") == 1; }));
  double model = Metric("vllm:e2e_request_latency_seconds_sum");
  // 300 decode steps of 8B on an H100 take about 2.4 model seconds.
  EXPECT_GT(model, 1.5);
  EXPECT_LT(wall, model / 4) << "wall " << wall << " model " << model;
}

TEST_F(SimTest, AClientLeavingMidStreamAbortsItsRequest) {
  Start(1);
  testing::RequestSpec spec;
  spec.method = "POST";
  spec.target = "/v1/completions";
  spec.headers["content-type"] = "application/json";
  spec.body = json{{"prompt", "go"}, {"max_tokens", 3000}, {"stream", true}}.dump();
  int pieces = 0;
  spec.on_piece = [&](const std::string&) { return ++pieces < 5; };
  testing::Request(port_, spec);
  EXPECT_TRUE(WaitFor([&] {
    return Metric("vllm:request_success_total", "finished_reason=\"abort\"") == 1 &&
           Metric("vllm:num_requests_running") == 0;
  }));
}

TEST_F(SimTest, FaultsErrorsDrainAndCrash) {
  Start(10);
  auto set = [&](json f) { return PostJson(port_, "/admin/faults", f.dump()); };
  EXPECT_EQ(set({{"bogus", 1}}).status, 400);
  ASSERT_EQ(set({{"error_rate", 1.0}}).status, 200);
  auto err = PostJson(port_, "/v1/completions", R"({"prompt":"hi","max_tokens":1})");
  EXPECT_EQ(err.status, 500);
  EXPECT_EQ(json::parse(err.body)["error"]["type"], "InternalServerError");
  ASSERT_EQ(set({{"error_rate", 0.0}, {"added_latency_ms", 300}}).status, 200);
  Chat("slow", 1);
  EXPECT_GE(Metric("vllm:time_to_first_token_seconds_sum"), 0.3);

  // Drain: a request in flight finishes; new ones and /health get 503.
  ASSERT_EQ(set({{"added_latency_ms", 0}}).status, 200);
  std::thread inflight([&] { Chat("long one", 2000); });
  ASSERT_TRUE(WaitFor([&] { return Metric("vllm:num_requests_running") == 1; }));
  ASSERT_EQ(PostJson(port_, "/admin/drain", "").status, 200);
  EXPECT_EQ(PostJson(port_, "/v1/completions", R"({"prompt":"hi"})").status, 503);
  EXPECT_EQ(Get(port_, "/health").status, 503);
  inflight.join();  // Chat asserts it got its 200

  // Crash after the next request: it is cut off, and then nothing listens.
  ASSERT_EQ(set({{"draining", false}, {"crash_after", 0}}).status, 200);
  auto cut = PostJson(port_, "/v1/completions", R"({"prompt":"hi"})");
  EXPECT_EQ(cut.status, 0);
  EXPECT_TRUE(WaitFor([&] { return Get(port_, "/health").status == 0; }));
}

TEST_F(SimTest, StallsDelayEngineSteps) {
  Start(10, [](ReplicaOptions& o) {
    o.faults.stall_rate = 1.0;
    o.faults.stall_s = 0.5;  // every step starts half a model second late
  });
  Chat("stalled", 2);
  ASSERT_TRUE(WaitFor([&] { return Metric("vllm:e2e_request_latency_seconds_count") == 1; }));
  EXPECT_GE(Metric("vllm:time_to_first_token_seconds_sum"), 0.5);
  EXPECT_GE(Metric("vllm:e2e_request_latency_seconds_sum"), 1.0);  // two stalled steps
}

TEST_F(SimTest, AnOutputLengthDistributionEndsRepliesEarlyWithStop) {
  Start(10, [](ReplicaOptions& o) { o.output_length = *OutputLength::Parse("uniform:3:6"); });
  for (int i = 0; i < 6; ++i) {
    json r = Chat("question " + std::to_string(i), 100);
    int n = r["usage"]["completion_tokens"];
    EXPECT_GE(n, 3);
    EXPECT_LE(n, 6);
    EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  }
  json capped = Chat("question 0", 2);  // max_tokens below the drawn length wins
  EXPECT_EQ(capped["usage"]["completion_tokens"], 2);
  EXPECT_EQ(capped["choices"][0]["finish_reason"], "length");
  EXPECT_FALSE(OutputLength::Parse("uniform:9:3").ok());
  EXPECT_FALSE(OutputLength::Parse("zipf:1").ok());
}

TEST_F(SimTest, SlowStartIsNotReadyUntilItsTimePasses) {
  Start(10, [](ReplicaOptions& o) { o.faults.slow_start_s = 3; });  // 0.3 s of wall time
  EXPECT_EQ(Get(port_, "/health").status, 503);
  EXPECT_TRUE(WaitFor([&] { return Get(port_, "/health").status == 200; }));
}

TEST_F(SimTest, PublishesKvEventsAsVllmDoes) {
  Start(10, [&](ReplicaOptions& o) {
    o.kv_events_endpoint = "tcp://127.0.0.1:*";  // any free port
    o.kv_events_topic = "kv";
  });
  std::string ep = replica_->kv_events_endpoint();
  ASSERT_NE(ep.find("tcp://127.0.0.1:"), std::string::npos) << ep;
  zmq::socket_t sub(zctx_, zmq::socket_type::sub);
  sub.set(zmq::sockopt::subscribe, "kv");
  sub.set(zmq::sockopt::rcvtimeo, 200);
  sub.connect(ep);
  std::string prompt =
      "The quick brown fox jumps over the lazy dog again and again and again "
      "until the story runs out of words to say.";
  auto ids = tokenizer::Tokenize(prompt, true);
  ASSERT_GE(ids.size(), 17u);
  // PUB drops messages until the subscription arrives: send until an event comes back.
  std::vector<zmq::message_t> frames;
  ASSERT_TRUE(WaitFor([&] {
    PostJson(port_, "/v1/completions", json{{"prompt", prompt}, {"max_tokens", 1}}.dump());
    frames.clear();
    return zmq::recv_multipart(sub, std::back_inserter(frames)).has_value();
  }));
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].to_string(), "kv");
  ASSERT_EQ(frames[1].size(), 8u);
  json batch = json::from_msgpack(frames[2].to_string_view());
  ASSERT_TRUE(batch.is_array());
  ASSERT_EQ(batch.size(), 3u);
  EXPECT_TRUE(batch[0].is_number_float());
  const json& ev = batch[1][0];
  EXPECT_EQ(ev[0], "BlockStored");
  auto hashes = engine_model::HashBlocks(ids, 16);
  ASSERT_EQ(ev[1].size(), hashes.size());
  for (size_t i = 0; i < hashes.size(); ++i) EXPECT_EQ(ev[1][i].get<uint64_t>(), hashes[i]);
  EXPECT_TRUE(ev[2].is_null());  // the first block has no parent
  EXPECT_EQ(ev[3].size(), hashes.size() * 16);
  EXPECT_EQ(ev[4], 16);
  EXPECT_EQ(ev[6], "GPU");

  // Resetting the prefix cache (when idle) publishes AllBlocksCleared.
  ASSERT_TRUE(WaitFor([&] { return PostJson(port_, "/reset_prefix_cache", "").status == 200; }));
  bool cleared = false;
  ASSERT_TRUE(WaitFor([&] {
    frames.clear();
    if (!zmq::recv_multipart(sub, std::back_inserter(frames))) return false;
    json b = json::from_msgpack(frames[2].to_string_view());
    for (const auto& e : b[1]) cleared |= e[0] == "AllBlocksCleared";
    return cleared;
  }));
}

}  // namespace
}  // namespace infergrid::sim
