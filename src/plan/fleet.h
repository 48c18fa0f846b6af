#pragma once
// A fleet for the planner: groups of identical model servers (accelerator, model, tensor
// parallelism, vLLM's limits, a price per hour), read from a Fleet file (docs/planner.md):
//
//   apiVersion: infergrid.dev/v1
//   kind: Fleet
//   metadata: {name: h200-70b}
//   spec:
//     servers:
//     - {name: h200, count: 64, accelerator: h200, model: llama-3.1-70b, tp: 8,
//        pricePerHour: 30.4}

#include <string>
#include <vector>

#include "common/result.h"
#include "engine_model/server.h"
#include "infergrid/endpoint.h"

namespace infergrid::plan {

struct ServerGroup {
  std::string name;
  uint32_t count = 1;
  engine_model::ServerOptions options;
  double price_per_hour = 0;  // the whole server (all its chips)
};

struct FleetSpec {
  std::string name;
  std::vector<ServerGroup> groups;
  std::string source;
};

// One server of a built fleet.
struct Server {
  std::string name;  // "<group>-<i>"
  size_t group = 0;
  engine_model::ServerSetup setup;
  EndpointCapacity capacity;
};

struct Fleet {
  std::string name;
  std::vector<Server> servers;
  std::vector<std::string> group_names;
  uint32_t block_size = 16;  // every server's (the planner needs one)
};

Result<FleetSpec> ParseFleet(const std::string& yaml_text, const std::string& source);
Result<FleetSpec> LoadFleetFile(const std::string& path);
// Builds every server; fails if a model does not fit or block sizes differ.
Result<Fleet> BuildFleet(const FleetSpec& spec);

}  // namespace infergrid::plan
