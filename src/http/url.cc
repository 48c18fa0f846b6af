#include "http/url.h"

#include "common/host_port.h"

namespace infergrid::http {

Result<HostPort> ParseHttpUrl(const std::string& url) {
  const std::string prefix = "http://";
  if (url.compare(0, prefix.size(), prefix) != 0)
    return Status::Error("expected http://HOST:PORT: " + url);
  std::string rest = url.substr(prefix.size());
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  auto hp = ParseHostPort(rest);
  if (!hp.ok()) return hp.status();
  return HostPort{hp->first, hp->second};
}

std::optional<tcp::endpoint> LiteralEndpoint(const HostPort& hp) {
  error_code ec;
  auto addr = asio::ip::make_address(hp.host, ec);
  if (ec) return std::nullopt;
  return tcp::endpoint(addr, hp.port);
}

}  // namespace infergrid::http
