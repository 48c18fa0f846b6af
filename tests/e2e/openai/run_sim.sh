#!/usr/bin/env bash
# Runs sim.mjs (node's test runner) against `infergrid sim` on port 0.
set -euo pipefail
BIN=$1
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/../lib.sh"
[[ -f "$HERE/node_modules/openai/package.json" ]] || "$HERE/setup.sh"

start sim "$BIN" sim --host 127.0.0.1 --port 0 --served-model-name sim-model \
  --model-profile llama-3.1-8b --accelerator h100 --max-model-len 2048 --time-scale 10 \
  --enable-prompt-tokens-details
SIM_URL="http://127.0.0.1:$PORT" node --test "$HERE/sim.mjs"
