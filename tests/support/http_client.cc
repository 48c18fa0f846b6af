#include "http_client.h"

#include <thread>

#include "common/strings.h"

namespace infergrid::testing {

using namespace infergrid::http;

namespace {
awaitable<void> DoRequest(uint16_t port, const RequestSpec& spec, HttpResult* out) {
  auto ex = co_await asio::this_coro::executor;
  beast::tcp_stream stream(ex);
  stream.expires_after(spec.timeout);
  error_code ec;
  co_await stream.async_connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port),
                                with_ec(ec));
  if (ec) {
    out->ec = ec;
    co_return;
  }
  StringRequest req{bhttp::string_to_verb(spec.method), spec.target, 11};
  req.set(bhttp::field::host, "127.0.0.1");
  for (const auto& [k, v] : spec.headers) req.set(k, v);
  if (!spec.body.empty() || spec.method == "POST") {
    if (req[bhttp::field::content_type].empty())
      req.set(bhttp::field::content_type, "application/json");
    req.body() = spec.body;
  }
  req.prepare_payload();
  co_await bhttp::async_write(stream, req, with_ec(ec));
  if (ec) {
    out->ec = ec;
    co_return;
  }
  beast::flat_buffer buf;
  bhttp::response_parser<bhttp::buffer_body> p;
  p.body_limit(boost::none);
  co_await bhttp::async_read_header(stream, buf, p, with_ec(ec));
  if (ec) {
    out->ec = ec;
    co_return;
  }
  out->status = static_cast<int>(p.get().result_int());
  for (const auto& f : p.get()) out->headers[AsciiLower(f.name_string())] = std::string(f.value());
  out->chunked = p.chunked();
  char data[8192];
  while (!p.is_done()) {
    p.get().body().data = data;
    p.get().body().size = sizeof(data);
    co_await bhttp::async_read_some(stream, buf, p, with_ec(ec));
    if (ec == bhttp::error::need_buffer) ec = {};
    size_t n = sizeof(data) - p.get().body().size;
    if (n > 0) {
      std::string piece(data, n);
      out->body += piece;
      out->pieces.push_back(piece);
      if (spec.on_piece && !spec.on_piece(piece)) {
        stream.socket().close(ec);
        co_return;
      }
    }
    if (ec) {
      out->ec = ec;
      co_return;
    }
  }
  out->complete = true;
}
}  // namespace

HttpResult Request(uint16_t port, const RequestSpec& spec) {
  HttpResult out;
  asio::io_context io;
  asio::co_spawn(io, DoRequest(port, spec, &out), asio::detached);
  io.run();
  return out;
}

HttpResult Get(uint16_t port, const std::string& target) {
  RequestSpec s;
  s.target = target;
  return Request(port, s);
}

HttpResult PostJson(uint16_t port, const std::string& target, const std::string& body,
                    std::map<std::string, std::string> headers) {
  RequestSpec s;
  s.method = "POST";
  s.target = target;
  s.body = body;
  s.headers = std::move(headers);
  return Request(port, s);
}

std::string RawExchange(uint16_t port, const std::string& bytes, std::chrono::milliseconds timeout,
                        size_t pause_after, std::chrono::milliseconds pause) {
  std::string out;
  asio::io_context io;
  asio::co_spawn(
      io,
      [&]() -> awaitable<void> {
        beast::tcp_stream stream(io);
        stream.expires_after(timeout);
        error_code ec;
        co_await stream.async_connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port),
                                      with_ec(ec));
        if (ec) co_return;
        std::string first = bytes.substr(0, std::min(pause_after, bytes.size()));
        co_await asio::async_write(stream, asio::buffer(first), with_ec(ec));
        if (pause_after < bytes.size()) {
          asio::steady_timer t(io);
          t.expires_after(pause);
          co_await t.async_wait(with_ec(ec));
          ec = {};
          co_await asio::async_write(stream, asio::buffer(bytes.substr(pause_after)), with_ec(ec));
        }
        char data[4096];
        while (true) {
          size_t n = co_await stream.async_read_some(asio::buffer(data), with_ec(ec));
          out.append(data, n);
          if (ec) co_return;
        }
      },
      asio::detached);
  io.run();
  return out;
}

bool WaitFor(const std::function<bool()>& cond, std::chrono::milliseconds timeout) {
  auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return cond();
}

}  // namespace infergrid::testing
