#include "http/server.h"

#include <fmt/format.h>
#include <sys/socket.h>

#include "common/log.h"

namespace infergrid::http {

awaitable<error_code> Exchange::Respond(StringResponse response) {
  response.version(client_version_ == 10 ? 10 : 11);
  response.keep_alive(keep_alive());
  response.prepare_payload();
  error_code ec;
  stream_.expires_after(write_timeout_);
  co_await bhttp::async_write(stream_, response, with_ec(ec));
  stream_.expires_never();
  co_return ec;
}

Server::Server(std::vector<asio::io_context*> workers, ServerOptions options, Handler handler)
    : workers_(std::move(workers)), options_(std::move(options)), handler_(std::move(handler)) {
  if (!options_.error_body) {
    options_.error_body = [](int, const std::string& message, const std::string&) {
      return fmt::format("{{\"error\":\"{}\"}}", message);
    };
  }
}

Server::~Server() = default;

Status Server::Listen(const std::string& host, uint16_t port) {
  error_code ec;
  auto addr = asio::ip::make_address(host, ec);
  if (ec) return Status::Error(fmt::format("cannot listen on '{}': not an IP address", host));
  uint16_t bound = port;
  for (auto* io : workers_) {
    auto acc = std::make_unique<tcp::acceptor>(*io);
    tcp::endpoint ep(addr, bound);
    acc->open(ep.protocol(), ec);
    if (!ec) acc->set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) {
      int one = 1;
      if (::setsockopt(acc->native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0) {
        ec = error_code(errno, boost::system::system_category());
      }
    }
    if (!ec) acc->bind(ep, ec);
    if (!ec) acc->listen(asio::socket_base::max_listen_connections, ec);
    if (ec)
      return Status::Error(fmt::format("cannot listen on {}:{}: {}", host, bound, ec.message()));
    bound = acc->local_endpoint().port();
    acceptors_.push_back(std::move(acc));
  }
  port_ = bound;
  for (size_t i = 0; i < acceptors_.size(); ++i) {
    asio::co_spawn(*workers_[i], Accept(*acceptors_[i], i), asio::detached);
  }
  return Status::Ok();
}

void Server::StopAccepting() {
  for (size_t i = 0; i < acceptors_.size(); ++i) {
    auto* acc = acceptors_[i].get();
    asio::post(*workers_[i], [acc] {
      error_code ec;
      acc->close(ec);
    });
  }
}

awaitable<void> Server::Accept(tcp::acceptor& acceptor, size_t worker) {
  while (acceptor.is_open()) {
    error_code ec;
    tcp::socket socket = co_await acceptor.async_accept(with_ec(ec));
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
      // Out of descriptors and the like: back off rather than spin.
      log::Warn("accept failed: {}", ec.message());
      asio::steady_timer backoff(acceptor.get_executor());
      backoff.expires_after(std::chrono::milliseconds(100));
      co_await backoff.async_wait(with_ec(ec));
      continue;
    }
    socket.set_option(tcp::no_delay(true), ec);
    accepted_.fetch_add(1);
    asio::co_spawn(acceptor.get_executor(), Serve(std::move(socket), worker), asio::detached);
  }
}

awaitable<void> Server::RespondProtocolError(beast::tcp_stream& stream, int status,
                                             const std::string& message, const std::string& code,
                                             ProtocolError kind) {
  if (options_.on_protocol_error) options_.on_protocol_error(kind);
  StringResponse res{static_cast<bhttp::status>(status), 11};
  res.set(bhttp::field::content_type, "application/json");
  res.body() = options_.error_body(status, message, code);
  res.keep_alive(false);
  res.prepare_payload();
  stream.expires_after(std::chrono::seconds(5));
  error_code ec;
  co_await bhttp::async_write(stream, res, with_ec(ec));
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
}

namespace {
// A deadline that cancels the socket's pending operations when it fires, without closing it,
// so the server can still answer 408. Shared so a late timer callback never dangles.
struct Deadline {
  explicit Deadline(asio::any_io_executor ex) : timer(ex) {}
  // Disarms: a handler already queued (the timer fired in the same turn as the operation
  // completed) will see inactive and touch nothing.
  void Cancel() {
    active = false;
    timer.cancel();
  }
  asio::steady_timer timer;
  bool active = true;
  bool fired = false;
};

std::shared_ptr<Deadline> Arm(beast::tcp_stream& stream, Duration after) {
  auto d = std::make_shared<Deadline>(stream.get_executor());
  d->timer.expires_after(after);
  beast::tcp_stream* sp = &stream;
  d->timer.async_wait([d, sp](error_code ec) {
    if (ec || !d->active) return;  // disarmed: the stream may be gone, touch nothing
    d->fired = true;
    error_code ignored;
    sp->socket().cancel(ignored);
  });
  return d;
}
}  // namespace

awaitable<void> Server::Serve(tcp::socket socket, size_t worker) {
  open_connections_->fetch_add(1);
  struct Counter {
    std::shared_ptr<std::atomic<uint64_t>> n;
    ~Counter() { n->fetch_sub(1); }
  } counter{open_connections_};

  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer;
  std::vector<char> scratch;
  bool first = true;
  while (true) {
    error_code ec;
    // Keep-alive: wait for the next request's first byte without a header deadline.
    if (!first && buffer.size() == 0) {
      // A plain read rather than a readiness wait: Asio re-arms epoll for every wait, but a
      // read on a registered socket costs no epoll_ctl.
      auto idle = Arm(stream, options_.idle_timeout);
      size_t n = co_await stream.async_read_some(buffer.prepare(4096), with_ec(ec));
      idle->Cancel();
      if (ec) co_return;  // closed by the client, or idle too long
      buffer.commit(n);
    }
    first = false;

    bhttp::request_parser<bhttp::string_body> parser;
    parser.header_limit(options_.max_header_bytes);
    parser.body_limit(options_.max_body_bytes);

    stream.expires_never();
    auto deadline = Arm(stream, options_.header_timeout);
    co_await bhttp::async_read_header(stream, buffer, parser, with_ec(ec));
    if (ec) {
      deadline->Cancel();
      if (deadline->fired) {
        co_await RespondProtocolError(stream, 408, "the request headers were not received in time",
                                      "request_timeout", ProtocolError::kHeaderTimeout);
      } else if (ec == bhttp::error::header_limit) {
        co_await RespondProtocolError(stream, 431, "the request headers are larger than the limit",
                                      "request_header_fields_too_large",
                                      ProtocolError::kHeadersTooLarge);
      } else if (ec == bhttp::error::body_limit) {
        co_await RespondProtocolError(stream, 413, "the request body is larger than the limit",
                                      "request_too_large", ProtocolError::kBodyTooLarge);
      } else if (ec != bhttp::error::end_of_stream && ec != asio::error::eof &&
                 ec != asio::error::connection_reset && ec != asio::error::operation_aborted) {
        co_await RespondProtocolError(stream, 400, "malformed HTTP request: " + ec.message(),
                                      "bad_request", ProtocolError::kBadRequest);
      }
      co_return;
    }
    deadline->Cancel();
    // Reject an oversized declared body before reading it.
    if (auto len = parser.content_length(); len && *len > options_.max_body_bytes) {
      co_await RespondProtocolError(stream, 413, "the request body is larger than the limit",
                                    "request_too_large", ProtocolError::kBodyTooLarge);
      co_return;
    }
    if (parser.get()[bhttp::field::expect] == "100-continue") {
      bhttp::response<bhttp::empty_body> cont{bhttp::status::continue_, 11};
      stream.expires_after(options_.body_timeout);
      co_await bhttp::async_write(stream, cont, with_ec(ec));
      if (ec) co_return;
    }
    stream.expires_after(options_.body_timeout);
    co_await bhttp::async_read(stream, buffer, parser, with_ec(ec));
    if (ec) {
      if (ec == bhttp::error::body_limit) {
        co_await RespondProtocolError(stream, 413, "the request body is larger than the limit",
                                      "request_too_large", ProtocolError::kBodyTooLarge);
      } else if (ec == beast::error::timeout) {
        // tcp_stream closed the socket on expiry: nothing more can be sent.
        if (options_.on_protocol_error) options_.on_protocol_error(ProtocolError::kBodyTimeout);
      } else if (ec != asio::error::eof && ec != asio::error::connection_reset) {
        co_await RespondProtocolError(stream, 400, "malformed HTTP request body: " + ec.message(),
                                      "bad_request", ProtocolError::kBadRequest);
      }
      co_return;
    }
    stream.expires_never();

    StringRequest request = parser.release();
    Exchange exchange(stream, request, worker, options_.write_timeout, scratch);
    bool threw = false;
    try {
      co_await handler_(exchange);
    } catch (const std::exception& e) {
      // Handlers must not throw; if one does, this connection ends but the server goes on.
      log::Error("request handler threw: {}", e.what());
      threw = true;
    }
    if (threw) {
      if (options_.on_protocol_error) options_.on_protocol_error(ProtocolError::kHandlerException);
      co_return;
    }
    if (!exchange.keep_alive() || !stream.socket().is_open()) {
      stream.socket().shutdown(tcp::socket::shutdown_send, ec);
      co_return;
    }
  }
}

}  // namespace infergrid::http
