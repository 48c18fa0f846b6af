#pragma once
// The bench's report: one JSON document (the schema is in docs/bench.md) from which the
// terminal table and the HTML page (report_html.h) are both rendered, so a saved run can be
// shown again with `infergrid bench --from-json`.

#include <nlohmann/json.hpp>
#include <string>

#include "bench/driver.h"
#include "bench/gateways.h"

namespace infergrid::bench {

// One gateway's run. `failure`: the run could not be made (the gateway did not start).
nlohmann::json RunJson(const GatewaySpec& g, DriverResult* r, const std::string& failure);

// The terminal table, ratios of infergrid's p90 TTFT to each other gateway's, and the planner's
// prediction beside the live figures when the report has one.
std::string ReportTable(const nlohmann::json& report);

}  // namespace infergrid::bench
