#!/usr/bin/env bash
# The same k6 script run by k6 and by barrage, side by side (interleaved runs, medians):
#  - CPU: bench/k6-heartbeat.js (token POST + json() + check + 3-6 pings) with 50 VUs for D
#    seconds; requests per CPU-second = responses / (user + sys) of the generator;
#  - memory (--memory): bench/k6-idle.js with 1 and N idle VUs; memory per VU =
#    (peak RSS with N - peak RSS with 1) / (N - 1).
# Target: barrage target pinned to CPU 1; generators pinned to CPU 0 (barrage --threads 1).
#   --memory-duration S: how long the N-VU run lasts (default 8; barrage creates each VU at its
#   first iteration, so at 10,000 VUs give it long enough that every VU started: the log
#   prints the requests, at least N).
# Usage: bench/k6-vs-barrage.sh [--runs N] [--duration S] [--memory N] [--memory-duration S] [--k6 PATH]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
RUNS=3; DURATION=10; MEMORY=""; MEMORY_DURATION=8; K6="${K6:-$HOME/go/bin/k6}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) RUNS="$2"; shift 2 ;;
    --duration) DURATION="$2"; shift 2 ;;
    --memory) MEMORY="$2"; shift 2 ;;
    --memory-duration) MEMORY_DURATION="$2"; shift 2 ;;
    --k6) K6="$2"; shift 2 ;;
    -h|--help) sed -n 2,12p "$0"; exit 0 ;;
    *) die "unknown argument $1" ;;
  esac
done
[[ -x "$BARRAGE" ]] || die "build first: cargo build --release"
[[ -x "$K6" ]] || die "k6 not found at $K6 (go install go.k6.io/k6@latest)"
raise_nofile
trap bench_cleanup EXIT
start_barrage_target
bench_tmp
export BASE="http://$BTARGET_ADDR"
tf="$BENCH_TMP/time"

# barrage: responses from its --json summary; k6: http_reqs from --summary-export.
run_barrage() { # script vus duration_s -> "responses user sys maxrss_kib"
  local js="$BENCH_TMP/b.json"
  timeout $(($3 + 120)) /usr/bin/time -f "%e %U %S %M" -o "$tf" taskset -c "$GEN_CPU" \
    "$BARRAGE" run "$1" --threads 1 --vus "$2" --duration "${3}s" --json "$js" > /dev/null 2>&1 || true
  local n; n="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["responses"])' "$js")"
  read -r _ u s m < <(read_time_file "$tf"); echo "$n $u $s $m"
}
run_k6() { # script vus duration_s -> "responses user sys maxrss_kib"
  local js="$BENCH_TMP/k.json"
  timeout $(($3 + 120)) /usr/bin/time -f "%e %U %S %M" -o "$tf" taskset -c "$GEN_CPU" \
    "$K6" run -q --vus "$2" --duration "${3}s" --summary-export "$js" "$1" > /dev/null 2>&1 || true
  local n; n="$(python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["metrics"]["http_reqs"]["count"]))' "$js")"
  read -r _ u s m < <(read_time_file "$tf"); echo "$n $u $s $m"
}
per_cpu_s() { awk -v n="$1" -v u="$2" -v s="$3" 'BEGIN { printf "%.0f", n / (u + s) }'; }

if [[ -z "$MEMORY" ]]; then
  rb=""; rk=""
  for run in $(seq 1 "$RUNS"); do
    read -r n u s m < <(run_barrage "$BENCH_DIR/k6-heartbeat.js" 50 "$DURATION")
    r="$(per_cpu_s "$n" "$u" "$s")"; rb+="$r "
    log "run $run barrage: $n responses, user $u s, sys $s s, $r requests/CPU-s, peak RSS $m KiB"
    read -r n u s m < <(run_k6 "$BENCH_DIR/k6-heartbeat.js" 50 "$DURATION")
    r="$(per_cpu_s "$n" "$u" "$s")"; rk+="$r "
    log "run $run k6:      $n responses, user $u s, sys $s s, $r requests/CPU-s, peak RSS $m KiB"
  done
  mb="$(median $rb)"; mk="$(median $rk)"
  log "median requests per CPU-second: barrage $mb, k6 $mk, ratio $(awk -v b="$mb" -v k="$mk" 'BEGIN { printf "%.1f", b / k }')x"
else
  mb=""; mk=""
  for run in $(seq 1 "$RUNS"); do
    for gen in barrage k6; do
      read -r _ _ _ one < <(run_$gen "$BENCH_DIR/k6-idle.js" 1 5)
      read -r n _ _ many < <(run_$gen "$BENCH_DIR/k6-idle.js" "$MEMORY" "$MEMORY_DURATION")
      per="$(awk -v a="$one" -v b="$many" -v v="$MEMORY" 'BEGIN { printf "%.1f", (b - a) / (v - 1) }')"
      log "run $run $gen: peak RSS 1 VU $one KiB, $MEMORY VUs $many KiB ($n requests): $per KiB per VU"
      if [[ $gen == barrage ]]; then mb+="$per "; else mk+="$per "; fi
    done
  done
  b="$(median $mb)"; k="$(median $mk)"
  log "median memory per VU at $MEMORY VUs: barrage $b KiB, k6 $k KiB, ratio $(awk -v b="$b" -v k="$k" 'BEGIN { printf "%.2f", b / k }')"
fi
