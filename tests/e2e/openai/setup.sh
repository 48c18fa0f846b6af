#!/usr/bin/env bash
# Installs the pinned official openai client for the end-to-end test (from the npm registry).
set -euo pipefail
cd "$(dirname "$0")"
if [[ ! -f node_modules/openai/package.json ]] || ! cmp -s package-lock.json node_modules/.package-lock.json 2>/dev/null; then
  npm ci --no-audit --no-fund --loglevel=error
fi
