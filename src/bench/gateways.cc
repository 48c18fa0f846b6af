#include "bench/gateways.h"

#include <fmt/format.h>
#include <unistd.h>

#include <fstream>

#include "common/strings.h"
#include "http/url.h"

namespace infergrid::bench {

namespace {

struct Builtin {
  const char* name;
  GatewayKind kind;
  const char* description;
  const char* planner_policy;
};

// In the bench's default order.
constexpr Builtin kBuiltins[] = {
    {"infergrid", GatewayKind::kInfergrid,
     "infergrid, default profile (session affinity + expected TTFT)", "infergrid"},
    {"infergrid-round-robin", GatewayKind::kInfergridRoundRobin, "infergrid, round-robin picker",
     "round-robin"},
    {"nginx-round-robin", GatewayKind::kNginxRoundRobin, "nginx, round-robin", "round-robin"},
    {"nginx-least-conn", GatewayKind::kNginxLeastConn, "nginx, least_conn", "least-conn"},
    {"nginx-session-hash", GatewayKind::kNginxSessionHash,
     "nginx, hash $http_x_session_id consistent", "session-hash"},
    {"haproxy-least-conn", GatewayKind::kHaproxyLeastConn, "HAProxy, balance leastconn",
     "least-conn"},
};

}  // namespace

std::vector<std::string> BuiltinGatewayNames() {
  std::vector<std::string> names;
  for (const Builtin& b : kBuiltins) names.emplace_back(b.name);
  return names;
}

Result<GatewaySpec> BuiltinGateway(const std::string& name) {
  for (const Builtin& b : kBuiltins) {
    if (name != b.name) continue;
    GatewaySpec g;
    g.name = name;
    g.kind = b.kind;
    g.description = b.description;
    g.planner_policy = b.planner_policy;
    return g;
  }
  std::string names;
  for (const auto& n : BuiltinGatewayNames()) names += (names.empty() ? "" : ", ") + n;
  return Status::Error(fmt::format("unknown gateway '{}'; expected one of: {}", name, names));
}

std::string ProgramOf(GatewayKind kind) {
  switch (kind) {
    case GatewayKind::kNginxRoundRobin:
    case GatewayKind::kNginxLeastConn:
    case GatewayKind::kNginxSessionHash:
      return "nginx";
    case GatewayKind::kHaproxyLeastConn:
      return "haproxy";
    default:
      return "";
  }
}

Result<GatewaySpec> ExternalGateway(const std::string& arg) {
  size_t eq = arg.find('=');
  auto url = eq == std::string::npos || eq == 0 ? Result<http::HostPort>(Status::Error(""))
                                                : http::ParseHttpUrl(arg.substr(eq + 1));
  if (!url.ok() || url->port == 0) {
    return Status::Error(fmt::format("--gateway-url '{}': expected NAME=http://HOST:PORT", arg));
  }
  GatewaySpec g;
  g.kind = GatewayKind::kExternal;
  g.name = arg.substr(0, eq);
  g.host = url->host;
  g.port = url->port;
  g.description = "external, " + arg.substr(eq + 1);
  return g;
}

std::string InfergridConfig(GatewayKind kind, const std::string& model,
                            const std::vector<Upstream>& upstreams, int scrape_interval_ms) {
  std::string y = fmt::format(
      "apiVersion: infergrid.dev/v1\nkind: Gateway\nmetadata: {{name: bench}}\nspec:\n"
      "  listen: 127.0.0.1:0\n  endpointMetrics: {{interval: {}ms}}\n"
      "  pools:\n  - name: bench\n    models:\n    - name: \"{}\"\n    endpoints:\n",
      scrape_interval_ms, model);
  for (const auto& u : upstreams) {
    y += fmt::format("    - url: http://{}:{}\n", u.host, u.port);
    if (!u.hardware.empty()) y += "      hardware: " + u.hardware + "\n";
  }
  if (kind == GatewayKind::kInfergridRoundRobin) {
    y += "  schedulingProfiles:\n  - name: default\n    filters: [healthy]\n"
         "    picker: round-robin\n";
  }
  return y;
}

std::string NginxConfig(GatewayKind kind, uint16_t port, const std::vector<Upstream>& upstreams,
                        const std::string& workdir) {
  std::string balance;
  if (kind == GatewayKind::kNginxLeastConn) balance = "    least_conn;\n";
  if (kind == GatewayKind::kNginxSessionHash) balance = "    hash $http_x_session_id consistent;\n";
  std::string servers;
  for (const auto& u : upstreams) {
    // max_fails=0: a slow reply never takes a server out of rotation.
    servers += fmt::format("    server {}:{} max_fails=0;\n", u.host, u.port);
  }
  return fmt::format(
      "worker_processes 1;\ndaemon off;\npid {0}/nginx.pid;\nerror_log {0}/nginx-error.log warn;\n"
      "events {{ worker_connections 16384; }}\n"
      "http {{\n  access_log off;\n  client_body_temp_path {0}/body;\n  proxy_temp_path "
      "{0}/proxy;\n"
      "  client_max_body_size 0;\n  client_body_buffer_size 4m;\n"
      "  keepalive_timeout 3600s;\n  keepalive_requests 1000000;\n"
      "  upstream fleet {{\n{1}{2}    keepalive 1024;\n    keepalive_requests 1000000;\n  }}\n"
      "  server {{\n    listen 127.0.0.1:{3};\n    location / {{\n"
      "      proxy_pass http://fleet;\n      proxy_http_version 1.1;\n"
      "      proxy_set_header Connection \"\";\n      proxy_buffering off;\n"
      "      proxy_request_buffering off;\n      proxy_read_timeout 3600s;\n"
      "      proxy_send_timeout 3600s;\n    }}\n  }}\n}}\n",
      workdir, balance, servers, port);
}

std::string HaproxyConfig(uint16_t port, const std::vector<Upstream>& upstreams) {
  std::string servers;
  for (size_t i = 0; i < upstreams.size(); ++i) {
    servers += fmt::format("  server s{} {}:{}\n", i, upstreams[i].host, upstreams[i].port);
  }
  return fmt::format(
      "global\n  # maxconn: from the file-descriptor limit\n\ndefaults\n  mode http\n  option "
      "http-keep-alive\n"
      "  option http-no-delay\n  timeout connect 5s\n  timeout client 1h\n  timeout server 1h\n"
      "  timeout http-keep-alive 1h\n\n"
      "frontend bench\n  bind 127.0.0.1:{}\n  default_backend fleet\n\n"
      "backend fleet\n  balance leastconn\n  http-reuse always\n{}",
      port, servers);
}

Result<std::string> FindProgram(const std::string& name) {
  for (const char* dir : {"/usr/sbin/", "/usr/bin/", "/usr/local/sbin/", "/usr/local/bin/"}) {
    std::string p = std::string(dir) + name;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return Status::Error(
      fmt::format("{} is not installed (apt-get install {}; scripts/install-deps installs it)",
                  name, name == "nginx" ? "nginx-light" : name));
}

namespace {

Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) return Status::Error(fmt::format("{}: cannot write", path));
  return Status::Ok();
}

}  // namespace

Result<uint16_t> LaunchGateway(Processes* procs, const GatewaySpec& g, const std::string& self,
                               const std::string& model, const std::vector<Upstream>& upstreams,
                               int scrape_interval_ms, const std::string& workdir, size_t* id) {
  const std::string base = workdir + "/" + g.name;
  using std::chrono::seconds;
  switch (g.kind) {
    case GatewayKind::kInfergrid:
    case GatewayKind::kInfergridRoundRobin: {
      const std::string cfg = base + ".yaml";
      IG_RETURN_IF_ERROR(
          WriteFile(cfg, InfergridConfig(g.kind, model, upstreams, scrape_interval_ms)));
      IG_ASSIGN_OR_RETURN(*id, procs->Start(g.name, {self, "gateway", "--config", cfg}, base));
      IG_ASSIGN_OR_RETURN(auto ports, procs->WaitForPorts(*id, 1, seconds(30)));
      return ports[0];
    }
    case GatewayKind::kNginxRoundRobin:
    case GatewayKind::kNginxLeastConn:
    case GatewayKind::kNginxSessionHash: {
      IG_ASSIGN_OR_RETURN(std::string nginx, FindProgram(ProgramOf(g.kind)));
      IG_ASSIGN_OR_RETURN(uint16_t port, FreePort());
      const std::string cfg = base + "-nginx.conf";
      IG_RETURN_IF_ERROR(WriteFile(cfg, NginxConfig(g.kind, port, upstreams, workdir)));
      IG_ASSIGN_OR_RETURN(*id, procs->Start(g.name, {nginx, "-c", cfg, "-p", workdir}, base));
      IG_RETURN_IF_ERROR(procs->WaitForListen(*id, port, seconds(30)));
      return port;
    }
    case GatewayKind::kHaproxyLeastConn: {
      IG_ASSIGN_OR_RETURN(std::string haproxy, FindProgram(ProgramOf(g.kind)));
      IG_ASSIGN_OR_RETURN(uint16_t port, FreePort());
      const std::string cfg = base + "-haproxy.cfg";
      IG_RETURN_IF_ERROR(WriteFile(cfg, HaproxyConfig(port, upstreams)));
      IG_ASSIGN_OR_RETURN(*id, procs->Start(g.name, {haproxy, "-db", "-f", cfg}, base));
      IG_RETURN_IF_ERROR(procs->WaitForListen(*id, port, seconds(30)));
      return port;
    }
    case GatewayKind::kExternal:
      break;
  }
  return Status::Error(fmt::format("{}: not started by the bench", g.name));
}

}  // namespace infergrid::bench
