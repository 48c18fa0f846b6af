#!/usr/bin/env bash
# bench/proxy-overhead: what a proxy adds to each request, in one run, on the same machine.
#
# One load (wrk, closed loop) against: (a) the upstream directly, (b) nginx with a keep-alive
# upstream, (c) the infergrid gateway. The upstream is an nginx serving a fixed chat completion
# (so the upstream costs the same and little for every path). Reports each proxy's added
# latency (p50, p99; proxied minus direct, at the same concurrency), its maximum requests/s,
# and the gateway's ratios to nginx.
#
# Usage: bench/proxy-overhead/run.sh [--duration 10] [--connections 32] [--workers 1] [--json FILE]
#                                    [--scorer NAME] [--record]
# --scorer routes with a profile of that one scorer instead of the default profile (an A/B of
# what the default's scoring costs per request). --record writes the Mooncake-format trace of the
# traffic (spec.recording), for what recording costs.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BIN="${INFERGRID_BIN:-$ROOT/build/release/infergrid}"
DURATION=10
CONNS=32
WORKERS=1
JSON_OUT="$ROOT/build/bench/proxy-overhead.json"
SCORER=""
RECORD=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --duration) DURATION=$2; shift 2 ;;
    --connections) CONNS=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --json) JSON_OUT=$2; shift 2 ;;
    --scorer) SCORER=$2; shift 2 ;;
    --record) RECORD=1; shift ;;
    *) echo "unknown option $1"; exit 2 ;;
  esac
done
for tool in wrk nginx; do
  command -v "$tool" >/dev/null || [[ -x /usr/sbin/$tool ]] || { echo "missing $tool: run scripts/install-deps"; exit 1; }
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[[ -x "$BIN" ]] || { echo "missing $BIN: run make build"; exit 1; }

WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

free_port() {
  local p
  while true; do
    p=$((20000 + RANDOM % 30000))
    (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo $p; return; }
  done
}

wait_port() {
  for _ in $(seq 1 250); do
    (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0
    sleep 0.02
  done
  echo "port $1 did not open"; return 1
}

UP=$(free_port)
NGX=$(free_port)
mkdir -p "$WORK/up" "$WORK/ngx" "$(dirname "$JSON_OUT")"
RESPONSE='{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"bench-model","choices":[{"index":0,"message":{"role":"assistant","content":"A load balancer spreads requests across servers so that none is overwhelmed."},"finish_reason":"stop"}],"usage":{"prompt_tokens":28,"completion_tokens":15,"total_tokens":43}}'
cat > "$WORK/up/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $WORK/up/nginx.pid;
error_log $WORK/up/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $WORK/up;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$UP reuseport;
    location / { default_type application/json; return 200 '$RESPONSE'; }
  }
}
CONF
cat > "$WORK/ngx/nginx.conf" <<CONF
worker_processes $WORKERS;
daemon off;
pid $WORK/ngx/nginx.pid;
error_log $WORK/ngx/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $WORK/ngx;
  proxy_temp_path $WORK/ngx;
  keepalive_requests 1000000;
  upstream fleet { server 127.0.0.1:$UP; keepalive 256; keepalive_requests 1000000; }
  server {
    listen 127.0.0.1:$NGX;
    location / {
      proxy_pass http://fleet;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }
}
CONF
cat > "$WORK/gw.yaml" <<CONF
apiVersion: infergrid.dev/v1
kind: Gateway
spec:
  listen: 127.0.0.1:0
  workers: $WORKERS
  endpointMetrics: {enabled: false}
$( [[ -n "$SCORER" ]] && printf '  schedulingProfiles:\n  - {name: default, scorers: [%s]}\n' "$SCORER" )
$( [[ -n "$RECORD" ]] && printf '  recording: {enabled: true, path: %s/trace.jsonl}\n' "$WORK" )
  pools:
  - name: bench
    models: [bench-model]
    endpoints: [http://127.0.0.1:$UP]
CONF

"$NGINX" -c "$WORK/up/nginx.conf" -p "$WORK/up" 2>"$WORK/up/stderr" & PIDS+=($!)
"$NGINX" -c "$WORK/ngx/nginx.conf" -p "$WORK/ngx" 2>"$WORK/ngx/stderr" & PIDS+=($!)
"$BIN" gateway --config "$WORK/gw.yaml" > "$WORK/gw.out" 2>"$WORK/gw.err" & PIDS+=($!)
wait_port "$UP"
wait_port "$NGX"
for _ in $(seq 1 250); do grep -q "listening on port" "$WORK/gw.out" && break; sleep 0.02; done
GW=$(sed -n 's/listening on port //p' "$WORK/gw.out")
[[ -n "$GW" ]] || { cat "$WORK/gw.err"; exit 1; }

# wrk prints latency percentiles with units; convert to microseconds.
to_us() {
  awk -v v="$1" 'BEGIN {
    if (v ~ /us$/) { sub(/us$/, "", v); print v + 0 }
    else if (v ~ /ms$/) { sub(/ms$/, "", v); print v * 1000 }
    else if (v ~ /s$/) { sub(/s$/, "", v); print v * 1000000 }
    else print v }'
}
declare -A RPS P50 P99 ERRS
run() {
  local name=$1 port=$2
  # A short warm-up fills connection pools; then the measured run.
  wrk -t1 -c"$CONNS" -d1s -s "$HERE/post.lua" "http://127.0.0.1:$port/v1/chat/completions" > /dev/null
  wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency -s "$HERE/post.lua" \
    "http://127.0.0.1:$port/v1/chat/completions" > "$WORK/$name.wrk"
  RPS[$name]=$(awk '/^Requests\/sec:/ {print $2}' "$WORK/$name.wrk")
  P50[$name]=$(to_us "$(awk '$1 == "50%" {print $2}' "$WORK/$name.wrk")")
  P99[$name]=$(to_us "$(awk '$1 == "99%" {print $2}' "$WORK/$name.wrk")")
  ERRS[$name]=$(awk '/Non-2xx|Socket errors/ {print}' "$WORK/$name.wrk" | tr '\n' ' ')
}
run direct "$UP"
run nginx "$NGX"
run infergrid "$GW"

awk -v d50="${P50[direct]}" -v d99="${P99[direct]}" -v drps="${RPS[direct]}" \
    -v n50="${P50[nginx]}" -v n99="${P99[nginx]}" -v nrps="${RPS[nginx]}" \
    -v g50="${P50[infergrid]}" -v g99="${P99[infergrid]}" -v grps="${RPS[infergrid]}" \
    -v conns="$CONNS" -v dur="$DURATION" -v workers="$WORKERS" -v json="$JSON_OUT" 'BEGIN {
  na50 = n50 - d50; na99 = n99 - d99; ga50 = g50 - d50; ga99 = g99 - d99
  if (na50 < 1) na50 = 1; if (na99 < 1) na99 = 1
  printf "proxy-overhead: wrk -t1 -c%d -d%ds, proxies with %d worker(s), upstream nginx (fixed reply)\n", conns, dur, workers
  printf "%-10s %12s %14s %14s %14s %14s\n", "path", "max req/s", "p50 (us)", "p99 (us)", "added p50", "added p99"
  printf "%-10s %12.0f %14.0f %14.0f %14s %14s\n", "direct", drps, d50, d99, "-", "-"
  printf "%-10s %12.0f %14.0f %14.0f %14.0f %14.0f\n", "nginx", nrps, n50, n99, n50 - d50, n99 - d99
  printf "%-10s %12.0f %14.0f %14.0f %14.0f %14.0f\n", "infergrid", grps, g50, g99, g50 - d50, g99 - d99
  printf "infergrid / nginx: throughput %.2fx (target >= 0.8x), added p50 %.2fx, added p99 %.2fx (target <= 2x)\n", \
    grps / nrps, ga50 / na50, ga99 / na99
  if (json != "") {
    printf "{\"connections\":%d,\"duration_s\":%d,\"workers\":%d,", conns, dur, workers > json
    printf "\"direct\":{\"rps\":%.1f,\"p50_us\":%.0f,\"p99_us\":%.0f},", drps, d50, d99 > json
    printf "\"nginx\":{\"rps\":%.1f,\"p50_us\":%.0f,\"p99_us\":%.0f,\"added_p50_us\":%.0f,\"added_p99_us\":%.0f},", nrps, n50, n99, n50-d50, n99-d99 > json
    printf "\"infergrid\":{\"rps\":%.1f,\"p50_us\":%.0f,\"p99_us\":%.0f,\"added_p50_us\":%.0f,\"added_p99_us\":%.0f},", grps, g50, g99, g50-d50, g99-d99 > json
    printf "\"ratios\":{\"throughput\":%.3f,\"added_p50\":%.3f,\"added_p99\":%.3f}}\n", grps/nrps, ga50/na50, ga99/na99 > json
  }
}'
for k in direct nginx infergrid; do
  [[ -z "${ERRS[$k]}" ]] || echo "warning: $k: ${ERRS[$k]}"
done
echo "json: $JSON_OUT"
