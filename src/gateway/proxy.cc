#include "gateway/proxy.h"

#include <sys/socket.h>

#include <array>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>

#include "gateway/openai.h"
#include "http/client_watch.h"
#include "http/read.h"

namespace infergrid::gateway {

using namespace infergrid::http;

namespace {

bool IsHopByHop(bhttp::field f) {
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

void AppendField(std::string* out, std::string_view name, std::string_view value) {
  out->append(name);
  out->append(": ");
  out->append(value);
  out->append("\r\n");
}

// The upstream request's head: the client's method, target and end-to-end headers, our Host,
// and the body's length. The body follows as sent.
std::string UpstreamHead(const StringRequest& req, const HostPort& target) {
  std::string out;
  out.reserve(256 + req.body().size() / 64);
  out.append(req.method_string());
  out.push_back(' ');
  out.append(req.target());
  out.append(" HTTP/1.1\r\n");
  for (const auto& f : req) {
    if (IsHopByHop(f.name()) || f.name() == bhttp::field::host) continue;
    AppendField(&out, f.name_string(), f.value());
  }
  AppendField(&out, "Host", target.HostHeader());
  AppendField(&out, "Content-Length", std::to_string(req.body().size()));
  out.append("\r\n");
  return out;
}

// Writes, in one gathered write: the head (if given), then `n` bytes of body framed as one
// chunk when `chunked`, then the last chunk when `chunked && last`.
awaitable<void> WriteOut(tcp::socket& down, const std::string* head, bool chunked, const char* data,
                         size_t n, bool last, error_code& ec) {
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

}  // namespace

awaitable<void> RespondUpstreamError(Exchange& ex, int status, const std::string& message,
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

namespace {

awaitable<void> SendError(Exchange& ex, int status, const std::string& message,
                          const std::string& code) {
  co_await RespondUpstreamError(ex, status, message, code);
}

// Whether a failure on a reused connection means the server had closed it before seeing our
// request: the connection ended before any response byte. (Once a byte came back the request
// was processed, and resending would run the generation twice.)
bool Retryable(const error_code& ec) {
  return ec == asio::error::eof || ec == bhttp::error::end_of_stream ||
         ec == asio::error::connection_reset || ec == asio::error::broken_pipe;
}

// The state of one proxied request that outlives-safe callbacks may see. Touched on the
// worker's thread only.
struct Shared {
  tcp::socket* client = nullptr;  // valid while !done
  tcp::socket* upstream = nullptr;
  bool done = false;
  bool client_gone = false;
  bool writing_client = false;  // a write to the client is in progress
};

void CloseUpstream(Shared& s) {
  if (s.upstream) {
    error_code ignored;
    s.upstream->shutdown(tcp::socket::shutdown_both, ignored);
    s.upstream->close(ignored);
  }
}

// Waits on the client's socket; if the client closes, closes the upstream connection at once
// so the server sees the cancellation.
awaitable<void> WatchClient(std::shared_ptr<Shared> w) {
  if (w->done) co_return;  // the request finished first; the socket may be gone
  // Named, not a temporary in the co_await expression: GCC 12 may destroy such temporaries
  // twice across the suspension.
  std::function<bool()> stopped = [w] { return w->done; };
  bool gone = co_await AwaitClientClose(*w->client, stopped);
  if (gone) {
    w->client_gone = true;
    CloseUpstream(*w);
  }
}

// Starts watching the client once the request has been in flight for a while: a request
// answered quickly never pays for a watcher (a readiness wait re-arms epoll: a syscall).
class WatchStarter : public Deadlines::Item {
 public:
  WatchStarter(Deadlines* d, std::shared_ptr<Shared> s, asio::any_io_executor ex)
      : Item(d), shared_(std::move(s)), ex_(std::move(ex)) {}
  bool started() const { return started_; }

 protected:
  void OnExpire() override {
    started_ = true;
    asio::co_spawn(ex_, WatchClient(shared_), asio::detached);
  }

 private:
  std::shared_ptr<Shared> shared_;
  asio::any_io_executor ex_;
  bool started_ = false;
};

// The request's current timeout (first byte, then idle between pieces, either side). On
// expiry it closes the upstream connection and cancels the client's pending write.
class Timeout : public Deadlines::Item {
 public:
  Timeout(Deadlines* d, Shared* s) : Item(d), shared_(s) {}

 protected:
  void OnExpire() override {
    // Closing is sticky: an operation started after this (a cancel could race a completion
    // already queued) fails at once rather than waiting without a deadline.
    CloseUpstream(*shared_);
    if (shared_->client && shared_->writing_client) {
      // The client stopped reading mid-response: the response is lost anyway.
      error_code ignored;
      shared_->client->shutdown(tcp::socket::shutdown_both, ignored);
    }
  }

 private:
  Shared* shared_;
};

constexpr auto kWatchDelay = std::chrono::milliseconds(50);

}  // namespace

awaitable<ProxyOutcome> Forward(Exchange& ex, UpstreamPool& pool, const ProxyOptions& options,
                                std::chrono::steady_clock::time_point start,
                                const ProxyHooks& hooks) {
  ProxyOutcome out;
  const StringRequest& req = ex.request();
  std::string up_head = UpstreamHead(req, pool.target());
  std::array<asio::const_buffer, 2> up_request = {asio::buffer(up_head), asio::buffer(req.body())};

  tcp::socket& down = ex.stream().socket();
  auto shared = std::make_shared<Shared>();
  shared->client = &down;
  WatchStarter watch(ex.deadlines(), shared, down.get_executor());
  watch.ArmAfter(kWatchDelay);
  Timeout timeout(ex.deadlines(), shared.get());
  struct Finish {
    Shared& s;
    WatchStarter& w;
    ~Finish() {
      s.done = true;
      s.upstream = nullptr;
      if (w.started()) {
        error_code ignored;
        s.client->cancel(ignored);  // wakes the watcher, which sees done and exits
      }
      s.client = nullptr;
    }
  } finish{*shared, watch};

  Lease lease;
  beast::flat_buffer& upbuf = ex.scratch().upstream;
  std::optional<bhttp::response_parser<bhttp::buffer_body>> parser_slot;
  error_code ec;
  for (int attempt = 0;; ++attempt) {
    out.attempts = attempt + 1;
    AcquireResult acq = co_await pool.Acquire(options.connect, /*fresh=*/attempt > 0);
    if (shared->client_gone) {
      out.client_gone = true;
      co_return out;
    }
    if (acq.error != AcquireError::kNone) {
      out.error = AcquireErrorName(acq.error);
      out.status = acq.error == AcquireError::kExhausted        ? 503
                   : acq.error == AcquireError::kConnectTimeout ? 504
                                                                : 502;
      out.message = "the model server could not be reached: " + acq.message;
      if (hooks.hold_retryable) {
        out.retryable = true;
        co_return out;
      }
      co_await SendError(ex, out.status, out.message, out.error);
      co_return out;
    }
    lease = std::move(acq.lease);
    tcp::socket& up = lease.stream().socket();
    shared->upstream = &up;
    timeout.ArmAfter(options.first_byte);
    co_await asio::async_write(up, up_request, with_ec(ec));
    if (!ec) {
      upbuf.clear();
      // Interim 1xx responses are not relayed: read on to the final response.
      do {
        parser_slot.emplace();
        parser_slot->body_limit(boost::none);
        parser_slot->header_limit(64 << 10);
        ec = co_await ReadMessage(up, upbuf, *parser_slot, /*header_only=*/true, &timeout);
      } while (!ec && parser_slot->get().result_int() / 100 == 1);
    }
    if (shared->client_gone) {
      out.client_gone = true;
      co_return out;
    }
    if (!ec) break;
    shared->upstream = nullptr;
    bool reused = lease.reused();
    lease.Release(false);
    if (timeout.fired()) {
      out.error = "first_byte_timeout";
      out.status = 504;
      co_await SendError(ex, 504, "the model server did not respond in time", out.error);
      co_return out;
    }
    if (reused && attempt == 0 && !parser_slot->got_some() && Retryable(ec)) {
      // The server closed an idle keep-alive connection as we reused it: nothing was
      // processed, so resend once on a new connection.
      if (hooks.on_retry) hooks.on_retry();
      continue;
    }
    if (ec.category() == bhttp::make_error_code(bhttp::error::header_limit).category()) {
      out.error = "bad_response";
      out.status = 502;
      co_await SendError(ex, 502, "the model server sent a malformed response: " + ec.message(),
                         out.error);
      co_return out;
    }
    out.error = "reset_before_response";
    out.status = 502;
    out.message = "the model server closed the connection before responding: " + ec.message();
    if (hooks.hold_retryable) {
      out.retryable = true;
      co_return out;
    }
    co_await SendError(ex, 502, out.message, out.error);
    co_return out;
  }

  tcp::socket& up = lease.stream().socket();
  auto& parser = *parser_slot;
  out.first_byte_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto& upres = parser.get();
  out.status = static_cast<int>(upres.result_int());
  if (out.status == 503 && hooks.hold_retryable) {
    // The server will not take it (draining, or not ready): another may. Its body is not
    // read, so the connection goes.
    out.first_byte_seconds = -1;
    out.error = "unavailable";
    out.message = "the model server is unavailable (503)";
    out.retryable = true;
    shared->upstream = nullptr;
    lease.Release(false);
    co_return out;
  }

  // Framing towards the client: keep a known length; otherwise chunked for HTTP/1.1 clients,
  // and for HTTP/1.0 clients the raw body ended by closing the connection. Bodiless
  // responses (204, 304, a complete empty body) get no chunked framing.
  bool has_body = !parser.is_done();
  bool chunked = false;
  bool close_delimited = false;
  bool http10 = ex.client_version() == 10;
  if (has_body && !(parser.content_length() && !parser.chunked())) {
    if (http10) {
      close_delimited = true;
      ex.close();
    } else {
      chunked = true;
    }
  }
  std::string head_text = http10 ? "HTTP/1.0 " : "HTTP/1.1 ";
  head_text += std::to_string(out.status);
  head_text += ' ';
  head_text += upres.reason();
  head_text += "\r\n";
  for (const auto& f : upres) {
    if (!IsHopByHop(f.name())) AppendField(&head_text, f.name_string(), f.value());
  }
  if (parser.content_length() && !parser.chunked()) {
    AppendField(&head_text, "Content-Length", std::to_string(*parser.content_length()));
  } else if (chunked) {
    AppendField(&head_text, "Transfer-Encoding", "chunked");
  }
  if (http10 && ex.keep_alive()) AppendField(&head_text, "Connection", "keep-alive");
  if (!http10 && !ex.keep_alive()) AppendField(&head_text, "Connection", "close");
  head_text += "\r\n";
  bool is_sse =
      upres[bhttp::field::content_type].find("text/event-stream") != std::string_view::npos;

  // The head goes out with the first piece of body (one write, one segment for a small
  // response); with no body it goes out alone.
  bool head_sent = false;
  std::vector<char>& buf = ex.scratch().relay;
  if (buf.size() < kReadChunk) buf.resize(kReadChunk);
  bool upstream_ok = true;
  bool timed_out = false;
  bool last = !has_body;
  bool first_body = true;
  while (true) {
    size_t n = 0;
    if (!last) {
      // Parse what is buffered into `buf`; read from the socket only when it is exhausted.
      upres.body().data = buf.data();
      upres.body().size = buf.size();
      while (true) {
        if (upbuf.size() > 0) {
          size_t used = parser.put(upbuf.data(), ec);
          upbuf.consume(used);
          if (ec == bhttp::error::need_buffer || ec == bhttp::error::need_more) ec = {};
          if (ec || parser.is_done() || upres.body().size < buf.size()) break;
          if (used > 0 && upbuf.size() > 0) continue;
        }
        if (timeout.fired()) {  // expired while we were not waiting: still a timeout
          timed_out = true;
          ec = asio::error::timed_out;
          break;
        }
        timeout.ArmAfter(options.idle);
        size_t got = co_await up.async_read_some(upbuf.prepare(kReadChunk), with_ec(ec));
        if (ec && timeout.fired()) timed_out = true;
        if (ec) {
          if (ec == asio::error::eof) {
            // A body delimited by the server's close ends here; any other is cut short.
            parser.put_eof(ec);
          }
          break;
        }
        upbuf.commit(got);
      }
      n = buf.size() - upres.body().size;
      last = parser.is_done();
    }
    if (ec && shared->client_gone) {
      out.client_gone = true;
      co_return out;
    }
    std::string kind = !ec ? "" : timed_out ? "idle_timeout" : "reset_mid_stream";
    if (ec && !head_sent) {
      // Nothing has reached the client yet: it can still get a clean error response.
      out.error = kind;
      out.status = timed_out ? 504 : 502;
      co_await SendError(ex, out.status, "the model server's response broke off: " + ec.message(),
                         out.error);
      co_return out;
    }
    if (n > 0 && hooks.on_body) hooks.on_body(std::string_view(buf.data(), n));
    if ((n > 0 || last) && first_body) {
      first_body = false;
      if (hooks.on_first_body) hooks.on_first_body();
    }
    if (n > 0 || (last && !ec) || !head_sent) {
      if (n == 0 && !last && !ec) continue;  // a chunk header only; nothing to send yet
      error_code wec;
      if (timeout.fired()) timed_out = true;
      timeout.ArmAfter(options.idle);
      shared->writing_client = true;
      co_await WriteOut(down, head_sent ? nullptr : &head_text, chunked, buf.data(), n, last && !ec,
                        wec);
      shared->writing_client = false;
      head_sent = true;
      out.started = true;
      if (wec || timeout.fired()) {
        // The client left or stopped reading: whatever it got of this response is cut, so this
        // connection must not carry another. Dropping the lease closes the upstream connection,
        // which cancels the request there.
        out.client_gone = true;
        ex.close();
        error_code ignored;
        down.shutdown(tcp::socket::shutdown_both, ignored);
        co_return out;
      }
    }
    if (ec) {
      upstream_ok = false;
      out.error = kind;
      break;
    }
    if (last) break;
  }
  shared->upstream = nullptr;
  timeout.Disarm();

  if (!upstream_ok) {
    error_code wec;
    if (chunked && is_sse) {
      // End the stream with an error event the OpenAI clients surface, then end it cleanly.
      ApiError e;
      e.status = 502;
      e.type = "upstream_error";
      e.code = out.error;
      e.message = out.error == "idle_timeout" ? "the model server stopped sending mid-stream"
                                              : "the model server's connection was lost mid-stream";
      std::string event = "data: " + ErrorJson(e) + "\n\n";
      timeout.ArmAfter(options.idle);
      co_await WriteOut(down, nullptr, true, event.data(), event.size(), true, wec);
      timeout.Disarm();
    }
    // Otherwise a chunked body without its last chunk, or a short content-length body, and
    // the close that follows, tell the client it was cut short.
    ex.close();
    error_code ignored;
    down.shutdown(tcp::socket::shutdown_send, ignored);
    lease.Release(false);
    co_return out;
  }
  if (close_delimited) {
    error_code ignored;
    down.shutdown(tcp::socket::shutdown_send, ignored);
  }
  // Reusable only if the response ended cleanly and nothing unasked-for followed it.
  lease.Release(parser.is_done() && parser.keep_alive() && upbuf.size() == 0);
  co_return out;
}

}  // namespace infergrid::gateway
