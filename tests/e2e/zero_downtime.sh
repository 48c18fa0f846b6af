#!/usr/bin/env bash
# Zero downtime end to end (docs/zero-downtime.md). Two gateway replicas share one port
# (SO_REUSEPORT) and peer with each other, in front of three simulated servers, while
# `infergrid bench` drives steady streaming coding-agent traffic through that port, a new
# connection per request (so every replica sees every session). Meanwhile:
#   1. every server in turn is drained (it answers 503: the gateways retry elsewhere and eject
#      it), left to finish its streams, killed, restarted on its port, and readmitted by the
#      gateways' health probes;
#   2. every gateway replica in turn is replaced: a new one joins the port and its peer
#      (warming from it; its peer learns of it by a config-file change), then the old one gets
#      SIGTERM, finishes its streams and exits 0.
# Then: zero failed requests, every stream complete, and the counters show the drains,
# retries, ejections and rejoins happened.
set -euo pipefail
BIN=$1
source "$(dirname "$0")/lib.sh"
# On any failure, what the gateways and the bench said (the work dir goes with the exit).
report() {
  local rc=$?
  if [[ $rc != 0 ]]; then
    for f in "$WORK"/gw*.err "$WORK"/bench.err; do
      [[ -f $f ]] && { echo "--- $(basename "$f") (last lines)"; tail -n 15 "$f"; }
    done
  fi
  cleanup
}
trap report EXIT

MODEL=m
SIM=()
for i in 0 1 2; do
  start "sim$i" "$BIN" sim --replicas 1 --port 0 --served-model-name "$MODEL" --time-scale 2
  SIM[$i]=$PORT
done

gw_config() {  # gw_config FILE LISTEN PEERS...
  local file=$1 listen=$2; shift 2
  local peers=""
  for p in "$@"; do peers+="\"127.0.0.1:$p\","; done
  cat > "$file.tmp" <<YAML
apiVersion: infergrid.dev/v1
kind: Gateway
spec:
  listen: $listen
  workers: 1
  health:
    passive: {consecutiveFailures: 2, baseEjection: 1s}
    active: {interval: 200ms, timeout: 200ms}
  lifecycle: {shutdownTimeout: 60s, configWatchInterval: 200ms}
  ha:
    listen: 127.0.0.1:0
    peers: [${peers%,}]
  pools:
  - name: main
    models: [$MODEL]
    endpoints:
    - http://127.0.0.1:${SIM[0]}
    - http://127.0.0.1:${SIM[1]}
    - http://127.0.0.1:${SIM[2]}
YAML
  mv "$file.tmp" "$file"  # replaced whole: a watcher never reads half a file
}
peer_port() { sed -n 's/.*peering on port \([0-9]*\).*/\1/p' "$WORK/$1.out" | head -1; }
metric() {  # metric PORT NAME_AND_LABELS: the value (0 if absent), read through that port
  curl -s "http://127.0.0.1:$1/metrics" > "$WORK/m.txt" || true
  awk -v k="$2" '$1 == k { v = $2 } END { print v + 0 }' "$WORK/m.txt"
}
wait_for() {  # wait_for SECONDS CMD...: until CMD succeeds
  local until=$((SECONDS + $1)); shift
  until "$@"; do
    (( SECONDS < until )) || return 1
    sleep 0.1
  done
}

# Replica a on a free port, replica b on the same port peered with a; a learns of b.
gw_config "$WORK/a.yaml" 127.0.0.1:0
start gwa "$BIN" gateway --config "$WORK/a.yaml"
GW=$PORT
GWA_PID=${PIDS[-1]}
A_PEER=$(peer_port gwa)
gw_config "$WORK/b.yaml" "127.0.0.1:$GW" "$A_PEER"
start gwb "$BIN" gateway --config "$WORK/b.yaml"
GWB_PID=${PIDS[-1]}
B_PEER=$(peer_port gwb)
gw_config "$WORK/a.yaml" "127.0.0.1:$GW" "$B_PEER"  # a's watcher picks it up
peered() { [[ $(metric "$GW" infergrid_peers_connected) == 1 ]]; }
wait_for 10 peered || { echo "FAIL: replicas did not peer"; cat "$WORK/gwa.err" "$WORK/gwb.err"; exit 1; }

cat > "$WORK/work.yaml" <<'YAML'
apiVersion: infergrid.dev/v1
kind: Workload
metadata: {name: steady-agents}
spec:
  seed: 5
  duration: 100s
  warmup: 0s
  rampUp: 2s
  clients:
  - {type: coding-agent, count: 10, systemPromptTokens: 1500, contextTokens: {mean: 2000, cv: 0.3},
     turns: {mean: 4, cv: 0.5, min: 1, max: 20}, thinkSeconds: 0.5, sessionGapSeconds: 0.5}
YAML
"$BIN" bench --endpoint "http://127.0.0.1:${SIM[0]}" --endpoint "http://127.0.0.1:${SIM[1]}" \
  --endpoint "http://127.0.0.1:${SIM[2]}" --model "$MODEL" --gateways none \
  --gateway-url "replicas=http://127.0.0.1:$GW" --workload "$WORK/work.yaml" --time-scale 2 \
  --connection-per-request --no-predict --no-progress --out "$WORK/out" \
  > "$WORK/bench.out" 2> "$WORK/bench.err" &
BENCH_PID=$!
PIDS+=($BENCH_PID)
# Load is flowing: requests have been answered through the port.
answered() {
  curl -s "http://127.0.0.1:$GW/metrics" > "$WORK/m.txt" || return 1
  awk '/^infergrid_requests_total\{/ { n += $2 } END { exit !(n >= 10) }' "$WORK/m.txt"
}
wait_for 60 answered || { echo "FAIL: no load through the gateways"; exit 1; }

# 1. Every server in turn: drained at the server, restarted, readmitted.
for i in 0 1 2; do
  S=${SIM[$i]}
  curl -sf -X POST "http://127.0.0.1:$S/admin/drain" > /dev/null
  idle() {
    curl -s "http://127.0.0.1:$S/metrics" > "$WORK/sim.txt" || return 1
    awk '/^vllm:num_requests_(running|waiting)\{/ { n += $2 } END { exit !(n == 0) }' "$WORK/sim.txt"
  }
  wait_for 60 idle || { echo "FAIL: server $S never finished its streams"; exit 1; }
  kill "${PIDS[$i]}"
  wait "${PIDS[$i]}" 2>/dev/null || true
  start "sim$i-again" "$BIN" sim --replicas 1 --port "$S" --served-model-name "$MODEL" --time-scale 2
  PIDS[$i]=${PIDS[-1]}
  readmitted() {
    [[ $(metric "$GW" "infergrid_endpoint_healthy{pool=\"main\",endpoint=\"http://127.0.0.1:$S\"}") == 1 ]]
  }
  # Both replicas (each answers some scrapes of the shared port) see it back.
  for _ in 1 2 3 4; do wait_for 20 readmitted || { echo "FAIL: $S not readmitted"; exit 1; }; done
  echo "server $S drained, restarted and readmitted"
done

# 2. Every gateway replica in turn: a new one joins (peered with the survivor), the old one
#    drains and exits 0.
replace() {  # replace OLD_PID SURVIVOR_PEER_PORT NAME
  local old=$1 survivor=$2 name=$3
  gw_config "$WORK/$name.yaml" "127.0.0.1:$GW" "$survivor"
  start "$name" "$BIN" gateway --config "$WORK/$name.yaml"
  NEW_PEER=$(peer_port "$name")
  kill -0 "$old" 2>/dev/null || { echo "FAIL: the old replica (pid $old) had already exited"; exit 1; }
  kill -TERM "$old"
  local rc=0
  wait "$old" || rc=$?
  [[ $rc == 0 ]] || { echo "FAIL: the old replica exited $rc"; exit 1; }
}
replace "$GWA_PID" "$B_PEER" gwc
C_PEER=$NEW_PEER
gw_config "$WORK/b.yaml" "127.0.0.1:$GW" "$C_PEER"  # b now dials c
grep -q "draining" "$WORK/gwa.err" || { echo "FAIL: replica a did not drain"; cat "$WORK/gwa.err"; exit 1; }
echo "replica a replaced"
replace "$GWB_PID" "$C_PEER" gwd
echo "replica b replaced"
# All of it happened under load (the bench runs 50 s; the above takes about 25 s).
kill -0 "$BENCH_PID" 2>/dev/null || { echo "FAIL: the load ended before the rolling restart did"; exit 1; }

wait "$BENCH_PID" || { echo "FAIL: bench exited $?"; cat "$WORK/bench.out" "$WORK/bench.err"; exit 1; }
check_bench_clean "$WORK/out/report.json" 100
echo "PASS"
