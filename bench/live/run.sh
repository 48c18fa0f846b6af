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
  const j = JSON.parse(require("fs").readFileSync(process.argv[1]));
  const by = {}; for (const r of j.runs) by[r.gateway] = r;
  let ok = true;
  const check = (what, value, target, pass) => {
    console.log(`${pass ? "MET " : "MISS"} ${what}: ${value} (target ${target})`);
    ok = ok && pass;
  };
  const ig = by["infergrid"];
  if (!ig || ig.failure) { console.log("MISS infergrid did not run"); process.exit(1); }
  for (const [name, target] of [["nginx-round-robin", 0.33], ["nginx-session-hash", 0.7]]) {
    const r = by[name];
    if (!r || r.failure) continue;
    const x = ig.ttft.p90 / r.ttft.p90;
    check(`infergrid p90 TTFT / ${name}`, x.toFixed(2) + "x", "<= " + target + "x", x <= target);
  }
  const failed = j.runs.reduce((s, r) => s + (r.failed || 0) + (r.failure ? 1 : 0), 0);
  check("failed requests, all gateways", failed, "0", failed === 0);
  if (j.planner) {
    for (const [gw, policy] of Object.entries(j.planner.policy_of)) {
      const r = by[gw], p = j.planner.reports.find(x => x.policy === policy);
      if (!r || r.failure || !p) continue;
      for (const [what, live, pred] of [["p90 TTFT", r.ttft.p90, p.ttft_p90],
                                        ["hit rate", r.fleet.prefix_hit_rate, p.prefix_hit_rate],
                                        ["output tokens/min", r.output_tokens_per_min, p.output_tokens_per_min]]) {
        const x = live / pred;
        check(`${gw} live / planner ${what}`, x.toFixed(2) + "x", "0.85-1.15x", x >= 0.85 && x <= 1.15);
      }
    }
  }
  process.exit(ok ? 0 : 1);
' "$OUT/report.json"
