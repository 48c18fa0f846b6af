#pragma once
// The v1 configuration API (apiVersion: infergrid.dev/v1, kind: Gateway), parsed from YAML
// into validated structs. The schema is documented in docs/config-v1.md. v1 is a promise:
// fields are added, never changed in meaning.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/duration.h"
#include "common/host_port.h"
#include "common/result.h"

namespace infergrid::config {

// A position in the source file, 1-based; 0 means unknown.
struct Mark {
  int line = 0;
  int column = 0;
};

// A parameter of a plugin: the raw scalar and where it was written, so the plugin's own
// factory can report errors with file:line:column.
struct Param {
  std::string value;
  Mark mark;
  std::string path;  // e.g. spec.schedulingProfiles[0].scorers[1].parameters.foo
};

struct PluginConfig {
  std::string name;
  double weight = 1.0;
  std::map<std::string, Param> parameters;
  Mark mark;
  std::string path;
};

struct SchedulingProfile {
  std::string name;
  std::vector<PluginConfig> filters;
  std::vector<PluginConfig> scorers;
  PluginConfig picker;
  Mark mark;
  std::string path;
};

struct Endpoint {
  std::string url;
  std::map<std::string, std::string> labels;
  Mark mark;
  std::string path;
};

struct Model {
  std::string name;
  std::vector<std::string> aliases;
};

struct Pool {
  std::string name;
  std::vector<Model> models;
  std::vector<Endpoint> endpoints;
  std::string scheduling_profile = "default";
  Mark mark;
  std::string path;
};

struct Timeouts {
  Duration connect = std::chrono::seconds(5);
  Duration first_byte = std::chrono::seconds(300);
  Duration idle = std::chrono::seconds(60);
  Duration request_headers = std::chrono::seconds(10);
  Duration client_idle = std::chrono::seconds(60);
};

struct Limits {
  uint64_t max_request_body_bytes = 16ull << 20;
  uint32_t max_request_header_bytes = 32u << 10;
};

struct Upstream {
  uint32_t max_connections_per_endpoint = 1024;
  uint32_t max_idle_connections_per_endpoint = 128;
};

struct Scrape {
  Duration interval = std::chrono::seconds(1);
  Duration timeout = std::chrono::seconds(1);
  Duration stale_after = std::chrono::seconds(5);
  std::string path = "/metrics";
  bool enabled = true;
};

struct Gateway {
  std::string name = "infergrid";
  std::string listen_host = "0.0.0.0";
  uint16_t listen_port = 8000;
  uint32_t workers = 0;  // 0: one per core
  Timeouts timeouts;
  Limits limits;
  Upstream upstream;
  Scrape scrape;
  std::vector<Pool> pools;
  std::vector<SchedulingProfile> profiles;
  std::string source;  // the file it was read from, for error messages
};

// Parses and validates a v1 document. Errors read "FILE:LINE:COL: PATH: what was expected".
Result<Gateway> ParseGateway(const std::string& yaml_text, const std::string& source_name);
Result<Gateway> LoadGatewayFile(const std::string& path);

// The profile used when a config names none: healthy filter, least-load scorer, max-score.
SchedulingProfile DefaultProfile();

// Builds the config for `infergrid gateway --model M --endpoint URL ...`.
Result<Gateway> FromFlags(const std::string& model, const std::vector<std::string>& endpoints,
                          const std::string& listen);

// "FILE:LINE:COL: PATH: MESSAGE" (parts that are unknown are left out).
std::string FormatError(const std::string& source, const Mark& mark, const std::string& path,
                        const std::string& message);

}  // namespace infergrid::config
