#pragma once
// The gateways the bench compares, each started by the bench on a loopback port in front of
// the same fleet: infergrid (its default profile, and round-robin), nginx (round-robin,
// least_conn, consistent hash on the session header) and HAProxy (leastconn), with generated
// configurations that stream (no response buffering), keep upstream connections alive and
// never time out a long generation. Config generation is pure; starting is in Launch.

#include <string>
#include <vector>

#include "bench/process.h"
#include "common/result.h"

namespace infergrid::bench {

enum class GatewayKind {
  kInfergrid,
  kInfergridRoundRobin,
  kNginxRoundRobin,
  kNginxLeastConn,
  kNginxSessionHash,
  kHaproxyLeastConn,
  kExternal,  // one the user runs: --gateway-url NAME=http://HOST:PORT
};

struct GatewaySpec {
  std::string name;
  GatewayKind kind = GatewayKind::kInfergrid;
  std::string description;
  std::string planner_policy;  // the planner's model of it; empty for none
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // external
};

// The built-in names, in the bench's default order.
std::vector<std::string> BuiltinGatewayNames();
Result<GatewaySpec> BuiltinGateway(const std::string& name);
// NAME=http://HOST:PORT
Result<GatewaySpec> ExternalGateway(const std::string& arg);

struct Upstream {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::string hardware;  // a v1 `hardware` flow mapping for infergrid, or empty
};

// A v1 Gateway config listening on 127.0.0.1:0.
std::string InfergridConfig(GatewayKind kind, const std::string& model,
                            const std::vector<Upstream>& upstreams, int scrape_interval_ms);
std::string NginxConfig(GatewayKind kind, uint16_t port, const std::vector<Upstream>& upstreams,
                        const std::string& workdir);
std::string HaproxyConfig(uint16_t port, const std::vector<Upstream>& upstreams);

// Starts `g` (not an external one) and returns the port it serves on. Files and logs go in
// `workdir`; `self` is the infergrid binary.
Result<uint16_t> LaunchGateway(Processes* procs, const GatewaySpec& g, const std::string& self,
                               const std::string& model, const std::vector<Upstream>& upstreams,
                               int scrape_interval_ms, const std::string& workdir, size_t* id);

// The program from Debian a gateway runs ("nginx", "haproxy"), or "" for none.
std::string ProgramOf(GatewayKind kind);
// The path of a program from Debian (nginx, haproxy), or an error saying how to install it.
Result<std::string> FindProgram(const std::string& name);

}  // namespace infergrid::bench
