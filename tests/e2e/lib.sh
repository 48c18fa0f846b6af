# Shared helpers for the end-to-end scripts: start processes on port 0, read their ports,
# and stop everything on exit.
set -euo pipefail

PIDS=()
WORK=$(mktemp -d)
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# start NAME CMD...: runs CMD in the background, waits for "listening on port N", sets PORT.
start() {
  local name=$1; shift
  "$@" > "$WORK/$name.out" 2> "$WORK/$name.err" &
  PIDS+=($!)
  for _ in $(seq 1 500); do
    if grep -q "listening on port" "$WORK/$name.out" 2>/dev/null; then
      PORT=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$WORK/$name.out" | head -1)
      return 0
    fi
    if ! kill -0 "${PIDS[-1]}" 2>/dev/null; then
      echo "$name exited early:"; cat "$WORK/$name.err"; return 1
    fi
    sleep 0.02
  done
  echo "$name did not start"; cat "$WORK/$name.err"; return 1
}
