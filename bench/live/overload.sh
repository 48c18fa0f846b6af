#!/usr/bin/env bash
# Overload (issue 6): `infergrid bench` drives two small-KV H200 servers (Llama-3.1-8B) at twice
# what they can serve (examples/bench/overload-2x.yaml: 9 long requests a second where they
# top out near 4.5) through infergrid and through nginx round-robin, then checks from the
# report, each against the baseline of the same run:
#   the servers report zero preemptions behind infergrid, and some behind nginx round-robin;
#   infergrid's throughput is at least 0.9x nginx round-robin's (holding requests in the
#   gateway must not waste the fleet); no failed requests; the live figures within 15% of the
#   planner's prediction.
# Extra arguments go to the bench (for example --time-scale 2).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT=${OUT:-$ROOT/build/bench-overload}
"$ROOT/build/release/infergrid" bench --fleet "$ROOT/examples/bench/fleet-h200-8b-2-small-kv.yaml" \
  --workload "$ROOT/examples/bench/overload-2x.yaml" --gateways infergrid,nginx-round-robin \
  --out "$OUT" "$@" || true
node -e '
  const j = JSON.parse(require("fs").readFileSync(process.argv[1]));
  const by = {}; for (const r of j.runs) by[r.gateway] = r;
  let ok = true;
  const check = (what, value, target, pass) => {
    console.log(`${pass ? "MET " : "MISS"} ${what}: ${value} (target ${target})`);
    ok = ok && pass;
  };
  const ig = by["infergrid"], rr = by["nginx-round-robin"];
  if (!ig || ig.failure || !rr || rr.failure) { console.log("MISS a gateway did not run"); process.exit(1); }
  check("preemptions behind infergrid", ig.fleet.preemptions, "0", ig.fleet.preemptions === 0);
  check("preemptions behind nginx round-robin", rr.fleet.preemptions, "> 0", rr.fleet.preemptions > 0);
  const x = ig.output_tokens_per_min / rr.output_tokens_per_min;
  check("infergrid output tokens/min / nginx round-robin", x.toFixed(2) + "x", ">= 0.9x", x >= 0.9);
  const t = ig.ttft.p90 / rr.ttft.p90;
  console.log(`     infergrid p90 TTFT / nginx round-robin: ${t.toFixed(2)}x`);
  const failed = j.runs.reduce((s, r) => s + (r.failed || 0), 0);
  check("failed requests", failed, "0", failed === 0);
  if (j.planner) {
    for (const [gw, policy] of Object.entries(j.planner.policy_of)) {
      const r = by[gw], p = j.planner.reports.find(x => x.policy === policy);
      if (!r || r.failure || !p) continue;
      for (const [what, live, pred] of [["p90 TTFT", r.ttft.p90, p.ttft_p90],
                                        ["output tokens/min", r.output_tokens_per_min, p.output_tokens_per_min]]) {
        const x = live / pred;
        check(`${gw} live / planner ${what}`, x.toFixed(2) + "x", "0.85-1.15x", x >= 0.85 && x <= 1.15);
      }
    }
  }
  process.exit(ok ? 0 : 1);
' "$OUT/report.json"
