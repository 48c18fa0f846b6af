#include "bench/report_html.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace infergrid::bench {
namespace {

using Json = nlohmann::json;

Json GatewayRun(const std::string& gateway, double ttft_p50, double hit_rate) {
  return {
      {"gateway", gateway},
      {"description", gateway + ", default profile"},
      {"requests", 812},
      {"failed", 0},
      {"errors", {{"http_503", 0}}},
      {"window_s", 110},
      {"ttft", {{"p50", ttft_p50}, {"p90", ttft_p50 * 3}, {"p99", ttft_p50 * 12}, {"mean", 0.09}}},
      {"itl", {{"p50", 0.010}, {"p90", 0.02}, {"p99", 0.03}, {"mean", 0.012}}},
      {"e2e", {{"p50", 2.9}, {"p90", 6.0}, {"p99", 12.0}, {"mean", 3.5}}},
      {"requests_per_s", 7.4},
      {"requests_per_min", 443},
      {"output_tokens_per_s", 3500},
      {"output_tokens_per_min", 210000},
      {"fleet",
       {{"prefix_hit_rate", hit_rate},
        {"preemptions", 0},
        {"kv_usage_mean", 0.41},
        {"kv_usage_max", 0.77},
        {"load_spread", 1.12},
        {"requests_per_server", {100, 98, 105, 99}}}},
      {"ttft_cdf", {{0.012, 0.0}, {0.03, 0.1}, {0.05, 0.5}, {0.16, 0.9}, {0.7, 0.99}, {1.2, 1.0}}},
      {"series",
       {{"interval_s", 1},
        {"output_tokens_per_s", {0, 1200, 3400, 3600}},
        {"requests_completed_per_s", {0, 3, 7, 8}}}},
  };
}

Json Result() {
  return {
      {"kind", "infergrid-bench"},
      {"version", 1},
      {"started_at", "2026-12-03T10:00:00Z"},
      {"workload",
       {{"name", "coding-agents-100"},
        {"source", "examples/bench/coding-agents.yaml"},
        {"seed", 7},
        {"duration_s", 150},
        {"warmup_s", 40},
        {"time_scale", 2},
        {"api", "chat"},
        {"stream", true}}},
      {"fleet",
       {{"name", "h200-8b-8"}, {"description", "8 x h200 llama-3.1-8b tp1"}, {"servers", 8}}},
      {"runs", {GatewayRun("infergrid", 0.05, 0.94), GatewayRun("nginx-round-robin", 0.2, 0.31)}},
      {"planner", nullptr},
  };
}

size_t Count(std::string_view haystack, std::string_view needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string_view::npos;
       at = haystack.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

// The text of the <script> element with this id.
std::string ScriptText(const std::string& page, const std::string& id) {
  std::string open = "<script type=\"application/json\" id=\"" + id + "\">";
  size_t begin = page.find(open);
  if (begin == std::string::npos) return "";
  begin += open.size();
  return page.substr(begin, page.find("</script>", begin) - begin);
}

TEST(BenchReportHtml, EmbedsTheResult) {
  Json result = Result();
  std::string page = RenderHtml(result);
  EXPECT_EQ(page.rfind("<!doctype html>", 0), 0u);
  EXPECT_EQ(Json::parse(ScriptText(page, "bench-data")), result);
  // The header and the summary table are in the page itself.
  EXPECT_NE(page.find("<title>infergrid bench: coding-agents-100</title>"), std::string::npos);
  EXPECT_NE(page.find("8 x h200 llama-3.1-8b tp1"), std::string::npos);
  EXPECT_NE(page.find("model time"), std::string::npos);
  EXPECT_NE(page.find("\xc3\x97"
                      "2"),
            std::string::npos);  // time scale ×2
  EXPECT_NE(page.find("210,000"), std::string::npos);
  EXPECT_NE(page.find("94.0%"), std::string::npos);
  EXPECT_EQ(Count(page, "<td class=\"gw\">"), 2u);
  // The planner section is there only when the result has one.
  EXPECT_EQ(page.find("Planner prediction"), std::string::npos);
}

TEST(BenchReportHtml, EscapesScriptEndInStrings) {
  Json result = Result();
  const std::string evil = "</script><b>x</b><!--";
  result["runs"][1]["gateway"] = evil;
  result["workload"]["name"] = "</SCRIPT>&";
  std::string page = RenderHtml(result);
  EXPECT_EQ(page.find("<b>"), std::string::npos);
  EXPECT_EQ(page.find("</SCRIPT>"), std::string::npos);
  EXPECT_EQ(page.find("<!--"), std::string::npos);
  // Three script elements (data, colours, code), each ended once.
  EXPECT_EQ(Count(page, "<script"), 3u);
  EXPECT_EQ(Count(page, "</script>"), 3u);
  // The embedded JSON still says what the name is; the table shows it as text.
  std::string embedded = ScriptText(page, "bench-data");
  EXPECT_NE(embedded.find("\\u003c/script\\u003e\\u003cb\\u003e"), std::string::npos);
  EXPECT_EQ(Json::parse(embedded)["runs"][1]["gateway"], evil);
  EXPECT_NE(page.find("&lt;/script&gt;&lt;b&gt;x&lt;/b&gt;&lt;!--"), std::string::npos);
}

TEST(BenchReportHtml, OnePlotContainerPerPlot) {
  std::string page = RenderHtml(Result());
  EXPECT_EQ(Count(page, "<figure class=\"plot\""), 4u);
  EXPECT_EQ(Count(page, "<svg "), 4u);
  for (const char* id :
       {"plot-ttft-cdf", "plot-throughput", "plot-prefix-hit", "plot-ttft-percentiles"}) {
    EXPECT_EQ(Count(page, std::string("id=\"") + id + "\""), 1u) << id;
  }
  for (const char* title : {"Time to first token (CDF)", "Output tokens per second over time",
                            "Prefix cache hit rate", "TTFT percentiles"}) {
    EXPECT_NE(page.find(std::string("<figcaption>") + title + "</figcaption>"), std::string::npos)
        << title;
  }
  // Nothing is drawn before the script runs: data-drawn is set only by the page's code.
  EXPECT_EQ(page.find("data-drawn=\""), std::string::npos);
  EXPECT_NE(page.find("setAttribute('data-drawn'"), std::string::npos);
}

TEST(BenchReportHtml, ReferencesNothingOutsideThePage) {
  std::string page = RenderHtml(Result());
  for (const char* external : {"http://", "https://", "//cdn", "<link", "@import", "url(",
                               " src=", " href=", "@font-face"}) {
    EXPECT_EQ(page.find(external), std::string::npos) << external;
  }
  EXPECT_EQ(Count(page, "<style>"), 1u);
}

TEST(BenchReportHtml, InfergridGetsTheFirstColour) {
  Json result = Result();
  result["runs"] = {GatewayRun("nginx-round-robin", 0.2, 0.3), GatewayRun("infergrid", 0.05, 0.9),
                    GatewayRun("infergrid-round-robin", 0.2, 0.3)};
  Json colors = Json::parse(ScriptText(RenderHtml(result), "bench-colors"));
  EXPECT_EQ(colors, Json({"#f28e2b", "#4e79a7", "#e15759"}));
}

TEST(BenchReportHtml, HighlightsTheBestValueWhereRunsDiffer) {
  std::string page = RenderHtml(Result());
  EXPECT_NE(page.find("<td class=\"best\">50.0 ms</td>"), std::string::npos);  // TTFT p50
  EXPECT_NE(page.find("<td class=\"best\">94.0%</td>"), std::string::npos);    // hit rate
  EXPECT_NE(page.find("<td>200 ms</td>"), std::string::npos);
  // Equal everywhere: nothing stands out.
  EXPECT_EQ(page.find("<td class=\"best\">1.12</td>"), std::string::npos);
}

TEST(BenchReportHtml, MissingFieldsRenderAsDashes) {
  Json result = Result();
  result["runs"] = {Json{{"gateway", "broken"}}, GatewayRun("infergrid", 0.05, 0.9)};
  result["runs"][1]["ttft_cdf"] = Json::array();
  result["runs"][1].erase("series");
  result["runs"][1]["fleet"]["load_spread"] = "not a number";
  std::string page = RenderHtml(result);
  size_t row = page.find("broken");
  ASSERT_NE(row, std::string::npos);
  std::string broken_row = page.substr(row, page.find("</tr>", row) - row);
  EXPECT_EQ(Count(broken_row, "<td>\xe2\x80\x93</td>"), 16u) << broken_row;
  row = page.find("infergrid, default profile");
  ASSERT_NE(row, std::string::npos);
  std::string infergrid_row = page.substr(row, page.find("</tr>", row) - row);
  EXPECT_TRUE(infergrid_row.ends_with("<td>77.0%</td><td>\xe2\x80\x93</td>")) << infergrid_row;

  for (const Json& odd : {Json(), Json::array(), Json("text"), Json::object(),
                          Json{{"runs", "no"}, {"workload", 3}, {"fleet", Json::array()}},
                          Json{{"runs", {1, nullptr, Json::array()}}, {"planner", "x"}},
                          Json{{"planner", {{"policy_of", {{"a", 1}}}, {"reports", 2}}}}}) {
    std::string p;
    EXPECT_NO_THROW(p = RenderHtml(odd)) << odd.dump();
    EXPECT_EQ(Count(p, "<figure class=\"plot\""), 4u) << odd.dump();
  }
  Json bad_utf8 = Result();
  bad_utf8["runs"][0]["gateway"] = std::string("inf\xff\xfegrid");
  EXPECT_NO_THROW(RenderHtml(bad_utf8));
}

TEST(BenchReportHtml, ARunThatDidNotRunSaysWhy) {
  Json result = Result();
  result["runs"].push_back({{"gateway", "haproxy"}, {"failure", "haproxy: not found <PATH>"}});
  result["planner"] = {{"policy_of", {{"haproxy", "round-robin"}}}, {"reports", Json::array()}};
  std::string page = RenderHtml(result);
  EXPECT_NE(page.find("colspan=\"16\">did not run: haproxy: not found &lt;PATH&gt;</td>"),
            std::string::npos);
  EXPECT_EQ(page.find("<table id=\"planner\">"), std::string::npos);
}

TEST(BenchReportHtml, PlannerPredictionNextToLive) {
  Json result = Result();
  result["planner"] = {
      {"policy_of", {{"infergrid", "infergrid"}, {"nginx-round-robin", "round-robin"}}},
      {"reports",
       {{{"policy", "infergrid"},
         {"ttft_p50", 0.04},
         {"ttft_p90", 0.125},
         {"ttft_p99", 0.5},
         {"prefix_hit_rate", 0.95},
         {"output_tokens_per_min", 200000}}}},
  };
  std::string page = RenderHtml(result);
  size_t table = page.find("<table id=\"planner\">");
  ASSERT_NE(table, std::string::npos);
  std::string planner = page.substr(table, page.find("</table>", table) - table);
  // infergrid: live p90 150 ms against 125 ms predicted.
  EXPECT_NE(planner.find("<td>150 ms</td><td>125 ms</td><td>1.20\xc3\x97</td>"), std::string::npos)
      << planner;
  EXPECT_NE(planner.find("<td>210,000</td><td>200,000</td><td>1.05\xc3\x97</td>"),
            std::string::npos);
  // round-robin has no report: its predictions are dashes.
  EXPECT_NE(planner.find("<td class=\"gw\">round-robin</td><td>600 ms</td><td>\xe2\x80\x93</td>"),
            std::string::npos)
      << planner;
}

}  // namespace
}  // namespace infergrid::bench
