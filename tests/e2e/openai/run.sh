#!/usr/bin/env bash
# Runs test.mjs (node's test runner) against a gateway in front of fake_vllm, then qos.mjs
# against one with tenants.
set -euo pipefail
GW=$1
FAKE=$2
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/../lib.sh"
[[ -f "$HERE/node_modules/openai/package.json" ]] || "$HERE/setup.sh"

start fake "$FAKE" --port 0
cat > "$WORK/gw.yaml" <<YAML
apiVersion: infergrid.dev/v1
kind: Gateway
spec:
  listen: 127.0.0.1:0
  pools:
  - name: test
    models:
    - name: test-model
      aliases: [test-alias]
    endpoints:
    - http://127.0.0.1:$PORT
YAML
FAKE_PORT=$PORT
start gw "$GW" gateway --config "$WORK/gw.yaml"
GATEWAY_URL="http://127.0.0.1:$PORT" node --test "$HERE/test.mjs"

# A gateway with tenants: the client's error classes for 401 and 429.
cat > "$WORK/qos.yaml" <<YAML
apiVersion: infergrid.dev/v1
kind: Gateway
spec:
  listen: 127.0.0.1:0
  tenancy:
    requireApiKey: true
    tenants:
    - name: limited
      apiKeySha256: [$(printf %s sk-limited-tenant | "$GW" config hash-key)]
      limits: {requestsPerMinute: 1}
  pools:
  - name: test
    models: [test-model]
    endpoints: [http://127.0.0.1:$FAKE_PORT]
YAML
start qos "$GW" gateway --config "$WORK/qos.yaml"
QOS_GATEWAY_URL="http://127.0.0.1:$PORT" node --test "$HERE/qos.mjs"
