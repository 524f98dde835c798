#!/usr/bin/env bash
# Instructions, not seconds: the CPU cost of `--out prometheus-rw` into a live Prometheus,
# counted by callgrind (valgrind) on identical bounded runs — barrage quick -n N -c 10
# --threads 1 — once plain and once streaming, so a noisy shared machine does not matter.
# Under valgrind a run takes ~50× longer, so it flushes ~50× more often per request than a
# native run: the raw ratio is an upper bound. The script also derives the cost per flush
# (instructions added ÷ batches Prometheus received) and scales it to a native run's
# request rate (one flush per second), which is the figure the ≤ 2 % budget is about.
# With --rate R --seconds S the runs are open-loop instead (quick -z S --rate R -c 10): plain and
# streaming runs then last equally long, so per-second costs other than the export cancel, and
# the per-request figure is that of a run at that low rate (R must stay within what barrage
# manages under valgrind, a few hundred per second).
# Usage: bench/live-export-instructions.sh [--runs N] [--requests N] [--native-seconds S]
#                                          [--rate R --seconds S]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
RUNS=3; REQUESTS=20000; NATIVE_SECONDS=10; RATE=""; SECONDS_RUN=10
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) RUNS="$2"; shift 2 ;;
    --requests) REQUESTS="$2"; shift 2 ;;
    --native-seconds) NATIVE_SECONDS="$2"; shift 2 ;;
    --rate) RATE="$2"; shift 2 ;;
    --seconds) SECONDS_RUN="$2"; shift 2 ;;
    -h|--help) sed -n 2,14p "$0"; exit 0 ;;
    *) die "unknown argument $1" ;;
  esac
done
[[ -x "$BARRAGE" ]] || die "build first: cargo build --release"
command -v valgrind >/dev/null || die "install valgrind (apt-get install valgrind)"
command -v curl >/dev/null || die "install curl"
raise_nofile
PROM_PID=""
cleanup() { [[ -z "$PROM_PID" ]] || kill "$PROM_PID" 2>/dev/null || true; bench_cleanup; }
trap cleanup EXIT
start_barrage_target
bench_tmp
PROM_ADDR="127.0.0.1:19292"
start_prometheus "$PROM_ADDR"
URL="http://$BTARGET_ADDR/health"
QUICK=(quick -n "$REQUESTS" -c 10 --threads 1 --no-results --no-history -o json)
[[ -z "$RATE" ]] || QUICK=(quick -z "${SECONDS_RUN}s" --rate "$RATE" -c 10 --threads 1 --no-results --no-history -o json)

counted() { # out-args... → prints the instructions of the whole process (every thread)
  local vlog="$BENCH_TMP/valgrind.log"
  timeout 900 taskset -c "$GEN_CPU" valgrind --tool=callgrind \
    --callgrind-out-file="$BENCH_TMP/callgrind.out" --log-file="$vlog" \
    "$BARRAGE" "${QUICK[@]}" "$@" "$URL" \
    > "$BENCH_TMP/out.json" 2> "$BENCH_TMP/stderr"
  ! grep -q warning "$BENCH_TMP/stderr" || die "$(cat "$BENCH_TMP/stderr")"
  awk '/Collected :/ { print $NF }' "$vlog"
}
answered() { # requests of the last counted run
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["requests"])' "$BENCH_TMP/out.json"
}

batches() { # testid → samples Prometheus holds for one series of that run (= batches)
  curl -sG "http://$PROM_ADDR/api/v1/query" --data-urlencode \
    "query=count_over_time(k6_http_reqs_total{testid=\"$1\",name=\"GET /health\"}[1h])" |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)'
}

ir_plain=""; ir_rw=""; flushes=""; requests=""
for run in $(seq 1 "$RUNS"); do
  a="$(counted)"; ra="$(answered)"
  b="$(counted --out "prometheus-rw=http://$PROM_ADDR/api/v1/write,testid=ir-$run")"
  n="$(batches "ir-$run")"
  [[ "$n" -gt 0 ]] || die "Prometheus holds no batch of run $run"
  log "run $run: plain $a instructions; prometheus-rw $b instructions, $n batches"
  ir_plain+="$a "; ir_rw+="$b "; flushes+="$n "; requests+="$ra "
done

# The native request rate of the same command (one flush per second at this rate).
rate=0
if [[ -z "$RATE" ]]; then
  js="$BENCH_TMP/native.json"
  taskset -c "$GEN_CPU" "$BARRAGE" quick -z "${NATIVE_SECONDS}s" -c 10 --threads 1 --no-results \
    --no-history -o json "$URL" > "$js"
  rate="$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(round(d["requests"] / d["total_s"]))' "$js")"
fi

python3 - "$rate" "$ir_plain" "$ir_rw" "$flushes" "$requests" "$RATE" "$SECONDS_RUN" <<'EOF'
import statistics, sys
rate = int(sys.argv[1])
plain = [int(x) for x in sys.argv[2].split()]
rw = [int(x) for x in sys.argv[3].split()]
flushes = [int(x) for x in sys.argv[4].split()]
requests = [int(x) for x in sys.argv[5].split()]
open_rate, seconds = sys.argv[6], sys.argv[7]
n = statistics.median(requests)
per_request = statistics.median(a / r for a, r in zip(plain, requests))
per_flush = statistics.median((b - a) / f for a, b, f in zip(plain, rw, flushes))
command = f"quick -z {seconds}s --rate {open_rate} -c 10" if open_rate else f"quick -n {n:.0f} -c 10"
print(f"| barrage {command} --threads 1 | instructions (median) | per request | runs |")
print("|---|---|---|---|")
print(f"| without live export ({n:,.0f} requests) | {statistics.median(plain):,.0f} | {per_request:,.0f} | {len(plain)} |")
print(f"| --out prometheus-rw (under valgrind: {statistics.median(flushes):.0f} batches) | {statistics.median(rw):,.0f} | {statistics.median(rw) / n:,.0f} | {len(rw)} |")
print(f"raw ratio under valgrind: {statistics.median(rw) / statistics.median(plain):.4f}")
print(f"instructions per flush (added / batches): {per_flush:,.0f}")
if open_rate:
    print(f"cost at {open_rate} req/s (this run's own rate and per-request instructions): {per_flush:,.0f} / ({open_rate} x {per_request:,.0f}) = {100 * per_flush / (float(open_rate) * per_request):.3f} % more instructions per request")
else:
    print(f"native rate of the same command: {rate} req/s -> one flush per {rate} requests")
    print(f"cost at the native rate: {per_flush:,.0f} / ({rate} x {per_request:,.0f}) = {100 * per_flush / (rate * per_request):.3f} % more instructions per request")
print(f"per-run instructions: plain [{' '.join(map(str, plain))}] prometheus-rw [{' '.join(map(str, rw))}] batches [{' '.join(map(str, flushes))}] requests [{' '.join(map(str, requests))}]")
EOF
