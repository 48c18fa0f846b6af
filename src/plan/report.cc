#include "plan/report.h"

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>

namespace infergrid::plan {

std::string FleetSummary(const Fleet& fleet) {
  std::string out = fmt::format("fleet {}: {} servers\n", fleet.name, fleet.servers.size());
  std::map<size_t, size_t> count;
  for (const auto& s : fleet.servers) ++count[s.group];
  for (const auto& [g, n] : count) {
    const Server* s = nullptr;
    for (const auto& x : fleet.servers) {
      if (x.group == g) {
        s = &x;
        break;
      }
    }
    const auto& hw = s->setup.hw;
    out += fmt::format(
        "  {} x {}: {} on {} x{}, KV {:.0f}k tokens, prefill {:.0f} tok/s, decode {:.0f} tok/s, "
        "${:.2f}/h\n",
        n, fleet.group_names[g], hw.model->name, hw.accelerator->name, hw.tp,
        s->capacity.kv_cache_tokens / 1000.0, s->capacity.prefill_tokens_per_s,
        s->capacity.decode_tokens_per_s, s->capacity.price_per_hour);
  }
  return out;
}

std::string WorkloadSummary(const workload::WorkloadSpec& w) {
  std::string out = fmt::format("workload {}: {:.0f} s (measured after {:.0f} s), seed {}\n",
                                w.name, w.duration_s, w.warmup_s, w.seed);
  for (const auto& g : w.groups) {
    out += g.count > 0 ? fmt::format("  {} x {} (closed loop)\n", g.count, g.name)
                       : fmt::format("  {} at {:.2f} sessions/s (open loop)\n", g.name,
                                     g.sessions_per_second);
  }
  return out;
}

std::string TraceSummary(const TraceReplay& t, const TraceFacts& f) {
  return fmt::format(
      "trace {}: {} requests over {:.0f} s (speed {}x), {:.0f} prompt and {:.0f} output tokens/s;"
      " one infinite cache would hit {:.1f}% of prompt tokens\n",
      t.path, f.requests, f.span_s, t.speed, f.span_s > 0 ? f.prompt_tokens / f.span_s : 0,
      f.span_s > 0 ? f.output_tokens / f.span_s : 0, 100 * f.bound_hit_rate);
}

std::string ReportTable(const std::vector<PolicyReport>& reports, double bound) {
  std::string out = fmt::format(
      "{:<14} {:>7} {:>7} {:>7} {:>7} {:>7} {:>9} {:>6} {:>7} {:>8} {:>6} {:>6} {:>6} {:>7}\n",
      "policy", "TTFT50", "TTFT90", "TTFT99", "ITL50", "ITL99", "out/min", "hit%", "preempt",
      "$/Mtok", "spread", "work", "moves%", "wall_s");
  out += fmt::format(
      "{:<14} {:>7} {:>7} {:>7} {:>7} {:>7} {:>9} {:>6} {:>7} {:>8} {:>6} {:>6} {:>6} {:>7}\n", "",
      "s", "s", "s", "ms", "ms", "tokens", "", "", "", "busy", "spread", "", "");
  for (const auto& r : reports) {
    double moves = r.session_turns ? 100.0 * r.session_moves / r.session_turns : 0;
    out += fmt::format(
        "{:<14} {:>7.2f} {:>7.2f} {:>7.2f} {:>7.1f} {:>7.1f} {:>9.0f} {:>6.1f} {:>7} {:>8.2f} "
        "{:>6.2f} {:>6.2f} {:>6.1f} {:>7.1f}\n",
        r.policy, r.ttft_p50, r.ttft_p90, r.ttft_p99, r.itl_p50 * 1e3, r.itl_p99 * 1e3,
        r.output_tokens_per_min, r.prefix_hit_rate * 100, r.preemptions, r.cost_per_million_output,
        r.load_spread, r.work_spread, moves, r.wall_s);
  }
  if (bound > 0) {
    out += fmt::format("hit rate / the trace's bound ({:.1f}%):", 100 * bound);
    for (const auto& r : reports)
      out += fmt::format(" {} {:.3f}", r.policy, r.prefix_hit_rate / bound);
    out += "\n";
  }
  for (const auto& r : reports) {
    if (r.unfinished > 0 || r.rejected > 0) {
      out += fmt::format("note: {}: {} requests unfinished at the drain limit, {} rejected\n",
                         r.policy, r.unfinished, r.rejected);
    }
  }
  return out;
}

std::string ReportJson(const Fleet& fleet, const workload::WorkloadSpec& w,
                       const std::vector<PolicyReport>& reports, const TraceFacts* trace) {
  nlohmann::ordered_json j;
  j["fleet"] = {{"name", fleet.name}, {"servers", fleet.servers.size()}};
  j["workload"] = {
      {"name", w.name}, {"seed", w.seed}, {"duration_s", w.duration_s}, {"warmup_s", w.warmup_s}};
  if (trace != nullptr) {
    j["trace"] = {{"requests", trace->requests},
                  {"span_s", trace->span_s},
                  {"prompt_tokens", trace->prompt_tokens},
                  {"output_tokens", trace->output_tokens},
                  {"bound_hit_rate", trace->bound_hit_rate}};
  }
  j["policies"] = nlohmann::ordered_json::array();
  for (const auto& r : reports) {
    j["policies"].push_back({
        {"policy", r.policy},
        {"requests", r.requests},
        {"unfinished", r.unfinished},
        {"rejected", r.rejected},
        {"ttft_s",
         {{"p50", r.ttft_p50}, {"p90", r.ttft_p90}, {"p99", r.ttft_p99}, {"mean", r.ttft_mean}}},
        {"itl_s", {{"p50", r.itl_p50}, {"p99", r.itl_p99}}},
        {"e2e_s", {{"p50", r.e2e_p50}, {"p99", r.e2e_p99}}},
        {"output_tokens", r.output_tokens},
        {"output_tokens_per_min", r.output_tokens_per_min},
        {"prefix_cache_hit_rate", r.prefix_hit_rate},
        {"preemptions", r.preemptions},
        {"cost_per_million_output_tokens", r.cost_per_million_output},
        {"load_spread", r.load_spread},
        {"work_spread", r.work_spread},
        {"session_turns", r.session_turns},
        {"session_moves", r.session_moves},
        {"decision_us", r.decision_us},
        {"wall_s", r.wall_s},
    });
  }
  return j.dump(2) + "\n";
}

}  // namespace infergrid::plan
