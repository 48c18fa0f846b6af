#!/usr/bin/env bash
# `infergrid bench` end to end: a small simulated fleet, every built-in gateway (the bench
# starts nginx and HAProxy itself), a short coding-agent workload at time scale 4. Checks the
# report (every run complete with zero failures, the fleet's hit rate behind infergrid above
# round-robin's, the planner's prediction beside it), a recorded trace replayed through another
# gateway, a Mooncake-format trace replayed over HTTP with its sharing intact, the report
# re-rendered from its JSON, bad input, and that every process the bench started is gone after
# a Ctrl-C.
set -euo pipefail
BIN=$1
ROOT=$2
source "$(dirname "$0")/lib.sh"

cat > "$WORK/fleet.yaml" <<'YAML'
apiVersion: infergrid.dev/v1
kind: Fleet
metadata: {name: tiny}
spec:
  servers:
  - {name: h200, count: 3, accelerator: h200, model: llama-3.1-8b, pricePerHour: 3.5}
YAML
cat > "$WORK/work.yaml" <<'YAML'
apiVersion: infergrid.dev/v1
kind: Workload
metadata: {name: tiny-agents}
spec:
  seed: 3
  duration: 24s
  warmup: 6s
  rampUp: 2s
  clients:
  - {type: coding-agent, count: 9, systemPromptTokens: 2000, contextTokens: {mean: 3000, cv: 0.3},
     turns: {mean: 4, cv: 0.5, min: 1, max: 20}, thinkSeconds: 1, sessionGapSeconds: 1}
YAML

"$BIN" bench --fleet "$WORK/fleet.yaml" --workload "$WORK/work.yaml" --time-scale 4 \
  --out "$WORK/out" --record "$WORK/trace.jsonl" --no-progress > "$WORK/bench.out" 2> "$WORK/bench.err" ||
  { echo "FAIL: infergrid bench exited $?"; cat "$WORK/bench.out" "$WORK/bench.err"; exit 1; }
for g in infergrid infergrid-round-robin nginx-round-robin nginx-least-conn nginx-session-hash \
  haproxy-least-conn; do
  grep -q "^$g " "$WORK/bench.out" || { echo "FAIL: no row for $g"; cat "$WORK/bench.out"; exit 1; }
done
grep -q "report: $WORK/out/report.html" "$WORK/bench.out" || { echo "FAIL: no report path"; exit 1; }
[[ -s "$WORK/out/report.html" ]] || { echo "FAIL: no HTML report"; exit 1; }
node -e '
  const fs = require("fs");
  const j = JSON.parse(fs.readFileSync(process.argv[1]));
  const fail = m => { console.log("FAIL: " + m); process.exit(1); };
  if (j.runs.length !== 6) fail("runs: " + j.runs.length);
  const by = {};
  for (const r of j.runs) {
    if (r.failure) fail(r.gateway + " did not run: " + r.failure);
    if (r.failed !== 0) fail(r.gateway + ": " + r.failed + " failed " + JSON.stringify(r.errors));
    if (!(r.requests > 10)) fail(r.gateway + ": only " + r.requests + " measured requests");
    if (!(r.ttft.p90 > 0 && r.ttft.p90 >= r.ttft.p50 && r.ttft.p99 >= r.ttft.p90)) fail(r.gateway + " ttft " + JSON.stringify(r.ttft));
    if (!(r.output_tokens_per_s > 0)) fail(r.gateway + ": no output tokens");
    if (!r.fleet.complete) fail(r.gateway + ": the fleet was not scraped");
    if (r.fleet.requests_per_server.length !== 3) fail("requests_per_server");
    if (!(r.ttft_cdf.length > 2)) fail(r.gateway + ": no CDF");
    by[r.gateway] = r;
  }
  // Every run starts from a cold fleet, and infergrid follows the cached prefixes.
  const ig = by["infergrid"].fleet.prefix_hit_rate, rr = by["nginx-round-robin"].fleet.prefix_hit_rate;
  if (!(ig > rr + 0.1)) fail("hit rate behind infergrid " + ig + " vs nginx round-robin " + rr);
  if (!j.planner || j.planner.reports.length !== 4) fail("no planner prediction");
  if (j.workload.time_scale !== 4 || j.fleet.servers !== 3) fail("header " + JSON.stringify(j.workload));
  fs.writeFileSync(process.argv[2], String(by["infergrid"].sent));
' "$WORK/out/report.json" "$WORK/sent"

# The recorded trace: every request the first run (infergrid) sent, replayed through another.
lines=$(grep -c . "$WORK/trace.jsonl")
[[ "$lines" == "$(cat "$WORK/sent")" ]] || { echo "FAIL: trace has $lines lines, sent $(cat "$WORK/sent")"; exit 1; }
"$BIN" bench --fleet "$WORK/fleet.yaml" --trace "$WORK/trace.jsonl" --gateways nginx-least-conn \
  --time-scale 4 --out "$WORK/replay" --no-progress > "$WORK/replay.out" 2>&1 ||
  { echo "FAIL: replay exited $?"; cat "$WORK/replay.out"; exit 1; }
node -e '
  const j = JSON.parse(require("fs").readFileSync(process.argv[1]));
  const r = j.runs[0];
  if (r.sent !== Number(process.argv[2]) || r.failed !== 0) {
    console.log("FAIL: replay sent " + r.sent + " of " + process.argv[2] + ", failed " + r.failed); process.exit(1);
  }
' "$WORK/replay/report.json" "$lines"

# A Mooncake-format trace over HTTP: 24 requests of 1,500 tokens whose first two 512-token
# blocks are shared, so the fleet's own counters show the sharing the trace says.
for i in $(seq 0 23); do
  printf '{"timestamp": %d, "input_length": 1500, "output_length": 20, "hash_ids": [7, 8, %d]}\n' \
    $((5000 + i * 250)) $((100 + i))
done > "$WORK/mooncake.jsonl"
"$BIN" bench --fleet "$WORK/fleet.yaml" --trace "$WORK/mooncake.jsonl" --gateways infergrid \
  --time-scale 4 --out "$WORK/mooncake" --no-predict --no-progress > "$WORK/mooncake.out" 2>&1 ||
  { echo "FAIL: mooncake replay exited $?"; cat "$WORK/mooncake.out"; exit 1; }
node -e '
  const j = JSON.parse(require("fs").readFileSync(process.argv[1]));
  const r = j.runs[0];
  if (r.sent !== 24 || r.failed !== 0) { console.log("FAIL: mooncake sent " + r.sent + ", failed " + r.failed); process.exit(1); }
  // A prompt after the first finds at most 1,024 of its 1,500 tokens cached: 68.3%.
  const h = r.fleet.prefix_hit_rate;
  if (!(h > 0.3 && h <= 0.684)) { console.log("FAIL: mooncake fleet hit rate " + h); process.exit(1); }
' "$WORK/mooncake/report.json"

# Completions instead of chat, plain JSON replies, a request count instead of a duration.
"$BIN" bench --fleet "$WORK/fleet.yaml" --workload "$WORK/work.yaml" --gateways infergrid \
  --api completions --no-stream --requests 25 --warmup 0 --time-scale 4 --out "$WORK/compl" \
  --no-progress > "$WORK/compl.out" 2>&1 || { echo "FAIL: completions exited $?"; cat "$WORK/compl.out"; exit 1; }
node -e '
  const j = JSON.parse(require("fs").readFileSync(process.argv[1]));
  const r = j.runs[0];
  if (r.sent !== 25 || r.requests !== 25 || r.failed !== 0 || !(r.output_tokens_per_s > 0) ||
      j.workload.api !== "completions" || j.workload.stream !== false || !(r.fleet.prefix_hit_rate > 0.3)) {
    console.log("FAIL: completions run " + JSON.stringify(r).slice(0, 400)); process.exit(1);
  }
' "$WORK/compl/report.json"

# Servers already running (--endpoint, by name) and a gateway the user runs (--gateway-url),
# with an open-loop workload.
start sim "$BIN" sim --host 127.0.0.1 --port 0 --replicas 2 --served-model-name m
for _ in $(seq 1 500); do
  [[ $(grep -c "listening on port" "$WORK/sim.out") == 2 ]] && break
  sleep 0.02
done
SIM_PORTS=($(sed -n 's/.*listening on port //p' "$WORK/sim.out"))
[[ ${#SIM_PORTS[@]} == 2 ]] || { echo "FAIL: sim ports: ${SIM_PORTS[*]}"; exit 1; }
start gw "$BIN" gateway --model m --listen 127.0.0.1:0 \
  --endpoint "http://127.0.0.1:${SIM_PORTS[0]}" --endpoint "http://127.0.0.1:${SIM_PORTS[1]}"
# An open loop this time: chat sessions arriving as a Poisson process.
cat > "$WORK/open.yaml" <<'YAML'
apiVersion: infergrid.dev/v1
kind: Workload
spec:
  duration: 60s
  clients:
  - {type: chat, sessionsPerSecond: 2, thinkSeconds: 0.5, outputTokens: 20}
YAML
"$BIN" bench --endpoint "http://localhost:${SIM_PORTS[0]}" --endpoint "http://localhost:${SIM_PORTS[1]}" \
  --model m --workload "$WORK/open.yaml" --gateways nginx-least-conn --gateway-url "mine=http://localhost:$PORT" \
  --requests 15 --warmup 0 --out "$WORK/ext" --no-progress > "$WORK/ext.out" 2>&1 ||
  { echo "FAIL: --endpoint/--gateway-url exited $?"; cat "$WORK/ext.out"; exit 1; }
node -e '
  const j = JSON.parse(require("fs").readFileSync(process.argv[1]));
  const names = j.runs.map(r => r.gateway).join(",");
  if (names !== "nginx-least-conn,mine") { console.log("FAIL: runs " + names); process.exit(1); }
  for (const r of j.runs) {
    if (r.failure || r.requests !== 15 || r.failed !== 0) { console.log("FAIL: " + JSON.stringify(r).slice(0, 300)); process.exit(1); }
  }
  if (j.planner !== null || j.fleet.servers !== 2) { console.log("FAIL: header"); process.exit(1); }
' "$WORK/ext/report.json"

# A saved report shown and rendered again.
"$BIN" bench --from-json "$WORK/out/report.json" --html "$WORK/again.html" > "$WORK/again.out"
grep -q "^nginx-session-hash " "$WORK/again.out" || { echo "FAIL: --from-json table"; exit 1; }
grep -q 'id="bench-data"' "$WORK/again.html" || { echo "FAIL: --from-json page"; exit 1; }

# Bad input: a clear error and exit 2.
expect_error() {
  local want=$1; shift
  set +e; "$@" > "$WORK/err.out" 2>&1; local rc=$?; set -e
  [[ $rc == 2 ]] && grep -q -- "$want" "$WORK/err.out" ||
    { echo "FAIL: '$*' gave rc $rc, wanted 2 and '$want':"; cat "$WORK/err.out"; exit 1; }
}
expect_error "give one of --fleet" "$BIN" bench --workload "$WORK/work.yaml" --out "$WORK/x"
expect_error "unknown gateway 'envoy'" "$BIN" bench --fleet "$WORK/fleet.yaml" \
  --workload "$WORK/work.yaml" --gateways infergrid,envoy --out "$WORK/x"
printf '{"t":0,"prompt":"a","max_tokens":1}\n{"t":1,"prompt":"b"}\n' > "$WORK/bad.jsonl"
expect_error "bad.jsonl:2: missing required field 'max_tokens'" "$BIN" bench \
  --fleet "$WORK/fleet.yaml" --trace "$WORK/bad.jsonl" --out "$WORK/x"

# Ctrl-C: the bench stops the load (also clients waiting minutes for their next turn), the
# gateway and the fleet, and exits 130.
cat > "$WORK/slow.yaml" <<'YAML'
apiVersion: infergrid.dev/v1
kind: Workload
spec:
  duration: 600s
  rampUp: 300s
  clients:
  - {type: coding-agent, count: 4, systemPromptTokens: 500, contextTokens: 500, thinkSeconds: 300}
YAML
"$BIN" bench --fleet "$WORK/fleet.yaml" --workload "$WORK/slow.yaml" \
  --gateways nginx-round-robin --out "$WORK/int" --no-progress > "$WORK/int.out" 2>&1 &
bench=$!
for _ in $(seq 1 500); do
  [[ -s "$WORK/int/logs/nginx.pid" ]] && break
  sleep 0.02
done
sleep 1
descendants() {
  local p
  for p in $(cat /proc/"$1"/task/*/children 2>/dev/null); do echo "$p"; descendants "$p"; done
}
kids=$(descendants "$bench")
[[ $(wc -w <<<"$kids") -ge 3 ]] || { echo "FAIL: expected a fleet and nginx, got: $kids"; cat "$WORK/int.out"; exit 1; }
kill -INT "$bench"
for _ in $(seq 1 1000); do kill -0 "$bench" 2>/dev/null || break; sleep 0.02; done
kill -0 "$bench" 2>/dev/null && { echo "FAIL: the bench still runs 20 s after Ctrl-C"; exit 1; }
set +e; wait "$bench"; rc=$?; set -e
[[ $rc == 130 ]] || { echo "FAIL: interrupted bench exited $rc"; cat "$WORK/int.out"; exit 1; }
for p in $kids; do
  if kill -0 "$p" 2>/dev/null; then echo "FAIL: process $p ($(cat /proc/$p/cmdline | tr '\0' ' ')) left running"; exit 1; fi
done
grep -q "interrupted" "$WORK/int.out" || { echo "FAIL: no word of the interrupt"; exit 1; }
echo "cli_bench: ok"
