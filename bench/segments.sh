#!/usr/bin/env bash
# One test as one process vs as N segments, merged: the heartbeat scenario
# (bench/heartbeat-segments.js: open arrivals + a threshold) run once whole, then as N
# `barrage run --segment i/N --start-at T` processes, each in its own network namespace (its
# own "host", a veth pair into a bridge in the target's namespace), merged with `barrage
# merge`. Compares total sessions and requests (Poisson arrivals: the difference is judged
# against the processes' own spread, 3 standard deviations, and reported against 0.5 %),
# achieved vs planned arrivals, per-tag p50/p99, and the threshold verdict.
# Without namespaces (no root, or --loopback) the segments are processes on loopback.
# --runs R repeats the pair R times (interleaved: whole, segments, whole, ...) and reports each
# run and the medians; the per-tag p50/p99 of the merged runs are set against the spread of the
# one-process runs.
# Usage: bench/segments.sh [--segments 4] [--rate 1000] [--duration 20] [--runs 1] [--loopback]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
SEGMENTS=4; RATE=1000; DURATION=20; LOOPBACK=0; RUNS=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --segments) SEGMENTS="$2"; shift 2 ;;
    --rate) RATE="$2"; shift 2 ;;
    --duration) DURATION="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --loopback) LOOPBACK=1; shift ;;
    -h|--help) sed -n 2,14p "$0"; exit 0 ;;
    *) die "unknown argument $1" ;;
  esac
done
[[ -x "$BARRAGE" ]] || die "build first: cargo build --release (or set BARRAGE=)"
raise_nofile
bench_tmp
NS_PREFIX="bseg$$"
TARGET_NS="${NS_PREFIX}t"
NS_MADE=()
TPID=""

cleanup() {
  [[ -n "$TPID" ]] && kill "$TPID" 2>/dev/null || true
  local ns
  for ns in "${NS_MADE[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  [[ -n "$BENCH_TMP" ]] && rm -rf "$BENCH_TMP"
}
trap cleanup EXIT

if [[ "$LOOPBACK" == 0 ]] && { [[ "$(id -u)" != 0 ]] || ! ip netns add "$TARGET_NS" 2>/dev/null; }; then
  log "network namespaces unavailable: segments run as processes on loopback"
  LOOPBACK=1
fi
in_ns() { # ns|"" cmd...
  local ns="$1"; shift
  if [[ -n "$ns" ]]; then ip netns exec "$ns" "$@"; else "$@"; fi
}
if [[ "$LOOPBACK" == 0 ]]; then
  NS_MADE+=("$TARGET_NS")
  ip -n "$TARGET_NS" link set lo up
  ip -n "$TARGET_NS" link add br0 type bridge
  ip -n "$TARGET_NS" addr add 10.214.0.1/24 dev br0
  ip -n "$TARGET_NS" link set br0 up
  for i in $(seq 0 "$SEGMENTS"); do # segment namespaces 0..N-1, plus N for the whole run
    ns="${NS_PREFIX}g$i"
    ip netns add "$ns"; NS_MADE+=("$ns")
    ip link add "${NS_PREFIX}a$i" type veth peer name "${NS_PREFIX}b$i"
    ip link set "${NS_PREFIX}a$i" netns "$ns"
    ip link set "${NS_PREFIX}b$i" netns "$TARGET_NS"
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "10.214.0.$((10 + i))/24" dev "${NS_PREFIX}a$i"
    ip -n "$ns" link set "${NS_PREFIX}a$i" up
    ip -n "$TARGET_NS" link set "${NS_PREFIX}b$i" master br0
    ip -n "$TARGET_NS" link set "${NS_PREFIX}b$i" up
  done
  LISTEN="10.214.0.1:18214"
else
  TARGET_NS=""
  LISTEN="127.0.0.1:0"
fi
gen_ns() { [[ "$LOOPBACK" == 0 ]] && echo "${NS_PREFIX}g$1" || echo ""; }

in_ns "$TARGET_NS" taskset -c "$TARGET_CPU" "$BARRAGE" target --listen "$LISTEN" --threads 1 \
  > "$BENCH_TMP/target.out" 2> "$BENCH_TMP/target.err" &
TPID=$!
for _ in $(seq 1 100); do [[ -s "$BENCH_TMP/target.out" ]] && break; sleep 0.1; done
ADDR="$(awk 'NR==1 { print $NF; exit }' "$BENCH_TMP/target.out")"
ADDR="${ADDR#http://}"; ADDR="${ADDR%/}"
[[ "$ADDR" == *:* ]] || die "target printed no address: $(cat "$BENCH_TMP/target.err")"
log "target on $ADDR ($([[ "$LOOPBACK" == 0 ]] && echo "namespace $TARGET_NS, $SEGMENTS generator namespaces" || echo loopback))"

SCRIPT="$BENCH_DIR/heartbeat-segments.js"
FACTOR="$(awk -v r="$RATE" 'BEGIN { printf "%g", r / 1000 }')"
common=(--target "http://$ADDR" --rate-factor "$FACTOR" --duration-limit "${DURATION}s" --threads 1 --seed 7)

for run in $(seq 1 "$RUNS"); do
  # The whole test, one process.
  in_ns "$(gen_ns "$SEGMENTS")" taskset -c "$GEN_CPU" "$BARRAGE" run "$SCRIPT" "${common[@]}" \
    --results "$BENCH_TMP/whole-$run.brr" > /dev/null 2> "$BENCH_TMP/whole.err" || [[ $? == 99 ]]
  # The same test as N segments, started together.
  START="$(( $(date +%s) + 3 ))"
  pids=()
  for i in $(seq 0 $((SEGMENTS - 1))); do
    in_ns "$(gen_ns "$i")" taskset -c "$GEN_CPU" "$BARRAGE" run "$SCRIPT" "${common[@]}" \
      --segment "$i/$SEGMENTS" --start-at "$START" --results "$BENCH_TMP/seg-$i.brr" \
      > /dev/null 2> "$BENCH_TMP/seg-$i.err" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || [[ $? == 99 ]] || die "a segment failed: $(cat "$BENCH_TMP"/seg-*.err)"; done
  "$BARRAGE" merge "$BENCH_TMP"/seg-*.brr -o "$BENCH_TMP/merged-$run.brr" >&2
  for f in "whole-$run" "merged-$run"; do
    code=0
    "$BARRAGE" report "$BENCH_TMP/$f.brr" --json "$BENCH_TMP/$f.json" 2> /dev/null || code=$?
    echo "$code" > "$BENCH_TMP/$f.code"
  done
  log "run $run of $RUNS done"
done
python3 - "$BENCH_TMP" "$SEGMENTS" "$RUNS" <<'EOF'
import json, math, statistics, sys
tmp, n, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
load = lambda f: json.load(open(f"{tmp}/{f}.json"))
code = lambda f: open(f"{tmp}/{f}.code").read().strip()
W = [load(f"whole-{r}") for r in range(1, runs + 1)]
M = [load(f"merged-{r}") for r in range(1, runs + 1)]
codes = [(code(f"whole-{r}"), code(f"merged-{r}")) for r in range(1, runs + 1)]
med = statistics.median
def pct(stats, q):
    return next((v for p, v in stats["percentiles"] if abs(p - q) < 1e-9), None)
def diff(a, b):
    return (b - a) / a * 100 if a else 0.0
def rate(s):
    return (s["arrivals"]["achieved"] / s["arrivals"]["planned"] - 1) * 100
def trusted(s):
    return s.get("trustworthy", True)
ok = True
print("| run | sessions one / merged | diff | requests one / merged | diff | arrivals vs plan, one | merged | exit codes one / merged | start spread | self-check failed (one; segments) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for r, (w, m) in enumerate(zip(W, M), 1):
    print(f"| {r} | {w['sessions']['started']} / {m['sessions']['started']} | {diff(w['sessions']['started'], m['sessions']['started']):+.2f} % "
          f"| {w['requests']} / {m['requests']} | {diff(w['requests'], m['requests']):+.2f} % "
          f"| {rate(w):+.2f} % | {rate(m):+.2f} % "
          f"| {codes[r - 1][0]} / {codes[r - 1][1]} | {m['segments']['start_spread_ns'] / 1e6:.1f} ms "
          f"| {'no' if trusted(w) else 'YES'}; {m['segments']['untrustworthy'] or 'none'} |")
    ok &= codes[r - 1][0] == codes[r - 1][1] and m["segments"]["count"] == n
planned = W[0]["arrivals"]["planned"]
# Poisson arrivals: one total has sd sqrt(planned); two independent totals differ by sqrt(2 planned).
sd = math.sqrt(planned) / planned * 100
print()
print(f"Medians of {runs}: sessions merged vs one {med(diff(w['sessions']['started'], m['sessions']['started']) for w, m in zip(W, M)):+.2f} %, "
      f"requests {med(diff(w['requests'], m['requests']) for w, m in zip(W, M)):+.2f} %; "
      f"arrivals vs plan: one {med(rate(w) for w in W):+.2f} %, merged {med(rate(m) for m in M):+.2f} % "
      f"(Poisson: one total's sd is {sd:.2f} % of the {planned:.0f} planned, a difference's {sd * math.sqrt(2):.2f} %).")
print()
print("| tag | p50 ms one: median (min–max) | p50 ms merged | p99 ms one | p99 ms merged |")
print("|---|---|---|---|---|")
for t in W[0]["tags"]:
    name = t["tag"]
    def spread(runs_, q):
        v = [pct(next(x for x in s["tags"] if x["tag"] == name)["latency"], q) / 1000 for s in runs_]
        return f"{med(v):.2f} ({min(v):.2f}–{max(v):.2f})"
    print(f"| {name} | {spread(W, 50.0)} | {spread(M, 50.0)} | {spread(W, 99.0)} | {spread(M, 99.0)} |")
sys.exit(0 if ok else 1)
EOF
