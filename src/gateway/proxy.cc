#include "gateway/proxy.h"

#include <sys/socket.h>

#include <array>
#include <memory>
#include <optional>

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

// Watches the client's socket while the upstream works. On the client's close it cancels
// the upstream request by closing that connection. Single-threaded with the proxy: all state
// is touched on the worker's thread only.
struct Watch {
  bool done = false;
  bool client_gone = false;
  beast::tcp_stream* upstream = nullptr;
};

awaitable<void> WatchClient(tcp::socket& client, std::shared_ptr<Watch> w) {
  while (true) {
    // The proxy may have finished before this coroutine first ran.
    if (w->done) co_return;
    error_code ec;
    co_await client.async_wait(tcp::socket::wait_read, with_ec(ec));
    if (w->done) co_return;  // the proxy finished; `client` may be gone, touch nothing
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

bool Retryable(const error_code& ec) {
  return ec == asio::error::eof || ec == bhttp::error::end_of_stream || ec == asio::error::connection_reset ||
         ec == asio::error::broken_pipe || ec == bhttp::error::partial_message;
}

awaitable<void> SendError(Exchange& ex, int status, const std::string& message, const std::string& code) {
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

awaitable<ProxyOutcome> Forward(Exchange& ex, UpstreamPool& pool, const ProxyOptions& options,
                                std::chrono::steady_clock::time_point start, const std::function<void()>& on_retry) {
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

  auto watch = std::make_shared<Watch>();
  tcp::socket& client = ex.stream().socket();
  asio::co_spawn(client.get_executor(), WatchClient(client, watch), asio::detached);
  struct StopWatching {
    std::shared_ptr<Watch> w;
    tcp::socket& client;
    ~StopWatching() {
      w->done = true;
      w->upstream = nullptr;
      error_code ignored;
      client.cancel(ignored);
    }
  } stop_watching{watch, client};

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
      out.status = acq.error == AcquireError::kExhausted ? 503 : acq.error == AcquireError::kConnectTimeout ? 504 : 502;
      co_await SendError(ex, out.status, "the model server could not be reached: " + acq.message, out.error);
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
      co_await SendError(ex, 502, "the model server closed the connection before responding: " + ec.message(),
                         out.error);
    }
    co_return out;
  }

  beast::tcp_stream& up = lease.stream();
  auto& parser = *parser_slot;
  out.first_byte_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
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
  bool is_sse = upres[bhttp::field::content_type].find("text/event-stream") != std::string_view::npos;
  head.keep_alive(ex.keep_alive());
  beast::tcp_stream& down = ex.stream();
  down.expires_after(options.idle);
  bhttp::response_serializer<bhttp::empty_body> sr{head};
  co_await bhttp::async_write_header(down, sr, with_ec(ec));
  if (ec) {
    out.client_gone = true;
    co_return out;
  }
  out.started = true;

  std::array<char, 16384> buf;
  bool upstream_ok = true;
  while (has_body && !parser.is_done()) {
    upres.body().data = buf.data();
    upres.body().size = buf.size();
    up.expires_after(options.idle);
    co_await bhttp::async_read_some(up, upbuf, parser, with_ec(ec));
    if (ec == bhttp::error::need_buffer) ec = {};
    size_t n = buf.size() - upres.body().size;
    if (n > 0) {
      error_code wec;
      down.expires_after(options.idle);
      if (chunked) {
        co_await asio::async_write(down, bhttp::make_chunk(asio::buffer(buf.data(), n)), with_ec(wec));
      } else {
        co_await asio::async_write(down, asio::buffer(buf.data(), n), with_ec(wec));
      }
      if (wec) {
        out.client_gone = true;
        co_return out;  // the lease is dropped: the upstream connection closes, cancelling it
      }
    }
    if (ec) {
      if (watch->client_gone) {
        out.client_gone = true;
        co_return out;
      }
      upstream_ok = false;
      out.error = ec == beast::error::timeout ? "idle_timeout" : "reset_mid_stream";
      break;
    }
  }
  watch->upstream = nullptr;

  error_code wec;
  down.expires_after(options.idle);
  if (!upstream_ok) {
    if (chunked) {
      // End the stream with an error event the OpenAI clients surface, then end it cleanly.
      if (is_sse) {
        ApiError e;
        e.status = 502;
        e.type = "upstream_error";
        e.code = out.error;
        e.message = out.error == "idle_timeout" ? "the model server stopped sending mid-stream"
                                                : "the model server's connection was lost mid-stream";
        std::string event = "data: " + ErrorJson(e) + "\n\n";
        co_await asio::async_write(down, bhttp::make_chunk(asio::buffer(event)), with_ec(wec));
        if (!wec) co_await asio::async_write(down, bhttp::make_chunk_last(), with_ec(wec));
      }
      // Otherwise a chunked body that ends without its last chunk tells the client it was cut.
      ex.close();
    } else {
      ex.close();  // a short content-length body: closing is the only honest signal
    }
    error_code ignored;
    down.socket().shutdown(tcp::socket::shutdown_send, ignored);
    lease.Release(false);
    co_return out;
  }
  if (chunked) co_await asio::async_write(down, bhttp::make_chunk_last(), with_ec(wec));
  if (close_delimited) {
    error_code ignored;
    down.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }
  down.expires_never();
  if (wec) out.client_gone = true;
  // Reusable only if the response ended cleanly and nothing unasked-for followed it.
  lease.Release(parser.is_done() && parser.keep_alive() && upbuf.size() == 0);
  co_return out;
}

}  // namespace infergrid::gateway
