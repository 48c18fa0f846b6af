#!/usr/bin/env bash
# Simulator capacity: one `infergrid sim` process with 32 replicas, at --time-scale 1, serving
# 2,000 concurrent streaming requests from a closed-loop load generator on the same 2 cores.
# The simulator is on schedule when
#   - the TTFT clients see is what its engine model computed for the same requests (loadgen
#     pairs them through the x-infergrid-engine-ttft-seconds trailer): served/engine ~ 1.00;
#   - engine steps deliver their tokens when the model says they end: little step lag
#     (infergrid_sim_step_lag_seconds, wall time), few steps more than 5 ms late.
# Usage: bench/sim-capacity/run.sh [BUILD_DIR]   (env: REPLICAS CONCURRENCY DURATION ...)
set -euo pipefail
BUILD=${1:-build/release}
REPLICAS=${REPLICAS:-32}
CONCURRENCY=${CONCURRENCY:-2000}
DURATION=${DURATION:-30}
WARMUP=${WARMUP:-10}
PROMPT_WORDS=${PROMPT_WORDS:-200}
MAX_TOKENS=${MAX_TOKENS:-128}
MODEL=${MODEL:-llama-3.1-70b}
ACCEL=${ACCEL:-h100}
TP=${TP:-4}
BASE=${BASE:-19000}

WORK=$(mktemp -d)
trap 'kill $SIM 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT
"$BUILD/infergrid" sim --host 127.0.0.1 --port "$BASE" --replicas "$REPLICAS" \
  --model-profile "$MODEL" --accelerator "$ACCEL" --tp "$TP" ${SIM_ARGS:-} > "$WORK/sim.out" 2> "$WORK/sim.err" &
SIM=$!
for _ in $(seq 1 200); do
  [[ $(grep -c "listening on port" "$WORK/sim.out" 2>/dev/null) == "$REPLICAS" ]] && break
  sleep 0.05
done
scrape() {  # sums a metric over all replicas
  local total=0
  for i in $(seq 0 $((REPLICAS - 1))); do
    v=$(curl -s "http://127.0.0.1:$((BASE + i))/metrics" | awk -v m="$1" '$1 ~ "^"m"({|$)" {print $2}')
    total=$(awk -v a="$total" -v b="${v:-0}" 'BEGIN {print a + b}')
  done
  echo "$total"
}
"$BUILD/loadgen" --ports "$BASE:$REPLICAS" --concurrency "$CONCURRENCY" --duration "$DURATION" \
  --warmup "$WARMUP" --prompt-words "$PROMPT_WORDS" --max-tokens "$MAX_TOKENS" > "$WORK/load.json" &
LOAD=$!
sleep "$WARMUP"
lag0=$(scrape infergrid_sim_step_lag_seconds_sum)
steps0=$(scrape vllm:iteration_tokens_total_count)
behind0=$(scrape infergrid_sim_steps_behind_total)
cpu0=$(awk '{print $14 + $15}' /proc/$SIM/stat)
sleep "$DURATION"
lag1=$(scrape infergrid_sim_step_lag_seconds_sum)
steps1=$(scrape vllm:iteration_tokens_total_count)
behind1=$(scrape infergrid_sim_steps_behind_total)
cpu1=$(awk '{print $14 + $15}' /proc/$SIM/stat)
wait $LOAD
TICK=$(getconf CLK_TCK)
python3 - "$WORK/load.json" <<PY
import json, sys
r = json.load(open(sys.argv[1]))
lag = $lag1 - $lag0
steps = $steps1 - $steps0
behind = $behind1 - $behind0
out = {
  "setup": "$REPLICAS x $MODEL on $ACCEL tp $TP, $CONCURRENCY concurrent streams, "
           "$PROMPT_WORDS-word prompts, $MAX_TOKENS tokens out, time scale 1",
  "requests": r["requests"], "errors": r["errors"],
  "requests_per_s": round(r["requests_per_s"], 1),
  "sse_events_per_s": round(r["sse_events_per_s"]),
  "ttft_served_mean_s": round(r["ttft_mean_s"], 4),
  "ttft_engine_mean_s": round(r["engine_ttft_mean_s"], 4),
  "ttft_served_over_engine": round(r["ttft_served_over_engine"], 4),
  "ttft_served_p99_s": round(r["ttft_p99_s"], 4),
  "ttft_engine_p99_s": round(r["engine_ttft_p99_s"], 4),
  "steps": int(steps), "steps_behind_share": round(behind / max(steps, 1), 4),
  "step_lag_mean_ms": round(1000 * lag / max(steps, 1), 3),
  "sim_cpu_cores": round(($cpu1 - $cpu0) / $TICK / $DURATION, 2),
}
print(json.dumps(out, indent=2))
PY
