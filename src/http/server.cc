#include "http/server.h"

#include <fmt/format.h>
#include <sys/socket.h>

#include <future>

#include "common/log.h"
#include "http/read.h"

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
  for (auto* io : workers_) {
    deadlines_.push_back(
        std::make_unique<Deadlines>(io->get_executor(), std::chrono::milliseconds(10)));
  }
}

Server::~Server() = default;

void Server::Shutdown() {
  acceptors_.clear();
  for (auto& d : deadlines_) d->Stop();
}

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
  for (auto& d : deadlines_) d->Start();
  for (size_t i = 0; i < acceptors_.size(); ++i) {
    asio::co_spawn(*workers_[i], Accept(*acceptors_[i], i), asio::detached);
  }
  return Status::Ok();
}

void Server::StopAccepting(bool wait) {
  std::vector<std::future<void>> closed;
  for (size_t i = 0; i < acceptors_.size(); ++i) {
    auto* acc = acceptors_[i].get();
    auto done = std::make_shared<std::promise<void>>();
    closed.push_back(done->get_future());
    asio::post(*workers_[i], [this, acc, done, i] {
      // Connections the kernel already queued on this socket would be reset by the close
      // (SO_REUSEPORT does not hand them to the other sockets of the port unless
      // net.ipv4.tcp_migrate_req is set): take them in first and serve them.
      error_code ec;
      acc->non_blocking(true, ec);
      while (!ec) {
        tcp::socket s(*workers_[i]);
        acc->accept(s, ec);
        if (ec) break;
        error_code ignored;
        s.set_option(tcp::no_delay(true), ignored);
        accepted_.fetch_add(1);
        asio::co_spawn(*workers_[i], Serve(std::move(s), i), asio::detached);
      }
      acc->close(ec);
      done->set_value();
    });
  }
  if (!wait) return;
  for (auto& f : closed) f.wait_for(std::chrono::seconds(5));
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
bool IsClose(const error_code& ec) {
  return ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::operation_aborted ||
         ec == bhttp::error::partial_message;
}
}  // namespace

awaitable<void> Server::Serve(tcp::socket socket, size_t worker) {
  open_connections_->fetch_add(1);
  struct Counter {
    std::shared_ptr<std::atomic<uint64_t>> n;
    ~Counter() { n->fetch_sub(1); }
  } counter{open_connections_};

  beast::tcp_stream stream(std::move(socket));
  tcp::socket& sock = stream.socket();
  // One coarse deadline per connection, re-armed for each phase; on expiry it cancels the
  // socket's pending operation, which then fails with operation_aborted and fired() set.
  Deadlines::SocketItem deadline(deadlines_[worker].get(), &sock);
  beast::flat_buffer buffer;
  ConnectionScratch scratch;
  bool first = true;
  while (true) {
    error_code ec;
    bhttp::request_parser<bhttp::string_body> parser;
    parser.header_limit(options_.max_header_bytes);
    parser.body_limit(options_.max_body_bytes);

    if (!first && buffer.size() == 0) {
      // Keep-alive: wait for the next request's first byte within the idle timeout.
      deadline.ArmAfter(options_.idle_timeout);
      size_t n = co_await sock.async_read_some(buffer.prepare(kReadChunk), with_ec(ec));
      if (ec) co_return;  // closed by the client, or idle too long
      buffer.commit(n);
    }
    first = false;

    deadline.ArmAfter(options_.header_timeout);
    ec = co_await ReadMessage(sock, buffer, parser, /*header_only=*/true, &deadline);
    if (ec) {
      deadline.Disarm();
      if (deadline.fired()) {
        co_await RespondProtocolError(stream, 408, "the request headers were not received in time",
                                      "request_timeout", ProtocolError::kHeaderTimeout);
      } else if (ec == bhttp::error::header_limit) {
        co_await RespondProtocolError(stream, 431, "the request headers are larger than the limit",
                                      "request_header_fields_too_large",
                                      ProtocolError::kHeadersTooLarge);
      } else if (ec == bhttp::error::body_limit) {
        co_await RespondProtocolError(stream, 413, "the request body is larger than the limit",
                                      "request_too_large", ProtocolError::kBodyTooLarge);
      } else if (!IsClose(ec)) {
        co_await RespondProtocolError(stream, 400, "malformed HTTP request: " + ec.message(),
                                      "bad_request", ProtocolError::kBadRequest);
      }
      co_return;
    }
    // Reject an oversized declared body before reading it.
    if (auto len = parser.content_length(); len && *len > options_.max_body_bytes) {
      deadline.Disarm();
      co_await RespondProtocolError(stream, 413, "the request body is larger than the limit",
                                    "request_too_large", ProtocolError::kBodyTooLarge);
      co_return;
    }
    deadline.ArmAfter(options_.body_timeout);
    if (parser.get()[bhttp::field::expect] == "100-continue" && parser.get().version() == 11 &&
        !parser.is_done()) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      co_await asio::async_write(sock, asio::buffer(kContinue), with_ec(ec));
      if (ec) co_return;
    }
    if (!parser.is_done()) {
      parser.eager(true);
      ec = co_await ReadMessage(sock, buffer, parser, /*header_only=*/false, &deadline);
    }
    deadline.Disarm();
    if (ec) {
      if (deadline.fired()) {
        co_await RespondProtocolError(stream, 408, "the request body was not received in time",
                                      "request_timeout", ProtocolError::kBodyTimeout);
      } else if (ec == bhttp::error::body_limit) {
        co_await RespondProtocolError(stream, 413, "the request body is larger than the limit",
                                      "request_too_large", ProtocolError::kBodyTooLarge);
      } else if (!IsClose(ec)) {
        co_await RespondProtocolError(stream, 400, "malformed HTTP request body: " + ec.message(),
                                      "bad_request", ProtocolError::kBadRequest);
      }
      co_return;
    }

    StringRequest request = parser.release();
    Exchange exchange(stream, request, worker, options_.write_timeout, scratch,
                      deadlines_[worker].get(), draining_.get());
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
    if (!exchange.keep_alive() || !sock.is_open()) {
      sock.shutdown(tcp::socket::shutdown_send, ec);
      co_return;
    }
  }
}

}  // namespace infergrid::http
