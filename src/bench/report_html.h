#pragma once
// The HTML report of `infergrid bench`: one self-contained page (inline CSS and JavaScript, no
// network) with the run's header, a summary table per gateway, the planner's prediction next to
// the live numbers when there is one, and four SVG plots drawn in the browser from the result
// JSON, which the page embeds.

#include <nlohmann/json.hpp>
#include <string>

namespace infergrid::bench {

// Renders the page for a bench report (the JSON of report.h). A missing or mistyped field
// renders as "–", a run with a "failure" as one line saying so; nothing throws.
std::string RenderHtml(const nlohmann::json& result);

}  // namespace infergrid::bench
