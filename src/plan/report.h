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
// `bound` >= 0: a replayed trace's hit-rate bound (one infinite cache), shown beside each
// policy's hit rate.
std::string ReportTable(const std::vector<PolicyReport>& reports, double bound = -1);
std::string ReportJson(const Fleet& fleet, const workload::WorkloadSpec& w,
                       const std::vector<PolicyReport>& reports, const TraceFacts* trace = nullptr);
std::string TraceSummary(const TraceReplay& t, const TraceFacts& f);

}  // namespace infergrid::plan
