#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"

namespace infergrid::http {

struct HostPort {
  std::string host;
  uint16_t port = 0;
  std::string HostHeader() const { return host + ":" + std::to_string(port); }
};

// Parses "http://host:port" (an optional trailing slash); validated earlier by config.
Result<HostPort> ParseHttpUrl(const std::string& url);

}  // namespace infergrid::http
