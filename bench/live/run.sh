#!/usr/bin/env bash
# The live comparison of docs/BENCHMARKS.md: `infergrid bench` with its six gateways in front of
# eight simulated H200 servers (Llama-3.1-8B), 100 coding agents, 150 s (40 s warmup), then the
# issue's targets checked from the report, each a ratio against a baseline of the same run:
#   infergrid p90 TTFT <= 0.33x nginx round-robin's and <= 0.7x nginx session-hash's,
#   zero failed requests, and the live p90 TTFT, hit rate and throughput within 15% of the
#   planner's prediction for the same set-up (infergrid, nginx round-robin, session hash).
# Extra arguments go to the bench (for example --time-scale 2, --duration 90).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT=${OUT:-$ROOT/build/bench-live}
"$ROOT/build/release/infergrid" bench --fleet "$ROOT/examples/bench/fleet-h200-8b-8.yaml" \
  --workload "$ROOT/examples/bench/coding-agents-100.yaml" --out "$OUT" "$@" || true
node -e '
  const { load, Checker } = require(process.argv[1]);
  const { j, by } = load(process.argv[2]);
  const c = new Checker();
  const ig = by["infergrid"];
  if (!ig || ig.failure) { console.log("MISS infergrid did not run"); process.exit(1); }
  for (const [name, target] of [["nginx-round-robin", 0.33], ["nginx-session-hash", 0.7]]) {
    const r = by[name];
    if (!r || r.failure) continue;
    const x = ig.ttft.p90 / r.ttft.p90;
    c.check(`infergrid p90 TTFT / ${name}`, x.toFixed(2) + "x", "<= " + target + "x", x <= target);
  }
  const failed = j.runs.reduce((s, r) => s + (r.failed || 0) + (r.failure ? 1 : 0), 0);
  c.check("failed requests, all gateways", failed, "0", failed === 0);
  c.planner(j, by, (r, p) => [["p90 TTFT", r.ttft.p90, p.ttft_p90],
                              ["hit rate", r.fleet.prefix_hit_rate, p.prefix_hit_rate],
                              ["output tokens/min", r.output_tokens_per_min, p.output_tokens_per_min]]);
  c.exit();
' "$ROOT/bench/live/checks.js" "$OUT/report.json"
