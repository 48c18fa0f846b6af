#include "fake_vllm.h"

#include <sys/socket.h>

#include <nlohmann/json.hpp>

namespace infergrid::testing {

using namespace infergrid::http;
using nlohmann::json;

FakeVllm::FakeVllm(FakeVllmOptions options) : options_(std::move(options)) {}

FakeVllm::~FakeVllm() { Stop(); }

Status FakeVllm::Start() {
  ServerOptions so;
  so.idle_timeout = std::chrono::seconds(120);
  server_ = std::make_unique<Server>(std::vector<asio::io_context*>{io_.get()}, so,
                                     [this](Exchange& ex) { return Handle(ex); });
  IG_RETURN_IF_ERROR(server_->Listen(options_.host, options_.port));
  port_ = server_->port();
  thread_ = std::thread([this] {
    auto guard = asio::make_work_guard(*io_);
    io_->run();
  });
  return Status::Ok();
}

void FakeVllm::Stop() {
  if (!io_) return;
  io_->stop();
  if (thread_.joinable()) thread_.join();
  // Acceptors first, then the io_context (destroying suspended handlers, which may still
  // touch active_).
  connections_at_stop_ = server_ ? server_->accepted_connections() : 0;
  if (server_) server_->Shutdown();
  io_.reset();
  server_.reset();
}

FakeVllmStats FakeVllm::stats() const {
  std::lock_guard lock(mu_);
  FakeVllmStats s = stats_;
  s.active = active_.load();
  s.connections = server_ ? server_->accepted_connections() : connections_at_stop_;
  return s;
}

namespace {

bool PeerClosed(tcp::socket& s) {
  char b;
  ssize_t n = ::recv(s.native_handle(), &b, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

// Sleeps `ms`, returning false early if the peer closes the connection.
awaitable<bool> SleepWatching(tcp::socket& s, int ms) {
  asio::steady_timer t(s.get_executor());
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < until) {
    if (PeerClosed(s)) co_return false;
    t.expires_after(std::chrono::milliseconds(std::min(5, ms)));
    error_code ec;
    co_await t.async_wait(with_ec(ec));
  }
  co_return !PeerClosed(s);
}

awaitable<void> Respond(Exchange& ex, int status, std::string body,
                        std::string type = "application/json") {
  StringResponse res{static_cast<bhttp::status>(status), 11};
  res.set(bhttp::field::content_type, type);
  res.body() = std::move(body);
  co_await ex.Respond(std::move(res));
}

awaitable<bool> SendEvent(Exchange& ex, const std::string& data) {
  std::string ev = "data: " + data + "\n\n";
  error_code wec;
  co_await asio::async_write(ex.stream(), bhttp::make_chunk(asio::buffer(ev)), with_ec(wec));
  co_return !wec;
}

int HeaderInt(const StringRequest& r, const char* name, int fallback) {
  auto v = r[name];
  if (v.empty()) return fallback;
  return std::atoi(std::string(v).c_str());
}

std::string VllmError(const std::string& message, const std::string& type, int code) {
  return json{{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", code}}}}
      .dump();
}

}  // namespace

awaitable<void> FakeVllm::Handle(Exchange& ex) {
  auto& req = ex.request();
  std::string_view target = req.target();
  if (hang_.load()) {
    // Never answers while hung (until the client leaves or the server stops).
    asio::steady_timer t(ex.stream().get_executor());
    while (hang_.load()) {
      t.expires_after(std::chrono::milliseconds(20));
      error_code ec;
      co_await t.async_wait(with_ec(ec));
      if (ec) co_return;
    }
  }
  if (int st = completion_status_.load();
      st != 0 && (target == "/v1/chat/completions" || target == "/v1/completions")) {
    {
      std::lock_guard lock(mu_);
      ++stats_.requests;
    }
    co_await Respond(ex, st, R"({"error":{"message":"injected","type":"server_error"}})");
    co_return;
  }
  if (target == "/health") {
    co_await Respond(ex, 200, "");
  } else if (target == "/v1/models") {
    std::string body =
        json{{"object", "list"},
             {"data", {{{"id", options_.model}, {"object", "model"}, {"owned_by", "vllm"}}}}}
            .dump();
    co_await Respond(ex, 200, std::move(body));
  } else if (target == "/metrics") {
    int64_t active = active_.load();
    std::string m;
    m += "# HELP vllm:num_requests_running Number of requests in model execution batches.\n";
    m += "# TYPE vllm:num_requests_running gauge\n";
    m += "vllm:num_requests_running{engine=\"0\",model_name=\"" + options_.model + "\"} " +
         std::to_string(active) + "\n";
    m += "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n";
    m += "# TYPE vllm:num_requests_waiting gauge\n";
    m += "vllm:num_requests_waiting{engine=\"0\",model_name=\"" + options_.model + "\"} 0\n";
    m += "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n";
    m += "# TYPE vllm:kv_cache_usage_perc gauge\n";
    m += "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"" + options_.model + "\"} " +
         std::to_string(std::min(1.0, active / 64.0)) + "\n";
    m += "# TYPE vllm:prefix_cache_queries counter\n";
    m +=
        "vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"" + options_.model + "\"} 100\n";
    m += "# TYPE vllm:prefix_cache_hits counter\n";
    m += "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"" + options_.model + "\"} 40\n";
    if (options_.num_gpu_blocks > 0) {
      m += "# TYPE vllm:cache_config_info gauge\n";
      m += "vllm:cache_config_info{block_size=\"16\",cache_dtype=\"auto\",engine=\"0\","
           "num_gpu_blocks=\"" +
           std::to_string(options_.num_gpu_blocks) + "\"} 1\n";
    }
    co_await Respond(ex, 200, m, "text/plain; version=0.0.4");
  } else if (target == "/fake/stats") {
    auto s = stats();
    std::string body = json{
        {"requests", s.requests},
        {"cancelled", s.cancelled},
        {"completed", s.completed},
        {"active", s.active},
        {"last_body",
         s.last_body}}.dump();
    co_await Respond(ex, 200, std::move(body));
  } else if (target == "/v1/chat/completions" || target == "/v1/completions") {
    co_await Complete(ex, target == "/v1/chat/completions");
  } else {
    co_await Respond(ex, 404, VllmError("Not Found", "NotFoundError", 404));
  }
}

awaitable<void> FakeVllm::Complete(Exchange& ex, bool chat) {
  auto& req = ex.request();
  {
    std::lock_guard lock(mu_);
    stats_.requests++;
    stats_.last_body = req.body();
    stats_.last_session_header = std::string(req["x-session-id"]);
    stats_.last_expect = std::string(req[bhttp::field::expect]);
  }
  active_.fetch_add(1);
  struct Active {
    std::atomic<int64_t>& a;
    ~Active() { a.fetch_sub(1); }
  } active_guard{active_};
  auto cancelled = [&] {
    std::lock_guard lock(mu_);
    stats_.cancelled++;
  };

  json body = json::parse(req.body(), nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    StringResponse res{bhttp::status::bad_request, 11};
    res.set(bhttp::field::content_type, "application/json");
    res.body() = VllmError("invalid JSON", "BadRequestError", 400);
    co_await ex.Respond(std::move(res));
    co_return;
  }
  std::string model = body.value("model", "");
  bool served = model == options_.model;
  for (const auto& a : options_.aliases) served = served || model == a;
  if (!served) {
    StringResponse res{bhttp::status::not_found, 11};
    res.set(bhttp::field::content_type, "application/json");
    res.body() = VllmError("The model `" + model + "` does not exist.", "NotFoundError", 404);
    co_await ex.Respond(std::move(res));
    co_return;
  }
  int max_tokens = options_.default_max_tokens;
  for (const char* k : {"max_tokens", "max_completion_tokens"}) {
    if (body.contains(k) && body[k].is_number_integer()) max_tokens = body[k].get<int>();
  }
  bool stream = body.value("stream", false);
  bool include_usage = body.contains("stream_options") && body["stream_options"].is_object() &&
                       body["stream_options"].value("include_usage", false);
  size_t prompt_chars = chat && body.contains("messages")
                            ? body["messages"].dump().size()
                            : body.value("prompt", json("")).dump().size();
  int prompt_tokens = static_cast<int>(prompt_chars / 4) + 1;
  tcp::socket& sock = ex.stream().socket();

  if (!req["x-fake-hang"].empty()) {
    while (co_await SleepWatching(sock, 50)) {
    }
    cancelled();
    ex.close();
    co_return;
  }
  if (int d = HeaderInt(req, "x-fake-delay-ms", 0); d > 0) {
    if (!co_await SleepWatching(sock, d)) {
      cancelled();
      ex.close();
      co_return;
    }
  }
  int token_delay = HeaderInt(req, "x-fake-token-delay-ms", options_.token_delay_ms);
  int reset_after = HeaderInt(req, "x-fake-reset-after", -1);
  std::string id = (chat ? "chatcmpl-" : "cmpl-") + std::to_string(stats().requests);
  const char* object = chat ? "chat.completion" : "text_completion";
  json usage = {{"prompt_tokens", prompt_tokens},
                {"completion_tokens", max_tokens},
                {"total_tokens", prompt_tokens + max_tokens}};

  if (!stream) {
    if (token_delay > 0 && !co_await SleepWatching(sock, token_delay * max_tokens)) {
      cancelled();
      ex.close();
      co_return;
    }
    std::string text;
    for (int i = 0; i < max_tokens; ++i) text += "tok ";
    json choice = chat ? json{{"index", 0},
                              {"message", {{"role", "assistant"}, {"content", text}}},
                              {"finish_reason", "length"}}
                       : json{{"index", 0}, {"text", text}, {"finish_reason", "length"}};
    json res_body = {{"id", id},
                     {"object", object},
                     {"created", 1700000000},
                     {"model", model},
                     {"choices", json::array({choice})},
                     {"usage", usage}};
    error_code ec;
    if (!req["x-fake-close-delimited"].empty()) {
      // An HTTP/1.0-style body: no length, no chunking, ended by closing the connection.
      std::string raw =
          "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n" +
          res_body.dump();
      co_await asio::async_write(sock, asio::buffer(raw), with_ec(ec));
      sock.shutdown(tcp::socket::shutdown_send, ec);
      ex.close();
    } else {
      StringResponse res{bhttp::status::ok, 11};
      res.set(bhttp::field::content_type, "application/json");
      res.body() = res_body.dump();
      ec = co_await ex.Respond(std::move(res));
    }
    std::lock_guard lock(mu_);
    if (ec) {
      stats_.cancelled++;
    } else {
      stats_.completed++;
    }
    co_return;
  }

  bhttp::response<bhttp::empty_body> head{bhttp::status::ok, 11};
  head.set(bhttp::field::content_type, "text/event-stream");
  head.chunked(true);
  head.keep_alive(ex.keep_alive());
  bhttp::response_serializer<bhttp::empty_body> sr{head};
  error_code ec;
  co_await bhttp::async_write_header(ex.stream(), sr, with_ec(ec));
  if (ec) {
    cancelled();
    co_return;
  }
  const char* chunk_object = chat ? "chat.completion.chunk" : "text_completion";
  for (int i = 0; i < max_tokens; ++i) {
    if (i == reset_after) {
      // An abrupt reset (RST), as a crashing server would leave it.
      sock.set_option(asio::socket_base::linger(true, 0), ec);
      sock.close(ec);
      cancelled();
      co_return;
    }
    if (token_delay > 0 && !co_await SleepWatching(sock, token_delay)) {
      cancelled();
      ex.close();
      co_return;
    }
    json delta =
        chat ? json{{"index", 0},
                    {"delta", i == 0 ? json{{"role", "assistant"}, {"content", "tok "}}
                                     : json{{"content", "tok "}}},
                    {"finish_reason", i + 1 == max_tokens ? json("length") : json(nullptr)}}
             : json{{"index", 0},
                    {"text", "tok "},
                    {"finish_reason", i + 1 == max_tokens ? json("length") : json(nullptr)}};
    json chunk = {{"id", id},
                  {"object", chunk_object},
                  {"created", 1700000000},
                  {"model", model},
                  {"choices", json::array({delta})}};
    if (!co_await SendEvent(ex, chunk.dump())) {
      cancelled();
      ex.close();
      co_return;
    }
  }
  if (include_usage) {
    json chunk = {{"id", id},       {"object", chunk_object},   {"created", 1700000000},
                  {"model", model}, {"choices", json::array()}, {"usage", usage}};
    if (!co_await SendEvent(ex, chunk.dump())) {
      cancelled();
      co_return;
    }
  }
  if (!co_await SendEvent(ex, "[DONE]")) {
    cancelled();
    co_return;
  }
  co_await asio::async_write(ex.stream(), bhttp::make_chunk_last(), with_ec(ec));
  std::lock_guard lock(mu_);
  stats_.completed++;
}

}  // namespace infergrid::testing
