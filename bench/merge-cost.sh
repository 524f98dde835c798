#!/usr/bin/env bash
# The cost of merging a cluster's results (issue 14): FILES results files of one-hour segments
# (each recorded through the real path by the `synth_results` example — RunMetrics per request,
# per-second histograms sealed as the seconds pass — at RATE requests/s over TAGS tags, as one
# pod of a FILES-pod test would record them; DISTINCT different recordings, each written as
# FILES/DISTINCT segments started milliseconds apart), then times `barrage merge` of all of
# them (wall, CPU, peak RSS; median of RUNS) and `barrage report` of the merged file.
# No network load at all.
#
#   bench/merge-cost.sh [--files 100] [--seconds 3600] [--rate 10000] [--tags 2] [--distinct 4] [--runs 3]
#
# Needs: cargo build --release -p barrage -p barrage-results --example synth_results
set -euo pipefail
source "$(dirname "$0")/lib.sh"

files=100 seconds=3600 rate=10000 tags=2 distinct=4 runs=3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --files) files="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --tags) tags="$2"; shift 2 ;;
    --distinct) distinct="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    -h|--help) sed -n 2,11p "$0"; exit 0 ;;
    *) die "unknown option $1" ;;
  esac
done
(( files % distinct == 0 )) || die "--files must be a multiple of --distinct"
SYNTH="$REPO_DIR/target/release/examples/synth_results"
[[ -x "$BARRAGE" ]] || die "no $BARRAGE: cargo build --release first"
[[ -x "$SYNTH" ]] || die "no $SYNTH: cargo build --release -p barrage-results --example synth_results"
bench_tmp
trap 'rm -rf "$BENCH_TMP"' EXIT

per=$(( files / distinct ))
log "== $files segment files: $distinct recordings of $seconds s x $rate req/s, $tags tags, each written $per times"
for ((d = 0; d < distinct; d++)); do
  taskset -c "$GEN_CPU" "$SYNTH" "$seconds" "$rate" "$tags" 2 "$BENCH_TMP/part.brr" \
    "$((d + 1))" "$((d * per))" "$per" "$files" > /dev/null
done
input_mb="$(du -cm "$BENCH_TMP"/part-*.brr | awk 'END { print $1 }')"

walls=(); cpus=(); rss=()
for ((i = 1; i <= runs; i++)); do
  /usr/bin/time -o "$BENCH_TMP/time" -f '%e %U %S %M' taskset -c "$GEN_CPU" "$BARRAGE" merge \
    "$BENCH_TMP"/part-*.brr -o "$BENCH_TMP/merged.brr" > /dev/null || die "merge failed"
  out="$(tail -1 "$BENCH_TMP/time")"
  read -r wall user sys kib <<< "$out"
  walls+=("$wall"); cpus+=("$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')"); rss+=("$kib")
  log "run $i: wall ${wall} s, CPU $(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }') s, peak RSS $((kib / 1024)) MiB"
done
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
/usr/bin/time -o "$BENCH_TMP/time" -f '%e %M' taskset -c "$GEN_CPU" "$BARRAGE" report \
  "$BENCH_TMP/merged.brr" --json "$BENCH_TMP/merged.json" > /dev/null || true
out="$(tail -1 "$BENCH_TMP/time")"
read -r report_wall report_kib <<< "$out"
requests="$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(m["requests"], m["segments"]["count"])' "$BENCH_TMP/merged.json")"
echo "| files | input | merged file | requests (merged) | segments | merge wall (median of $runs) | merge CPU | merge peak RSS | report --json of the merge |"
echo "|---|---|---|---|---|---|---|---|---|"
echo "| $files × ${seconds} s @ $rate req/s, $tags tags | ${input_mb} MB | $(du -m "$BENCH_TMP/merged.brr" | cut -f1) MB | ${requests% *} | ${requests#* } | $(median "${walls[@]}") s | $(median "${cpus[@]}") s | $(( $(median "${rss[@]}") / 1024 )) MiB | ${report_wall} s, $(( report_kib / 1024 )) MiB |"
echo "runs (wall s): ${walls[*]}"
