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

# The simulator's /metrics: vLLM's names, valid exposition.
start sim "$GW" sim --host 127.0.0.1 --port 0 --served-model-name m
SIM_PORT=$PORT
curl -sf "http://127.0.0.1:$SIM_PORT/v1/completions" -d '{"prompt":"hello","max_tokens":3}' > /dev/null
curl -s "http://127.0.0.1:$SIM_PORT/metrics" > "$WORK/sim.txt"
# promtool's only complaints may be the two lints vLLM's own names draw (colons, and
# vllm:iteration_tokens_total being a histogram); a parse error or any other lint fails.
lint=$(promtool check metrics < "$WORK/sim.txt" 2>&1 || true)
bad=$(grep -v -e "metric names should not contain ':'" \
  -e 'vllm:iteration_tokens_total non-counter metrics should not have "_total" suffix' <<< "$lint" |
  grep -v '^$' || true)
[[ -z "$bad" ]] || { echo "FAIL: promtool on the simulator: $bad"; exit 1; }
for family in vllm:num_requests_running vllm:num_requests_waiting vllm:kv_cache_usage_perc \
  vllm:prefix_cache_queries_total vllm:prefix_cache_hits_total vllm:num_preemptions_total \
  vllm:prompt_tokens_total vllm:generation_tokens_total vllm:request_success_total \
  vllm:time_to_first_token_seconds_bucket vllm:inter_token_latency_seconds_bucket \
  vllm:e2e_request_latency_seconds_bucket vllm:cache_config_info; do
  grep -q "^$family" "$WORK/sim.txt" || { echo "FAIL: sim $family missing"; exit 1; }
done
grep -q '^vllm:generation_tokens_total{model_name="m",engine="0"} 3' "$WORK/sim.txt" ||
  { echo "FAIL: generation tokens not counted"; cat "$WORK/sim.txt"; exit 1; }
echo ok
