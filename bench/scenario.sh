#!/usr/bin/env bash
# Scripted multi-step session vs plain GET, CPU per request, side by side:
#  - barrage run bench/heartbeat-nowait.js (token POST + JSONPath extraction + assert + 3-6
#    pings per session, a new connection per session) at each arrival rate of --rates;
#  - wrk -t1 -c50 plain GET /health, the guide's reference for CPU per request.
# Both against barrage target (it issues and checks the tokens) pinned to CPU 1; generators
# pinned to CPU 0. Interleaved runs; medians.
# Usage: bench/scenario.sh [--runs N] [--duration S] [--rates "4000 8000"] [--script heartbeat-shared.js]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
RUNS=3; DURATION=10; RATES="4000 8000"; SCRIPT="heartbeat-nowait.js"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) RUNS="$2"; shift 2 ;;
    --duration) DURATION="$2"; shift 2 ;;
    --rates) RATES="$2"; shift 2 ;;
    --script) SCRIPT="$2"; shift 2 ;;
    -h|--help) sed -n 2,9p "$0"; exit 0 ;;
    *) die "unknown argument $1" ;;
  esac
done
[[ -x "$BARRAGE" ]] || die "build first: cargo build --release"
raise_nofile
trap bench_cleanup EXIT
start_barrage_target
bench_tmp
declare -A cpu rps ach
for run in $(seq 1 "$RUNS"); do
  for rate in $RATES; do
    tf="$BENCH_TMP/time"; js="$BENCH_TMP/s.json"
    factor="$(awk -v r="$rate" 'BEGIN { printf "%g", r / 1000 }')"
    /usr/bin/time -f "%e %U %S %M" -o "$tf" taskset -c "$GEN_CPU" "$BARRAGE" run \
      "$BENCH_DIR/$SCRIPT" --target "http://$BTARGET_ADDR" --threads 1 \
      --rate-factor "$factor" --duration-limit "${DURATION}s" --seed "$run" --json "$js" > /dev/null
    read -r _ u s _ < <(read_time_file "$tf")
    read -r n secs started dropped interrupted failed planned < <(python3 -c '
import json,sys; d=json.load(open(sys.argv[1])); s=d["sessions"]
print(d["responses"], d["total_s"], s["started"], s["dropped"], s["interrupted"], s["failed"], d["arrivals"]["planned"])' "$js")
    c="$(awk -v u="$u" -v s="$s" -v n="$n" 'BEGIN { printf "%.2f", (u + s) * 1e6 / n }')"
    r="$(awk -v n="$n" -v t="$secs" 'BEGIN { printf "%.0f", n / t }')"
    a="$(awk -v a="$started" -v d="$dropped" -v p="$planned" 'BEGIN { printf "%.3f", (a + d) / p }')"
    log "run $run scenario rate $rate: $n responses, $r req/s, $c µs CPU/req, arrivals $a of plan, dropped $dropped interrupted $interrupted failed $failed"
    cpu[$rate]+="$c "; rps[$rate]+="$r "; ach[$rate]+="$a "
  done
  out="$(/usr/bin/time -f "%e %U %S %M" -o "$tf" taskset -c "$GEN_CPU" wrk -t1 -c50 -d"${DURATION}s" "http://$BTARGET_ADDR/health")"
  n="$(printf '%s\n' "$out" | awk '/requests in/ { print $1 }')"
  read -r _ u s _ < <(read_time_file "$tf")
  c="$(awk -v u="$u" -v s="$s" -v n="$n" 'BEGIN { printf "%.2f", (u + s) * 1e6 / n }')"
  log "run $run wrk plain GET: $n requests, $c µs CPU/req"
  cpu[wrk]+="$c "
done
wrk_med="$(median ${cpu[wrk]})"
echo "| generator | sessions/s | req/s (median) | CPU µs/req (median) | ratio to wrk | arrivals achieved / planned |"
echo "|---|---|---|---|---|---|"
for rate in $RATES; do
  m="$(median ${cpu[$rate]})"
  echo "| barrage run $SCRIPT | $rate | $(median ${rps[$rate]}) | $m | $(awk -v a="$m" -v b="$wrk_med" 'BEGIN { printf "%.2f", a / b }') | $(median ${ach[$rate]}) |"
done
echo "| wrk -t1 -c50 GET /health | — | — | $wrk_med | 1.00 | — |"
