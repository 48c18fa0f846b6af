#include "bench/report.h"

#include <fmt/format.h>

#include <algorithm>

namespace infergrid::bench {

using json = nlohmann::json;

namespace {

json SummaryJson(std::vector<double>* v) {
  Summary s = Summarize(v);
  return json{{"count", s.count}, {"p50", s.p50},   {"p90", s.p90},
              {"p99", s.p99},     {"mean", s.mean}, {"max", s.max}};
}

double Num(const json& j, const char* a, const char* b = nullptr) {
  const json* x = &j;
  for (const char* k : {a, b}) {
    if (k == nullptr) break;
    auto it = x->find(k);
    if (it == x->end()) return 0;
    x = &*it;
  }
  return x->is_number() ? x->get<double>() : 0;
}

}  // namespace

json RunJson(const GatewaySpec& g, DriverResult* r, const std::string& failure) {
  json j{{"gateway", g.name}, {"description", g.description}};
  if (!failure.empty()) {
    j["failure"] = failure;
    return j;
  }
  j["sent"] = r->sent;
  j["requests"] = r->completed;
  j["failed"] = r->failed;
  j["unfinished"] = r->unfinished;
  j["interrupted"] = r->interrupted;
  j["errors"] = r->errors;
  j["error_examples"] = r->error_examples;
  j["window_s"] = r->window_s;
  j["wall_s"] = r->wall_s;
  j["ttft"] = SummaryJson(&r->ttft);  // sorts
  j["itl"] = SummaryJson(&r->itl);
  j["e2e"] = SummaryJson(&r->e2e);
  j["requests_per_s"] = PerSecond(r->completed, r->window_s);
  j["requests_per_min"] = 60 * PerSecond(r->completed, r->window_s);
  j["output_tokens_per_s"] = PerSecond(r->window_output_tokens, r->window_s);
  j["output_tokens_per_min"] = 60 * PerSecond(r->window_output_tokens, r->window_s);
  j["usage_cached_fraction"] =
      r->prompt_tokens ? static_cast<double>(r->cached_tokens) / r->prompt_tokens : 0.0;
  const FleetWindow& f = r->fleet;
  j["fleet"] = json{{"prefix_hit_rate", f.prefix_hit_rate},
                    {"preemptions", f.preemptions},
                    {"kv_usage_mean", f.kv_usage_mean},
                    {"kv_usage_max", f.kv_usage_max},
                    {"load_spread", f.load_spread},
                    {"requests_per_server", f.requests_per_server},
                    {"complete", f.complete}};
  json cdf = json::array();
  for (const auto& [v, q] : CdfPoints(r->ttft, 200)) cdf.push_back({v, q});
  j["ttft_cdf"] = cdf;
  j["series"] = json{{"interval_s", r->output_tokens.interval_s()},
                     {"output_tokens_per_s", r->output_tokens.Rates()},
                     {"requests_completed_per_s", r->completions.Rates()}};
  return j;
}

std::string ReportTable(const json& report) {
  std::string out;
  const json& w = report.value("workload", json::object());
  const json& f = report.value("fleet", json::object());
  out += fmt::format("workload {} · fleet {} · time scale {} · measured {:.0f}-{:.0f} s\n",
                     w.value("name", "?"), f.value("description", "?"), Num(w, "time_scale"),
                     Num(w, "warmup_s"), Num(w, "duration_s"));
  out += fmt::format(
      "{:<22} {:>6} {:>6} {:>7} {:>7} {:>7} {:>6} {:>6} {:>7} {:>8} {:>6} {:>7} "
      "{:>9} {:>6}\n",
      "gateway", "reqs", "failed", "TTFT50", "TTFT90", "TTFT99", "ITL50", "ITL99", "E2E50",
      "out/min", "hit%", "preempt", "KV mean", "spread");
  out += fmt::format(
      "{:<22} {:>6} {:>6} {:>7} {:>7} {:>7} {:>6} {:>6} {:>7} {:>8} {:>6} {:>7} "
      "{:>9} {:>6}\n",
      "", "", "", "s", "s", "s", "ms", "ms", "s", "tokens", "", "", "/max", "");
  const json& runs = report.value("runs", json::array());
  for (const json& r : runs) {
    if (r.contains("failure")) {
      out +=
          fmt::format("{:<22} did not run: {}\n", r.value("gateway", "?"), r.value("failure", ""));
      continue;
    }
    out += fmt::format(
        "{:<22} {:>6.0f} {:>6.0f} {:>7.3f} {:>7.3f} {:>7.3f} {:>6.1f} {:>6.1f} {:>7.2f} {:>8.0f} "
        "{:>6.1f} {:>7.0f} {:>4.2f}/{:<4.2f} {:>6.2f}\n",
        r.value("gateway", "?"), Num(r, "requests"), Num(r, "failed"), Num(r, "ttft", "p50"),
        Num(r, "ttft", "p90"), Num(r, "ttft", "p99"), 1e3 * Num(r, "itl", "p50"),
        1e3 * Num(r, "itl", "p99"), Num(r, "e2e", "p50"), Num(r, "output_tokens_per_min"),
        100 * Num(r, "fleet", "prefix_hit_rate"), Num(r, "fleet", "preemptions"),
        Num(r, "fleet", "kv_usage_mean"), Num(r, "fleet", "kv_usage_max"),
        Num(r, "fleet", "load_spread"));
  }
  for (const json& r : runs) {
    if (r.contains("failure") || !r.contains("errors") || r["errors"].empty()) continue;
    std::string kinds;
    for (const auto& [k, v] : r["errors"].items()) kinds += fmt::format(" {}={}", k, v.dump());
    out += fmt::format("errors at {}:{}\n", r.value("gateway", "?"), kinds);
    for (const auto& e : r.value("error_examples", json::array())) {
      out += "  " + (e.is_string() ? e.get<std::string>() : e.dump()) + "\n";
    }
  }
  // infergrid's p90 TTFT against every other gateway's.
  const json* ig = nullptr;
  for (const json& r : runs) {
    if (r.value("gateway", "") == "infergrid" && !r.contains("failure")) ig = &r;
  }
  if (ig && Num(*ig, "ttft", "p90") > 0) {
    std::string ratios;
    for (const json& r : runs) {
      if (&r == ig || r.contains("failure") || Num(r, "ttft", "p90") <= 0) continue;
      ratios +=
          fmt::format("{}{:.2f}x {}", ratios.empty() ? "" : ", ",
                      Num(*ig, "ttft", "p90") / Num(r, "ttft", "p90"), r.value("gateway", "?"));
    }
    if (!ratios.empty()) out += "infergrid p90 TTFT: " + ratios + "\n";
  }
  // The planner's prediction for the same fleet and workload.
  const json& pl = report.value("planner", json());
  if (pl.is_object() && pl.contains("reports")) {
    out += "planner prediction (same fleet, workload, seed) vs live:\n";
    const json& of = pl.value("policy_of", json::object());
    for (const json& r : runs) {
      std::string gw = r.value("gateway", "");
      if (r.contains("failure") || !of.contains(gw)) continue;
      std::string policy = of[gw].get<std::string>();
      for (const json& p : pl["reports"]) {
        if (p.value("policy", "") != policy) continue;
        auto ratio = [](double live, double pred) { return pred > 0 ? live / pred : 0.0; };
        out += fmt::format(
            "  {:<22} as {:<13} p90 TTFT {:.3f} s vs {:.3f} ({:.2f}x), hit {:.1f}% vs {:.1f}%, "
            "out/min {:.0f} vs {:.0f} ({:.2f}x)\n",
            gw, policy, Num(r, "ttft", "p90"), Num(p, "ttft_p90"),
            ratio(Num(r, "ttft", "p90"), Num(p, "ttft_p90")),
            100 * Num(r, "fleet", "prefix_hit_rate"), 100 * Num(p, "prefix_hit_rate"),
            Num(r, "output_tokens_per_min"), Num(p, "output_tokens_per_min"),
            ratio(Num(r, "output_tokens_per_min"), Num(p, "output_tokens_per_min")));
      }
    }
  }
  return out;
}

}  // namespace infergrid::bench
