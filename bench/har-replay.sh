#!/usr/bin/env bash
# CPU per request of `barrage replay` of a HAR recording (with the comparison checks, and with
# --no-compare) against `barrage run` of the script `barrage convert har` made from it, side by
# side, runs interleaved, medians of RUNS. The recording: one page of N sequential GET /json
# 1 ms apart (no think times); replay plays it LOOPS times at --speed 100, run's converted
# script starts 10 sessions (its arrival phase: 10 s at 1/s), so both send 10*N requests.
# Generator pinned to GEN_CPU, the bundled target to TARGET_CPU.
# Usage: [BARRAGE=target/release/barrage] [N=2000] [RUNS=5] bench/har-replay.sh
set -euo pipefail
# shellcheck source=lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
: "${BARRAGE:=$REPO_DIR/target/release/barrage}" "${N:=2000}" "${RUNS:=5}"
LOOPS=10
trap bench_cleanup EXIT
start_barrage_target
bench_tmp
har="$BENCH_TMP/bench.har"
python3 - "$N" > "$har" <<'PY'
import json, sys
n = int(sys.argv[1])
entries = [{
    "pageref": "p", "startedDateTime": "2026-11-24T00:00:%02d.%03dZ" % (i // 1000, i % 1000),
    "time": 0.5,
    "request": {"method": "GET", "url": "http://bench.recorded.test/json",
                "headers": [{"name": "Accept", "value": "application/json"}]},
    "response": {"status": 200, "content": {"mimeType": "application/json"}},
} for i in range(n)]
print(json.dumps({"log": {"version": "1.2", "creator": {"name": "bench", "version": "1"},
    "pages": [{"id": "p", "title": "bench", "startedDateTime": "2026-11-24T00:00:00Z"}],
    "entries": entries}}))
PY
"$BARRAGE" convert har "$har" -o "$BENCH_TMP/bench.js" > /dev/null
map="bench.recorded.test=http://$BTARGET_ADDR"
declare -A per_request
for run in $(seq 1 "$RUNS"); do
  for which in replay replay-no-compare run; do
    case "$which" in
      replay) args=(replay "$har" --map-host "$map" --loop "$LOOPS" --speed 100) ;;
      replay-no-compare) args=(replay "$har" --map-host "$map" --loop "$LOOPS" --speed 100 --no-compare) ;;
      run) args=(run "$BENCH_TMP/bench.js" --target "http://$BTARGET_ADDR") ;;
    esac
    taskset -c "$GEN_CPU" /usr/bin/time -f "%e %U %S %M" -o "$BENCH_TMP/t" \
      timeout 300 "$BARRAGE" "${args[@]}" --no-results --json "$BENCH_TMP/s.json" > /dev/null 2>&1
    read -r _ user sys _ < <(read_time_file "$BENCH_TMP/t")
    requests="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["requests"])' "$BENCH_TMP/s.json")"
    us="$(awk -v u="$user" -v s="$sys" -v n="$requests" 'BEGIN { printf "%.2f", (u + s) * 1e6 / n }')"
    log "$which run $run: $requests requests, $us us CPU/request"
    per_request[$which]+="$us "
  done
done
for which in replay replay-no-compare run; do
  # shellcheck disable=SC2086
  echo "$which: median $(median ${per_request[$which]}) us CPU/request (runs: ${per_request[$which]})"
done
