#include "bench/report_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace infergrid::bench {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kDash = "\xe2\x80\x93";  // "–": a value the result does not have

// Gateway colours; "infergrid" always gets the first, the others the rest in run order.
constexpr std::array<std::string_view, 10> kPalette = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                                       "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                                       "#9c755f", "#bab0ac"};

// The value at j[a][b][c] (empty keys end the path), or null where any step is missing.
const Json* Find(const Json& j, std::string_view a, std::string_view b = {},
                 std::string_view c = {}) {
  const Json* at = &j;
  for (std::string_view key : {a, b, c}) {
    if (key.empty()) break;
    if (!at->is_object()) return nullptr;
    auto it = at->find(std::string(key));
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

std::optional<double> Number(const Json& j, std::string_view a, std::string_view b = {},
                             std::string_view c = {}) {
  const Json* v = Find(j, a, b, c);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  double d = v->get<double>();
  if (!std::isfinite(d)) return std::nullopt;
  return d;
}

// A string field, or "" where it is missing or not a string.
std::string Text(const Json& j, std::string_view a, std::string_view b = {}) {
  const Json* v = Find(j, a, b);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

std::string Escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// The JSON for a <script> element: `<`, `>` and `&` only occur inside JSON strings, where
// their \u escapes mean the same, so no "</script>" or "<!--" can end the element early.
std::string EmbedJson(const Json& j) {
  std::string dumped = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::string out;
  out.reserve(dumped.size());
  for (char c : dumped) {
    switch (c) {
      case '<':
        out += "\\u003c";
        break;
      case '>':
        out += "\\u003e";
        break;
      case '&':
        out += "\\u0026";
        break;
      default:
        out += c;
    }
  }
  return out;
}

enum class Format { kCount, kSeconds, kPercent, kRatio };
enum class Better { kNone, kLower, kHigher };

// 210000 -> "210,000".
std::string Grouped(double v) {
  if (std::abs(v) >= 1e15) return fmt::format("{:.3g}", v);
  long long n = std::llround(v);
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out = n < 0 ? "-" : "";
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string Seconds(double s) {
  double a = std::abs(s);
  if (a == 0) return "0";
  if (a < 0.01) return fmt::format("{:.2f} ms", s * 1e3);
  if (a < 0.1) return fmt::format("{:.1f} ms", s * 1e3);
  if (a < 1) return fmt::format("{:.0f} ms", s * 1e3);
  if (a < 10) return fmt::format("{:.2f} s", s);
  if (a < 100) return fmt::format("{:.1f} s", s);
  return fmt::format("{:.0f} s", s);
}

std::string FormatValue(std::optional<double> v, Format f) {
  if (!v) return std::string(kDash);
  switch (f) {
    case Format::kCount:
      return Grouped(*v);
    case Format::kSeconds:
      return Seconds(*v);
    case Format::kPercent:
      return fmt::format("{:.1f}%", *v * 100);
    case Format::kRatio:
      return fmt::format("{:.2f}", *v);
  }
  return std::string(kDash);
}

std::vector<const Json*> Runs(const Json& result) {
  std::vector<const Json*> runs;
  const Json* r = Find(result, "runs");
  if (r != nullptr && r->is_array()) {
    for (const Json& run : *r) runs.push_back(&run);
  }
  return runs;
}

std::string GatewayName(const Json& run, size_t i) {
  std::string name = Text(run, "gateway");
  return name.empty() ? fmt::format("run {}", i + 1) : name;
}

std::vector<std::string_view> Colors(const std::vector<const Json*>& runs) {
  std::vector<std::string_view> colors;
  size_t next = 1;
  for (const Json* run : runs) {
    if (Text(*run, "gateway") == "infergrid") {
      colors.push_back(kPalette[0]);
    } else {
      colors.push_back(kPalette[next]);
      next = next + 1 < kPalette.size() ? next + 1 : 1;
    }
  }
  return colors;
}

// The run's name cell: a colour swatch (as in the plots), the name, the description under it.
std::string GatewayCell(const Json& run, size_t i, std::string_view color) {
  std::string desc = Text(run, "description");
  return fmt::format("<td class=\"gw\"><span class=\"sw\" style=\"background:{}\"></span>{}{}</td>",
                     color, Escape(GatewayName(run, i)),
                     desc.empty() ? "" : "<div class=\"desc\">" + Escape(desc) + "</div>");
}

std::string Header(const Json& result) {
  std::string name = Text(result, "workload", "name");
  std::string out = fmt::format("<header>\n<h1>infergrid bench: {}</h1>\n<dl class=\"meta\">\n",
                                Escape(name.empty() ? std::string(kDash) : name));
  auto item = [&out](std::string_view label, std::string_view escaped_value) {
    out += fmt::format("<dt>{}</dt><dd>{}</dd>\n", label,
                       escaped_value.empty() ? kDash : escaped_value);
  };
  std::string source = Text(result, "workload", "source");
  item("Workload", name.empty() || source.empty() ? Escape(name + source)
                                                  : Escape(name) + " (" + Escape(source) + ")");

  std::string fleet = Text(result, "fleet", "description");
  std::string fleet_name = Text(result, "fleet", "name");
  std::optional<double> servers = Number(result, "fleet", "servers");
  std::vector<std::string> details;
  if (!fleet_name.empty()) details.push_back(Escape(fleet_name));
  if (servers) details.push_back(Grouped(*servers) + " servers");
  std::string joined;
  for (const auto& d : details) joined += (joined.empty() ? "" : ", ") + d;
  item("Fleet", fleet.empty()    ? joined
                : joined.empty() ? Escape(fleet)
                                 : Escape(fleet) + " (" + joined + ")");

  std::string load;
  if (auto d = Number(result, "workload", "duration_s")) load += fmt::format("{:g} s", *d);
  if (auto w = Number(result, "workload", "warmup_s")) {
    load += fmt::format("{}warmup {:g} s", load.empty() ? "" : ", ", *w);
  }
  std::string api = Text(result, "workload", "api");
  if (!api.empty()) load += (load.empty() ? "" : ", ") + Escape(api) + " API";
  if (const Json* s = Find(result, "workload", "stream"); s != nullptr && s->is_boolean()) {
    load +=
        (load.empty() ? "" : ", ") + std::string(s->get<bool>() ? "streaming" : "not streaming");
  }
  item("Run", load);
  std::optional<double> scale = Number(result, "workload", "time_scale");
  item("Time scale", scale ? fmt::format("\xc3\x97{:g}", *scale) : "");  // "×2"
  item("Started", Escape(Text(result, "started_at")));
  std::optional<double> seed = Number(result, "workload", "seed");
  item("Seed", seed ? fmt::format("{:.0f}", *seed) : "");
  out +=
      "</dl>\n<p class=\"note\">Latencies, rates and times are in the fleet's model time (see the "
      "time scale), not wall-clock time. Best value per column highlighted.</p>\n</header>\n";
  return out;
}

struct Column {
  std::string_view group;  // columns with the same group share a header cell above them
  std::string_view label;
  std::string_view key, sub;
  Format format;
  Better better;
};

constexpr Column kColumns[] = {
    {"", "Requests", "requests", "", Format::kCount, Better::kNone},
    {"", "Failed", "failed", "", Format::kCount, Better::kLower},
    {"TTFT", "p50", "ttft", "p50", Format::kSeconds, Better::kLower},
    {"TTFT", "p90", "ttft", "p90", Format::kSeconds, Better::kLower},
    {"TTFT", "p99", "ttft", "p99", Format::kSeconds, Better::kLower},
    {"ITL", "p50", "itl", "p50", Format::kSeconds, Better::kLower},
    {"ITL", "p99", "itl", "p99", Format::kSeconds, Better::kLower},
    {"E2E", "p50", "e2e", "p50", Format::kSeconds, Better::kLower},
    {"E2E", "p99", "e2e", "p99", Format::kSeconds, Better::kLower},
    {"", "Output tokens / min", "output_tokens_per_min", "", Format::kCount, Better::kHigher},
    {"", "Requests / min", "requests_per_min", "", Format::kCount, Better::kHigher},
    {"", "Prefix hit rate", "fleet", "prefix_hit_rate", Format::kPercent, Better::kHigher},
    {"", "Preempt&shy;ions", "fleet", "preemptions", Format::kCount, Better::kLower},
    {"KV usage", "mean", "fleet", "kv_usage_mean", Format::kPercent, Better::kNone},
    {"KV usage", "max", "fleet", "kv_usage_max", Format::kPercent, Better::kNone},
    {"", "Load spread", "fleet", "load_spread", Format::kRatio, Better::kLower},
};

// The failed cell's tooltip: the error counts by kind.
std::string ErrorsTitle(const Json& run) {
  const Json* errors = Find(run, "errors");
  if (errors == nullptr || !errors->is_object()) return "";
  std::string title;
  for (const auto& [kind, n] : errors->items()) {
    if (!n.is_number()) continue;
    title += fmt::format("{}{}: {}", title.empty() ? "" : ", ", kind, Grouped(n.get<double>()));
  }
  return title.empty() ? "" : " title=\"" + Escape(title) + "\"";
}

std::string SummaryTable(const std::vector<const Json*>& runs,
                         const std::vector<std::string_view>& colors) {
  constexpr size_t kN = std::size(kColumns);
  std::string out = "<section>\n<h2>Summary</h2>\n<div class=\"scroll\"><table id=\"summary\">\n";
  // Two header rows: group cells (colspan) above their columns; lone columns span both.
  std::string top = "<tr><th class=\"gw\" rowspan=\"2\">Gateway</th>", bottom = "<tr>";
  for (size_t c = 0; c < kN;) {
    if (kColumns[c].group.empty()) {
      top += fmt::format("<th rowspan=\"2\">{}</th>", kColumns[c].label);
      ++c;
      continue;
    }
    size_t end = c;
    while (end < kN && kColumns[end].group == kColumns[c].group) {
      bottom += fmt::format("<th>{}</th>", kColumns[end].label);
      ++end;
    }
    top += fmt::format("<th colspan=\"{}\">{}</th>", end - c, kColumns[c].group);
    c = end;
  }
  out += "<thead>\n" + top + "</tr>\n" + bottom + "</tr>\n</thead>\n<tbody>\n";

  // The best value per column, where the runs differ.
  std::array<std::optional<double>, kN> best;
  for (size_t c = 0; c < kN; ++c) {
    const Column& col = kColumns[c];
    if (col.better == Better::kNone) continue;
    std::optional<double> lo, hi;
    for (const Json* run : runs) {
      if (Find(*run, "failure") != nullptr) continue;
      if (auto v = Number(*run, col.key, col.sub)) {
        lo = lo ? std::min(*lo, *v) : *v;
        hi = hi ? std::max(*hi, *v) : *v;
      }
    }
    if (lo && hi && *lo != *hi) best[c] = col.better == Better::kLower ? lo : hi;
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    const Json& run = *runs[i];
    out += "<tr>" + GatewayCell(run, i, colors[i]);
    if (const Json* failure = Find(run, "failure"); failure != nullptr) {
      out +=
          fmt::format("<td class=\"gw failure\" colspan=\"{}\">did not run: {}</td></tr>\n", kN,
                      Escape(failure->is_string() ? failure->get<std::string>() : failure->dump()));
      continue;
    }
    for (size_t c = 0; c < kN; ++c) {
      const Column& col = kColumns[c];
      std::optional<double> v = Number(run, col.key, col.sub);
      bool is_best = v && best[c] && *v == *best[c];
      out += fmt::format("<td{}{}>{}</td>", is_best ? " class=\"best\"" : "",
                         col.key == "failed" ? ErrorsTitle(run) : "", FormatValue(v, col.format));
    }
    out += "</tr>\n";
  }
  if (runs.empty()) {
    out += fmt::format("<tr><td class=\"gw\" colspan=\"{}\">no runs</td></tr>\n", kN + 1);
  }
  out += "</tbody>\n</table></div>\n</section>\n";
  return out;
}

// live / predicted, or "–".
std::string Ratio(std::optional<double> live, std::optional<double> predicted) {
  if (!live || !predicted || *predicted == 0) return std::string(kDash);
  return fmt::format("{:.2f}\xc3\x97", *live / *predicted);
}

// The planner's prediction for each run's policy next to the live numbers, when the result
// has a planner section.
std::string PlannerTable(const Json& result, const std::vector<const Json*>& runs,
                         const std::vector<std::string_view>& colors) {
  const Json* policy_of = Find(result, "planner", "policy_of");
  const Json* reports = Find(result, "planner", "reports");
  if (policy_of == nullptr || !policy_of->is_object()) return "";
  std::string rows;
  for (size_t i = 0; i < runs.size(); ++i) {
    const Json& run = *runs[i];
    const Json* policy = Find(*policy_of, Text(run, "gateway"));
    if (Text(run, "gateway").empty() || policy == nullptr || !policy->is_string() ||
        Find(run, "failure") != nullptr) {
      continue;
    }
    static const Json kNone = Json::object();
    const Json* report = &kNone;
    if (reports != nullptr && reports->is_array()) {
      for (const Json& r : *reports) {
        if (Text(r, "policy") == policy->get<std::string>()) {
          report = &r;
          break;
        }
      }
    }
    rows += "<tr>" + GatewayCell(run, i, colors[i]) +
            fmt::format("<td class=\"gw\">{}</td>", Escape(policy->get<std::string>()));
    auto triple = [&](std::optional<double> live, std::optional<double> predicted, Format f) {
      rows += fmt::format("<td>{}</td><td>{}</td><td>{}</td>", FormatValue(live, f),
                          FormatValue(predicted, f), Ratio(live, predicted));
    };
    triple(Number(run, "ttft", "p90"), Number(*report, "ttft_p90"), Format::kSeconds);
    triple(Number(run, "fleet", "prefix_hit_rate"), Number(*report, "prefix_hit_rate"),
           Format::kPercent);
    triple(Number(run, "output_tokens_per_min"), Number(*report, "output_tokens_per_min"),
           Format::kCount);
    rows += "</tr>\n";
  }
  if (rows.empty()) return "";
  return "<section>\n<h2>Planner prediction vs live</h2>\n<div class=\"scroll\">"
         "<table id=\"planner\">\n<thead>\n<tr><th class=\"gw\" rowspan=\"2\">Gateway</th>"
         "<th class=\"gw\" rowspan=\"2\">Planner policy</th><th colspan=\"3\">TTFT p90</th>"
         "<th colspan=\"3\">Prefix hit rate</th><th colspan=\"3\">Output tokens/min</th></tr>\n"
         "<tr><th>live</th><th>predicted</th><th>ratio</th><th>live</th><th>predicted</th>"
         "<th>ratio</th><th>live</th><th>predicted</th><th>ratio</th></tr>\n</thead>\n<tbody>\n" +
         rows + "</tbody>\n</table></div>\n</section>\n";
}

constexpr std::string_view kStyle = R"css(
:root{--fg:#1d2330;--muted:#5b6475;--line:#d8dce3;--head:#f5f6f8;--best:#e3f3e6}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1240px;padding:20px;color:var(--fg);background:#fff;
  font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
h1{font-size:22px;margin:0 0 8px}
h2{font-size:16px;margin:28px 0 8px}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:8px 0}
dl.meta dt{color:var(--muted)}
dl.meta dd{margin:0}
.note{color:var(--muted);font-size:13px}
.scroll{overflow-x:auto}
table{border-collapse:collapse;font-variant-numeric:tabular-nums;white-space:nowrap;font-size:13px}
th,td{padding:4px 5px;border-bottom:1px solid var(--line);text-align:right;vertical-align:top}
th{font-weight:600;background:var(--head);text-align:center;white-space:normal}
.gw{text-align:left}
td.gw{white-space:normal;min-width:140px;max-width:190px}
td.best{background:var(--best);font-weight:600}
td.failure{color:#b3261e}
.sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px}
.desc{color:var(--muted);font-size:12px}
.plots{display:grid;grid-template-columns:repeat(auto-fit,minmax(540px,1fr));gap:20px;margin-top:28px}
figure.plot{margin:0;border:1px solid var(--line);border-radius:6px;padding:12px}
figcaption{font-weight:600;margin-bottom:6px}
figure.plot svg{width:100%;height:auto;display:block;font-size:11px}
svg text{fill:var(--muted)}
svg text.label,svg text.value{fill:var(--fg)}
svg text.label{font-size:12px}
svg .grid{stroke:#eceef2}
svg .axis,svg .tick{stroke:#9aa1ad}
svg .series{fill:none;stroke-width:2;stroke-linejoin:round;stroke-linecap:round}
svg .warmup{fill:#eef0f4}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;font-size:12px;margin-top:6px}
)css";

// Helpers: data access, number formats, scales, axes, the legend.
constexpr std::string_view kScriptHelpers = R"js(
'use strict';
const readJson = (id, fallback) => {
  try {
    const node = document.getElementById(id);
    const v = node && JSON.parse(node.textContent);
    return v == null ? fallback : v;
  } catch (e) {
    return fallback;
  }
};
const data = readJson('bench-data', {});
const colors = readJson('bench-colors', []);
const runs = Array.isArray(data.runs) ? data.runs : [];
const W = 640, H = 360, X0 = 64, X1 = W - 18, Y0 = H - 48, Y1 = 16;
const fin = (v) => typeof v === 'number' && isFinite(v);
const obj = (v) => (v && typeof v === 'object' && !Array.isArray(v) ? v : {});
const max = (a) => a.reduce((m, v) => (v > m ? v : m), -Infinity);
const min = (a) => a.reduce((m, v) => (v < m ? v : m), Infinity);
const trim = (v) => String(+v.toPrecision(3));
const fmtSec = (v) => (v === 0 ? '0' : Math.abs(v) < 1 ? trim(v * 1e3) + ' ms' : trim(v) + ' s');
const fmtNum = (v) =>
  Math.abs(v) >= 1e6 ? trim(v / 1e6) + 'M' : Math.abs(v) >= 1e3 ? trim(v / 1e3) + 'k' : trim(v);
const fmtPct = (v) => trim(v * 100) + '%';
const runName = (r, i) => (typeof r.gateway === 'string' && r.gateway) || 'run ' + (i + 1);
const short = (s) => (s.length > 26 ? s.slice(0, 25) + '\u2026' : s);

// A child element in the parent's namespace (SVG or HTML).
function el(parent, tag, attrs, text) {
  const e = document.createElementNS(parent.namespaceURI, tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text != null) e.textContent = text;
  parent.appendChild(e);
  return e;
}

// The 1-2-5 number at or above v, and at or below v.
function up125(v) {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v)), f = v / p;
  return p * (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10);
}
function down125(v) {
  const p = 10 ** Math.floor(Math.log10(v)), f = v / p;
  return p * (f >= 5 ? 5 : f >= 2 ? 2 : 1);
}
const niceMax = (m) => (m > 0 ? Math.ceil(m / up125(m / 5) - 1e-9) * up125(m / 5) : 1);

// Scales from a domain [d0, d1] onto pixels [r0, r1], with their tick values.
function linear(d0, d1, r0, r1) {
  const f = (v) => r0 + ((v - d0) / (d1 - d0 || 1)) * (r1 - r0);
  f.ticks = () => {
    const step = up125((d1 - d0) / 5), out = [];
    for (let v = Math.ceil(d0 / step - 1e-9) * step; v <= d1 + step * 1e-9; v += step) {
      out.push(+v.toPrecision(12));
    }
    return out;
  };
  return f;
}
// headroom > 1 leaves room below the smallest value (so that its bar shows).
function logScale(values, r0, r1, headroom) {
  const d0 = down125(min(values) / (headroom || 1)), d1 = Math.max(up125(max(values)), d0 * 10);
  const l0 = Math.log10(d0), l1 = Math.log10(d1);
  const f = (v) => r0 + ((Math.log10(Math.max(v, d0)) - l0) / (l1 - l0)) * (r1 - r0);
  f.ticks = () => {
    const span = l1 - l0, out = [];
    const mults = span <= 1.2 ? [1, 2, 5] : span <= 3.5 ? [1, 3] : [1];
    for (let e = Math.floor(l0); e <= Math.ceil(l1); e++) {
      for (const m of mults) {
        const v = +(m * 10 ** e).toPrecision(12);
        if (v >= d0 * (1 - 1e-9) && v <= d1 * (1 + 1e-9)) out.push(v);
      }
    }
    return out;
  };
  return f;
}

// Grid lines and labels for y, ticks for x (when x is a scale), the axis titles.
function axes(svg, x, y, o) {
  const g = el(svg, 'g', {class: 'axes'});
  for (const t of y.ticks()) {
    el(g, 'line', {class: 'grid', x1: X0, x2: X1, y1: y(t), y2: y(t)});
    el(g, 'text', {x: X0 - 6, y: y(t) + 4, 'text-anchor': 'end'}, o.yfmt(t));
  }
  if (x) {
    for (const t of x.ticks()) {
      el(g, 'line', {class: 'tick', x1: x(t), x2: x(t), y1: Y0, y2: Y0 + 5});
      el(g, 'text', {x: x(t), y: Y0 + 18, 'text-anchor': 'middle'}, o.xfmt(t));
    }
    el(g, 'text', {class: 'label', x: (X0 + X1) / 2, y: H - 8, 'text-anchor': 'middle'}, o.xlabel);
  }
  el(g, 'line', {class: 'axis', x1: X0, x2: X1, y1: Y0, y2: Y0});
  el(g, 'line', {class: 'axis', x1: X0, x2: X0, y1: Y1, y2: Y0});
  el(g, 'text', {
    class: 'label', 'text-anchor': 'middle',
    transform: 'translate(14 ' + (Y0 + Y1) / 2 + ') rotate(-90)',
  }, o.ylabel);
}

function legend(fig, items) {
  const box = fig.querySelector('.legend');
  if (!box) return;
  for (const it of items) {
    const entry = el(box, 'span', {});
    el(entry, 'span', {class: 'sw', style: 'background:' + it.color});
    entry.appendChild(document.createTextNode(it.name));
  }
}

// Marks the plot drawn with n series or bar groups (the tests read data-drawn).
function finish(svg, n) {
  if (n === 0) {
    el(svg, 'text', {class: 'label', x: W / 2, y: H / 2, 'text-anchor': 'middle'}, 'no data');
  }
  svg.setAttribute('data-drawn', String(n));
}
)js";

// The four plots, from the embedded result.
constexpr std::string_view kScriptPlots = R"js(
// One line per series of [x, y] points; o.xlog for a log x axis, o.band for a shaded warmup.
function linePlot(id, series, o) {
  const fig = document.getElementById(id), svg = fig && fig.querySelector('svg');
  if (!svg) return;
  const drawn = [];
  for (const s of series) {
    const pts = (Array.isArray(s.pts) ? s.pts : []).filter(
        (p) => Array.isArray(p) && fin(p[0]) && fin(p[1]) && (!o.xlog || p[0] > 0));
    if (pts.length) drawn.push(Object.assign({}, s, {pts}));
  }
  if (drawn.length) {
    const xs = drawn.flatMap((s) => s.pts.map((p) => p[0]));
    const ys = drawn.flatMap((s) => s.pts.map((p) => p[1]));
    const x = o.xlog ? logScale(xs, X0, X1) : linear(0, niceMax(max(xs.concat([o.band]))), X0, X1);
    const y = linear(0, o.ymax || niceMax(max(ys)), Y0, Y1);
    if (o.band > 0) {
      el(svg, 'rect', {class: 'warmup', x: X0, y: Y1, width: x(o.band) - X0, height: Y0 - Y1});
      el(svg, 'text', {x: X0 + 6, y: Y1 + 14}, 'warmup');
    }
    axes(svg, x, y, o);
    for (const s of drawn) {
      let d = s.pts.map((p, i) => (i ? 'L' : 'M') + x(p[0]).toFixed(1) + ',' + y(p[1]).toFixed(1));
      if (s.pts.length === 1) d.push('h0.1');
      const path = el(svg, 'path', {class: 'series', d: d.join(''), stroke: s.color});
      el(path, 'title', {}, s.name);
    }
    legend(fig, drawn);
  }
  finish(svg, drawn.length);
}

// Groups of bars, one group per run; o.ylog for a log y axis.
function barPlot(id, groups, o) {
  const fig = document.getElementById(id), svg = fig && fig.querySelector('svg');
  if (!svg) return;
  const drawn = [];
  for (const g of groups) {
    const bars = g.bars.filter((b) => fin(b.v) && (!o.ylog || b.v > 0));
    if (bars.length) drawn.push(Object.assign({}, g, {bars}));
  }
  if (drawn.length) {
    const vs = drawn.flatMap((g) => g.bars.map((b) => b.v));
    const y = o.ylog ? logScale(vs, Y0, Y1, 3) : linear(0, o.ymax || niceMax(max(vs)), Y0, Y1);
    axes(svg, null, y, o);
    const slot = (X1 - X0) / drawn.length;
    drawn.forEach((g, i) => {
      const n = g.bars.length, cx = X0 + slot * (i + 0.5);
      const bw = Math.min(64, (slot * 0.75) / n), left = cx - (bw * n) / 2;
      g.bars.forEach((b, j) => {
        const top = Math.min(y(b.v), Y0 - 0.5), bx = left + j * bw + 2, w = bw - 4;
        const rect = el(svg, 'rect', {
          class: 'bar', x: bx.toFixed(1), y: top.toFixed(1), width: w.toFixed(1),
          height: (Y0 - top).toFixed(1), fill: g.color, 'fill-opacity': b.opacity || 1,
        });
        el(rect, 'title', {}, g.name + (b.label ? ' ' + b.label : '') + ': ' + o.vfmt(b.v));
        el(svg, 'text', {class: 'value', x: bx + w / 2, y: top - 4, 'text-anchor': 'middle'},
           o.vfmt(b.v));
        if (b.label) el(svg, 'text', {x: bx + w / 2, y: Y0 + 13, 'text-anchor': 'middle'}, b.label);
      });
      const labelled = g.bars.some((b) => b.label);
      el(svg, 'text', {class: 'label', x: cx, y: Y0 + (labelled ? 30 : 17), 'text-anchor': 'middle'},
         short(g.name));
    });
    legend(fig, drawn);
  }
  finish(svg, drawn.length);
}

const safely = (draw) => {
  try {
    draw();
  } catch (e) {
    console.error(e);
  }
};
const lines = (pts) => runs.map((r, i) => ({name: runName(obj(r), i), color: colors[i] || '#888',
                                            pts: pts(obj(r))}));
const groups = (bars) => runs.map((r, i) => ({name: runName(obj(r), i),
                                              color: colors[i] || '#888', bars: bars(obj(r))}));
const warmup = obj(data.workload).warmup_s;

safely(() => linePlot('plot-ttft-cdf', lines((r) => r.ttft_cdf), {
  xlog: true, ymax: 1, xfmt: fmtSec, yfmt: fmtPct,
  xlabel: 'time to first token (log scale)', ylabel: 'fraction of requests',
}));
safely(() => linePlot('plot-throughput', lines((r) => {
  const s = obj(r.series), dt = fin(s.interval_s) && s.interval_s > 0 ? s.interval_s : 1;
  const v = Array.isArray(s.output_tokens_per_s) ? s.output_tokens_per_s : [];
  return v.map((tps, i) => [i * dt, tps]);
}), {
  band: fin(warmup) ? warmup : 0, xfmt: (v) => trim(v) + ' s', yfmt: fmtNum,
  xlabel: 'time since start', ylabel: 'output tokens per second',
}));
safely(() => barPlot('plot-prefix-hit', groups((r) => [{v: obj(r.fleet).prefix_hit_rate}]), {
  ymax: 1, yfmt: fmtPct, vfmt: fmtPct, ylabel: 'prefix cache hit rate',
}));
safely(() => barPlot('plot-ttft-percentiles', groups((r) => ['p50', 'p90', 'p99'].map(
    (k, j) => ({label: k, v: obj(r.ttft)[k], opacity: [0.45, 0.7, 1][j]}))), {
  ylog: true, yfmt: fmtSec, vfmt: fmtSec, ylabel: 'time to first token (log scale)',
}));
)js";

struct Plot {
  std::string_view id, title, description;
};

constexpr Plot kPlots[] = {
    {"plot-ttft-cdf", "Time to first token (CDF)",
     "Fraction of requests whose first token came within a time, one line per gateway"},
    {"plot-throughput", "Output tokens per second over time",
     "Output tokens per second since the start, one line per gateway"},
    {"plot-prefix-hit", "Prefix cache hit rate", "The fleet's prefix cache hit rate per gateway"},
    {"plot-ttft-percentiles", "TTFT percentiles",
     "Time to first token at p50, p90 and p99 per gateway"},
};

std::string Render(const Json& result) {
  std::vector<const Json*> runs = Runs(result);
  std::vector<std::string_view> colors = Colors(runs);
  std::string name = Text(result, "workload", "name");

  std::string out = fmt::format(
      "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>infergrid bench{}</title>\n<style>{}</style>\n</head>\n<body>\n",
      name.empty() ? "" : ": " + Escape(name), kStyle);
  out += Header(result);
  out += SummaryTable(runs, colors);
  out += PlannerTable(result, runs, colors);
  out += "<noscript><p class=\"note\">The plots are drawn by JavaScript.</p></noscript>\n";
  out += "<section class=\"plots\">\n";
  for (const Plot& p : kPlots) {
    out += fmt::format(
        "<figure class=\"plot\" id=\"{}\"><figcaption>{}</figcaption>"
        "<svg viewBox=\"0 0 640 360\" role=\"img\" aria-label=\"{}\"></svg>"
        "<div class=\"legend\"></div></figure>\n",
        p.id, p.title, p.description);
  }
  out += "</section>\n";
  out += "<script type=\"application/json\" id=\"bench-data\">" + EmbedJson(result) + "</script>\n";
  out += "<script type=\"application/json\" id=\"bench-colors\">" +
         EmbedJson(Json(std::vector<std::string>(colors.begin(), colors.end()))) + "</script>\n";
  out += "<script>\n(() => {";
  out += kScriptHelpers;
  out += kScriptPlots;
  out += "})();\n</script>\n</body>\n</html>\n";
  return out;
}

}  // namespace

std::string RenderHtml(const nlohmann::json& result) {
  try {
    return Render(result);
  } catch (const std::exception& e) {
    return "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
           "<title>infergrid bench</title></head><body><p>The report could not be rendered: " +
           Escape(e.what()) + "</p></body></html>\n";
  }
}

}  // namespace infergrid::bench
