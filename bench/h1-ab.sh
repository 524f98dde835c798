#!/usr/bin/env bash
# A/B of two barrage binaries on the plain HTTP/1.1 path (quick mode, keep-alive GET against the
# nginx reference conf), interleaved runs, generator on CPU $GEN_CPU, nginx on CPU $TARGET_CPU.
# Usage: bench/h1-ab.sh OLD_BINARY NEW_BINARY [RUNS] [SECONDS] [CONNS]
# Prints the median CPU µs per request and req/s of each. Load goes to 127.0.0.1 only.
set -euo pipefail
# shellcheck source=lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

OLD="${1:?old binary}"; NEW="${2:?new binary}"; RUNS="${3:-5}"; SECONDS_PER_RUN="${4:-5}"; CONNS="${5:-50}"
trap bench_cleanup EXIT
raise_nofile
start_nginx
declare -A costs=() rates=()
for run in $(seq 1 "$RUNS"); do
  for which in old new; do
    bin="$OLD"; [[ "$which" == new ]] && bin="$NEW"
    timeout $(( SECONDS_PER_RUN + 30 )) taskset -c "$GEN_CPU" /usr/bin/time -f "%U %S" -o "$BENCH_TMP/t" \
      "$bin" quick -z "${SECONDS_PER_RUN}s" -c "$CONNS" --threads 1 -o json "http://$NGINX_ADDR/" > "$BENCH_TMP/o"
    n="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["status_codes"].get("200",0))' "$BENCH_TMP/o")"
    cpu="$(awk '{ print $1 + $2 }' "$BENCH_TMP/t")"
    log "$which run $run: $n requests, ${cpu}s CPU"
    costs[$which]+=" $(awk -v n="$n" -v c="$cpu" 'BEGIN { printf "%.2f", c * 1e6 / n }')"
    rates[$which]+=" $(awk -v n="$n" -v d="$SECONDS_PER_RUN" 'BEGIN { printf "%.0f", n / d }')"
  done
done
for which in old new; do
  # shellcheck disable=SC2086
  printf '%s: median %s CPU µs/request, %s req/s (runs:%s)\n' "$which" "$(median ${costs[$which]})" "$(median ${rates[$which]})" "${costs[$which]}"
done
