#!/usr/bin/env bash
# Side-by-side: barrage's own HTTP/1.1 client vs hyper's client connection, same closed loop,
# one worker thread pinned to CPU 0, nginx reference target pinned to CPU 1.
# Prints CPU µs per request (user+sys / responses) for each, interleaved runs, and the medians.
# Usage: bench/hyper-vs-own.sh [--runs N] [--duration S] [--conns C]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
RUNS=3; DURATION=5; CONNS=50
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) RUNS="$2"; shift 2 ;;
    --duration) DURATION="$2"; shift 2 ;;
    --conns) CONNS="$2"; shift 2 ;;
    -h|--help) sed -n 2,5p "$0"; exit 0 ;;
    *) die "unknown argument $1" ;;
  esac
done
HYPER="$REPO_DIR/target/release/examples/hyper_baseline"
[[ -x "$BARRAGE" ]] || die "build first: cargo build --release"
[[ -x "$HYPER" ]] || die "build first: cargo build --release -p barrage-http --example hyper_baseline"
trap bench_cleanup EXIT
start_nginx
bench_tmp
own=(); hyp=()
for run in $(seq 1 "$RUNS"); do
  tf="$BENCH_TMP/time"
  out="$(/usr/bin/time -f "%e %U %S %M" -o "$tf" taskset -c "$GEN_CPU" "$BARRAGE" quick --threads 1 \
        -z "${DURATION}s" -c "$CONNS" -o json "http://$NGINX_ADDR/")"
  n="$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["responses"])')"
  read -r _ u s _ < <(read_time_file "$tf")
  c="$(awk -v u="$u" -v s="$s" -v n="$n" 'BEGIN { printf "%.2f", (u + s) * 1e6 / n }')"
  own+=("$c"); log "run $run barrage-own: $n responses, $c µs CPU/req"
  n="$(/usr/bin/time -f "%e %U %S %M" -o "$tf" taskset -c "$GEN_CPU" "$HYPER" "$NGINX_ADDR" / "$CONNS" "$DURATION")"
  read -r _ u s _ < <(read_time_file "$tf")
  c="$(awk -v u="$u" -v s="$s" -v n="$n" 'BEGIN { printf "%.2f", (u + s) * 1e6 / n }')"
  hyp+=("$c"); log "run $run hyper-client: $n responses, $c µs CPU/req"
done
echo "| client | CPU µs/req (median of $RUNS) |"
echo "|---|---|"
echo "| barrage own HTTP/1.1 | $(median "${own[@]}") |"
echo "| hyper client::conn::http1 | $(median "${hyp[@]}") |"
