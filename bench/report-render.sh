#!/usr/bin/env bash
# Results files at scale (issue #5): writes a synthetic results file of a long, fast run through
# the real recording path (RunMetrics, per-second histograms sealed as seconds pass, workers
# merged exactly), prints its size and costs, then times `barrage report` rendering the text
# summary, the JSON and the HTML report from it. No network load at all.
#
#   bench/report-render.sh [--seconds 3600] [--rate 50000] [--tags 2] [--runs 5]
#
# Needs: cargo build --release -p barrage -p barrage-results --example synth_results
set -euo pipefail
source "$(dirname "$0")/lib.sh"

seconds=3600 rate=50000 tags=2 runs=5
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --tags) tags="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    *) die "unknown option $1" ;;
  esac
done
SYNTH="$REPO_DIR/target/release/examples/synth_results"
[[ -x "$BARRAGE" ]] || die "no $BARRAGE: cargo build --release first"
[[ -x "$SYNTH" ]] || die "no $SYNTH: cargo build --release -p barrage-results --example synth_results"
bench_tmp
file="$BENCH_TMP/synthetic.brr"

log "== writing a synthetic results file: $seconds s x $rate req/s, $tags tags, 2 workers (pinned to CPU $GEN_CPU)"
taskset -c "$GEN_CPU" "$SYNTH" "$seconds" "$rate" "$tags" 2 "$file"

for what in text json html; do
  times=()
  for ((i = 1; i <= runs; i++)); do
    case "$what" in
      text) args=(report "$file") ;;
      json) args=(report "$file" --json "$BENCH_TMP/out.json") ;;
      html) args=(report "$file" --html "$BENCH_TMP/out.html") ;;
    esac
    out="$( { /usr/bin/time -f '%e %M' taskset -c "$GEN_CPU" "$BARRAGE" "${args[@]}" >/dev/null; } 2>&1 | tail -1)"
    times+=("$out")
    log "  report $what run $i: ${out% *} s, peak RSS ${out#* } KB"
  done
  median="$(printf '%s\n' "${times[@]}" | awk '{print $1}' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')"
  log "report $what: median ${median} s over $runs runs"
done
ls -l "$BENCH_TMP"/out.* >&2
rm -rf "$BENCH_TMP"
