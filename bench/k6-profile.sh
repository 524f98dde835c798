#!/usr/bin/env bash
# Where a k6 script's CPU goes in barrage, deterministically (instruction counts do not move
# with the load of a shared machine): bench/k6-heartbeat.js run by barrage under
# valgrind --tool=callgrind, 1 VU, a fixed number of iterations; prints instructions per
# request and the functions that cost the most (inclusive and self).
# Usage: bench/k6-profile.sh [--iterations N] [--script FILE] [--keep FILE (the callgrind output)]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ITERATIONS=300; SCRIPT=""; KEEP=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --iterations) ITERATIONS="$2"; shift 2 ;;
    --script) SCRIPT="$2"; shift 2 ;;
    --keep) KEEP="$2"; shift 2 ;;
    -h|--help) sed -n 2,6p "$0"; exit 0 ;;
    *) die "unknown argument $1" ;;
  esac
done
[[ -x "$BARRAGE" ]] || die "build first: cargo build --release"
command -v valgrind >/dev/null || die "valgrind not installed (apt-get install -y valgrind)"
: "${SCRIPT:=$BENCH_DIR/k6-heartbeat.js}"
trap bench_cleanup EXIT
start_barrage_target
bench_tmp
export BASE="http://$BTARGET_ADDR"
out="$BENCH_TMP/callgrind.out"
valgrind --tool=callgrind --callgrind-out-file="$out" "$BARRAGE" run "$SCRIPT" --threads 1 \
  --vus 1 --iterations "$ITERATIONS" --json "$BENCH_TMP/s.json" > /dev/null 2> "$BENCH_TMP/vg.log" || true
requests="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["responses"])' "$BENCH_TMP/s.json")"
total="$(awk '/^summary:|^totals:/ { print $2; exit }' "$out")"
log "$requests responses, $total instructions: $(awk -v t="$total" -v n="$requests" 'BEGIN { printf "%.0f", t / n }') instructions per request (start-up included)"
[[ -z "$KEEP" ]] || cp "$out" "$KEEP"
callgrind_annotate --inclusive=yes "$out" 2>/dev/null | sed -n '1,60p' | cut -c1-180 >&2
callgrind_annotate "$out" 2>/dev/null | sed -n '1,45p' | cut -c1-180 >&2
