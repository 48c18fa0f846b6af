#pragma once
// `infergrid bench`: real HTTP load through gateways to a fleet, side by side (docs/bench.md).

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace infergrid::bench {

struct BenchFlags {
  std::string workload, trace;
  std::string fleet;                   // a Fleet file: the bench starts it as `infergrid sim`
  std::vector<std::string> endpoints;  // or servers already running
  std::string model;
  std::string gateways;  // comma-separated built-in names
  std::vector<std::string> gateway_urls;
  double time_scale = 1;
  double duration_s = 0, warmup_s = -1;
  uint64_t requests = 0;
  std::string api = "chat";
  bool no_stream = false;
  bool connection_per_request = false;
  uint32_t trace_block_size = 512;  // tokens per hash id of a Mooncake-format trace
  std::string out;
  std::string record;
  std::string from_json, html;
  bool no_predict = false;
  double drain_limit_s = 300, request_timeout_s = 600;
  bool progress = false, no_progress = false;
};

void AddBenchFlags(CLI::App* app, BenchFlags* flags);
int RunBench(const BenchFlags& flags);

}  // namespace infergrid::bench
