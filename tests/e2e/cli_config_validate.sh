#!/usr/bin/env bash
# `infergrid config validate` accepts the shipped examples and rejects bad files with
# FILE:LINE:COL, the field's path and what was expected, exiting non-zero.
set -euo pipefail
BIN=$1
ROOT=$2
source "$(dirname "$0")/lib.sh"

for f in "$ROOT"/examples/*.yaml "$ROOT"/examples/kubernetes/gateway-config.yaml; do
  "$BIN" config validate "$f" | grep -q "valid" || { echo "FAIL: $f should be valid"; exit 1; }
done

cat > "$WORK/bad.yaml" <<'YAML'
apiVersion: infergrid.dev/v1
kind: Gateway
spec:
  pools:
  - name: a
    models: [m]
    endpoints:
    - url: http://127.0.0.1:8001
      weight: 3
YAML
set +e
out=$("$BIN" config validate "$WORK/bad.yaml" 2>&1); rc=$?
set -e
[[ $rc -ne 0 ]] || { echo "FAIL: bad config accepted"; exit 1; }
expected="$WORK/bad.yaml:9:7: spec.pools[0].endpoints[0].weight: unknown field 'weight'; expected one of: hardware, labels, url"
[[ "$out" == "$expected" ]] || { echo "FAIL: got '$out'"; echo "wanted '$expected'"; exit 1; }

# The gateway refuses to start on the same file, with the same message.
set +e
out=$("$BIN" gateway --config "$WORK/bad.yaml" 2>&1); rc=$?
set -e
[[ $rc -eq 2 && "$out" == "error: $expected" ]] || { echo "FAIL: gateway start: rc=$rc '$out'"; exit 1; }

# A missing file is a clear error too.
set +e
out=$("$BIN" config validate "$WORK/none.yaml" 2>&1); rc=$?
set -e
[[ $rc -ne 0 && "$out" == *"cannot read the file"* ]] || { echo "FAIL: missing file: '$out'"; exit 1; }
echo ok
