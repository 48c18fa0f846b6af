#pragma once
// Forwards one request to an upstream endpoint and relays the response to the client as it
// arrives: SSE streams chunk by chunk, never buffered whole; chunked and content-length
// bodies both. A client that goes away cancels the upstream request at once (its connection is
// closed, so the server sees it). Runs on the client's worker thread.

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "common/duration.h"
#include "http/server.h"
#include "http/upstream_pool.h"

namespace infergrid::gateway {

struct ProxyOptions {
  Duration connect = std::chrono::seconds(5);
  Duration first_byte = std::chrono::seconds(300);
  Duration idle = std::chrono::seconds(60);  // longest silence within a response, either side
};

struct ProxyOutcome {
  int status = 0;            // the status the client was sent (relayed or the gateway's own)
  bool started = false;      // response bytes from upstream reached the client
  std::string error;         // empty on success; else a kind for infergrid_upstream_errors_total
  bool client_gone = false;  // the client went away; its upstream request was cancelled
  double first_byte_seconds = -1;  // from `start` to the first response byte from upstream
  int attempts = 0;
  // With ProxyHooks::hold_retryable: the upstream failed before anything reached the client
  // and nothing was sent; `status` and `message` are what the client would get
  // (RespondUpstreamError), unless the caller retries elsewhere.
  bool retryable = false;
  std::string message;
};

// What the caller hears of while a response is relayed (on the client's worker thread).
struct ProxyHooks {
  std::function<void()> on_retry;       // a stale pooled connection forced a resend
  std::function<void()> on_first_body;  // the first body bytes came back: for a stream, the
                                        // first token (its prefill is done); at most once
  std::function<void(std::string_view)> on_body;  // each piece of body relayed, as received
  // Return, without answering the client, when the upstream fails before any response byte
  // reached it: a failed connect, a reset before the response head, or a 503 from the
  // server (ProxyOutcome::retryable).
  bool hold_retryable = false;
};

// The gateway's own answer for an upstream failure: OpenAI-shaped, `upstream_error` (or
// `timeout_error` for 504).
http::awaitable<void> RespondUpstreamError(http::Exchange& ex, int status,
                                           const std::string& message, const std::string& code);

// Forwards ex.request() (its body unchanged; hop-by-hop headers replaced) to `pool`'s
// endpoint.
http::awaitable<ProxyOutcome> Forward(http::Exchange& ex, http::UpstreamPool& pool,
                                      const ProxyOptions& options,
                                      std::chrono::steady_clock::time_point start,
                                      const ProxyHooks& hooks);

}  // namespace infergrid::gateway
