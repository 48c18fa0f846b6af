#include "bench/driver.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "bench/client.h"
#include "bench/text.h"
#include "bench/trace.h"
#include "tokenizer/tokenizer.h"

namespace infergrid::bench {

using namespace infergrid::http;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

namespace {

const char* RoleName(workload::Role r) {
  switch (r) {
    case workload::Role::kSystem:
      return "system";
    case workload::Role::kAssistant:
      return "assistant";
    case workload::Role::kUser:
    case workload::Role::kTool:  // a tool's output, sent as a user message (no tool-call ids)
      return "user";
  }
  return "user";
}

// A client's conversation so far, kept as the request will carry it.
class Conversation {
 public:
  explicit Conversation(bool chat) : chat_(chat) { Clear(); }
  void Clear() {
    messages_ = "[";
    rendered_.clear();
  }
  // `content` is plain text.
  void Add(const char* role, const std::string& content) {
    if (chat_) {
      if (messages_.size() > 1) messages_ += ',';
      messages_ += "{\"role\":\"";
      messages_ += role;
      messages_ += "\",\"content\":";
      messages_ += json(content).dump(-1, ' ', false, json::error_handler_t::replace);
      messages_ += '}';
    } else {
      tokenizer::AppendChatMessage(role, content, &rendered_);
    }
  }
  // The request, its time left to the sender.
  TraceRequest Request(const std::string& session, uint32_t max_tokens) const {
    TraceRequest r;
    r.session = session;
    r.chat = chat_;
    r.max_tokens = max_tokens;
    if (chat_) {
      r.messages_json = messages_ + "]";
    } else {
      r.prompt = rendered_;
      tokenizer::AppendGenerationPrompt(&r.prompt);
    }
    return r;
  }

 private:
  bool chat_;
  std::string messages_;
  std::string rendered_;
};

class Run {
 public:
  Run(const DriverOptions& o, asio::io_context& io) : o_(o), ex_(io.get_executor()), done_(ex_) {
    done_.expires_at(Clock::time_point::max());
  }

  awaitable<Status> Main() {
    if (!o_.record_path.empty()) {
      record_.open(o_.record_path, std::ios::trunc);
      if (!record_) co_return Status::Error(fmt::format("{}: cannot write", o_.record_path));
    }
    start_ = Clock::now();
    r_.interrupted = false;
    ++actors_;  // the starter itself, until every actor is spawned
    if (o_.workload) {
      const auto& w = *o_.workload;
      for (size_t g = 0; g < w.groups.size(); ++g) {
        if (w.groups[g].count > 0) {
          for (uint32_t i = 0; i < w.groups[g].count; ++i) Spawn(ClosedClient(g, i));
        } else {
          Spawn(OpenGroup(g));
        }
      }
    } else {
      Spawn(TraceFeeder());
    }
    asio::co_spawn(ex_, Ticker(), asio::detached);
    ActorDone();
    error_code ec;
    co_await done_.async_wait(with_ec(ec));
    finished_ = true;
    const double end = Now();
    if (o_.fleet && !window_end_taken_) {
      if (!window_start_taken_) start_counters_ = co_await o_.fleet->Scrape();
      end_counters_ = co_await o_.fleet->Scrape();
    }
    if (o_.fleet) {
      FleetWindow w = Diff(start_counters_, end_counters_);
      w.kv_usage_mean = kv_samples_ ? kv_sum_ / kv_samples_ : 0;
      w.kv_usage_max = kv_max_;
      w.kv_samples = kv_samples_;
      r_.fleet = std::move(w);
    }
    r_.window_s = std::max(0.0, std::min(end, o_.duration_s) - o_.warmup_s);
    r_.window_output_tokens = static_cast<uint64_t>(window_tokens_ + 0.5);
    r_.interrupted = Interrupted();
    r_.wall_s = std::chrono::duration<double>(Clock::now() - start_).count();
    co_return fail_status_;
  }

  DriverResult& result() { return r_; }

 private:
  double Now() const {
    return std::chrono::duration<double>(Clock::now() - start_).count() * o_.time_scale;
  }
  bool Interrupted() const { return o_.interrupted && o_.interrupted->load(); }
  bool Stopping() const {
    return cut_ || Interrupted() || (o_.max_requests && r_.sent >= o_.max_requests);
  }

  awaitable<void> SleepUntil(double t) {
    double wait = (t - Now()) / o_.time_scale;
    if (wait <= 0 || Stopping()) co_return;
    asio::steady_timer timer(ex_);
    timer.expires_after(
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wait)));
    sleepers_.insert(&timer);
    error_code ec;
    co_await timer.async_wait(with_ec(ec));
    sleepers_.erase(&timer);
  }

  // Wakes every actor waiting for its next turn (which then sees Stopping()).
  void WakeSleepers() {
    for (asio::steady_timer* t : sleepers_) t->cancel();
  }

  void Spawn(awaitable<void> a) {
    ++actors_;
    asio::co_spawn(ex_, std::move(a), [this](std::exception_ptr) { ActorDone(); });
  }
  void ActorDone() {
    if (--actors_ == 0) done_.cancel();
  }

  // Sends one request and accounts for its reply.
  awaitable<Reply> Send(Connection& c, const TraceRequest& req) {
    std::string body = "{\"model\":" + json(o_.model).dump();
    if (req.chat) {
      body += ",\"messages\":" + req.messages_json;
    } else {
      body +=
          ",\"prompt\":" + json(req.prompt).dump(-1, ' ', false, json::error_handler_t::replace);
    }
    body += fmt::format(",\"max_tokens\":{}", req.max_tokens);
    body += o_.stream ? ",\"stream\":true,\"stream_options\":{\"include_usage\":true}}"
                      : ",\"stream\":false}";
    Headers headers;
    if (!req.session.empty()) headers.emplace_back("x-session-id", req.session);
    const double t_send = Now();
    if (record_.is_open()) {
      TraceRequest rec = req;
      rec.t = t_send;
      record_ << TraceLine(rec) << '\n';
    }
    ++r_.sent;
    if (o_.max_requests && r_.sent >= o_.max_requests) WakeSleepers();
    ++in_flight_;
    live_.insert(&c);
    Reply reply = co_await c.Post(req.chat ? "/v1/chat/completions" : "/v1/completions", body,
                                  headers, o_.stream, o_.request_timeout_s / o_.time_scale);
    live_.erase(&c);
    --in_flight_;
    if (o_.connection_per_request) c.Close();
    Account(reply, t_send);
    co_return reply;
  }

  void Account(const Reply& reply, double t_send) {
    const double s = o_.time_scale;
    const bool measured = t_send >= o_.warmup_s && t_send < o_.duration_s;
    if (!reply.error.empty()) {
      if (cut_ || Interrupted()) {
        ++r_.unfinished;
        return;
      }
      ++r_.failed;
      ++r_.errors[reply.error];
      if (r_.error_examples.size() < 5) {
        r_.error_examples.push_back(
            fmt::format("{} at t={:.1f}s: {}", reply.error, t_send, reply.error_detail));
      }
      return;
    }
    ++done_count_;
    r_.completions.Add(t_send + reply.total_s * s);
    // Each chunk's tokens, credited at the chunk's arrival.
    const double per_chunk =
        reply.chunks ? static_cast<double>(reply.completion_tokens) / reply.chunks : 0;
    double t = t_send + reply.first_token_s * s;
    for (uint32_t i = 0; i < reply.chunks; ++i) {
      if (i > 0) t += reply.token_gaps[i - 1] * s;
      r_.output_tokens.Add(t, per_chunk);
      if (t >= o_.warmup_s && t < o_.duration_s) window_tokens_ += per_chunk;
    }
    if (!measured) return;
    ++r_.completed;
    r_.ttft.push_back((reply.first_token_s >= 0 ? reply.first_token_s : reply.total_s) * s);
    r_.e2e.push_back(reply.total_s * s);
    for (double g : reply.token_gaps) r_.itl.push_back(g * s);
    r_.prompt_tokens += reply.prompt_tokens;
    r_.cached_tokens += reply.cached_tokens;
  }

  awaitable<void> ClosedClient(size_t g, uint32_t i) {
    const auto& w = *o_.workload;
    workload::Client client(w, g, i, false);
    co_await Drive(&client, w.ramp_up_s * i / w.groups[g].count);
  }

  // A client's turns, the first `start` plus its delay, each later one its delay after the
  // last reply, until the client is done or the duration is reached.
  awaitable<void> Drive(workload::Client* client, double start) {
    Connection conn(ex_, o_.host, o_.port);
    Conversation convo(o_.chat);
    auto plan = client->Next();
    double t_next = start + (plan ? plan->delay_s : 0);
    while (plan && t_next < o_.duration_s) {
      co_await SleepUntil(t_next);
      if (Stopping()) break;
      co_await Turn(conn, convo, *plan);
      plan = client->Next();
      if (plan) t_next = Now() + plan->delay_s;
    }
  }

  awaitable<void> Turn(Connection& conn, Conversation& convo, const workload::TurnPlan& plan) {
    if (plan.new_session) convo.Clear();
    for (const auto& seg : plan.append) {
      std::string text;
      AppendSegmentText(seg.seed, seg.tokens, &text);
      convo.Add(RoleName(seg.role), text);
    }
    Reply reply = co_await Send(conn, convo.Request(plan.session_key, plan.output_tokens));
    std::string text = std::move(reply.text);
    if (!reply.error.empty()) {
      text.clear();  // the agent carries on as if the model had replied (as planned)
      AppendSegmentText(plan.output_seed, plan.output_tokens, &text);
    }
    convo.Add("assistant", text);
  }

  awaitable<void> OpenGroup(size_t g) {
    const auto& w = *o_.workload;
    std::mt19937_64 rng(w.seed ^ 0xa5a5a5a5ull ^ (g * 0x9e3779b97f4a7c15ull));
    uint64_t index = 0;
    double t = workload::NextSessionArrival(w.groups[g], 0, rng);
    while (t < o_.duration_s) {
      co_await SleepUntil(t);
      if (Stopping()) break;
      Spawn(OpenSession(g, index++));
      t = workload::NextSessionArrival(w.groups[g], t, rng);
    }
  }

  awaitable<void> OpenSession(size_t g, uint64_t index) {
    workload::Client client(*o_.workload, g, index, true);
    co_await Drive(&client, Now());
  }

  awaitable<void> TraceFeeder() {
    auto reader = TraceReader::Open(o_.trace_path, o_.trace_block_size);
    if (!reader.ok()) {
      fail_status_ = reader.status();
      co_return;
    }
    while (true) {
      auto next = (*reader)->Next();
      if (!next.ok()) {
        fail_status_ = next.status();
        cut_ = true;
        co_return;
      }
      if (!next->has_value() || (**next).t >= o_.duration_s) break;
      co_await SleepUntil((**next).t);
      if (Stopping()) break;
      Spawn(TraceRequestActor(std::move(**next)));
    }
  }

  awaitable<void> TraceRequestActor(TraceRequest req) {
    std::unique_ptr<Connection> conn;
    if (!idle_.empty()) {
      conn = std::move(idle_.back());
      idle_.pop_back();
    } else {
      conn = std::make_unique<Connection>(ex_, o_.host, o_.port);
    }
    co_await Send(*conn, req);
    idle_.push_back(std::move(conn));
  }

  awaitable<void> Ticker() {
    asio::steady_timer timer(ex_);
    uint64_t last_done = 0;
    auto last_tick = Clock::now();
    double next_progress = 0;
    while (!finished_) {
      timer.expires_after(std::chrono::milliseconds(100));
      error_code ec;
      co_await timer.async_wait(with_ec(ec));
      if (finished_) break;
      const double now = Now();
      if (!cut_ && (Interrupted() || now > o_.duration_s + o_.drain_limit_s)) Cut();
      if (o_.fleet && !window_start_taken_ && now >= o_.warmup_s) {
        window_start_taken_ = true;
        start_counters_ = co_await o_.fleet->Scrape();
      }
      if (o_.fleet && window_start_taken_ && !window_end_taken_ && now >= o_.duration_s) {
        window_end_taken_ = true;
        end_counters_ = co_await o_.fleet->Scrape();
      }
      const double wall = std::chrono::duration<double>(Clock::now() - start_).count();
      if (wall < next_progress) continue;
      next_progress = wall + 1;
      if (o_.fleet && window_start_taken_ && !window_end_taken_) {
        auto c = co_await o_.fleet->Scrape();
        double sum = 0, n = 0;
        for (const auto& s : c) {
          if (!s.ok) continue;
          sum += s.kv_usage;
          ++n;
          kv_max_ = std::max(kv_max_, s.kv_usage);
        }
        if (n > 0) {
          kv_sum_ += sum / n;
          ++kv_samples_;
        }
      }
      if (o_.progress) {
        DriverOptions::Progress p;
        p.t = now;
        p.duration = o_.duration_s;
        p.done = done_count_;
        p.failed = r_.failed;
        p.in_flight = in_flight_;
        double dt = std::chrono::duration<double>(Clock::now() - last_tick).count() * o_.time_scale;
        p.requests_per_s = dt > 0 ? (done_count_ - last_done) / dt : 0;
        last_done = done_count_;
        last_tick = Clock::now();
        if (!r_.ttft.empty()) {
          std::vector<double> v = r_.ttft;
          size_t k = std::min(v.size() - 1, static_cast<size_t>(0.9 * v.size()));
          std::nth_element(v.begin(), v.begin() + k, v.end());
          p.ttft_p90 = v[k];
        }
        o_.progress(p);
      }
    }
  }

  // Ends every request still running: they count as unfinished, not failed.
  void Cut() {
    cut_ = true;
    for (Connection* c : live_) c->Close();
    WakeSleepers();
  }

  const DriverOptions& o_;
  any_io_executor ex_;
  asio::steady_timer done_;
  Clock::time_point start_;
  DriverResult r_;
  std::ofstream record_;
  Status fail_status_;
  int64_t actors_ = 0;
  uint64_t in_flight_ = 0, done_count_ = 0;
  double window_tokens_ = 0;
  bool cut_ = false, finished_ = false;
  bool window_start_taken_ = false, window_end_taken_ = false;
  std::vector<ServerCounters> start_counters_, end_counters_;
  double kv_sum_ = 0, kv_max_ = 0;
  uint32_t kv_samples_ = 0;
  std::set<Connection*> live_;
  std::set<asio::steady_timer*> sleepers_;
  std::vector<std::unique_ptr<Connection>> idle_;
};

}  // namespace

Result<DriverResult> RunLoad(const DriverOptions& o) {
  if (!o.workload && o.trace_path.empty()) return Status::Error("no workload and no trace");
  if (!(o.time_scale > 0)) return Status::Error("time scale must be > 0");
  asio::io_context io(1);
  Run run(o, io);
  Status status;
  bool finished = false;
  asio::co_spawn(io, run.Main(), [&](std::exception_ptr e, Status s) {
    finished = true;
    status = e ? Status::Error("the load driver failed") : std::move(s);
  });
  io.run();
  if (!finished) return Status::Error("the load driver stopped early");
  if (!status.ok()) return status;
  return std::move(run.result());
}

}  // namespace infergrid::bench
