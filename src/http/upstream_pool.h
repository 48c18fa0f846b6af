#pragma once
// Keep-alive connections to one upstream endpoint, owned by one worker thread (not
// thread-safe; every call on the worker's io_context). Bounded: at most max_connections open
// (leased plus idle); a caller over the bound waits for a release up to its connect timeout.
// Idle connections are closed after idle_timeout or when the server has closed them.

#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "common/duration.h"
#include "http/asio.h"
#include "http/url.h"

namespace infergrid::http {

struct UpstreamPoolOptions {
  uint32_t max_connections = 1024;
  uint32_t max_idle = 128;
  Duration idle_timeout = std::chrono::seconds(60);
};

class UpstreamPool;

// A connection on loan. Return it with Release(reusable); if dropped, it is closed.
class Lease {
 public:
  Lease() = default;
  Lease(UpstreamPool* pool, std::unique_ptr<beast::tcp_stream> stream, bool reused)
      : pool_(pool), stream_(std::move(stream)), reused_(reused) {}
  Lease(Lease&& o) noexcept { *this = std::move(o); }
  Lease& operator=(Lease&& o) noexcept;
  ~Lease();

  beast::tcp_stream& stream() { return *stream_; }
  bool valid() const { return stream_ != nullptr; }
  // True if the connection was taken from the idle set (it may have gone stale).
  bool reused() const { return reused_; }
  void Release(bool reusable);

 private:
  UpstreamPool* pool_ = nullptr;
  std::unique_ptr<beast::tcp_stream> stream_;
  bool reused_ = false;
};

enum class AcquireError { kNone, kConnectFailed, kConnectTimeout, kExhausted, kResolveFailed };
const char* AcquireErrorName(AcquireError e);

struct AcquireResult {
  Lease lease;
  AcquireError error = AcquireError::kNone;
  std::string message;
};

class UpstreamPool {
 public:
  UpstreamPool(asio::any_io_executor ex, HostPort target, UpstreamPoolOptions options);
  ~UpstreamPool();

  const HostPort& target() const { return target_; }
  // A connection: an idle one if a live one is there, else a new one (connect within
  // `connect_timeout`). `fresh` skips the idle set.
  awaitable<AcquireResult> Acquire(Duration connect_timeout, bool fresh = false);

  // Closes every idle connection (before the io_context goes away).
  void CloseIdle();

  uint32_t open() const { return open_; }
  size_t idle() const { return idle_.size(); }

 private:
  friend class Lease;
  void Return(std::unique_ptr<beast::tcp_stream> stream, bool reusable);
  void WakeOne();

  struct Idle {
    std::unique_ptr<beast::tcp_stream> stream;
    std::chrono::steady_clock::time_point since;
  };
  asio::any_io_executor ex_;
  HostPort target_;
  UpstreamPoolOptions options_;
  std::vector<Idle> idle_;  // LIFO: the most recently used is warmest
  uint32_t open_ = 0;
  std::deque<std::shared_ptr<asio::steady_timer>> waiters_;
  std::vector<tcp::endpoint> resolved_;
};

}  // namespace infergrid::http
