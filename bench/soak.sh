#!/usr/bin/env bash
# Soak: barrage's memory stays flat over a long run. Starts the bundled target (CPU 1), then
# at once (both on CPU 0, modest rates, for MINUTES each):
#   1. barrage quick -q RATE -c 50 (steady paced rate, per-client connections) against
#      /bytes/1024; -q is per client, as hey's, so the rate is 50 × RATE requests/s
#   2. barrage run bench/soak-sessions.js (open model: 40 short sessions/s, each its own
#      client and connection, with a jsonpath extraction)
# and samples each generator's RSS every 10 s into rss.csv (seconds, quick KiB, run KiB), and
# for `run` the detail that tells heap growth from allocator arenas in run-detail.csv
# (seconds, RSS, anonymous KiB, threads, memory mappings).
# All load goes to 127.0.0.1; every run is bounded by its duration (plus a kill timeout).
set -euo pipefail
# shellcheck source=lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

MINUTES="${MINUTES:-30}"
RATE="${RATE:-10}"
OUT="${OUT:-$BENCH_DIR/results/soak-$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$OUT"
trap bench_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
raise_nofile
start_barrage_target
URL="http://$BTARGET_ADDR"
limit=$(( MINUTES * 60 + 120 ))

taskset -c "$GEN_CPU" timeout --kill-after=10 "$limit" "$BARRAGE" quick -q "$RATE" -c 50 \
  -z "${MINUTES}m" "$URL/bytes/1024" > "$OUT/quick.txt" 2>&1 &
QUICK=$!
taskset -c "$GEN_CPU" timeout --kill-after=10 "$limit" "$BARRAGE" run "$BENCH_DIR/soak-sessions.js" \
  --target "$URL" --duration-limit "${MINUTES}m" --json "$OUT/run.json" > "$OUT/run.txt" 2>&1 &
RUN=$!
log "soak: quick pid $QUICK, run pid $RUN, $MINUTES min, samples in $OUT/rss.csv"

rss() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo NA; }
detail() {
  local anon threads maps
  anon=$(awk '/^Anonymous:/ { print $2 }' "/proc/$1/smaps_rollup" 2>/dev/null || echo NA)
  threads=$(awk '/^Threads:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo NA)
  maps=$(wc -l < "/proc/$1/maps" 2>/dev/null || echo NA)
  echo "$(rss "$1"),$anon,$threads,$maps"
}
# timeout(1) is the parent; the barrage process is its child.
child() { pgrep -P "$1" | head -n1; }
echo "seconds,quick_rss_kib,run_rss_kib" > "$OUT/rss.csv"
echo "seconds,run_rss_kib,run_anon_kib,run_threads,run_maps" > "$OUT/run-detail.csv"
start=$(date +%s)
while kill -0 "$QUICK" 2>/dev/null || kill -0 "$RUN" 2>/dev/null; do
  q=$(child "$QUICK" || true); r=$(child "$RUN" || true)
  now=$(( $(date +%s) - start ))
  echo "$now,$( [[ -n "$q" ]] && rss "$q" || echo NA),$( [[ -n "$r" ]] && rss "$r" || echo NA)" >> "$OUT/rss.csv"
  [[ -n "$r" ]] && echo "$now,$(detail "$r")" >> "$OUT/run-detail.csv"
  sleep 10
done
wait "$QUICK" || log "quick exited $?"
wait "$RUN" || log "run exited $?"
# Flatness: the last sample against the one at 2 minutes (after warm-up), and the max.
awk -F, 'NR>1 && $2!="NA" { q[n]=$2; r[n]=$3; t[n]=$1; n++ }
  END { w=0; for (i=0;i<n;i++) if (t[i]>=120) { w=i; break }
        mq=0; mr=0; for (i=w;i<n;i++) { if (q[i]>mq) mq=q[i]; if (r[i]!="NA" && r[i]>mr) mr=r[i] }
        printf "quick: RSS at %ss %.1f MiB, max after warm-up %.1f MiB, last %.1f MiB\n", t[w], q[w]/1024, mq/1024, q[n-1]/1024
        printf "run:   RSS at %ss %.1f MiB, max after warm-up %.1f MiB\n", t[w], r[w]/1024, mr/1024 }' \
  "$OUT/rss.csv" | tee "$OUT/summary.txt"
