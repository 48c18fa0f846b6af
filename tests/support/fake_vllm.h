#pragma once
// A small vLLM-shaped model server for tests, the proxy benchmark and the demo (until the
// simulator lands). It answers /v1/chat/completions and /v1/completions (streaming or not,
// with usage), /v1/models, /health and /metrics with vLLM's gauge names, and records what it
// saw. Test-only request headers inject faults:
//   x-fake-delay-ms: N        wait N ms before the response headers
//   x-fake-token-delay-ms: N  wait N ms between streamed tokens
//   x-fake-reset-after: N     reset the connection after N streamed chunks
//   x-fake-hang: 1            never answer
//   x-fake-close-delimited: 1 answer a non-streaming request with a body ended by close
// A client that closes while it waits or streams is counted in stats().cancelled.

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "http/server.h"

namespace infergrid::testing {

struct FakeVllmOptions {
  std::string model = "test-model";
  std::vector<std::string>
      aliases;  // further names it answers to, as vLLM's --served-model-name a b
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  int token_delay_ms = 0;
  int default_max_tokens = 16;
  int num_gpu_blocks = 0;  // > 0: /metrics reports vllm:cache_config_info (16-token blocks)
};

struct FakeVllmStats {
  uint64_t requests = 0;
  uint64_t cancelled = 0;  // clients that closed before the response ended
  uint64_t completed = 0;
  int64_t active = 0;
  uint64_t connections = 0;
  std::string last_body;
  std::string last_session_header;
  std::string last_expect;  // the Expect header of the last completion request
};

class FakeVllm {
 public:
  explicit FakeVllm(FakeVllmOptions options);
  ~FakeVllm();
  Status Start();
  void Stop();
  uint16_t port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port()); }
  FakeVllmStats stats() const;
  // Faults at run time: every completion answered with `status` (0: normal), or every
  // request (health and metrics too) never answered.
  void SetCompletionStatus(int status) { completion_status_.store(status); }
  void SetHang(bool hang) { hang_.store(hang); }

 private:
  http::awaitable<void> Handle(http::Exchange& ex);
  http::awaitable<void> Complete(http::Exchange& ex, bool chat);
  FakeVllmOptions options_;
  std::unique_ptr<http::asio::io_context> io_ = std::make_unique<http::asio::io_context>(1);
  std::unique_ptr<http::Server> server_;
  std::thread thread_;
  mutable std::mutex mu_;
  FakeVllmStats stats_;
  std::atomic<int64_t> active_{0};
  std::atomic<int> completion_status_{0};
  std::atomic<bool> hang_{false};
  uint16_t port_ = 0;
  uint64_t connections_at_stop_ = 0;
};

}  // namespace infergrid::testing
