#!/usr/bin/env bash
# A/B of two barrage binaries on the HTTP/2 path (h2c and h2 over TLS against the bundled
# target; 50 connections x 1 stream, and 100 clients on a shared pool of 10 connections):
# a fixed number of requests per run, interleaved, generator on CPU $GEN_CPU, target on CPU
# $TARGET_CPU. Reports the median of user-space instructions per request (perf stat; steady
# when the machine is shared, unlike time) and CPU µs per request (user+sys / requests).
# Usage: bench/h2-ab.sh OLD_BINARY NEW_BINARY [RUNS] [REQUESTS]. Load goes to 127.0.0.1 only.
set -euo pipefail
# shellcheck source=lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

OLD="${1:?old binary}"; NEW="${2:?new binary}"; RUNS="${3:-3}"; REQUESTS="${4:-100000}"
command -v perf >/dev/null || die "perf not installed (apt-get install -y linux-perf)"
trap bench_cleanup EXIT
raise_nofile
bench_tmp

start() { # out-file args... -> address
  taskset -c "$TARGET_CPU" "$NEW" target --listen 127.0.0.1:0 --threads 1 "${@:2}" > "$1" 2>/dev/null &
  local i; for i in $(seq 1 100); do [[ -s "$1" ]] && grep -q listening "$1" && break; sleep 0.1; done
}
start "$BENCH_TMP/h2c.out" --h2c; H2C_PID=$!
start "$BENCH_TMP/tls.out" --tls --cert-out "$BENCH_TMP/cert.pem"; TLS_PID=$!
sleep 0.5
H2C="http://$(awk 'NR==1 { print $NF }' "$BENCH_TMP/h2c.out")/health"
TLS="https://$(awk 'NR==1 { print $NF }' "$BENCH_TMP/tls.out")/health"
cleanup_targets() { kill "$H2C_PID" "$TLS_PID" 2>/dev/null || true; bench_cleanup; }
trap cleanup_targets EXIT

printf '| protocol | shape | binary | instructions/request (median) | CPU µs/request (median) | runs (CPU µs/request) |\n|---|---|---|---:|---:|---|\n'
for proto in h2c h2+tls; do
  url="$H2C"; extra=(); [[ "$proto" == h2+tls ]] && { url="$TLS"; extra=(--cacert "$BENCH_TMP/cert.pem"); }
  for shape in per-connection pooled; do
    shape_args=(-c 50); [[ "$shape" == pooled ]] && shape_args=(-c 100 --connection-model shared --pool-size 10)
    declare -A ins=() cpu=()
    for run in $(seq 1 "$RUNS"); do
      for which in old new; do
        bin="$OLD"; [[ "$which" == new ]] && bin="$NEW"
        timeout 300 taskset -c "$GEN_CPU" perf stat -x, -e instructions:u,task-clock -o "$BENCH_TMP/perf" \
          "$bin" quick -n "$REQUESTS" "${shape_args[@]}" --h2 --disable-compression --threads 1 \
          -o json "${extra[@]}" "$url" > "$BENCH_TMP/o" 2>/dev/null || true
        n="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["status_codes"].get("200",0))' "$BENCH_TMP/o" 2>/dev/null || echo 0)"
        i="$(awk -F, '/instructions/ { print $1 }' "$BENCH_TMP/perf")"
        ms="$(awk -F, '/task-clock/ { print $1 }' "$BENCH_TMP/perf")"
        log "$proto $shape $which run $run: $n requests, $i instructions, $ms ms"
        [[ "$n" -gt 0 ]] || continue
        # A virtual machine without a PMU reports "<not supported>": then only CPU time counts.
        [[ "$i" =~ ^[0-9]+$ ]] && ins[$which]+=" $(awk -v n="$n" -v i="$i" 'BEGIN { printf "%.0f", i / n }')"
        cpu[$which]+=" $(awk -v n="$n" -v c="$ms" 'BEGIN { printf "%.2f", c * 1e3 / n }')"
      done
    done
    for which in old new; do
      # shellcheck disable=SC2086
      printf '| %s | %s | %s | %s | %s | %s |\n' "$proto" "$shape" "$which" "$(median ${ins[$which]:-})" "$(median ${cpu[$which]})" "${cpu[$which]}"
    done
    unset ins cpu
  done
done
