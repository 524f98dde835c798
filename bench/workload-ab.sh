#!/usr/bin/env bash
# A/B of two barrage binaries across the workload models, CPU µs per response, side by side:
#  - quick -n N -c 50 (closed, count-bounded: the closed executor);
#  - quick -q R -c 50 -z D (paced: the paced executor, slot times from the schedule);
#  - run bench/heartbeat-closed.js --vus 50 --duration D (scripted session, constant VUs);
#  - run bench/heartbeat-nowait.js --duration-limit D (scripted session, open model arrivals).
# Target: barrage target (from NEW) pinned to CPU $TARGET_CPU; generators on CPU $GEN_CPU with
# --threads 1. Runs interleaved old/new; medians of RUNS.
# Usage: bench/workload-ab.sh OLD_BINARY NEW_BINARY [RUNS] [SECONDS]
set -euo pipefail
# shellcheck source=lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

OLD="${1:?old binary}"; NEW="${2:?new binary}"; RUNS="${3:-5}"; SECS="${4:-5}"
[[ -x "$OLD" && -x "$NEW" ]] || die "two barrage binaries, please"
trap bench_cleanup EXIT
raise_nofile
BARRAGE="$NEW" start_barrage_target
bench_tmp
url="http://$BTARGET_ADDR"
declare -A costs=()
case_argv() { # case -> argv after the binary
  case "$1" in
    quick-closed) echo "quick -n 100000 -c 50 --threads 1 --no-results --no-history -o json $url/health" ;;
    quick-paced) echo "quick -q 100 -c 50 -z ${SECS}s --threads 1 --no-results --no-history -o json $url/health" ;;
    run-closed) echo "run $BENCH_DIR/heartbeat-closed.js --target $url --threads 1 --vus 50 --duration ${SECS}s --no-results --no-history --json $BENCH_TMP/s.json" ;;
    run-open) echo "run $BENCH_DIR/heartbeat-nowait.js --target $url --threads 1 --duration-limit ${SECS}s --no-results --no-history --json $BENCH_TMP/s.json" ;;
  esac
}
CASES="quick-closed quick-paced run-closed run-open"
for run in $(seq 1 "$RUNS"); do
  for c in $CASES; do
    for which in old new; do
      bin="$OLD"; [[ "$which" == new ]] && bin="$NEW"
      rm -f "$BENCH_TMP/s.json"
      # shellcheck disable=SC2046
      timeout $(( SECS + 60 )) taskset -c "$GEN_CPU" /usr/bin/time -f "%U %S" -o "$BENCH_TMP/t" \
        "$bin" $(case_argv "$c") > "$BENCH_TMP/o" 2> /dev/null || true
      json="$BENCH_TMP/o"; [[ -s "$BENCH_TMP/s.json" ]] && json="$BENCH_TMP/s.json"
      n="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["responses"])' "$json")"
      cpu="$(awk '{ print $1 + $2 }' "$BENCH_TMP/t")"
      cost="$(awk -v n="$n" -v c="$cpu" 'BEGIN { printf "%.2f", c * 1e6 / n }')"
      log "$c $which run $run: $n responses, ${cpu}s CPU, $cost µs/response"
      costs[$c.$which]+=" $cost"
    done
  done
done
for c in $CASES; do
  # shellcheck disable=SC2086
  o="$(median ${costs[$c.old]})"; n="$(median ${costs[$c.new]})"
  printf '%-13s old %s  new %s µs CPU/response  new/old %s  (old:%s; new:%s)\n' "$c" "$o" "$n" \
    "$(awk -v a="$o" -v b="$n" 'BEGIN { printf "%.3f", b / a }')" "${costs[$c.old]}" "${costs[$c.new]}"
done
