#pragma once
// One simulated model server: an HTTP server speaking vLLM's API in front of one Engine, on one
// io_context (so the engine, its requests and its metrics need no locks). Many replicas share a
// process and its threads (`infergrid sim --replicas N`).
//
// Time: the engine runs in model time, SimClock maps it to the wall clock (scaled). A step
// that the roofline says ends at model time T delivers its tokens at WallAt(T). When the
// process falls behind (a step fires late), the next step starts late too; the lag is counted
// in infergrid_sim_step_lag_seconds, and the engine's own metrics keep the model's times.

#include <chrono>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "engine_model/engine.h"
#include "http/server.h"
#include "metrics/registry.h"
#include "sim/api.h"
#include "sim/kv_publisher.h"

namespace infergrid::sim {

class SimClock {
 public:
  explicit SimClock(double time_scale)
      : scale_(time_scale), start_(std::chrono::steady_clock::now()) {}
  double scale() const { return scale_; }
  // Model seconds since the clock started.
  double Now() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() *
           scale_;
  }
  std::chrono::steady_clock::time_point WallAt(double model_seconds) const {
    return start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(model_seconds / scale_));
  }

 private:
  double scale_;
  std::chrono::steady_clock::time_point start_;
};

// Output lengths when the request leaves max_tokens open or the model should stop early:
// "none" (generate max_tokens; 256 when absent), "N", "uniform:A:B", "normal:MEAN:STD".
struct OutputLength {
  enum class Kind { kNone, kFixed, kUniform, kNormal } kind = Kind::kNone;
  double a = 0, b = 0;
  static Result<OutputLength> Parse(const std::string& s);
  uint32_t Draw(std::mt19937_64& rng) const;  // >= 1
};

// Faults, set by flag or at run time (POST /admin/faults). Durations are model time.
struct Faults {
  double error_rate = 0;       // share of completions answered 500 at once
  double added_latency_s = 0;  // before a request reaches the engine
  double stall_rate = 0;       // share of steps that start after a stall
  double stall_s = 0;
  int64_t crash_after = -1;  // completions accepted before the replica crashes; -1 never
  double slow_start_s = 0;   // not ready (503) for this long after start
  bool draining = false;     // finish in-flight, refuse new with 503
};

struct ReplicaOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  uint32_t index = 0;
  std::vector<std::string> served_names;
  std::string root;  // the model path vLLM would report (the profile's Hugging Face id)
  engine_model::EngineConfig engine;
  engine_model::HardwareSetup hw;
  uint64_t seed = 0;
  OutputLength output_length;
  bool prompt_tokens_details = false;  // usage.prompt_tokens_details.cached_tokens
  Faults faults;
  std::optional<std::string> kv_events_endpoint;
  std::string kv_events_topic;
  KvEventFormat kv_events_format = KvEventFormat::kArray;
};

class Replica {
 public:
  Replica(http::asio::io_context& io, const SimClock& clock, ReplicaOptions options,
          void* zmq_context);
  ~Replica();

  Status Start();
  uint16_t port() const { return port_; }
  // Where KV-cache events are published ("" when off), with the port resolved.
  std::string kv_events_endpoint() const { return kv_ ? kv_->endpoint() : ""; }
  const engine_model::Engine& engine() const { return engine_; }
  // Releases I/O objects: after the io_context stopped running, before it is destroyed.
  void Shutdown();

 private:
  struct Pending;
  struct Registration;

  http::awaitable<void> Handle(http::Exchange& ex);
  http::awaitable<void> Complete(http::Exchange& ex, Endpoint endpoint);
  http::awaitable<void> Stream(http::Exchange& ex, Pending& p);
  http::awaitable<void> Admin(http::Exchange& ex);
  void Kick();
  void BeginStep(double start);
  void OnStepEnd();
  void Deliver(const engine_model::TokenEvent& t);
  void SyncCounters();
  void Crash();
  bool Ready() const;

  http::asio::io_context& io_;
  const SimClock& clock_;
  ReplicaOptions options_;
  void* zmq_context_;
  engine_model::Engine engine_;
  const ParseContext parse_context_;  // what request validation needs, built once
  std::unique_ptr<http::Server> server_;
  std::unique_ptr<http::asio::steady_timer> step_timer_;
  std::unique_ptr<KvEventPublisher> kv_;
  uint16_t port_ = 0;
  bool stepping_ = false;
  bool crashed_ = false;
  double started_at_ = 0;  // model time
  int64_t started_wall_ = 0;
  int64_t accepted_ = 0;
  uint64_t next_request_ = 0;
  std::mt19937_64 fault_rng_;
  std::unordered_map<uint64_t, Pending*> pending_;  // by engine request id
  engine_model::EngineStats synced_;

  metrics::Registry metrics_;
  metrics::Counter *prefix_queries_, *prefix_hits_, *preemptions_, *prompt_tokens_,
      *generation_tokens_, *behind_;
  metrics::Counter* success_[2];  // stop, length
  metrics::Counter* aborted_;
  metrics::Histogram *ttft_, *itl_, *e2e_, *queue_, *iteration_tokens_, *lag_;
};

}  // namespace infergrid::sim
