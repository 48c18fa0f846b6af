#pragma once
// Reading an HTTP message from a plain socket into a Beast parser: one read syscall at a time,
// parsing what is buffered first. Cheaper than Beast's composed read operations on a
// tcp_stream (no per-operation timer or executor work tracking); timeouts come from the
// caller's Deadlines item.

#include "http/asio.h"
#include "http/deadlines.h"

namespace infergrid::http {

inline constexpr size_t kReadChunk = 16384;

// Reads until the header (header_only) or the whole message is parsed. Returns the parser's
// or the socket's error; end of stream before completion is reported as such. If `deadline`
// has fired, no further read is started (a cancel that raced a completion is not lost):
// operation_aborted is returned and deadline->fired() tells it was a timeout.
template <bool isRequest, class Body, class Allocator>
awaitable<error_code> ReadMessage(tcp::socket& sock, beast::flat_buffer& buf,
                                  bhttp::parser<isRequest, Body, Allocator>& p, bool header_only,
                                  const Deadlines::Item* deadline = nullptr) {
  while (true) {
    if (buf.size() > 0) {
      error_code ec;
      size_t used = p.put(buf.data(), ec);
      buf.consume(used);
      if (ec == bhttp::error::need_more) {
        ec = {};
      } else if (ec) {
        co_return ec;
      }
      if (header_only ? p.is_header_done() : p.is_done()) co_return error_code{};
      if (used > 0 && buf.size() > 0) continue;
    }
    if (deadline && deadline->fired()) co_return error_code(asio::error::operation_aborted);
    error_code ec;
    size_t n = co_await sock.async_read_some(buf.prepare(kReadChunk), with_ec(ec));
    if (ec) {
      if (ec == asio::error::eof && p.got_some()) {
        error_code eof_ec;
        p.put_eof(eof_ec);
        if (!eof_ec && (header_only ? p.is_header_done() : p.is_done())) co_return error_code{};
        co_return eof_ec ? eof_ec : error_code(bhttp::error::partial_message);
      }
      co_return ec;
    }
    buf.commit(n);
  }
}

}  // namespace infergrid::http
