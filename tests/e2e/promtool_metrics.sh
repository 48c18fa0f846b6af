#!/usr/bin/env bash
# Prometheus's own promtool checks the gateway's /metrics after real traffic, and the
# families the gateway promises are there.
set -euo pipefail
GW=$1
FAKE=$2
source "$(dirname "$0")/lib.sh"

start fake "$FAKE" --port 0
FAKE_PORT=$PORT
start gw "$GW" gateway --model test-model --endpoint "http://127.0.0.1:$FAKE_PORT" --listen 127.0.0.1:0
GW_PORT=$PORT

chat='{"model":"test-model","messages":[{"role":"user","content":"hi"}],"max_tokens":2}'
curl -sf "http://127.0.0.1:$GW_PORT/v1/chat/completions" -d "$chat" > /dev/null
curl -s "http://127.0.0.1:$GW_PORT/v1/chat/completions" -d '{"model":"nope","messages":[{"role":"user"}]}' > /dev/null
curl -s "http://127.0.0.1:$GW_PORT/nowhere" > /dev/null
# Wait for at least one scrape of the endpoint.
for _ in $(seq 1 200); do
  curl -s "http://127.0.0.1:$GW_PORT/metrics" | grep -q '^infergrid_endpoint_num_requests_running' && break
  sleep 0.05
done
curl -s "http://127.0.0.1:$GW_PORT/metrics" > "$WORK/metrics.txt"

promtool check metrics < "$WORK/metrics.txt"
for family in infergrid_requests_total infergrid_time_to_first_byte_seconds_bucket \
  infergrid_request_duration_seconds_sum infergrid_client_errors_total infergrid_routing_decisions_total \
  infergrid_endpoint_scrapes_total infergrid_endpoint_num_requests_running infergrid_endpoint_in_flight_requests; do
  grep -q "^$family" "$WORK/metrics.txt" || { echo "FAIL: $family missing"; exit 1; }
done
grep -q 'infergrid_requests_total{pool="default",model="test-model",endpoint="http://127.0.0.1:'"$FAKE_PORT"'",code="200"} 1' \
  "$WORK/metrics.txt" || { echo "FAIL: request not counted"; cat "$WORK/metrics.txt"; exit 1; }
echo ok
