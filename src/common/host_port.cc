#include "common/host_port.h"

#include <fmt/format.h>

namespace infergrid {

Result<std::pair<std::string, uint16_t>> ParseHostPort(const std::string& s) {
  size_t colon = s.rfind(':');
  if (colon == std::string::npos) return Status::Error(fmt::format("'{}' is not HOST:PORT", s));
  std::string host = s.substr(0, colon);
  std::string port = s.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos) {
    return Status::Error(fmt::format("'{}' is not HOST:PORT (port must be 0-65535)", s));
  }
  int p = std::stoi(port);
  if (p > 65535)
    return Status::Error(fmt::format("'{}' is not HOST:PORT (port must be 0-65535)", s));
  if (host.empty()) host = "0.0.0.0";
  return std::make_pair(host, static_cast<uint16_t>(p));
}

}  // namespace infergrid
