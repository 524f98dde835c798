#!/usr/bin/env bash
# Concurrent keep-alive clients on one machine (issue 14, "a million concurrent clients"):
# N segment processes (`barrage run --segment i/N --start-at T`, ~17,000 clients each, under the
# 20,000-open-files-per-process cap), each spreading its connections over 4 loopback source
# addresses of its own (`--local-addrs`), against nginx with enough workers (reuseport, each
# worker under the same cap). Every client connects and makes one request, then holds its
# connection and sends a heartbeat every PERIOD seconds, BEATS times.
# Samples every 2 s: clients connected (nginx's stub_status: its active connections, less the
# one asking), barrage's summed RSS, nginx's, the kernel's Slab and TCP socket memory
# (/proc/meminfo, /proc/net/sockstat), MemAvailable, and barrage's summed PSS (its binary's
# shared pages split between the processes, not counted once per process) and RssAnon.
# Stops the run cleanly (SIGINT, results kept) when MemAvailable falls under
# --min-available-mib. Then merges the segments and reports clients connected, clients served (first requests answered), heartbeats answered, errors by
# kind, the connect rate, and memory per client.
# Usage: bench/million.sh [--clients 100000] [--per-process 17000] [--ramp 20] [--period 60]
#                         [--beats 2] [--min-available-mib 3072] [--port 18090]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
CLIENTS=100000; PER=17000; RAMP=20; PERIOD=60; BEATS=2; MIN_AVAIL=3072; PORT=18090
while [[ $# -gt 0 ]]; do
  case "$1" in
    --clients) CLIENTS="$2"; shift 2 ;;
    --per-process) PER="$2"; shift 2 ;;
    --ramp) RAMP="$2"; shift 2 ;;
    --period) PERIOD="$2"; shift 2 ;;
    --beats) BEATS="$2"; shift 2 ;;
    --min-available-mib) MIN_AVAIL="$2"; shift 2 ;;
    --port) PORT="$2"; shift 2 ;;
    -h|--help) sed -n 2,16p "$0"; exit 0 ;;
    *) die "unknown argument $1" ;;
  esac
done
[[ -x "$BARRAGE" ]] || die "build first: cargo build --release (or set BARRAGE=)"
NGINX_BIN="$(command -v nginx || echo /usr/sbin/nginx)"
[[ -x "$NGINX_BIN" ]] || die "nginx not installed (apt-get install -y nginx-light)"
port_in_use "127.0.0.1:$PORT" && die "127.0.0.1:$PORT is in use (--port N)"
raise_nofile
bench_tmp
SEGMENTS=$(( (CLIENTS + PER - 1) / PER ))
(( SEGMENTS <= 250 )) || die "at most 250 segment processes (source addresses 127.10.i.1-4)"
NGINX_WORKERS=$(( (CLIENTS + 14999) / 15000 + 1 ))
SEG_PIDS=()
NGINX_PID=""

cleanup() {
  local p
  for p in "${SEG_PIDS[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  sleep 1
  for p in "${SEG_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  [[ -n "$NGINX_PID" ]] && "$NGINX_BIN" -p "$BENCH_TMP/nginx/" -c "$BENCH_TMP/nginx.conf" -s stop 2>/dev/null || true
  [[ -n "$BENCH_TMP" && -z "${KEEP_TMP:-}" ]] && rm -rf "$BENCH_TMP"
}
trap cleanup EXIT

mkdir -p "$BENCH_TMP/nginx"
cat > "$BENCH_TMP/nginx.conf" <<EOF
worker_processes $NGINX_WORKERS;
worker_rlimit_nofile 19500;
pid $BENCH_TMP/nginx/nginx.pid;
error_log $BENCH_TMP/nginx/error.log warn;
events { worker_connections 19000; multi_accept on; }
http {
  access_log off;
  keepalive_timeout 900s;
  keepalive_requests 1000000;
  client_body_temp_path $BENCH_TMP/nginx;
  server {
    listen 127.0.0.1:$PORT reuseport backlog=65535;
    location / { return 200 "ok\n"; }
    location = /nginx_status { stub_status; }
  }
}
EOF
"$NGINX_BIN" -p "$BENCH_TMP/nginx/" -c "$BENCH_TMP/nginx.conf" || die "nginx did not start"
for _ in $(seq 1 50); do [[ -s "$BENCH_TMP/nginx/nginx.pid" ]] && break; sleep 0.1; done
NGINX_PID="$(cat "$BENCH_TMP/nginx/nginx.pid")"
wait_http "http://127.0.0.1:$PORT/" || die "nginx not answering on 127.0.0.1:$PORT"

RATE="$(awk -v c="$CLIENTS" -v r="$RAMP" 'BEGIN { printf "%.3f", c / r }')"
GRACE=$(( PERIOD * BEATS + 60 ))
cat > "$BENCH_TMP/million.js" <<EOF
definition.setTarget("http://127.0.0.1:$PORT");
definition.setArrivalPhases([{ duration: $RAMP, rate: $RATE }]);
definition.setTestOptions({ timeout: 30, gracePeriod: $GRACE, compression: false });
definition.session("hold", function (session) {
  session.get("/", { tag: "connect" });
  session.times($BEATS, function (s) {
    s.wait($PERIOD);
    s.get("/", { tag: "heartbeat" });
  });
});
EOF

meminfo() { awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo; }
connected() { # nginx's active client connections, less the status request's own
  curl -s --max-time 5 "http://127.0.0.1:$PORT/nginx_status" | awk '/^Active connections/ { print $3 - 1; exit }'
}
tcp_mem_pages() { awk '$1 == "TCP:" { for (i = 1; i < NF; i++) if ($i == "mem") print $(i + 1) }' /proc/net/sockstat; }
rss_sum() { # pids...: summed VmRSS, KiB
  local p total=0 kib
  for p in "$@"; do
    kib="$(awk '/^VmRSS/ { print $2 }' "/proc/$p/status" 2>/dev/null || true)"
    total=$(( total + ${kib:-0} ))
  done
  echo "$total"
}
pss_sum() { # pids...: summed Pss (shared pages, e.g. the binary's, split between their users), KiB
  local p total=0 kib
  for p in "$@"; do
    kib="$(awk '/^Pss:/ { print $2 }' "/proc/$p/smaps_rollup" 2>/dev/null || true)"
    total=$(( total + ${kib:-0} ))
  done
  echo "$total"
}
anon_sum() { # pids...: summed RssAnon (the heap, stacks: nothing file-backed), KiB
  local p total=0 kib
  for p in "$@"; do
    kib="$(awk '/^RssAnon/ { print $2 }' "/proc/$p/status" 2>/dev/null || true)"
    total=$(( total + ${kib:-0} ))
  done
  echo "$total"
}
nginx_pids() { echo "$NGINX_PID" $(pgrep -P "$NGINX_PID" || true); }

SLAB0="$(meminfo Slab)"; TCPMEM0="$(tcp_mem_pages)"
NGINX_RSS0="$(rss_sum $(nginx_pids))"
START="$(( $(date +%s) + 3 + SEGMENTS / 10 ))"
log "$CLIENTS clients: $SEGMENTS segment processes, nginx $NGINX_WORKERS workers, arrivals $RATE/s over ${RAMP}s, heartbeat every ${PERIOD}s x $BEATS; start at $START"
for i in $(seq 0 $((SEGMENTS - 1))); do
  src="127.10.$i"
  "$BARRAGE" run "$BENCH_TMP/million.js" --segment "$i/$SEGMENTS" --start-at "$START" --threads 1 \
    --local-addrs "$src.1-$src.4" --results "$BENCH_TMP/seg-$i.brr" \
    > /dev/null 2> "$BENCH_TMP/seg-$i.err" &
  SEG_PIDS+=($!)
done
sleep "$(( START - $(date +%s) > 0 ? START - $(date +%s) : 0 ))"
BASE_RSS="$(rss_sum "${SEG_PIDS[@]}")"
BASE_PSS="$(pss_sum "${SEG_PIDS[@]}")"; BASE_ANON="$(anon_sum "${SEG_PIDS[@]}")"

# Sample until every segment has ended (bounded: ramp + heartbeats + grace + 60 s).
SAMPLES="$BENCH_TMP/samples.tsv"
echo -e "t_s\tconnected\tbarrage_rss_kib\tnginx_rss_kib\tslab_kib\ttcp_mem_pages\tmem_available_mib\tbarrage_pss_kib\tbarrage_anon_kib" > "$SAMPLES"
LIMIT=$(( RAMP + PERIOD * BEATS + GRACE + 60 ))
STOPPED=""
t0="$(date +%s.%N)"
while :; do
  now="$(date +%s.%N)"
  t="$(awk -v a="$now" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')"
  alive=0
  for p in "${SEG_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=$((alive + 1)); done
  (( alive == 0 )) && break
  avail=$(( $(meminfo MemAvailable) / 1024 ))
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$(connected)" \
    "$(rss_sum "${SEG_PIDS[@]}")" "$(rss_sum $(nginx_pids))" "$(meminfo Slab)" \
    "$(tcp_mem_pages)" "$avail" "$(pss_sum "${SEG_PIDS[@]}")" "$(anon_sum "${SEG_PIDS[@]}")" >> "$SAMPLES"
  if [[ -z "$STOPPED" ]] && (( avail < MIN_AVAIL )); then
    STOPPED="MemAvailable ${avail} MiB < ${MIN_AVAIL} MiB at ${t} s"
    log "stopping: $STOPPED"
    for p in "${SEG_PIDS[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  fi
  if [[ -z "$STOPPED" ]] && awk -v t="$t" -v l="$LIMIT" 'BEGIN { exit !(t > l) }'; then
    STOPPED="time limit ${LIMIT} s"
    for p in "${SEG_PIDS[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  fi
  sleep 2
done
for p in "${SEG_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
SEG_PIDS=()
ls "$BENCH_TMP"/seg-*.brr > /dev/null 2>&1 || die "no results: $(cat "$BENCH_TMP"/seg-0.err)"
"$BARRAGE" merge "$BENCH_TMP"/seg-*.brr -o "$BENCH_TMP/merged.brr" >&2
"$BARRAGE" report "$BENCH_TMP/merged.brr" --json "$BENCH_TMP/merged.json" > /dev/null 2>&1 || true
[[ -n "${KEEP_TMP:-}" ]] && log "kept $BENCH_TMP"
cp "$SAMPLES" "${SAMPLES_OUT:-/dev/null}" 2>/dev/null || true

python3 - "$BENCH_TMP" "$CLIENTS" "$SEGMENTS" "$NGINX_WORKERS" "$BASE_RSS" "$SLAB0" "$TCPMEM0" "$NGINX_RSS0" "$STOPPED" "$BASE_PSS" "$BASE_ANON" <<'EOF'
import json, sys
tmp, planned, segments, workers, base_rss, slab0, tcpmem0, nginx0, stopped, base_pss, base_anon = sys.argv[1:]
base_pss, base_anon = int(base_pss), int(base_anon)
planned, segments, base_rss, slab0, tcpmem0, nginx0 = map(int, (planned, segments, base_rss, slab0, tcpmem0, nginx0))
# A sample whose status request timed out (nginx too busy) has an empty field: skipped.
rows = [r for r in (l.split("\t") for l in open(f"{tmp}/samples.tsv").read().split("\n")[1:] if l)
        if len(r) == 9 and all(r)]
s = [dict(t=float(r[0]), conn=int(r[1]), rss=int(r[2]), nginx=int(r[3]), slab=int(r[4]), tcpmem=int(r[5]), avail=int(r[6]), pss=int(r[7]), anon=int(r[8])) for r in rows]
m = json.load(open(f"{tmp}/merged.json"))
tags = {t["tag"]: t for t in m["tags"]}
def pct(stats, q):
    return next((v for p, v in stats["percentiles"] if abs(p - q) < 1e-9), None)
started = m["sessions"]["started"]
peak = max(s, key=lambda x: x["conn"])
# The plateau: samples with at least 99 % of the peak connected; memory at its highest there.
plateau = [x for x in s if x["conn"] >= 0.99 * peak["conn"]]
at = max(plateau, key=lambda x: x["rss"])
first = next((x for x in s if x["conn"] >= 0.01 * peak["conn"]), s[0])
full = next((x for x in s if x["conn"] >= 0.99 * peak["conn"]), peak)
rate = (full["conn"] - first["conn"]) / max(full["t"] - first["t"], 1e-9)
conn = tags.get("connect", {}); beat = tags.get("heartbeat", {})
def errors(t):
    return {k: v for k, v in (t.get("errors_by_kind") or {}).items() if v} if isinstance(t.get("errors_by_kind"), dict) else t.get("errors_by_kind")
print(f"| figure | value |")
print(f"|---|---|")
print(f"| clients planned / sessions started | {planned:,} / {started:,} |")
print(f"| segment processes / nginx workers | {segments} / {workers} |")
print(f"| clients connected at once (peak, nginx stub_status) | {peak['conn']:,} |")
print(f"| clients served at least once (`connect` responses) | {conn.get('responses', 0):,} |")
print(f"| heartbeats answered | {beat.get('responses', 0):,} |")
print(f"| errors (connect / heartbeat) | {conn.get('errors', 0)} {errors(conn) or ''} / {beat.get('errors', 0)} {errors(beat) or ''} |")
print(f"| sessions completed / interrupted | {m['sessions'].get('completed', 0):,} / {m['sessions'].get('interrupted', 0):,} |")
print(f"| connect rate, 1 % → 99 % of peak | {rate:,.0f} clients/s ({full['t'] - first['t']:.0f} s) |")
print(f"| first request p50 / p99 (ms) | {(pct(conn['latency'], 50.0) or 0) / 1000:.1f} / {(pct(conn['latency'], 99.0) or 0) / 1000:.1f} |" if conn else "| first request | none |")
print(f"| barrage RSS, all processes (at start → with every client) | {base_rss / 1024:,.0f} MiB → {at['rss'] / 1024:,.0f} MiB |")
print(f"| **barrage memory per client** (sum RSS / clients) | **{at['rss'] * 1024 / max(at['conn'], 1):,.0f} B** (marginal {(at['rss'] - base_rss) * 1024 / max(at['conn'], 1):,.0f} B) |")
print(f"| barrage PSS per client (the binary's shared pages counted once, not per process) | {at['pss'] * 1024 / max(at['conn'], 1):,.0f} B (marginal {(at['pss'] - base_pss) * 1024 / max(at['conn'], 1):,.0f} B) |")
print(f"| barrage anonymous memory per client (RssAnon: heap and stacks) | {at['anon'] * 1024 / max(at['conn'], 1):,.0f} B (marginal {(at['anon'] - base_anon) * 1024 / max(at['conn'], 1):,.0f} B) |")
print(f"| nginx RSS per client | {(at['nginx'] - nginx0) * 1024 / max(at['conn'], 1):,.0f} B |")
print(f"| kernel Slab (delta) per client | {(at['slab'] - slab0) / 1024:,.0f} MiB, {(at['slab'] - slab0) * 1024 / max(at['conn'], 1):,.0f} B |")
print(f"| TCP socket buffers (sockstat mem delta) | {(at['tcpmem'] - tcpmem0) * 4 / 1024:,.1f} MiB |")
print(f"| MemAvailable, lowest | {min(x['avail'] for x in s):,} MiB |")
print(f"| merged: segments, start spread | {m['segments']['count']}, {m['segments']['start_spread_ns'] / 1e6:.1f} ms |")
print(f"| stopped early | {stopped or 'no'} |")
EOF
