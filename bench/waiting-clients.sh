#!/usr/bin/env bash
# Memory per waiting client: runs an open-model plan in which every client makes one request
# (so it holds its keep-alive connection) and then waits in a think time, and reads barrage's
# RSS while all of them wait. per-client bytes = (RSS with N clients - RSS with 1) / N.
# A second variant has clients wait before connecting (pure session state, no socket).
# A third variant uses the `shared` connection model (a pool of 8 keep-alive connections per
# worker): every client has made its request and waits in its think time holding no socket, so
# it can run at 100k clients despite the sandbox's open-file cap.
# Usage: bench/waiting-clients.sh [--clients N] [--nosocket-clients M] [--shared-clients K] [--arrival-seconds S]
#   defaults: N = 15000 (this sandbox caps open files at 20,000 per process, hard), M = 100000, S = 2.
#   Arrivals spread over S seconds; a faster burst keeps more requests in flight at once, and
#   each in-flight exchange borrows a 16 KB read buffer that stays in the worker's pool after.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
CLIENTS=15000; NOSOCKET=100000; SHARED=100000; ARRIVAL=2
while [[ $# -gt 0 ]]; do
  case "$1" in
    --clients) CLIENTS="$2"; shift 2 ;;
    --nosocket-clients) NOSOCKET="$2"; shift 2 ;;
    --arrival-seconds) ARRIVAL="$2"; shift 2 ;;
    --shared-clients) SHARED="$2"; shift 2 ;;
    -h|--help) sed -n 2,10p "$0"; exit 0 ;;
    *) die "unknown argument $1" ;;
  esac
done
raise_nofile
trap bench_cleanup EXIT
start_barrage_target
bench_tmp

# plan FILE CLIENTS CONNECT_FIRST PORT: arrivals over $ARRIVAL s, a think time that lasts
# past the sample, 1 thread.
plan() {
  python3 - "$@" <<'PY'
import json, sys
path, clients, connect_first = sys.argv[1], int(sys.argv[2]), sys.argv[3] in ("1", "shared")
shared = sys.argv[3] == "shared"
arrival = float(sys.argv[5])
request = {"kind": "request", "method": "GET", "path": "/health", "tag": 0}
wait = {"kind": "wait", "distribution": "fixed", "seconds": arrival + 18.0}
steps = [request, wait, request] if connect_first else [wait, request]
print(json.dumps({
  "format_version": 1, "name": "waiting", "target": {"scheme": "http", "host": "127.0.0.1", "port": int(sys.argv[4])},
  "options": {"request_timeout": 30000, "keep_alive": True, "compression": False, "headers": [], "threads": 1, "seed": 1,
              **({"connections": {"model": "shared", "pool_size": 8}} if shared else {})},
  "workload": {"model": "open_arrivals", "phases": [{"duration": int(arrival * 1000), "rate": clients / arrival, "ramp_to": None}],
               "max_clients": None, "grace_period": 30000},
  "tags": ["GET /health"],
  "sessions": [{"name": "wait", "weight": 1, "steps": steps}],
}), file=open(path, "w"))
PY
}

# rss_while_waiting PLAN: starts the run, samples VmRSS 8 s after arrivals end (all clients
# waiting), stops it.
rss_while_waiting() {
  "$BARRAGE" run "$1" > /dev/null 2>&1 &
  local pid=$! kib
  sleep "$(awk -v a="$ARRIVAL" 'BEGIN { print a + 8 }')"
  kib="$(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status")"
  kill -INT "$pid" 2>/dev/null || true; sleep 1; kill -INT "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  echo "$kib"
}

port="${BTARGET_ADDR##*:}"
echo "| variant | clients | RSS KiB | per waiting client (bytes) |"
echo "|---|---|---|---|"
for variant in socket nosocket shared; do
  case $variant in
    socket) n=$CLIENTS; first=1 ;;
    nosocket) n=$NOSOCKET; first=0 ;;
    shared) n=$SHARED; first=shared ;;
  esac
  plan "$BENCH_TMP/one.json" 1 "$first" "$port" "$ARRIVAL"
  plan "$BENCH_TMP/many.json" "$n" "$first" "$port" "$ARRIVAL"
  base="$(rss_while_waiting "$BENCH_TMP/one.json")"
  many="$(rss_while_waiting "$BENCH_TMP/many.json")"
  per="$(awk -v a="$many" -v b="$base" -v n="$n" 'BEGIN { printf "%.0f", (a - b) * 1024 / n }')"
  echo "| $variant (1 client) | 1 | $base | — |"
  echo "| $variant | $n | $many | $per |"
done
