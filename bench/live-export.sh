#!/usr/bin/env bash
# CPU per request with `--out prometheus-rw` into a live Prometheus vs without, side by side:
# barrage run bench/heartbeat-closed.js --vus 50 --duration D (closed, keep-alive), once
# plain and once streaming to Prometheus's remote-write receiver every second.
# Target and Prometheus pinned to CPU 1; the generator to CPU 0. Interleaved runs; medians.
# With --rate R: barrage quick -c 10 --rate R (open loop, GET /health) instead, to see the
# export's fixed per-second cost against a low request rate.
# Usage: bench/live-export.sh [--runs N] [--duration S] [--rate R]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
RUNS=5; DURATION=10; RATE=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) RUNS="$2"; shift 2 ;;
    --duration) DURATION="$2"; shift 2 ;;
    --rate) RATE="$2"; shift 2 ;;
    -h|--help) sed -n 2,8p "$0"; exit 0 ;;
    *) die "unknown argument $1" ;;
  esac
done
[[ -x "$BARRAGE" ]] || die "build first: cargo build --release"
raise_nofile
PROM_PID=""
cleanup() { [[ -z "$PROM_PID" ]] || kill "$PROM_PID" 2>/dev/null || true; bench_cleanup; }
trap cleanup EXIT
start_barrage_target
bench_tmp
PROM_ADDR="127.0.0.1:19291"
start_prometheus "$PROM_ADDR"
cpu_plain=""; cpu_rw=""; rps_plain=""; rps_rw=""
# CPU time from `perf stat -e task-clock` when perf is there (getrusage's 10 ms ticks are too
# coarse for a low-rate run), else from /usr/bin/time.
PERF=()
if command -v perf >/dev/null && perf stat -e task-clock true > /dev/null 2>&1; then
  PERF=(perf stat -x, -e task-clock -o "$BENCH_TMP/perf")
fi
one_run() { # label extra-args...
  local label="$1"; shift
  local tf="$BENCH_TMP/time" js="$BENCH_TMP/s.json"
  if [[ -n "$RATE" ]]; then
    timeout $((DURATION + 30)) /usr/bin/time -f "%e %U %S %M" -o "$tf" "${PERF[@]}" taskset -c "$GEN_CPU" \
      "$BARRAGE" quick -z "${DURATION}s" -c 10 --rate "$RATE" --threads 1 --no-results \
      --no-history -o json "$@" "http://$BTARGET_ADDR/health" > "$js" 2> "$BENCH_TMP/stderr"
  else
    timeout $((DURATION + 30)) /usr/bin/time -f "%e %U %S %M" -o "$tf" "${PERF[@]}" taskset -c "$GEN_CPU" \
      "$BARRAGE" run "$BENCH_DIR/heartbeat-closed.js" --target "http://$BTARGET_ADDR" --threads 1 \
      --vus 50 --duration "${DURATION}s" --seed "$run" --json "$js" "$@" > /dev/null 2> "$BENCH_TMP/stderr"
  fi
  ! grep -q warning "$BENCH_TMP/stderr" || die "$(cat "$BENCH_TMP/stderr")"
  read -r _ u s _ < <(read_time_file "$tf")
  read -r n secs < <(python3 -c '
import json,sys; d=json.load(open(sys.argv[1])); print(d["requests"], d["total_s"])' "$js")
  c="$(awk -v u="$u" -v s="$s" -v n="$n" 'BEGIN { printf "%.3f", (u + s) * 1e6 / n }')"
  if [[ ${#PERF[@]} -gt 0 ]]; then # task-clock: the CPU time to the microsecond, not 10 ms
    c="$(awk -F, -v n="$n" '$3 == "task-clock" { printf "%.3f", $1 * 1e3 / n }' "$BENCH_TMP/perf")"
  fi
  r="$(awk -v n="$n" -v t="$secs" 'BEGIN { printf "%.0f", n / t }')"
  log "run $run $label: $n requests, $r req/s, $c µs CPU/req"
}
for run in $(seq 1 "$RUNS"); do
  one_run plain; cpu_plain+="$c "; rps_plain+="$r "
  one_run prometheus-rw --out "prometheus-rw=http://$PROM_ADDR/api/v1/write,testid=bench-$run"
  cpu_rw+="$c "; rps_rw+="$r "
done
mp="$(median $cpu_plain)"; mr="$(median $cpu_rw)"
if [[ -n "$RATE" ]]; then
  echo "| barrage quick -c 10 --rate $RATE | req/s (median) | CPU µs/req (median) | ratio | runs |"
else
  echo "| barrage run heartbeat-closed.js --vus 50 | req/s (median) | CPU µs/req (median) | ratio | runs |"
fi
echo "|---|---|---|---|---|"
echo "| without live export | $(median $rps_plain) | $mp | 1.000 | $RUNS |"
echo "| --out prometheus-rw (live Prometheus, 1 s) | $(median $rps_rw) | $mr | $(awk -v a="$mr" -v b="$mp" 'BEGIN { printf "%.3f", a / b }') | $RUNS |"
echo "per-run CPU µs/req: plain [$cpu_plain] prometheus-rw [$cpu_rw]"
