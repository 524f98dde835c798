#!/usr/bin/env bash
# One test as one process vs as N segments, merged: the heartbeat scenario
# (bench/heartbeat-segments.js: open arrivals + a threshold) run once whole, then as N
# `barrage run --segment i/N --start-at T` processes, each in its own network namespace (its
# own "host", a veth pair into a bridge in the target's namespace), merged with `barrage
# merge`. Compares total sessions and requests (Poisson arrivals: the difference is judged
# against the processes' own spread, 3 standard deviations, and reported against 0.5 %),
# achieved vs planned arrivals, per-tag p50/p99, and the threshold verdict.
# Without namespaces (no root, or --loopback) the segments are processes on loopback.
# Usage: bench/segments.sh [--segments 4] [--rate 1000] [--duration 20] [--loopback]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
SEGMENTS=4; RATE=1000; DURATION=20; LOOPBACK=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --segments) SEGMENTS="$2"; shift 2 ;;
    --rate) RATE="$2"; shift 2 ;;
    --duration) DURATION="$2"; shift 2 ;;
    --loopback) LOOPBACK=1; shift ;;
    -h|--help) sed -n 2,11p "$0"; exit 0 ;;
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

# The whole test, one process.
in_ns "$(gen_ns "$SEGMENTS")" taskset -c "$GEN_CPU" "$BARRAGE" run "$SCRIPT" "${common[@]}" \
  --results "$BENCH_TMP/whole.brr" > /dev/null 2> "$BENCH_TMP/whole.err" || [[ $? == 99 ]]
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
"$BARRAGE" merge "$BENCH_TMP"/seg-*.brr -o "$BENCH_TMP/merged.brr" >&2
for f in whole merged; do
  code=0
  "$BARRAGE" report "$BENCH_TMP/$f.brr" --json "$BENCH_TMP/$f.json" 2> /dev/null || code=$?
  echo "$code" > "$BENCH_TMP/$f.code"
done
python3 - "$BENCH_TMP" "$SEGMENTS" <<'EOF'
import json, math, sys
tmp, n = sys.argv[1], int(sys.argv[2])
w, m = (json.load(open(f"{tmp}/{f}.json")) for f in ("whole", "merged"))
codes = [open(f"{tmp}/{f}.code").read().strip() for f in ("whole", "merged")]
ok = True
def row(name, a, b, tol=None):
    global ok
    diff = (b - a) / a * 100 if a else 0.0
    verdict = ""
    if tol is not None:
        good = abs(b - a) <= tol
        ok &= good
        verdict = f"within ±{tol:.0f} (3σ)" if good else f"OUTSIDE ±{tol:.0f} (3σ)"
    print(f"| {name} | {a} | {b} | {diff:+.2f} % | {verdict} |")
print(f"| figure | one process | {n} segments merged | difference | |")
print("|---|---|---|---|---|")
sw, sm = w["sessions"]["started"], m["sessions"]["started"]
# Poisson arrivals: each total has sd sqrt(mean); their difference sqrt(2 mean).
row("sessions started", sw, sm, 3 * math.sqrt(2 * sw))
row("requests", w["requests"], m["requests"], 3 * math.sqrt(2 * sw) * w["requests"] / max(sw, 1) * 1.2)
for label, s in (("one process", w), ("merged", m)):
    a = s["arrivals"]
    print(f"| arrivals achieved/planned ({label}) | {a['achieved']} / {a['planned']:.0f} | | {(a['achieved'] / a['planned'] - 1) * 100:+.2f} % | |")
def pct(stats, q):
    return next((v for p, v in stats["percentiles"] if abs(p - q) < 1e-9), None)
for t in w["tags"]:
    tm = next(x for x in m["tags"] if x["tag"] == t["tag"])
    for q in (50.0, 99.0):
        print(f"| {t['tag']} p{q:g} µs | {pct(t['latency'], q)} | {pct(tm['latency'], q)} | | |")
print(f"| threshold exit code | {codes[0]} | {codes[1]} | | {'same' if codes[0] == codes[1] else 'DIFFERENT'} |")
print(f"| merged: segments, start spread | | {m['segments']['count']}, {m['segments']['start_spread_ns'] / 1e6:.1f} ms | | untrustworthy: {m['segments']['untrustworthy'] or 'none'} |")
ok &= codes[0] == codes[1] and m["segments"]["count"] == n
sys.exit(0 if ok else 1)
EOF
