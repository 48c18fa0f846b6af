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
  const { load, Checker } = require(process.argv[1]);
  const { j, by } = load(process.argv[2]);
  const c = new Checker();
  const ig = by["infergrid"], rr = by["nginx-round-robin"];
  if (!ig || ig.failure || !rr || rr.failure) { console.log("MISS a gateway did not run"); process.exit(1); }
  c.check("preemptions behind infergrid", ig.fleet.preemptions, "0", ig.fleet.preemptions === 0);
  c.check("preemptions behind nginx round-robin", rr.fleet.preemptions, "> 0", rr.fleet.preemptions > 0);
  const x = ig.output_tokens_per_min / rr.output_tokens_per_min;
  c.check("infergrid output tokens/min / nginx round-robin", x.toFixed(2) + "x", ">= 0.9x", x >= 0.9);
  const t = ig.ttft.p90 / rr.ttft.p90;
  console.log(`     infergrid p90 TTFT / nginx round-robin: ${t.toFixed(2)}x`);
  const failed = j.runs.reduce((s, r) => s + (r.failed || 0), 0);
  c.check("failed requests", failed, "0", failed === 0);
  c.planner(j, by, (r, p) => [["p90 TTFT", r.ttft.p90, p.ttft_p90],
                              ["output tokens/min", r.output_tokens_per_min, p.output_tokens_per_min]]);
  c.exit();
' "$ROOT/bench/live/checks.js" "$OUT/report.json"
