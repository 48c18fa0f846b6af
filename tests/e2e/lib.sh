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

# check_bench_clean REPORT_JSON MIN_SENT: the bench's one run had no failed or unfinished
# request (an incomplete stream is a failure) and sent more than MIN_SENT.
check_bench_clean() {
  node -e '
    const fs = require("fs");
    const j = JSON.parse(fs.readFileSync(process.argv[1]));
    const fail = m => { console.log("FAIL: " + m); process.exit(1); };
    const r = j.runs[0];
    if (r.failure) fail("did not run: " + r.failure);
    if (r.failed !== 0) fail(r.failed + " failed requests: " + JSON.stringify(r.errors) + " " + JSON.stringify(r.error_examples));
    if (r.unfinished) fail(r.unfinished + " unfinished requests");
    if (!(r.sent > Number(process.argv[2]))) fail("only " + r.sent + " requests sent");
    console.log("ok: " + r.sent + " requests, 0 failed, every stream complete");
  ' "$1" "$2"
}
