#pragma once
// A blocking HTTP/1.1 client for tests: each call runs its own io_context with a deadline, so
// a hung server fails the test instead of hanging it.

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "http/asio.h"

namespace infergrid::testing {

struct HttpResult {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::vector<std::string> pieces;  // the body as it arrived, read by read
  http::error_code ec;              // transport error, if any
  bool chunked = false;
  bool complete = false;  // the body ended as framed (last chunk or full length)
};

struct RequestSpec {
  std::string method = "GET";
  std::string target = "/";
  std::string body;
  std::map<std::string, std::string> headers;
  std::chrono::milliseconds timeout{10000};
  // Called with each piece of body as it arrives; return false to close the connection.
  std::function<bool(const std::string&)> on_piece;
};

HttpResult Request(uint16_t port, const RequestSpec& spec);
HttpResult Get(uint16_t port, const std::string& target);
HttpResult PostJson(uint16_t port, const std::string& target, const std::string& body,
                    std::map<std::string, std::string> headers = {});

// Sends raw bytes on a new connection and returns everything read until the server closes
// or `timeout` passes. `pause_after` bytes are followed by a pause of `pause` (slow clients).
std::string RawExchange(uint16_t port, const std::string& bytes, std::chrono::milliseconds timeout,
                        size_t pause_after = std::string::npos,
                        std::chrono::milliseconds pause = std::chrono::milliseconds(0));

// Waits until `cond` holds or `timeout` passes; returns cond().
bool WaitFor(const std::function<bool()>& cond,
             std::chrono::milliseconds timeout = std::chrono::milliseconds(10000));

}  // namespace infergrid::testing
