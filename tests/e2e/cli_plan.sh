#!/usr/bin/env bash
# `infergrid plan` from the command line: every built-in policy on a small fleet, a profile
# from a Gateway file, the table and the JSON, and bad files reported with FILE:LINE:COL.
set -euo pipefail
BIN=$1
ROOT=$2
source "$(dirname "$0")/lib.sh"

cat > "$WORK/fleet.yaml" <<'YAML'
apiVersion: infergrid.dev/v1
kind: Fleet
spec:
  servers:
  - {name: a, count: 2, accelerator: h100, model: llama-3.1-8b, gpuMemoryUtilization: 0.3, pricePerHour: 3}
  - {name: b, count: 1, accelerator: trn2, model: llama-3.1-8b, pricePerHour: 2}
YAML
cat > "$WORK/work.yaml" <<'YAML'
apiVersion: infergrid.dev/v1
kind: Workload
spec:
  duration: 60s
  warmup: 10s
  clients:
  - {type: coding-agent, count: 12, systemPromptTokens: 1000, contextTokens: 2000}
  - {type: chat, sessionsPerSecond: 0.5}
YAML

out=$("$BIN" plan --fleet "$WORK/fleet.yaml" --workload "$WORK/work.yaml" 2>/dev/null)
for p in infergrid round-robin least-conn least-load session-hash sglang dynamo llm-d oracle; do
  grep -q "^$p " <<<"$out" || { echo "FAIL: no row for $p"; echo "$out"; exit 1; }
done
grep -q "3 servers" <<<"$out" || { echo "FAIL: no fleet summary"; exit 1; }

json=$("$BIN" plan --fleet "$WORK/fleet.yaml" --workload "$WORK/work.yaml" --json \
  --policies infergrid,profile:cache-then-load --config "$ROOT/examples/full.yaml")
node -e '
  const j = JSON.parse(process.argv[1]);
  const names = j.policies.map(p => p.policy).join(",");
  if (names !== "infergrid,profile:cache-then-load") throw new Error("policies: " + names);
  for (const p of j.policies) {
    if (!(p.requests > 0) || !(p.ttft_s.p90 >= p.ttft_s.p50)) throw new Error(JSON.stringify(p));
  }' "$json" || { echo "FAIL: bad JSON: $json"; exit 1; }

cat > "$WORK/bad.yaml" <<'YAML'
apiVersion: infergrid.dev/v1
kind: Fleet
spec:
  servers:
  - {count: 2, accelerator: h900, model: llama-3.1-8b}
YAML
set +e
err=$("$BIN" plan --fleet "$WORK/bad.yaml" --workload "$WORK/work.yaml" 2>&1); rc=$?
set -e
[[ $rc -eq 2 ]] || { echo "FAIL: exit $rc for a bad fleet"; exit 1; }
grep -q "bad.yaml:5:29: spec.servers\[0\].accelerator: unknown accelerator 'h900'" <<<"$err" ||
  { echo "FAIL: got '$err'"; exit 1; }
set +e
err=$("$BIN" plan --fleet "$WORK/fleet.yaml" --workload "$WORK/work.yaml" --policies fastest 2>&1); rc=$?
set -e
[[ $rc -eq 2 ]] && grep -q "unknown policy 'fastest'" <<<"$err" || { echo "FAIL: got '$err'"; exit 1; }

# A Mooncake-format trace: every policy replays it, with the trace's bound beside them.
for i in $(seq 0 39); do
  printf '{"timestamp": %d, "input_length": 1500, "output_length": 30, "hash_ids": [1, 2, %d]}\n' \
    $((i * 250)) $((100 + i))
done > "$WORK/trace.jsonl"
out=$("$BIN" plan --fleet "$WORK/fleet.yaml" --trace "$WORK/trace.jsonl" --policies round-robin,infergrid 2>/dev/null)
grep -q "40 requests over 10 s" <<<"$out" || { echo "FAIL: trace summary: $out"; exit 1; }
# 39 of 40 prompts find 1,024 of their 1,500 tokens in one infinite cache.
grep -q "one infinite cache would hit 66.6% of prompt tokens" <<<"$out" || { echo "FAIL: bound: $out"; exit 1; }
grep -q "^hit rate / the trace's bound (66.6%): round-robin" <<<"$out" || { echo "FAIL: no bound row: $out"; exit 1; }
echo '{"timestamp": 99999, "input_length": 10}' >> "$WORK/trace.jsonl"
set +e
err=$("$BIN" plan --fleet "$WORK/fleet.yaml" --trace "$WORK/trace.jsonl" 2>&1); rc=$?
set -e
[[ $rc -eq 2 ]] && grep -q "trace.jsonl:41: output_length: missing" <<<"$err" ||
  { echo "FAIL: bad trace line: rc $rc, '$err'"; exit 1; }

# The shipped planner examples parse.
for f in "$ROOT"/examples/plan/fleet-*.yaml; do
  "$BIN" plan --fleet "$f" --workload "$WORK/work.yaml" --policies round-robin --duration 11 \
    >/dev/null 2>&1 || { echo "FAIL: $f"; exit 1; }
done
for f in "$ROOT"/examples/plan/coding-agents-*.yaml; do
  "$BIN" plan --fleet "$WORK/fleet.yaml" --workload "$f" --policies round-robin --duration 125 \
    >/dev/null 2>&1 || { echo "FAIL: $f"; exit 1; }
done
echo "ok"
