#!/usr/bin/env bash
# 100 configuration reloads under load (docs/zero-downtime.md): while `infergrid bench`
# streams coding-agent traffic through one gateway to three simulated servers, the config file
# is rewritten and SIGHUP sent 100 times, cycling through valid changes (a server removed and
# added back, tenants, health and retry settings) and invalid files (broken YAML, a field that
# fails validation, a change that needs a restart). Then: zero failed requests, every stream
# complete, 60 reloads applied and 40 refused (counted, logged), and a change of the file alone
# (no signal) is picked up by the watcher.
set -euo pipefail
BIN=$1
source "$(dirname "$0")/lib.sh"

MODEL=m
SIM=()
for i in 0 1 2; do
  start "sim$i" "$BIN" sim --replicas 1 --port 0 --served-model-name "$MODEL" --time-scale 2
  SIM[$i]=$PORT
done

write() {  # write VARIANT LISTEN
  local v=$1 listen=$2 extra="" eps="http://127.0.0.1:${SIM[0]}, http://127.0.0.1:${SIM[1]}"
  case $v in
    0) eps+=", http://127.0.0.1:${SIM[2]}"; extra="  tenancy: {tenants: [{name: a, weight: 2}]}" ;;
    1) extra="  tenancy: {tenants: [{name: a, weight: 1}, {name: b, weight: 3}]}" ;;
    2) extra="  health: {passive: {consecutiveFailures: [}" ;;                     # broken YAML
    3) eps+=", http://127.0.0.1:${SIM[2]}"; extra="  retries: {maxRetries: 1}
  health: {passive: {baseEjection: 2s}}" ;;
    4) extra="  health: {active: {interval: 100ms, timeout: 1s}}" ;;                 # fails validation
    5) listen=127.0.0.1:1 ;;                                                        # needs a restart
  esac
  cat > "$WORK/gw.yaml.tmp" <<YAML
apiVersion: infergrid.dev/v1
kind: Gateway
spec:
  listen: $listen
  workers: 2
  lifecycle: {configWatchInterval: $WATCH}
$extra
  pools:
  - name: main
    models: [$MODEL]
    endpoints: [$eps]
YAML
  mv "$WORK/gw.yaml.tmp" "$WORK/gw.yaml"
}
WATCH=0s
write 0 127.0.0.1:0
start gw "$BIN" gateway --config "$WORK/gw.yaml"
GW=$PORT
GW_PID=${PIDS[-1]}
reloads() {  # reloads RESULT: the counter's value
  curl -s "http://127.0.0.1:$GW/metrics" > "$WORK/m.txt"
  awk -v k="infergrid_config_reloads_total{result=\"$1\"}" '$1 == k { v = $2 } END { print v + 0 }' "$WORK/m.txt"
}

cat > "$WORK/work.yaml" <<'YAML'
apiVersion: infergrid.dev/v1
kind: Workload
metadata: {name: steady-agents}
spec:
  seed: 9
  duration: 40s
  warmup: 0s
  rampUp: 2s
  clients:
  - {type: coding-agent, count: 8, systemPromptTokens: 1500, contextTokens: {mean: 2000, cv: 0.3},
     turns: {mean: 4, cv: 0.5, min: 1, max: 20}, thinkSeconds: 0.5, sessionGapSeconds: 0.5}
YAML
"$BIN" bench --endpoint "http://127.0.0.1:${SIM[0]}" --endpoint "http://127.0.0.1:${SIM[1]}" \
  --endpoint "http://127.0.0.1:${SIM[2]}" --model "$MODEL" --gateways none \
  --gateway-url "gw=http://127.0.0.1:$GW" --workload "$WORK/work.yaml" --time-scale 2 \
  --no-predict --no-progress --out "$WORK/out" > "$WORK/bench.out" 2> "$WORK/bench.err" &
BENCH_PID=$!
PIDS+=($BENCH_PID)
sleep 3

# Variants 0, 1 and 3 are valid; 2, 4 and 5 are refused (counted as they go).
want_ok=0 want_err=0
for n in $(seq 0 99); do
  v=$((n % 6))
  write "$v" "127.0.0.1:$GW"
  case $v in 0|1|3) want_ok=$((want_ok + 1)) ;; *) want_err=$((want_err + 1)) ;; esac
  kill -HUP "$GW_PID"
  for _ in $(seq 1 200); do
    [[ $(reloads ok) == "$want_ok" && $(reloads error) == "$want_err" ]] && break
    sleep 0.02
  done
  [[ $(reloads ok) == "$want_ok" && $(reloads error) == "$want_err" ]] ||
    { echo "FAIL: reload $n (variant $v) not counted: ok $(reloads ok)/$want_ok error $(reloads error)/$want_err"; cat "$WORK/gw.err" | tail -5; exit 1; }
done
grep -q "not reloaded" "$WORK/gw.err" || { echo "FAIL: no log of a refused reload"; exit 1; }
grep -q "cannot change without a restart" "$WORK/gw.err" || { echo "FAIL: no log naming the restart"; exit 1; }
echo "100 reloads: $want_ok applied, $want_err refused"

# The file alone: with a watch interval (itself set by a reload), a rewrite is applied.
WATCH=100ms
write 0 "127.0.0.1:$GW"
kill -HUP "$GW_PID"
want_ok=$((want_ok + 1))
for _ in $(seq 1 200); do [[ $(reloads ok) == "$want_ok" ]] && break; sleep 0.02; done
write 1 "127.0.0.1:$GW"
want_ok=$((want_ok + 1))
for _ in $(seq 1 300); do [[ $(reloads ok) == "$want_ok" ]] && break; sleep 0.02; done
[[ $(reloads ok) == "$want_ok" ]] || { echo "FAIL: the file's change was not picked up"; exit 1; }
grep -q "config file changed" "$WORK/gw.err" || { echo "FAIL: no log of the watched reload"; exit 1; }

wait "$BENCH_PID" || { echo "FAIL: bench exited $?"; cat "$WORK/bench.out" "$WORK/bench.err"; exit 1; }
check_bench_clean "$WORK/out/report.json" 50
echo "PASS"
