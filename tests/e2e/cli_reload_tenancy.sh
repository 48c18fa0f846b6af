#!/usr/bin/env bash
# Tenancy from the command line: keys hashed with `infergrid config hash-key`, a 401 for an
# unknown key, SIGHUP reloading the tenants in place, a broken file on SIGHUP leaving the
# running configuration, and no key ever in the gateway's log.
set -euo pipefail
GW=$1
FAKE=$2
source "$(dirname "$0")/lib.sh"

start fake "$FAKE" --port 0
FAKE_PORT=$PORT
KEY_A=sk-alpha-0123456789
KEY_B=sk-bravo-9876543210
HASH_A=$(printf %s "$KEY_A" | "$GW" config hash-key)
[[ "$HASH_A" == "$(printf %s "$KEY_A" | sha256sum | cut -d' ' -f1)" ]] ||
  { echo "FAIL: hash-key differs from sha256sum"; exit 1; }
HASH_B=$(echo "$KEY_B" | "$GW" config hash-key)  # a trailing newline is not part of the key

config() {  # config TENANTS_YAML
  cat > "$WORK/gw.yaml" <<YAML
apiVersion: infergrid.dev/v1
kind: Gateway
spec:
  listen: 127.0.0.1:0
  lifecycle: {configWatchInterval: 0s}  # reloads here are SIGHUP's only, counted exactly
  tenancy:
    requireApiKey: true
    tenants:
$1
  pools:
  - name: main
    models: [test-model]
    endpoints: [http://127.0.0.1:$FAKE_PORT]
YAML
}
config "    - {name: alpha, apiKeySha256: [$HASH_A]}"
start gw "$GW" gateway --config "$WORK/gw.yaml"
GW_PORT=$PORT
GW_PID=${PIDS[-1]}

chat='{"model":"test-model","messages":[{"role":"user","content":"hi"}],"max_tokens":2}'
status() {  # status KEY
  curl -s -o "$WORK/body" -w '%{http_code}' "http://127.0.0.1:$GW_PORT/v1/chat/completions" \
    -H "Authorization: Bearer $1" -d "$chat"
}
[[ $(status "$KEY_A") == 200 ]] || { echo "FAIL: key A refused"; cat "$WORK/body"; exit 1; }
[[ $(status "$KEY_B") == 401 ]] || { echo "FAIL: key B not refused"; exit 1; }
grep -q '"code":"invalid_api_key"' "$WORK/body" || { echo "FAIL: 401 body"; cat "$WORK/body"; exit 1; }

# Bravo joins: SIGHUP, and its key works without a restart.
config "    - {name: alpha, apiKeySha256: [$HASH_A]}
    - {name: bravo, apiKeySha256: [$HASH_B]}"
kill -HUP "$GW_PID"
for _ in $(seq 1 250); do [[ $(status "$KEY_B") == 200 ]] && break; sleep 0.02; done
[[ $(status "$KEY_B") == 200 ]] || { echo "FAIL: key B not accepted after SIGHUP"; exit 1; }

# A broken file: the gateway keeps running with what it had, and says why.
echo "spec: [" > "$WORK/gw.yaml"
kill -HUP "$GW_PID"
# (The exposition is read whole first: grep -q leaving early would fail curl's write, and
# with pipefail the pipeline, even on a match.)
failed_reloads() { curl -s "http://127.0.0.1:$GW_PORT/metrics" > "$WORK/metrics"; grep -c '^infergrid_config_reloads_total{result="error"} 1$' "$WORK/metrics" || true; }
for _ in $(seq 1 250); do [[ $(failed_reloads) == 1 ]] && break; sleep 0.02; done
[[ $(failed_reloads) == 1 ]] || { echo "FAIL: failed reload not counted"; cat "$WORK/metrics" "$WORK/gw.err"; exit 1; }
[[ $(status "$KEY_B") == 200 ]] || { echo "FAIL: running config lost"; exit 1; }
grep -q "not reloaded" "$WORK/gw.err" || { echo "FAIL: no log of the failed reload"; exit 1; }
kill -0 "$GW_PID"

# Keys never reach the log.
if grep -q -e "$KEY_A" -e "$KEY_B" "$WORK/gw.err" "$WORK/gw.out"; then
  echo "FAIL: a key was logged"; exit 1
fi
echo ok
