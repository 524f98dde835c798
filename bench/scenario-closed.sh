#!/usr/bin/env bash
# Closed-model scripted session vs wrk, CPU per request, side by side:
#  - barrage run bench/heartbeat-closed.js --vus 50 --duration D: 50 virtual users loop over
#    the heartbeat session (token POST + JSONPath extraction + assert + 3-6 pings, no think
#    time), each on its own keep-alive connection kept across iterations;
#  - wrk -t1 -c50 plain GET /health on the same target (the guide's reference), and
#    wrk -t1 -c50 GET /ping?token=T (the session's own endpoint, a token issued up front), so
#    the target works as hard per request as it does for barrage's session.
# Target: barrage target pinned to CPU 1; generators pinned to CPU 0. Interleaved runs; medians.
# Usage: bench/scenario-closed.sh [--runs N] [--duration S]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
RUNS=5; DURATION=10
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) RUNS="$2"; shift 2 ;;
    --duration) DURATION="$2"; shift 2 ;;
    -h|--help) sed -n 2,9p "$0"; exit 0 ;;
    *) die "unknown argument $1" ;;
  esac
done
[[ -x "$BARRAGE" ]] || die "build first: cargo build --release"
raise_nofile
trap bench_cleanup EXIT
start_barrage_target
bench_tmp
token="$(curl -s -X POST "http://$BTARGET_ADDR/random/get_token?channel=1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')"
[[ -n "$token" ]] || die "no token from the target"
cpu_b=""; cpu_w=""; rps_b=""; rps_w=""; conns=""; cpu_p=""; rps_p=""
for run in $(seq 1 "$RUNS"); do
  tf="$BENCH_TMP/time"; js="$BENCH_TMP/s.json"
  timeout $((DURATION + 30)) /usr/bin/time -f "%e %U %S %M" -o "$tf" taskset -c "$GEN_CPU" \
    "$BARRAGE" run "$BENCH_DIR/heartbeat-closed.js" --target "http://$BTARGET_ADDR" --threads 1 \
    --vus 50 --duration "${DURATION}s" --seed "$run" --json "$js" > /dev/null
  read -r _ u s _ < <(read_time_file "$tf")
  read -r n secs opened completed interrupted failed < <(python3 -c '
import json,sys; d=json.load(open(sys.argv[1])); s=d["sessions"]
print(d["responses"], d["total_s"], d["connections_opened"], s["completed"], s["interrupted"], s["failed"])' "$js")
  c="$(awk -v u="$u" -v s="$s" -v n="$n" 'BEGIN { printf "%.2f", (u + s) * 1e6 / n }')"
  r="$(awk -v n="$n" -v t="$secs" 'BEGIN { printf "%.0f", n / t }')"
  log "run $run barrage 50 VUs: $n responses, $r req/s, $c µs CPU/req, $opened connections, sessions completed $completed interrupted $interrupted failed $failed"
  cpu_b+="$c "; rps_b+="$r "; conns+="$opened "
  out="$(timeout $((DURATION + 30)) /usr/bin/time -f "%e %U %S %M" -o "$tf" taskset -c "$GEN_CPU" wrk -t1 -c50 -d"${DURATION}s" "http://$BTARGET_ADDR/health")"
  n="$(printf '%s\n' "$out" | awk '/requests in/ { print $1 }')"
  read -r e u s _ < <(read_time_file "$tf")
  c="$(awk -v u="$u" -v s="$s" -v n="$n" 'BEGIN { printf "%.2f", (u + s) * 1e6 / n }')"
  r="$(awk -v n="$n" -v t="$e" 'BEGIN { printf "%.0f", n / t }')"
  log "run $run wrk -c50 GET /health: $n requests, $r req/s, $c µs CPU/req"
  cpu_w+="$c "; rps_w+="$r "
  out="$(timeout $((DURATION + 30)) /usr/bin/time -f "%e %U %S %M" -o "$tf" taskset -c "$GEN_CPU" wrk -t1 -c50 -d"${DURATION}s" "http://$BTARGET_ADDR/ping?token=$token")"
  n="$(printf '%s\n' "$out" | awk '/requests in/ { print $1 }')"
  bad="$(printf '%s\n' "$out" | awk '/Non-2xx/ { print $NF }')"
  [[ -z "$bad" ]] || die "wrk /ping got $bad non-2xx answers"
  read -r e u s _ < <(read_time_file "$tf")
  c="$(awk -v u="$u" -v s="$s" -v n="$n" 'BEGIN { printf "%.2f", (u + s) * 1e6 / n }')"
  r="$(awk -v n="$n" -v t="$e" 'BEGIN { printf "%.0f", n / t }')"
  log "run $run wrk -c50 GET /ping?token: $n requests, $r req/s, $c µs CPU/req"
  cpu_p+="$c "; rps_p+="$r "
done
mb="$(median $cpu_b)"; mw="$(median $cpu_w)"
echo "| generator | req/s (median) | CPU µs/req (median) | ratio to wrk | runs |"
echo "|---|---|---|---|---|"
echo "| barrage run heartbeat-closed.js --vus 50 (closed, keep-alive; connections: $(median $conns)) | $(median $rps_b) | $mb | $(awk -v a="$mb" -v b="$mw" 'BEGIN { printf "%.2f", a / b }') | $RUNS |"
echo "| wrk -t1 -c50 GET /health | $(median $rps_w) | $mw | 1.00 | $RUNS |"
mp="$(median $cpu_p)"
echo "| wrk -t1 -c50 GET /ping?token=T | $(median $rps_p) | $mp | $(awk -v a="$mp" -v b="$mw" 'BEGIN { printf "%.2f", a / b }') | $RUNS |"
echo
echo "barrage / wrk on the session's own endpoint: $(awk -v a="$mb" -v b="$mp" 'BEGIN { printf "%.2f", a / b }')"
