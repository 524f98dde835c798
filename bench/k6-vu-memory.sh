#!/usr/bin/env bash
# What a k6 VU's QuickJS state costs, by layout (docs/k6-vu-memory.md): N contexts of a script
# after their init context, each in its own runtime (today's VUs) or all in one runtime; QuickJS's
# heap count and the resident growth per VU, one process per layout. No engine, no target.
# Usage: bench/k6-vu-memory.sh [--vus N] [--script FILE]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
VUS=400; SCRIPT=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --vus) VUS="$2"; shift 2 ;;
    --script) SCRIPT="$2"; shift 2 ;;
    -h|--help) sed -n 2,5p "$0"; exit 0 ;;
    *) die "unknown argument $1" ;;
  esac
done
: "${SCRIPT:=$BENCH_DIR/k6-idle.js}"
(cd "$REPO_DIR" && cargo build --release -q -p barrage-k6 --example vu_memory)
probe="${CARGO_TARGET_DIR:-$REPO_DIR/target}/release/examples/vu_memory"
for layout in bare-runtime bare-context runtime-per-vu shared-runtime; do
  log "$("$probe" "$SCRIPT" "$VUS" "$layout")"
done
