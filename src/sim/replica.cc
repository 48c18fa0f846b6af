#include "sim/replica.h"

#include <fmt/format.h>
#include <sys/socket.h>

#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "common/hash.h"
#include "common/log.h"
#include "common/strings.h"
#include "tokenizer/tokenizer.h"

namespace infergrid::sim {

using namespace infergrid::http;
using engine_model::FinishReason;
using nlohmann::json;

namespace {

// splitmix64: a step of the golden-ratio sequence, then the finalizer.
uint64_t Mix(uint64_t x) { return Mix64(x + 0x9e3779b97f4a7c15ull); }

const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                          0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                          20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kItlBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                         0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
const std::vector<double> kLatencyBuckets = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                             5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                             60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
const std::vector<double> kIterationBuckets = {1,   8,    16,   32,   64,   128,  256,
                                               512, 1024, 2048, 4096, 8192, 16384};
const std::vector<double> kLagBuckets = {0.0001, 0.0005, 0.001, 0.002, 0.005,
                                         0.01,   0.02,   0.05,  0.1,   0.5};

bool PeerClosed(tcp::socket& s) {
  char b;
  ssize_t n = ::recv(s.native_handle(), &b, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

void Reset(tcp::socket& s) {
  error_code ec;
  s.set_option(asio::socket_base::linger(true, 0), ec);
  s.close(ec);
}

awaitable<void> RespondJson(Exchange& ex, int status, std::string body) {
  StringResponse res{static_cast<bhttp::status>(status), 11};
  res.set(bhttp::field::content_type, "application/json");
  res.body() = std::move(body);
  co_await ex.Respond(std::move(res));
}

awaitable<void> RespondError(Exchange& ex, const ApiError& e) {
  co_await RespondJson(ex, e.status, e.Json());
}

int64_t WallSeconds() { return static_cast<int64_t>(std::time(nullptr)); }

}  // namespace

Result<OutputLength> OutputLength::Parse(const std::string& s) {
  OutputLength o;
  auto parts = Split(s, ':');
  auto num = [](std::string_view sv, double* out) {
    std::string v(sv);
    char* end = nullptr;
    *out = std::strtod(v.c_str(), &end);
    return !v.empty() && end && *end == '\0';
  };
  if (s.empty() || s == "none") return o;
  if (parts.size() == 1 && num(parts[0], &o.a) && o.a >= 1) {
    o.kind = Kind::kFixed;
  } else if (parts.size() == 3 && parts[0] == "uniform" && num(parts[1], &o.a) &&
             num(parts[2], &o.b) && o.a >= 1 && o.b >= o.a) {
    o.kind = Kind::kUniform;
  } else if (parts.size() == 3 && parts[0] == "normal" && num(parts[1], &o.a) &&
             num(parts[2], &o.b) && o.a >= 1 && o.b >= 0) {
    o.kind = Kind::kNormal;
  } else {
    return Status::Error(
        "--output-len: expected none, N, uniform:MIN:MAX or normal:MEAN:STD, got '" + s + "'");
  }
  return o;
}

uint32_t OutputLength::Draw(std::mt19937_64& rng) const {
  // Transforms written out (not std:: distributions) so the draws are the same everywhere.
  auto unit = [&rng] { return (rng() >> 11) * 0x1.0p-53; };
  double v = 256;
  switch (kind) {
    case Kind::kNone:
      break;
    case Kind::kFixed:
      v = a;
      break;
    case Kind::kUniform:
      v = a + std::floor(unit() * (b - a + 1));
      break;
    case Kind::kNormal: {
      double u1 = std::max(unit(), 1e-12), u2 = unit();
      v = a + b * std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
      break;
    }
  }
  return static_cast<uint32_t>(std::clamp(std::round(v), 1.0, 1e9));
}

// A request between the HTTP handler (which owns it, on its coroutine frame) and the engine.
struct Replica::Pending {
  explicit Pending(asio::io_context& io) : wake(io) {}
  uint64_t engine_id = 0;
  bool stream = false;
  bool include_usage = false;
  ResponseShape shape;
  std::vector<uint16_t> words;
  std::string out;   // stream bytes not yet written
  std::string text;  // the whole output (non-streaming)
  Usage usage;
  const char* finish = nullptr;
  bool done = false;
  bool crashed = false;
  double received = 0, last_token = 0, engine_ttft = 0;
  asio::steady_timer wake;  // cancelled to wake the handler
};

// Unregisters and aborts a pending request however its handler ends.
struct Replica::Registration {
  Replica& r;
  Pending& p;
  ~Registration() {
    if (p.engine_id == 0) return;
    r.pending_.erase(p.engine_id);
    if (!p.done) {
      r.engine_.Abort(p.engine_id);
      r.aborted_->Inc();
    }
  }
};

Replica::Replica(asio::io_context& io, const SimClock& clock, ReplicaOptions options,
                 void* zmq_context)
    : io_(io),
      clock_(clock),
      options_(std::move(options)),
      zmq_context_(zmq_context),
      engine_(options_.engine, options_.hw),
      parse_context_{options_.served_names, options_.engine.max_model_len},
      fault_rng_(Mix(options_.seed ^ (0xfa17ull + options_.index))) {
  const std::string model = options_.served_names.front();
  const metrics::LabelValues labels = {model, "0"};
  std::vector<std::string> names = {"model_name", "engine"};
  auto counter = [&](const char* name, const char* help) {
    return metrics_.AddCounter(name, help, names)->With(labels);
  };
  auto hist = [&](const char* name, const char* help, const std::vector<double>& b) {
    return metrics_.AddHistogram(name, help, names, b)->With(labels);
  };
  auto gauge = [&](const char* name, const char* help, std::function<double()> f) {
    metrics_.AddGaugeCallback(name, help, names, [labels, f] {
      return std::vector<metrics::GaugeSample>{{labels, f()}};
    });
  };
  gauge("vllm:num_requests_running", "Number of requests in model execution batches.",
        [this] { return static_cast<double>(engine_.num_running()); });
  gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
        [this] { return static_cast<double>(engine_.num_waiting()); });
  gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.",
        [this] { return engine_.kv_usage(); });
  const auto& c = options_.engine;
  metrics_.AddGaugeCallback(
      "vllm:cache_config_info", "Information of the LLMEngine CacheConfig",
      {"block_size", "cache_dtype", "enable_prefix_caching", "gpu_memory_utilization",
       "num_gpu_blocks", "engine"},
      [c, this] {
        return std::vector<metrics::GaugeSample>{
            {{std::to_string(c.block_size), options_.hw.kv_bytes == 1 ? "fp8" : "auto",
              c.enable_prefix_caching ? "True" : "False",
              fmt::format("{}", options_.hw.gpu_memory_utilization), std::to_string(c.num_blocks),
              "0"},
             1.0}};
      });
  prefix_queries_ = counter("vllm:prefix_cache_queries_total",
                            "Prefix cache queries, in terms of number of queried tokens.");
  prefix_hits_ = counter("vllm:prefix_cache_hits_total",
                         "Prefix cache hits, in terms of number of cached tokens.");
  preemptions_ =
      counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.");
  prompt_tokens_ = counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.");
  generation_tokens_ =
      counter("vllm:generation_tokens_total", "Number of generation tokens processed.");
  auto* success =
      metrics_.AddCounter("vllm:request_success_total", "Count of successfully processed requests.",
                          {"model_name", "engine", "finished_reason"});
  success_[0] = success->With({model, "0", "stop"});
  success_[1] = success->With({model, "0", "length"});
  aborted_ = success->With({model, "0", "abort"});
  ttft_ = hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
               kTtftBuckets);
  itl_ = hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
              kItlBuckets);
  e2e_ = hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
              kLatencyBuckets);
  queue_ = hist("vllm:request_queue_time_seconds",
                "Histogram of time spent in WAITING phase for request.", kLatencyBuckets);
  iteration_tokens_ = hist("vllm:iteration_tokens_total",
                           "Histogram of number of tokens per engine_step.", kIterationBuckets);
  lag_ = hist("infergrid_sim_step_lag_seconds",
              "How late, in wall seconds, engine steps completed against the model's schedule.",
              kLagBuckets);
  behind_ = counter("infergrid_sim_steps_behind_total",
                    "Steps whose tokens went out more than 5 ms (wall) after the model's "
                    "schedule.");
}

Replica::~Replica() = default;

Status Replica::Start() {
  if (options_.kv_events_endpoint) {
    auto p = KvEventPublisher::Create(*static_cast<zmq::context_t*>(zmq_context_),
                                      *options_.kv_events_endpoint, options_.kv_events_topic,
                                      options_.engine.block_size, options_.kv_events_format);
    if (!p.ok()) return p.status();
    kv_ = std::move(p).value();
  }
  ServerOptions so;
  so.idle_timeout = std::chrono::seconds(300);
  so.write_timeout = std::chrono::seconds(600);
  so.error_body = [](int status, const std::string& message, const std::string&) {
    return ApiError{status, "Bad Request", message, std::nullopt}.Json();
  };
  server_ = std::make_unique<Server>(std::vector<asio::io_context*>{&io_}, so,
                                     [this](Exchange& ex) { return Handle(ex); });
  IG_RETURN_IF_ERROR(server_->Listen(options_.host, options_.port));
  port_ = server_->port();
  step_timer_ = std::make_unique<asio::steady_timer>(io_);
  started_at_ = clock_.Now();
  started_wall_ = WallSeconds();
  return Status::Ok();
}

void Replica::Shutdown() {
  step_timer_.reset();
  if (server_) server_->Shutdown();
}

bool Replica::Ready() const {
  return !crashed_ && clock_.Now() - started_at_ >= options_.faults.slow_start_s;
}

awaitable<void> Replica::Handle(Exchange& ex) {
  if (crashed_) {
    Reset(ex.stream().socket());
    co_return;
  }
  auto& req = ex.request();
  std::string_view target = req.target();
  const bool post = req.method() == bhttp::verb::post;
  auto q = target.find('?');
  std::string_view path = q == std::string_view::npos ? target : target.substr(0, q);

  if (path.starts_with("/admin/")) {
    co_await Admin(ex);
    co_return;
  }
  if (path == "/metrics") {
    StringResponse res{bhttp::status::ok, 11};
    res.set(bhttp::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
    res.body() = metrics_.Render();
    co_await ex.Respond(std::move(res));
    co_return;
  }
  if (!Ready() || (options_.faults.draining && path != "/v1/models")) {
    const char* why = !Ready() ? "the server is starting" : "the server is draining";
    ApiError err1{503, "ServiceUnavailableError", why, std::nullopt};
    co_await RespondError(ex, err1);
    co_return;
  }
  const ParseContext& ctx = parse_context_;
  if (path == "/health" || path == "/ping") {
    co_await RespondJson(ex, 200, "");
  } else if (path == "/version") {
    co_await RespondJson(ex, 200, R"({"version":"infergrid-sim"})");
  } else if (path == "/v1/models") {
    co_await RespondJson(ex, 200,
                         ModelList(options_.served_names, options_.root,
                                   options_.engine.max_model_len, started_wall_));
  } else if (path == "/tokenize" && post) {
    auto r = Tokenize(req.body(), ctx);
    if (auto* e = std::get_if<ApiError>(&r)) {
      co_await RespondError(ex, *e);
    } else {
      co_await RespondJson(ex, 200, std::get<std::string>(r));
    }
  } else if (path == "/reset_prefix_cache" && post) {
    if (engine_.ResetPrefixCache()) {
      if (kv_) kv_->Publish(engine_.TakeKvEvents(), std::time(nullptr));
      co_await RespondJson(ex, 200, "");
    } else {
      ApiError err2{409, "ConflictError", "requests are running; try again when idle", {}};
      co_await RespondError(ex, err2);
    }
  } else if (path == "/detokenize") {
    ApiError err{501, "NotImplementedError",
                 "the simulator's token ids are hashes of text pieces and cannot be detokenized",
                 std::nullopt};
    co_await RespondError(ex, err);
  } else if (path == "/v1/chat/completions" && post) {
    co_await Complete(ex, Endpoint::kChat);
  } else if (path == "/v1/completions" && post) {
    co_await Complete(ex, Endpoint::kCompletion);
  } else if (path == "/v1/chat/completions" || path == "/v1/completions" || path == "/tokenize") {
    ApiError err3{405, "Method Not Allowed", "Method Not Allowed", {}};
    co_await RespondError(ex, err3);
  } else {
    ApiError err4{404, "Not Found", "Not Found", {}};
    co_await RespondError(ex, err4);
  }
}

awaitable<void> Replica::Admin(Exchange& ex) {
  auto& req = ex.request();
  std::string_view path = req.target();
  Faults& f = options_.faults;
  if (path == "/admin/faults" && req.method() == bhttp::verb::post) {
    json body = json::parse(req.body(), nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
      ApiError err5{400, "BadRequestError", "expected a JSON object", {}};
      co_await RespondError(ex, err5);
      co_return;
    }
    for (auto& [k, v] : body.items()) {
      bool ok = v.is_number() || (k == "draining" && v.is_boolean());
      if (ok && k == "error_rate")
        f.error_rate = v.get<double>();
      else if (ok && k == "added_latency_ms")
        f.added_latency_s = v.get<double>() / 1000;
      else if (ok && k == "stall_rate")
        f.stall_rate = v.get<double>();
      else if (ok && k == "stall_ms")
        f.stall_s = v.get<double>() / 1000;
      else if (ok && k == "crash_after")
        f.crash_after = accepted_ + v.get<int64_t>();
      else if (ok && k == "draining")
        f.draining = v.get<bool>();
      else {
        ApiError err6{400, "BadRequestError",
                      fmt::format("unknown or mistyped fault '{}' (expected error_rate, "
                                  "added_latency_ms, stall_rate, stall_ms, crash_after, "
                                  "draining)",
                                  k),
                      k};
        co_await RespondError(ex, err6);
        co_return;
      }
    }
  } else if (path == "/admin/drain" && req.method() == bhttp::verb::post) {
    f.draining = true;
  } else if (path == "/admin/crash" && req.method() == bhttp::verb::post) {
    Crash();
    Reset(ex.stream().socket());
    co_return;
  } else if (path != "/admin/faults") {
    ApiError err7{404, "Not Found", "Not Found", {}};
    co_await RespondError(ex, err7);
    co_return;
  }
  json state{{"error_rate", f.error_rate},
             {"added_latency_ms", f.added_latency_s * 1000},
             {"stall_rate", f.stall_rate},
             {"stall_ms", f.stall_s * 1000},
             {"crash_after", f.crash_after < 0 ? json(nullptr) : json(f.crash_after - accepted_)},
             {"draining", f.draining},
             {"in_flight", pending_.size()}};
  co_await RespondJson(ex, 200, state.dump());
}

awaitable<void> Replica::Complete(Exchange& ex, Endpoint endpoint) {
  const double received = clock_.Now();
  auto parsed = ParseCompletion(endpoint, ex.request().body(), parse_context_);
  if (auto* e = std::get_if<ApiError>(&parsed)) {
    co_await RespondError(ex, *e);
    co_return;
  }
  SimRequest& r = std::get<SimRequest>(parsed);
  Faults& f = options_.faults;
  ++accepted_;
  if (f.crash_after >= 0 && accepted_ > f.crash_after) {
    Crash();
    Reset(ex.stream().socket());
    co_return;
  }
  if (f.error_rate > 0 && (fault_rng_() >> 11) * 0x1.0p-53 < f.error_rate) {
    ApiError err8{500, "InternalServerError", "Internal server error (injected fault)", {}};
    co_await RespondError(ex, err8);
    co_return;
  }

  // The output: its length, and its words from the seed and the prompt (same prompt, same
  // reply, as a real model at temperature 0 would).
  uint64_t h = Mix(options_.seed ^ (r.seed ? Mix(*r.seed) : 0));
  for (uint32_t t : r.prompt) h = Mix(h ^ t);
  std::mt19937_64 rng(h);
  const uint32_t room = options_.engine.max_model_len - static_cast<uint32_t>(r.prompt.size());
  uint32_t natural = options_.output_length.Draw(rng);
  uint32_t limit = r.max_tokens.value_or(room);
  uint32_t n = std::min(natural, limit);
  if (options_.output_length.kind == OutputLength::Kind::kNone && r.max_tokens) n = limit;
  Pending p(io_);
  p.received = received;
  p.stream = r.stream;
  p.include_usage = r.include_usage;
  p.words.resize(n);
  engine_model::RequestSpec spec;
  spec.prompt = std::move(r.prompt);
  spec.output.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    p.words[i] = static_cast<uint16_t>(rng() % tokenizer::kOutputWords);
    spec.output[i] = tokenizer::PieceId(tokenizer::OutputWord(p.words[i]));
  }
  spec.end_reason = n < limit ? FinishReason::kStop : FinishReason::kLength;
  std::string rid(ex.request()["x-request-id"]);
  if (rid.empty()) {
    rid = fmt::format("{:016x}{:016x}",
                      Mix(options_.seed + options_.index * 0x1000003ull + ++next_request_), h);
  }
  p.shape = ResponseShape{endpoint, (endpoint == Endpoint::kChat ? "chatcmpl-" : "cmpl-") + rid,
                          r.model, WallSeconds()};
  p.usage.prompt_tokens = static_cast<uint32_t>(spec.prompt.size());

  if (f.added_latency_s > 0) {
    asio::steady_timer t(io_);
    t.expires_at(clock_.WallAt(clock_.Now() + f.added_latency_s));
    error_code ec;
    co_await t.async_wait(with_ec(ec));
    if (crashed_) {
      Reset(ex.stream().socket());
      co_return;
    }
  }
  p.engine_id = engine_.Add(std::move(spec), clock_.Now());
  pending_[p.engine_id] = &p;
  Registration reg{*this, p};
  Kick();

  if (p.stream) {
    co_await Stream(ex, p);
    co_return;
  }
  tcp::socket& sock = ex.stream().socket();
  while (!p.done && !p.crashed) {
    p.wake.expires_after(std::chrono::seconds(1));
    error_code ec;
    co_await p.wake.async_wait(with_ec(ec));
    if (!ec && !p.done && PeerClosed(sock)) co_return;  // the client left: abort
  }
  if (p.crashed) {
    Reset(sock);
    co_return;
  }
  co_await RespondJson(ex, 200, FullResponse(p.shape, p.text, p.finish, p.usage));
}

awaitable<void> Replica::Stream(Exchange& ex, Pending& p) {
  tcp::socket& sock = ex.stream().socket();
  const bool chunked = ex.client_version() >= 11;
  if (!chunked) ex.close();
  std::string head =
      "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
      "cache-control: no-cache\r\n";
  head += chunked ? "transfer-encoding: chunked\r\n" : "connection: close\r\n";
  if (chunked && !ex.keep_alive()) head += "connection: close\r\n";
  head += "\r\n";
  std::string buf = std::move(head);
  // With "TE: trailers" the stream ends with the engine's own TTFT (model seconds) as a
  // trailer, so a load generator can set what it saw against what the model computed.
  const bool trailers = ex.request()[bhttp::field::te].find("trailers") != std::string_view::npos;
  std::string data;
  for (;;) {
    if (!p.out.empty()) {
      data.clear();
      std::swap(data, p.out);
      if (chunked) {
        fmt::format_to(std::back_inserter(buf), "{:x}\r\n", data.size());
        buf += data;
        buf += "\r\n";
      } else {
        buf += data;
      }
    }
    if (p.done && p.out.empty() && chunked) {
      if (trailers) {
        fmt::format_to(std::back_inserter(buf),
                       "0\r\nx-infergrid-engine-ttft-seconds: {:.9f}\r\n\r\n", p.engine_ttft);
      } else {
        buf += "0\r\n\r\n";
      }
    }
    if (!buf.empty()) {
      error_code ec;
      co_await asio::async_write(sock, asio::buffer(buf), with_ec(ec));
      buf.clear();
      if (ec) {
        ex.close();
        co_return;  // the client left: Registration aborts the request
      }
    }
    if (p.crashed) {
      Reset(sock);
      co_return;
    }
    if (p.done && p.out.empty()) co_return;
    if (p.out.empty()) {
      p.wake.expires_after(std::chrono::seconds(1));
      error_code ec;
      co_await p.wake.async_wait(with_ec(ec));
      if (!ec && p.out.empty() && !p.done && PeerClosed(sock)) {
        ex.close();
        co_return;
      }
    }
  }
}

void Replica::Kick() {
  if (stepping_ || crashed_ || !engine_.HasWork()) return;
  BeginStep(clock_.Now());
}

void Replica::BeginStep(double start) {
  const Faults& f = options_.faults;
  if (f.stall_rate > 0 && f.stall_s > 0 && (fault_rng_() >> 11) * 0x1.0p-53 < f.stall_rate) {
    start += f.stall_s;
  }
  auto d = engine_.BeginStep(start);
  if (!d) {
    // Nothing runnable yet at `start` (the engine is catching up and the waiting requests
    // arrived later): idle until the first of them.
    auto next = engine_.NextArrival();
    if (next && *next > start) {
      start = *next;
      d = engine_.BeginStep(start);
    }
  }
  if (!d) {
    stepping_ = false;
    return;
  }
  stepping_ = true;
  step_timer_->expires_at(clock_.WallAt(start + *d));
  step_timer_->async_wait([this](error_code ec) {
    if (!ec) OnStepEnd();
  });
}

void Replica::OnStepEnd() {
  engine_model::StepResult r = engine_.EndStep();
  double now = clock_.Now();
  double lag_wall = std::max(0.0, (now - r.end) / clock_.scale());
  lag_->Observe(lag_wall);
  if (lag_wall > 0.005) behind_->Inc();
  iteration_tokens_->Observe(r.num_tokens);
  for (const auto& t : r.tokens) Deliver(t);
  if (kv_ && !r.kv_events.empty()) {
    kv_->Publish(
        r.kv_events,
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  }
  SyncCounters();
  stepping_ = false;
  if (crashed_ || !engine_.HasWork()) return;
  // The model's schedule does not depend on the host: the next step starts where this one
  // ended, even when this one completed late. A process that falls behind catches up (its
  // timers are already due); one that cannot shows a growing lag, and clients see TTFTs
  // beyond what the engine computed.
  BeginStep(r.end);
}

void Replica::Deliver(const engine_model::TokenEvent& t) {
  auto it = pending_.find(t.request);
  if (it == pending_.end()) return;
  Pending& p = *it->second;
  std::string_view word = tokenizer::OutputWord(p.words[t.index]);
  if (t.index == 0) {
    p.engine_ttft = t.time - p.received;
    ttft_->Observe(p.engine_ttft);
    queue_->Observe(std::max(0.0, t.scheduled - p.received));
    if (options_.prompt_tokens_details) p.usage.cached_tokens = t.cached_tokens;
    if (p.stream && p.shape.endpoint == Endpoint::kChat) AppendRoleChunk(p.shape, &p.out);
  } else {
    itl_->Observe(t.time - p.last_token);
  }
  p.last_token = t.time;
  p.usage.completion_tokens = t.index + 1;
  const bool finished = t.finished != FinishReason::kNone;
  if (finished) p.finish = engine_model::FinishReasonName(t.finished);
  if (p.stream) {
    AppendTextChunk(p.shape, word, finished ? p.finish : nullptr, &p.out);
    if (finished) {
      if (p.include_usage) AppendUsageChunk(p.shape, p.usage, &p.out);
      AppendDone(&p.out);
    }
  } else {
    p.text += word;
  }
  if (finished) {
    p.done = true;
    e2e_->Observe(t.time - p.received);
    success_[t.finished == FinishReason::kStop ? 0 : 1]->Inc();
  }
  p.wake.cancel();
}

void Replica::SyncCounters() {
  const auto& s = engine_.stats();
  prefix_queries_->Inc(s.prefix_cache_queries - synced_.prefix_cache_queries);
  prefix_hits_->Inc(s.prefix_cache_hits - synced_.prefix_cache_hits);
  preemptions_->Inc(s.preemptions - synced_.preemptions);
  prompt_tokens_->Inc(s.prompt_tokens - synced_.prompt_tokens);
  generation_tokens_->Inc(s.generation_tokens - synced_.generation_tokens);
  synced_ = s;
}

void Replica::Crash() {
  if (crashed_) return;
  log::Warn("replica {} (port {}): crashing (fault)", options_.index, port_);
  crashed_ = true;
  server_->StopAccepting();
  if (step_timer_) step_timer_->cancel();
  for (auto& [id, p] : pending_) {
    p->crashed = true;
    p->wake.cancel();
  }
}

}  // namespace infergrid::sim
