#!/usr/bin/env bash
# Gateway replicas (issue 7): the fleet's own prefix cache hit rate on the coding-agent
# workload with 1, 2 and 4 infergrid replicas sharing one port (SO_REUSEPORT) and peering,
# and, for contrast, 4 replicas that do not peer. The bench opens a new connection for every
# request, so the kernel spreads every agent's turns over the replicas (as a Kubernetes
# Service spreads many clients' pooled connections). All four set-ups run side by side in one
# bench run, each from a cold cache, in front of the same 8 simulated H200 servers.
# Checks, against the single replica of the same run: 2 and 4 peering replicas within 2% of
# its hit rate; no failed requests. Extra arguments go to the bench (e.g. --duration 90).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BIN="$ROOT/build/release/infergrid"
OUT=${OUT:-$ROOT/build/bench-ha}
TIME_SCALE=${TIME_SCALE:-2}
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
rm -rf "$OUT" && mkdir -p "$OUT"

wait_line() {  # wait_line FILE PATTERN
  for _ in $(seq 1 500); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.02; done
  echo "no '$2' in $1"; cat "${1%.out}.err" 2>/dev/null; exit 1
}

"$BIN" sim --replicas 8 --port 0 --accelerator h200 --model-profile llama-3.1-8b \
  --served-model-name m --time-scale "$TIME_SCALE" > "$WORK/sim.out" 2> "$WORK/sim.err" &
PIDS+=($!)
for _ in $(seq 1 500); do [[ $(grep -c "listening on port" "$WORK/sim.out" 2>/dev/null) == 8 ]] && break; sleep 0.02; done
mapfile -t SIMS < <(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$WORK/sim.out")
[[ ${#SIMS[@]} == 8 ]] || { echo "the simulator did not start"; cat "$WORK/sim.err"; exit 1; }
EPS="" BENCH_EPS=()
for p in "${SIMS[@]}"; do EPS+="    - http://127.0.0.1:$p"$'\n'; BENCH_EPS+=(--endpoint "http://127.0.0.1:$p"); done

config() {  # config FILE LISTEN PEERING PEER_PORTS...
  local file=$1 listen=$2 peering=$3; shift 3
  local peers=""
  for p in "$@"; do peers+="\"127.0.0.1:$p\","; done
  local ha=""
  [[ $peering == yes ]] && ha="  ha: {listen: 127.0.0.1:0, peers: [${peers%,}]}"
  cat > "$file.tmp" <<YAML
apiVersion: infergrid.dev/v1
kind: Gateway
spec:
  listen: $listen
  workers: 1
  lifecycle: {configWatchInterval: 200ms}
$ha
  pools:
  - name: main
    models: [m]
    endpoints:
$EPS
YAML
  mv "$file.tmp" "$file"
}

URLS=()
group() {  # group NAME N PEERING: N replicas on one port, fully peered if PEERING=yes
  local name=$1 n=$2 peering=$3 port=0 i
  local peer_ports=()
  for i in $(seq 1 "$n"); do
    config "$WORK/$name-$i.yaml" "127.0.0.1:$port" "$peering"
    "$BIN" gateway --config "$WORK/$name-$i.yaml" > "$WORK/$name-$i.out" 2> "$WORK/$name-$i.err" &
    PIDS+=($!)
    wait_line "$WORK/$name-$i.out" "listening on port"
    port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$WORK/$name-$i.out" | head -1)
    if [[ $peering == yes ]]; then
      wait_line "$WORK/$name-$i.out" "peering on port"
      peer_ports+=("$(sed -n 's/.*peering on port \([0-9]*\).*/\1/p' "$WORK/$name-$i.out" | head -1)")
    fi
  done
  if [[ $peering == yes && $n -gt 1 ]]; then
    for i in $(seq 1 "$n"); do
      local others=()
      for j in $(seq 1 "$n"); do [[ $j == "$i" ]] || others+=("${peer_ports[$((j - 1))]}"); done
      config "$WORK/$name-$i.yaml" "127.0.0.1:$port" yes "${others[@]}"
    done
    # Every replica (each scrape lands on one of them) sees all the others.
    local ok=0
    for _ in $(seq 1 300); do
      curl -s "http://127.0.0.1:$port/metrics" > "$WORK/m.txt" || true
      if grep -q "^infergrid_peers_connected $((n - 1))$" "$WORK/m.txt"; then ok=$((ok + 1)); else ok=0; fi
      [[ $ok -ge $((4 * n)) ]] && break
      sleep 0.05
    done
    [[ $ok -ge $((4 * n)) ]] || { echo "$name: replicas did not peer"; cat "$WORK/$name-1.err"; exit 1; }
  fi
  URLS+=(--gateway-url "$name=http://127.0.0.1:$port")
}
group replicas-1 1 yes
group replicas-2 2 yes
group replicas-4 4 yes
group replicas-4-no-peering 4 no

"$BIN" bench "${BENCH_EPS[@]}" --model m --gateways none "${URLS[@]}" \
  --workload "$ROOT/examples/bench/coding-agents-100.yaml" --time-scale "$TIME_SCALE" \
  --connection-per-request --no-predict --out "$OUT" "$@" || true
node -e '
  const { load, Checker } = require(process.argv[1]);
  const { j, by } = load(process.argv[2]);
  const c = new Checker();
  const one = by["replicas-1"];
  if (!one || one.failure) { console.log("MISS the single replica did not run"); process.exit(1); }
  const h1 = one.fleet.prefix_hit_rate;
  console.log(`     1 replica: fleet prefix hit rate ${(100 * h1).toFixed(1)}%`);
  for (const name of ["replicas-2", "replicas-4", "replicas-4-no-peering"]) {
    const r = by[name];
    if (!r || r.failure) { console.log("MISS " + name + " did not run"); process.exit(1); }
    const x = r.fleet.prefix_hit_rate / h1;
    const line = `${name} hit rate ${(100 * r.fleet.prefix_hit_rate).toFixed(1)}% / 1 replica`;
    if (name.endsWith("no-peering")) console.log(`     ${line}: ${x.toFixed(3)}x (for contrast)`);
    else c.check(line, x.toFixed(3) + "x", "within 0.98x-1.02x", x >= 0.98 && x <= 1.02);
  }
  const failed = j.runs.reduce((s, r) => s + (r.failed || 0), 0);
  c.check("failed requests", failed, "0", failed === 0);
  c.exit();
' "$ROOT/bench/live/checks.js" "$OUT/report.json"
