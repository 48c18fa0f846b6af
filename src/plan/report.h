#pragma once
// The planner's output: a table for people (one row per policy) and JSON for machines.

#include <string>
#include <vector>

#include "plan/fleet.h"
#include "plan/simulator.h"
#include "workload/workload.h"

namespace infergrid::plan {

std::string FleetSummary(const Fleet& fleet);
std::string WorkloadSummary(const workload::WorkloadSpec& w);
std::string ReportTable(const std::vector<PolicyReport>& reports);
std::string ReportJson(const Fleet& fleet, const workload::WorkloadSpec& w,
                       const std::vector<PolicyReport>& reports);

}  // namespace infergrid::plan
