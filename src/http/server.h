#pragma once
// An HTTP/1.1 server on Asio/Beast. Each worker io_context (one thread each) has its own
// acceptor on the shared port (SO_REUSEPORT), so a connection lives on one thread for its whole
// life and handlers need no locks for per-connection state.
//
// Protocol errors (headers over the limit, body over the limit, headers too slow, malformed
// HTTP) are answered by the server itself through ServerOptions::error_body and counted
// through ServerOptions::on_protocol_error; the handler sees only well-formed requests.

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/duration.h"
#include "common/result.h"
#include "http/asio.h"
#include "http/deadlines.h"

namespace infergrid::http {

// Buffers owned by a connection and reused by each of its requests, so the request path does
// not allocate them anew (a relay buffer, and a read buffer for the upstream response).
struct ConnectionScratch {
  std::vector<char> relay;
  beast::flat_buffer upstream;
};

// One request and its connection, handed to the handler.
class Exchange {
 public:
  Exchange(beast::tcp_stream& stream, StringRequest& request, size_t worker, Duration write_timeout,
           ConnectionScratch& scratch, Deadlines* deadlines,
           const std::atomic<bool>* draining = nullptr)
      : draining_(draining),
        stream_(stream),
        request_(request),
        worker_(worker),
        write_timeout_(write_timeout),
        client_keep_alive_(request.keep_alive()),
        client_version_(request.version()),
        scratch_(scratch),
        deadlines_(deadlines) {}
  // The worker's coarse deadline service, for timeouts of work done for this request.
  Deadlines* deadlines() { return deadlines_; }
  ConnectionScratch& scratch() { return scratch_; }
  // The index of the worker thread serving this connection (for worker-local state).
  size_t worker() const { return worker_; }
  StringRequest& request() { return request_; }
  beast::tcp_stream& stream() { return stream_; }

  // Writes a complete response within the write timeout. Sets keep-alive from the request
  // unless close() was called.
  awaitable<error_code> Respond(StringResponse response);

  // Whether the connection may serve another request after this one: what the client asked
  // for when the request arrived (a handler may rewrite the request's own headers).
  // Not while the server drains: its responses carry Connection: close.
  bool keep_alive() const {
    return keep_alive_ && client_keep_alive_ &&
           !(draining_ && draining_->load(std::memory_order_relaxed));
  }
  void close() { keep_alive_ = false; }
  // The client's HTTP version: 10 or 11.
  unsigned client_version() const { return client_version_; }

 private:
  const std::atomic<bool>* draining_;
  beast::tcp_stream& stream_;
  StringRequest& request_;
  size_t worker_;
  Duration write_timeout_;
  bool client_keep_alive_;
  unsigned client_version_;
  ConnectionScratch& scratch_;
  Deadlines* deadlines_;
  bool keep_alive_ = true;
};

using Handler = std::function<awaitable<void>(Exchange&)>;

enum class ProtocolError {
  kHeadersTooLarge,
  kBodyTooLarge,
  kHeaderTimeout,
  kBodyTimeout,
  kBadRequest,
  kHandlerException,  // a bug: the handler threw; the connection was closed
};

struct ServerOptions {
  uint32_t max_header_bytes = 32 << 10;
  uint64_t max_body_bytes = 16 << 20;
  Duration header_timeout =
      std::chrono::seconds(10);                       // from first byte (or accept) to full headers
  Duration body_timeout = std::chrono::seconds(60);   // to receive the whole body
  Duration idle_timeout = std::chrono::seconds(60);   // keep-alive wait for the next request
  Duration write_timeout = std::chrono::seconds(60);  // to write one response (Exchange::Respond)
  // Renders the body of a protocol error response (status, message, code). Default: plain JSON.
  std::function<std::string(int, const std::string&, const std::string&)> error_body;
  std::function<void(ProtocolError)> on_protocol_error;
};

class Server {
 public:
  // `workers` must outlive the server and be run by the caller, one thread each.
  Server(std::vector<asio::io_context*> workers, ServerOptions options, Handler handler);
  ~Server();

  // Binds host:port (port 0 picks one) on every worker. Call once, before running workers.
  Status Listen(const std::string& host, uint16_t port);
  uint16_t port() const { return port_; }

  // Stops accepting; open connections finish their current request. Connections already
  // queued on the listening sockets are accepted and served first. With `wait`, returns once
  // every listening socket is closed (the workers must be running): from then on a replica
  // sharing the port (SO_REUSEPORT) gets every new connection.
  void StopAccepting(bool wait = false);
  // From now on every response says Connection: close and its connection closes after it
  // (a graceful shutdown: clients reconnect to another replica). Thread-safe.
  void SetDraining() { draining_->store(true); }

  // Releases the server's I/O objects. Call after the workers stopped running and before
  // their io_contexts are destroyed; destroy the Server itself only after those.
  void Shutdown();

  Deadlines* deadlines(size_t worker) { return deadlines_[worker].get(); }

  uint64_t open_connections() const { return open_connections_->load(); }
  uint64_t accepted_connections() const { return accepted_.load(); }

 private:
  awaitable<void> Accept(tcp::acceptor& acceptor, size_t worker);
  awaitable<void> Serve(tcp::socket socket, size_t worker);
  awaitable<void> RespondProtocolError(beast::tcp_stream& stream, int status,
                                       const std::string& message, const std::string& code,
                                       ProtocolError kind);

  std::vector<asio::io_context*> workers_;
  ServerOptions options_;
  Handler handler_;
  std::vector<std::unique_ptr<tcp::acceptor>> acceptors_;
  std::vector<std::unique_ptr<Deadlines>> deadlines_;  // one per worker
  uint16_t port_ = 0;
  // Shared with connection coroutines, whose frames may be destroyed after the server (when
  // their io_context is torn down).
  std::shared_ptr<std::atomic<uint64_t>> open_connections_ =
      std::make_shared<std::atomic<uint64_t>>(0);
  std::atomic<uint64_t> accepted_{0};
  std::shared_ptr<std::atomic<bool>> draining_ = std::make_shared<std::atomic<bool>>(false);
};

}  // namespace infergrid::http
