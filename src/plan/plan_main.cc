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
  c->add_option("--workload", f->workload, "A Workload file (clients and their turns)")->required();
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
