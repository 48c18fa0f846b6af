#include "plan/plan_main.h"

#include <cstdio>
#include <iostream>

#include "common/strings.h"
#include "plan/fleet.h"
#include "plan/policy.h"
#include "plan/report.h"
#include "plan/simulator.h"
#include "scheduling/registry.h"
#include "workload/workload.h"

namespace infergrid::plan {

void AddPlanFlags(CLI::App* c, PlanFlags* f) {
  c->add_option("--fleet", f->fleet, "A Fleet file (servers, accelerators, models, tp)")
      ->required();
  auto* workload =
      c->add_option("--workload", f->workload, "A Workload file (clients and their turns)");
  auto* trace = c->add_option("--trace", f->trace,
                              "A Mooncake-format trace (JSONL) to replay instead of a workload");
  workload->excludes(trace);
  c->add_option("--trace-block-size", f->trace_block_size,
                "Tokens per hash id in the trace (default 512)");
  c->add_option("--speed", f->speed, "Replay the trace this many times faster (default 1)");
  c->add_option("--from", f->from_ms, "Replay from this timestamp (ms; default 0)");
  c->add_option("--to", f->to_ms, "Replay up to this timestamp (ms; default: the end)");
  std::string names;
  for (const auto& n : BuiltinPolicyNames()) names += (names.empty() ? "" : ",") + n;
  c->add_option("--policies", f->policies,
                "Comma-separated policies (default: all of " + names +
                    "); profile:NAME takes a scheduling profile from --config");
  c->add_option("--config", f->config, "A Gateway config whose schedulingProfiles to offer");
  c->add_flag("--json", f->json, "Print JSON instead of a table");
  c->add_option("--seed", f->seed, "Seed of the policies' randomness (default 1)");
  c->add_option("--scrape-interval", f->scrape_interval_s,
                "Seconds between refreshes of the servers' gauges (default 0.1)");
  c->add_option("--drain-limit", f->drain_limit_s,
                "Seconds after the workload ends to let requests finish (default 600)");
  c->add_option("--duration", f->duration_s, "Override the workload's duration (seconds)");
}

namespace {

Result<std::optional<config::Gateway>> LoadGateway(const std::string& path) {
  if (path.empty()) return std::optional<config::Gateway>();
  IG_ASSIGN_OR_RETURN(config::Gateway g, config::LoadGatewayFile(path));
  IG_RETURN_IF_ERROR(scheduling::ValidateProfiles(g));
  return std::optional<config::Gateway>(std::move(g));
}

std::vector<std::string> PolicyNames(const std::string& list) {
  std::vector<std::string> names;
  if (list.empty()) return BuiltinPolicyNames();
  for (auto p : Split(list, ',')) {
    if (!p.empty()) names.push_back(std::string(p));
  }
  return names;
}

// `plan --trace`: every policy over the same replay, with the trace's bound beside them.
int RunTrace(const PlanFlags& f, const Fleet& fleet) {
  TraceReplay t;
  t.path = f.trace;
  t.block_size = f.trace_block_size;
  t.speed = f.speed;
  t.from_ms = f.from_ms;
  t.to_ms = f.to_ms;
  auto facts = ScanTrace(t);
  if (!facts.ok()) {
    std::cerr << "error: " << facts.status().message() << "\n";
    return 2;
  }
  auto gateway = LoadGateway(f.config);
  if (!gateway.ok()) {
    std::cerr << "error: " << gateway.status().message() << "\n";
    return 2;
  }
  if (!f.json) std::cout << FleetSummary(fleet) << TraceSummary(t, *facts) << std::flush;
  SimOptions o;
  o.seed = f.seed;
  o.scrape_interval_s = f.scrape_interval_s;
  o.drain_limit_s = f.drain_limit_s;
  std::vector<PolicyReport> reports;
  for (const auto& name : PolicyNames(f.policies)) {
    auto r = SimulateTrace(fleet, t, *facts, name, o, *gateway ? &**gateway : nullptr);
    if (!r.ok()) {
      std::cerr << "error: " << r.status().message() << "\n";
      return 2;
    }
    if (!f.json) std::cerr << "  " << name << ": done in " << r->wall_s << " s\n";
    reports.push_back(std::move(*r));
  }
  workload::WorkloadSpec w;
  w.name = t.path;
  w.duration_s = facts->span_s;
  std::cout << (f.json ? ReportJson(fleet, w, reports, &*facts)
                       : ReportTable(reports, facts->bound_hit_rate));
  return 0;
}

}  // namespace

int RunPlan(const PlanFlags& f) {
  auto fleet_spec = LoadFleetFile(f.fleet);
  if (!fleet_spec.ok()) {
    std::cerr << "error: " << fleet_spec.status().message() << "\n";
    return 2;
  }
  auto fleet = BuildFleet(*fleet_spec);
  if (!fleet.ok()) {
    std::cerr << "error: " << f.fleet << ": " << fleet.status().message() << "\n";
    return 2;
  }
  if (f.workload.empty() == f.trace.empty()) {
    std::cerr << "error: give --workload or --trace\n";
    return 2;
  }
  if (!f.trace.empty()) return RunTrace(f, *fleet);
  auto workload = workload::LoadWorkloadFile(f.workload);
  if (!workload.ok()) {
    std::cerr << "error: " << workload.status().message() << "\n";
    return 2;
  }
  if (f.duration_s > 0) {
    if (f.duration_s <= workload->warmup_s) {
      std::cerr << "error: --duration must be longer than the workload's warmup\n";
      return 2;
    }
    workload->duration_s = f.duration_s;
  }
  std::optional<config::Gateway> gateway;
  if (!f.config.empty()) {
    auto g = config::LoadGatewayFile(f.config);
    if (g.ok()) {
      Status s = scheduling::ValidateProfiles(*g);
      if (!s.ok()) g = s;
    }
    if (!g.ok()) {
      std::cerr << "error: " << g.status().message() << "\n";
      return 2;
    }
    gateway = std::move(*g);
  }
  std::vector<std::string> names;
  if (f.policies.empty()) {
    names = BuiltinPolicyNames();
  } else {
    for (auto p : Split(f.policies, ',')) {
      if (!p.empty()) names.push_back(std::string(p));
    }
  }
  if (!f.json) std::cout << FleetSummary(*fleet) << WorkloadSummary(*workload) << std::flush;
  SimOptions o;
  o.seed = f.seed;
  o.scrape_interval_s = f.scrape_interval_s;
  o.drain_limit_s = f.drain_limit_s;
  std::vector<PolicyReport> reports;
  for (const auto& name : names) {
    auto r = Simulate(*fleet, *workload, name, o, gateway ? &*gateway : nullptr);
    if (!r.ok()) {
      std::cerr << "error: " << r.status().message() << "\n";
      return 2;
    }
    if (!f.json) std::cerr << "  " << name << ": done in " << r->wall_s << " s\n";
    reports.push_back(std::move(*r));
  }
  std::cout << (f.json ? ReportJson(*fleet, *workload, reports) : ReportTable(reports));
  return 0;
}

}  // namespace infergrid::plan
