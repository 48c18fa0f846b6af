#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/result.h"
#include "http/asio.h"

namespace infergrid::http {

struct HostPort {
  std::string host;
  uint16_t port = 0;
  std::string HostHeader() const { return host + ":" + std::to_string(port); }
};

// Parses "http://host:port" (an optional trailing slash); validated earlier by config.
Result<HostPort> ParseHttpUrl(const std::string& url);

// The endpoint if `hp.host` is a literal IPv4 or IPv6 address (no lookup needed).
std::optional<tcp::endpoint> LiteralEndpoint(const HostPort& hp);

}  // namespace infergrid::http
