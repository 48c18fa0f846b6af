#include "http/upstream_pool.h"

#include <sys/socket.h>

namespace infergrid::http {

const char* AcquireErrorName(AcquireError e) {
  switch (e) {
    case AcquireError::kNone:
      return "none";
    case AcquireError::kConnectFailed:
      return "connect_failed";
    case AcquireError::kConnectTimeout:
      return "connect_timeout";
    case AcquireError::kExhausted:
      return "pool_exhausted";
    case AcquireError::kResolveFailed:
      return "resolve_failed";
  }
  return "unknown";
}

Lease& Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    if (stream_) Release(false);
    pool_ = o.pool_;
    stream_ = std::move(o.stream_);
    reused_ = o.reused_;
    o.pool_ = nullptr;
  }
  return *this;
}

Lease::~Lease() {
  if (stream_) Release(false);
}

void Lease::Release(bool reusable) {
  if (!stream_) return;
  if (pool_) {
    pool_->Return(std::move(stream_), reusable);
  } else {
    stream_.reset();
  }
}

UpstreamPool::UpstreamPool(asio::any_io_executor ex, HostPort target, UpstreamPoolOptions options)
    : ex_(std::move(ex)), target_(std::move(target)), options_(options) {}

UpstreamPool::~UpstreamPool() = default;

namespace {
// A pooled connection is usable if the peer has not closed it and sent nothing unasked.
bool LooksAlive(beast::tcp_stream& s) {
  char byte;
  ssize_t n = ::recv(s.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return false;  // orderly close
  if (n > 0) return false;   // unexpected bytes: not a clean keep-alive
  return errno == EAGAIN || errno == EWOULDBLOCK;
}
}  // namespace

awaitable<AcquireResult> UpstreamPool::Acquire(Duration connect_timeout, bool fresh) {
  auto deadline = std::chrono::steady_clock::now() + connect_timeout;
  while (true) {
    auto now = std::chrono::steady_clock::now();
    while (!fresh && !idle_.empty()) {
      Idle idle = std::move(idle_.back());
      idle_.pop_back();
      // Under load a connection comes back within microseconds: skip the liveness probe (a
      // syscall) then. After a pause the server may have closed it (uvicorn closes idle
      // connections after 5 s), so probe; a close that races us is retried by the proxy.
      bool recent = now - idle.since < std::chrono::milliseconds(500);
      if (now - idle.since < options_.idle_timeout && (recent || LooksAlive(*idle.stream))) {
        co_return AcquireResult{Lease(this, std::move(idle.stream), true), AcquireError::kNone, ""};
      }
      --open_;
    }
    if (open_ < options_.max_connections) break;
    if (now >= deadline) {
      co_return AcquireResult{{},
                              AcquireError::kExhausted,
                              "all " + std::to_string(options_.max_connections) +
                                  " connections to " + target_.HostHeader() + " are busy"};
    }
    auto timer = std::make_shared<asio::steady_timer>(ex_);
    timer->expires_at(deadline);
    waiters_.push_back(timer);
    error_code ec;
    co_await timer->async_wait(with_ec(ec));  // cancelled by a release: try again
    std::erase(waiters_, timer);
  }

  ++open_;
  auto stream = std::make_unique<beast::tcp_stream>(ex_);
  error_code ec;
  if (resolved_.empty()) {
    // Literal addresses need no lookup; names are resolved once and kept until a connect
    // fails, so a slow resolver is not on every new connection's path.
    if (auto literal = LiteralEndpoint(target_)) {
      resolved_.push_back(*literal);
    } else {
      tcp::resolver resolver(ex_);
      auto results =
          co_await resolver.async_resolve(target_.host, std::to_string(target_.port), with_ec(ec));
      if (ec) {
        --open_;
        WakeOne();
        co_return AcquireResult{{},
                                AcquireError::kResolveFailed,
                                "cannot resolve " + target_.host + ": " + ec.message()};
      }
      for (const auto& r : results) resolved_.push_back(r.endpoint());
    }
  }
  stream->expires_at(deadline);
  co_await stream->async_connect(resolved_, with_ec(ec));
  if (ec && !LiteralEndpoint(target_)) resolved_.clear();  // look the name up again next time
  if (ec) {
    --open_;
    WakeOne();
    bool timeout = ec == beast::error::timeout;
    co_return AcquireResult{{},
                            timeout ? AcquireError::kConnectTimeout : AcquireError::kConnectFailed,
                            "cannot connect to " + target_.HostHeader() + ": " + ec.message()};
  }
  stream->expires_never();
  stream->socket().set_option(tcp::no_delay(true), ec);
  co_return AcquireResult{Lease(this, std::move(stream), false), AcquireError::kNone, ""};
}

void UpstreamPool::Return(std::unique_ptr<beast::tcp_stream> stream, bool reusable) {
  if (reusable && stream->socket().is_open() && idle_.size() < options_.max_idle) {
    stream->expires_never();
    idle_.push_back(Idle{std::move(stream), std::chrono::steady_clock::now()});
  } else {
    error_code ec;
    stream->socket().shutdown(tcp::socket::shutdown_both, ec);
    stream->socket().close(ec);
    --open_;
  }
  WakeOne();
}

void UpstreamPool::CloseIdle() {
  open_ -= static_cast<uint32_t>(idle_.size());
  idle_.clear();
  for (auto& w : waiters_) w->cancel();
  waiters_.clear();
}

void UpstreamPool::WakeOne() {
  while (!waiters_.empty()) {
    auto t = waiters_.front();
    waiters_.pop_front();
    if (t->cancel() > 0) return;  // woke a live waiter
  }
}

}  // namespace infergrid::http
