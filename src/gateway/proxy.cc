#include "gateway/proxy.h"

#include <sys/socket.h>

#include <array>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>

#include "gateway/openai.h"

namespace infergrid::gateway {

using namespace infergrid::http;

namespace {

bool IsHopByHop(bhttp::field f, std::string_view name) {
  switch (f) {
    case bhttp::field::connection:
    case bhttp::field::keep_alive:
    case bhttp::field::proxy_authenticate:
    case bhttp::field::proxy_authorization:
    case bhttp::field::proxy_connection:
    case bhttp::field::te:
    case bhttp::field::trailer:
    case bhttp::field::transfer_encoding:
    case bhttp::field::upgrade:
    case bhttp::field::content_length:
    case bhttp::field::expect:  // the gateway already answered 100-continue and read the body
      return true;
    default:
      return false;
  }
}

}  // namespace

// One request under watch. All fields are touched on the worker's thread only.
struct ClientWatchList::Entry {
  http::tcp::socket* client = nullptr;  // valid while registered
  std::chrono::steady_clock::time_point since;
  bool watching = false;
  bool done = false;
  bool client_gone = false;
  beast::tcp_stream* upstream = nullptr;
};

namespace {

awaitable<void> WatchClient(std::shared_ptr<ClientWatchList::Entry> w) {
  while (true) {
    // The request may have finished before this coroutine ran; then the socket may be gone.
    if (w->done) co_return;
    tcp::socket& client = *w->client;
    error_code ec;
    co_await client.async_wait(tcp::socket::wait_read, with_ec(ec));
    if (w->done) co_return;
    if (!ec) {
      char byte;
      ssize_t n = ::recv(client.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n > 0) co_return;  // pipelined bytes of a next request: leave them to the server loop
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
    }
    w->client_gone = true;
    if (w->upstream) {
      error_code ignored;
      w->upstream->socket().shutdown(tcp::socket::shutdown_both, ignored);
      w->upstream->socket().close(ignored);
    }
    co_return;
  }
}

}  // namespace

ClientWatchList::ClientWatchList(asio::any_io_executor ex, Duration delay)
    : ex_(std::move(ex)), delay_(delay) {}

ClientWatchList::~ClientWatchList() { *stopped_ = true; }

void ClientWatchList::Start() {
  timer_ = std::make_unique<asio::steady_timer>(ex_);
  asio::co_spawn(ex_, Sweep(), asio::detached);
}

void ClientWatchList::Stop() {
  *stopped_ = true;
  // The timer is an I/O object: it must go before its io_context does. The suspended sweep
  // sees stopped_ and never touches it again.
  timer_.reset();
}

awaitable<void> ClientWatchList::Sweep() {
  auto stopped = stopped_;
  while (!*stopped) {
    timer_->expires_after(delay_ / 2);
    error_code ec;
    co_await timer_->async_wait(with_ec(ec));
    if (*stopped) co_return;
    auto now = std::chrono::steady_clock::now();
    for (auto& e : entries_) {
      if (!e->watching && now - e->since >= delay_) {
        e->watching = true;
        asio::co_spawn(ex_, WatchClient(e), asio::detached);
      }
    }
  }
}

std::unique_ptr<ClientWatchList::Handle> ClientWatchList::Watch(tcp::socket& client) {
  auto e = std::make_shared<Entry>();
  e->client = &client;
  e->since = std::chrono::steady_clock::now();
  entries_.push_back(e);
  return std::make_unique<Handle>(this, std::move(e));
}

ClientWatchList::Handle::~Handle() {
  entry_->done = true;
  entry_->upstream = nullptr;
  if (entry_->watching) {
    error_code ignored;
    entry_->client->cancel(ignored);  // wakes the watcher, which sees done and exits
  }
  entry_->client = nullptr;
  auto& v = list_->entries_;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == entry_) {
      v[i] = v.back();
      v.pop_back();
      break;
    }
  }
}

namespace {

bool Retryable(const error_code& ec) {
  return ec == asio::error::eof || ec == bhttp::error::end_of_stream ||
         ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         ec == bhttp::error::partial_message;
}

// The response head as HTTP/1.x text.
std::string SerializeHead(const bhttp::response<bhttp::empty_body>& head) {
  std::string out = head.version() == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
  out += std::to_string(head.result_int());
  out += ' ';
  out += head.reason();
  out += "\r\n";
  for (const auto& f : head) {
    out += f.name_string();
    out += ": ";
    out += f.value();
    out += "\r\n";
  }
  out += "\r\n";
  return out;
}

// Writes, in one gathered write: the head (if given), then `n` bytes of body framed as one
// chunk when `chunked`, then the last chunk when `chunked && last`.
awaitable<void> WriteOut(beast::tcp_stream& down, const std::string* head, bool chunked,
                         const char* data, size_t n, bool last, error_code& ec) {
  std::array<asio::const_buffer, 5> bufs;
  size_t count = 0;
  char size_line[24];
  if (head) bufs[count++] = asio::buffer(*head);
  if (chunked) {
    if (n > 0) {
      int len = std::snprintf(size_line, sizeof(size_line), "%zx\r\n", n);
      bufs[count++] = asio::buffer(size_line, static_cast<size_t>(len));
      bufs[count++] = asio::buffer(data, n);
      bufs[count++] = asio::buffer("\r\n", 2);
    }
    if (last) bufs[count++] = asio::buffer("0\r\n\r\n", 5);
  } else if (n > 0) {
    bufs[count++] = asio::buffer(data, n);
  }
  if (count == 0) co_return;
  co_await asio::async_write(down, std::span<const asio::const_buffer>(bufs.data(), count),
                             with_ec(ec));
}

awaitable<void> SendError(Exchange& ex, int status, const std::string& message,
                          const std::string& code) {
  ApiError e;
  e.status = status;
  e.message = message;
  e.type = status == 504 ? "timeout_error" : "upstream_error";
  e.code = code;
  StringResponse res{static_cast<bhttp::status>(status), 11};
  res.set(bhttp::field::content_type, "application/json");
  res.body() = ErrorJson(e);
  co_await ex.Respond(std::move(res));
}

}  // namespace

awaitable<ProxyOutcome> Forward(Exchange& ex, UpstreamPool& pool, ClientWatchList& watches,
                                const ProxyOptions& options,
                                std::chrono::steady_clock::time_point start,
                                const std::function<void()>& on_retry) {
  ProxyOutcome out;
  StringRequest& req = ex.request();
  // Forward the body unchanged; replace what belongs to the client's hop.
  for (auto it = req.begin(); it != req.end();) {
    if (IsHopByHop(it->name(), it->name_string())) {
      it = req.erase(it);
    } else {
      ++it;
    }
  }
  req.set(bhttp::field::host, pool.target().HostHeader());
  req.keep_alive(true);
  req.prepare_payload();

  auto watch_handle = watches.Watch(ex.stream().socket());
  ClientWatchList::Entry* watch = &watch_handle->entry();

  Lease lease;
  beast::flat_buffer upbuf;
  std::optional<bhttp::response_parser<bhttp::buffer_body>> parser_slot;
  error_code ec;
  for (int attempt = 0;; ++attempt) {
    out.attempts = attempt + 1;
    AcquireResult acq = co_await pool.Acquire(options.connect, /*fresh=*/attempt > 0);
    if (watch->client_gone) {
      out.client_gone = true;
      co_return out;
    }
    if (acq.error != AcquireError::kNone) {
      out.error = AcquireErrorName(acq.error);
      out.status = acq.error == AcquireError::kExhausted        ? 503
                   : acq.error == AcquireError::kConnectTimeout ? 504
                                                                : 502;
      co_await SendError(ex, out.status, "the model server could not be reached: " + acq.message,
                         out.error);
      co_return out;
    }
    lease = std::move(acq.lease);
    beast::tcp_stream& up = lease.stream();
    watch->upstream = &up;
    up.expires_after(options.first_byte);
    co_await bhttp::async_write(up, req, with_ec(ec));
    if (!ec) {
      upbuf.clear();
      // Interim 1xx responses are not relayed: read on to the final response.
      do {
        parser_slot.emplace();
        parser_slot->body_limit(boost::none);
        parser_slot->eager(true);
        co_await bhttp::async_read_header(up, upbuf, *parser_slot, with_ec(ec));
      } while (!ec && parser_slot->get().result_int() / 100 == 1);
    }
    if (watch->client_gone) {
      out.client_gone = true;
      co_return out;
    }
    if (!ec) break;
    watch->upstream = nullptr;
    bool reused = lease.reused();
    lease.Release(false);
    if (reused && attempt == 0 && Retryable(ec)) {
      // The server closed an idle keep-alive connection as we reused it: nothing was
      // processed, so resend once on a new connection.
      if (on_retry) on_retry();
      continue;
    }
    if (ec == beast::error::timeout) {
      out.error = "first_byte_timeout";
      out.status = 504;
      co_await SendError(ex, 504, "the model server did not respond in time", out.error);
    } else {
      out.error = "reset_before_response";
      out.status = 502;
      co_await SendError(
          ex, 502, "the model server closed the connection before responding: " + ec.message(),
          out.error);
    }
    co_return out;
  }

  beast::tcp_stream& up = lease.stream();
  auto& parser = *parser_slot;
  out.first_byte_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto& upres = parser.get();
  out.status = static_cast<int>(upres.result_int());

  bhttp::response<bhttp::empty_body> head{upres.result(), 11};
  for (const auto& f : upres) {
    if (!IsHopByHop(f.name(), f.name_string())) head.insert(f.name_string(), f.value());
  }
  // Framing towards the client: keep a known length; otherwise chunked for HTTP/1.1 clients,
  // and for HTTP/1.0 clients the raw body ended by closing the connection. Bodiless
  // responses (204, 304, a complete empty body) get no chunked framing.
  bool has_body = !parser.is_done();
  bool chunked = false;
  bool close_delimited = false;
  if (parser.content_length() && !parser.chunked()) {
    head.content_length(*parser.content_length());
  } else if (has_body && ex.client_version() >= 11) {
    head.chunked(true);
    chunked = true;
  } else if (has_body) {
    close_delimited = true;
    ex.close();
  }
  head.version(ex.client_version() == 10 ? 10 : 11);
  bool is_sse =
      upres[bhttp::field::content_type].find("text/event-stream") != std::string_view::npos;
  head.keep_alive(ex.keep_alive());
  beast::tcp_stream& down = ex.stream();
  // The head goes out with the first piece of body (one write, one segment for a small
  // response); with no body it goes out alone.
  std::string head_text = SerializeHead(head);
  bool head_sent = false;
  std::vector<char>& buf = ex.scratch();
  if (buf.size() < 16384) buf.resize(16384);
  bool upstream_ok = true;
  bool last = !has_body;
  while (true) {
    size_t n = 0;
    if (!last) {
      upres.body().data = buf.data();
      upres.body().size = buf.size();
      up.expires_after(options.idle);
      co_await bhttp::async_read_some(up, upbuf, parser, with_ec(ec));
      if (ec == bhttp::error::need_buffer) ec = {};
      n = buf.size() - upres.body().size;
      last = parser.is_done();
    }
    if (ec && watch->client_gone) {
      out.client_gone = true;
      co_return out;
    }
    if (ec && !head_sent) {
      // Nothing has reached the client yet: it can still get a clean error response.
      out.error = ec == beast::error::timeout ? "idle_timeout" : "reset_mid_stream";
      out.status = ec == beast::error::timeout ? 504 : 502;
      co_await SendError(ex, out.status, "the model server's response broke off: " + ec.message(),
                         out.error);
      co_return out;
    }
    if (n > 0 || (last && !ec) || !head_sent) {
      if (n == 0 && !last && !ec) continue;  // a chunk header only; nothing to send yet
      error_code wec;
      down.expires_after(options.idle);
      co_await WriteOut(down, head_sent ? nullptr : &head_text, chunked, buf.data(), n, last && !ec,
                        wec);
      head_sent = true;
      out.started = true;
      if (wec) {
        out.client_gone = true;
        co_return out;  // the lease is dropped: the upstream connection closes, cancelling it
      }
    }
    if (ec) {
      upstream_ok = false;
      out.error = ec == beast::error::timeout ? "idle_timeout" : "reset_mid_stream";
      break;
    }
    if (last) break;
  }
  watch->upstream = nullptr;

  error_code wec;
  down.expires_after(options.idle);
  if (!upstream_ok) {
    if (chunked && is_sse) {
      // End the stream with an error event the OpenAI clients surface, then end it cleanly.
      ApiError e;
      e.status = 502;
      e.type = "upstream_error";
      e.code = out.error;
      e.message = out.error == "idle_timeout" ? "the model server stopped sending mid-stream"
                                              : "the model server's connection was lost mid-stream";
      std::string event = "data: " + ErrorJson(e) + "\n\n";
      co_await WriteOut(down, nullptr, true, event.data(), event.size(), true, wec);
    }
    // Otherwise a chunked body without its last chunk, or a short content-length body, and
    // the close that follows, tell the client it was cut short.
    ex.close();
    error_code ignored;
    down.socket().shutdown(tcp::socket::shutdown_send, ignored);
    lease.Release(false);
    co_return out;
  }
  if (close_delimited) {
    error_code ignored;
    down.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }
  down.expires_never();
  // Reusable only if the response ended cleanly and nothing unasked-for followed it.
  lease.Release(parser.is_done() && parser.keep_alive() && upbuf.size() == 0);
  co_return out;
}

}  // namespace infergrid::gateway
