#pragma once
// `infergrid plan`: the virtual-time planner's command line.

#include <CLI/CLI.hpp>
#include <string>

namespace infergrid::plan {

struct PlanFlags {
  std::string fleet, workload, config;
  std::string policies;  // comma-separated; empty: every built-in
  bool json = false;
  uint64_t seed = 1;
  double scrape_interval_s = 0.1;
  double drain_limit_s = 600;
  double duration_s = 0;  // overrides the workload's when > 0
  // A Mooncake-format trace instead of a workload (docs/planner.md).
  std::string trace;
  uint32_t trace_block_size = 512;
  double speed = 1;
  double from_ms = 0, to_ms = -1;
};

void AddPlanFlags(CLI::App* app, PlanFlags* flags);
int RunPlan(const PlanFlags& flags);

}  // namespace infergrid::plan
