#pragma once
// Noticing that a client has gone while its request is being worked on (queued or relayed),
// so the work can stop at once. A readiness wait on the client's socket: readable with
// nothing to read means it closed (or reset). Bytes of a next, pipelined request end the
// watch without a verdict (they are left for the server to read).

#include <cerrno>
#include <functional>

#include "http/asio.h"

namespace infergrid::http {

// Waits until the client closes (true), or until `stopped()` holds when the wait wakes or
// bytes of a pipelined request arrive (false). The caller stops it by making `stopped()` true
// and cancelling the socket's operations; `client` is not touched once `stopped()` holds.
inline awaitable<bool> AwaitClientClose(tcp::socket& client, std::function<bool()> stopped) {
  while (!stopped()) {
    error_code ec;
    co_await client.async_wait(tcp::socket::wait_read, with_ec(ec));
    if (stopped()) co_return false;
    // A timeout cancelling another operation on the socket also wakes this wait: look again.
    if (ec == asio::error::operation_aborted) continue;
    if (!ec) {
      char byte;
      ssize_t n = ::recv(client.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n > 0) co_return false;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
    }
    co_return true;
  }
  co_return false;
}

}  // namespace infergrid::http
