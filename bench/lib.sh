# shellcheck shell=bash
# Shared helpers for the bench/ scripts. Source it; do not run it.
#
# Everything here only ever talks to 127.0.0.1. Processes started here are
# remembered by PID and stopped by PID in bench_cleanup (never by name).

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "$BENCH_DIR/.." && pwd)"
: "${BARRAGE:=$REPO_DIR/target/release/barrage}"
: "${NGINX_CONF:=$REPO_DIR/../shared/bench/nginx-reference.conf}"
# The reference conf listens on 127.0.0.1:18080. NGINX_PORT=N runs a copy of it that differs
# only in that port (for when 18080 is taken by something else).
: "${NGINX_PORT:=18080}"
NGINX_ADDR="127.0.0.1:$NGINX_PORT"

# CPU layout of the reference setup (2 cores): target on CPU 1, generator on CPU 0.
: "${TARGET_CPU:=1}"
: "${GEN_CPU:=0}"

BENCH_TMP=""
NGINX_PREFIX=""
NGINX_MASTER=""
BTARGET_PID=""

log() { printf '%s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Load goes to loopback only: refuse any other --url.
require_loopback_url() { # url
  case "$1" in
    http://127.0.0.1:*|http://127.0.0.1/*|http://localhost:*|http://localhost/*) ;;
    *) die "--url must point at http://127.0.0.1 or http://localhost" ;;
  esac
}

bench_tmp() {
  if [[ -z "$BENCH_TMP" ]]; then
    BENCH_TMP="$(mktemp -d /tmp/barrage-bench.XXXXXX)"
  fi
}

# Raise the fd limit as far as allowed (500 connections + nginx need it).
raise_nofile() {
  local hard
  hard="$(ulimit -Hn)"
  [[ "$hard" == unlimited ]] && hard=1048576
  ulimit -n "$hard" 2>/dev/null || true
}

port_in_use() { # host:port
  local port="${1##*:}"
  [[ -n "$(ss -Htln "sport = :$port" 2>/dev/null || true)" ]]
}

# Pin a pid and all of its threads to a CPU list.
pin() { # cpu pid
  taskset -a -pc "$1" "$2" >/dev/null
}

# Start nginx with the reference conf in a temp prefix, pin master+workers to
# TARGET_CPU. Sets NGINX_MASTER and NGINX_PREFIX.
start_nginx() {
  command -v nginx >/dev/null || die "nginx not installed (apt-get install -y nginx-light)"
  [[ -r "$NGINX_CONF" ]] || die "nginx conf not found: $NGINX_CONF"
  if port_in_use "$NGINX_ADDR"; then
    die "$NGINX_ADDR is already in use (another nginx/benchmark running?); set NGINX_PORT=N to use another port"
  fi
  bench_tmp
  NGINX_PREFIX="$BENCH_TMP/nginx"
  mkdir -p "$NGINX_PREFIX"
  if [[ "$NGINX_PORT" != 18080 ]]; then
    grep -q 'listen 127\.0\.0\.1:18080' "$NGINX_CONF" || die "cannot find 'listen 127.0.0.1:18080' in $NGINX_CONF to change the port"
    sed "s/listen 127\.0\.0\.1:18080/listen 127.0.0.1:$NGINX_PORT/" "$NGINX_CONF" > "$BENCH_TMP/nginx-reference-$NGINX_PORT.conf"
    NGINX_CONF="$BENCH_TMP/nginx-reference-$NGINX_PORT.conf"
    log "note: using a copy of the reference conf listening on $NGINX_ADDR"
  fi
  nginx -p "$NGINX_PREFIX/" -c "$NGINX_CONF" || die "nginx failed to start (see $NGINX_PREFIX/error.log)"
  local i
  for i in $(seq 1 50); do
    [[ -s "$NGINX_PREFIX/nginx.pid" ]] && break
    sleep 0.1
  done
  [[ -s "$NGINX_PREFIX/nginx.pid" ]] || die "nginx did not write $NGINX_PREFIX/nginx.pid"
  NGINX_MASTER="$(tr -d '[:space:]' < "$NGINX_PREFIX/nginx.pid")"
  pin "$TARGET_CPU" "$NGINX_MASTER"
  local workers=""
  for i in $(seq 1 50); do
    workers="$(pgrep -P "$NGINX_MASTER" || true)"
    [[ -n "$workers" ]] && break
    sleep 0.1
  done
  [[ -n "$workers" ]] || die "no nginx worker under master $NGINX_MASTER"
  local w
  for w in $workers; do pin "$TARGET_CPU" "$w"; done
  wait_http "http://$NGINX_ADDR/" || die "nginx not answering on $NGINX_ADDR"
  log "nginx reference up on $NGINX_ADDR (master $NGINX_MASTER, workers $(echo $workers)) pinned to CPU $TARGET_CPU"
}

stop_nginx() {
  [[ -n "$NGINX_MASTER" ]] || return 0
  nginx -p "$NGINX_PREFIX/" -c "$NGINX_CONF" -s stop 2>/dev/null || kill "$NGINX_MASTER" 2>/dev/null || true
  local i
  for i in $(seq 1 50); do
    kill -0 "$NGINX_MASTER" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$NGINX_MASTER" 2>/dev/null && kill -9 "$NGINX_MASTER" 2>/dev/null || true
  NGINX_MASTER=""
}

# Start the bundled target: `$BARRAGE target --listen 127.0.0.1:0 --threads 1`
# pinned to TARGET_CPU. Its first stdout line carries the bound address as the
# last whitespace-separated token (e.g. "listening on 127.0.0.1:PORT").
# Sets BTARGET_PID and BTARGET_ADDR.
start_barrage_target() {
  [[ -x "$BARRAGE" ]] || die "barrage binary not found at $BARRAGE (cargo build --release, or set BARRAGE=)"
  bench_tmp
  local out="$BENCH_TMP/target.out"
  : > "$out"
  taskset -c "$TARGET_CPU" "$BARRAGE" target --listen 127.0.0.1:0 --threads 1 \
    > "$out" 2> "$BENCH_TMP/target.err" &
  BTARGET_PID=$!
  local i line=""
  for i in $(seq 1 100); do
    line="$(head -n1 "$out" 2>/dev/null || true)"
    [[ -n "$line" && "$(wc -l < "$out")" -ge 1 ]] && break
    kill -0 "$BTARGET_PID" 2>/dev/null || { cat "$BENCH_TMP/target.err" >&2; die "barrage target exited early"; }
    sleep 0.1
  done
  [[ -n "$line" ]] || die "barrage target printed no address within 10s"
  BTARGET_ADDR="$(awk 'NR==1 { print $NF; exit }' "$out")"
  BTARGET_ADDR="${BTARGET_ADDR#http://}"
  BTARGET_ADDR="${BTARGET_ADDR%/}"
  [[ "$BTARGET_ADDR" == *:* ]] || die "could not parse host:port from target's first line: $line"
  # taskset -c already pins the process; re-pin all threads to be explicit.
  pin "$TARGET_CPU" "$BTARGET_PID" || true
  log "barrage target up on $BTARGET_ADDR (pid $BTARGET_PID) pinned to CPU $TARGET_CPU"
}

stop_barrage_target() {
  [[ -n "$BTARGET_PID" ]] || return 0
  kill "$BTARGET_PID" 2>/dev/null || true
  local i
  for i in $(seq 1 50); do
    kill -0 "$BTARGET_PID" 2>/dev/null || break
    sleep 0.1
  done
  kill -9 "$BTARGET_PID" 2>/dev/null || true
  wait "$BTARGET_PID" 2>/dev/null || true
  BTARGET_PID=""
}

bench_cleanup() {
  stop_barrage_target
  stop_nginx
  [[ -n "$BENCH_TMP" && -d "$BENCH_TMP" && -z "${KEEP_TMP:-}" ]] && rm -rf "$BENCH_TMP"
  return 0
}

# Wait until a URL answers (curl if present, else bash /dev/tcp connect).
wait_http() { # url
  local url="$1" hostport i
  hostport="${url#http://}"; hostport="${hostport%%/*}"
  for i in $(seq 1 50); do
    if command -v curl >/dev/null; then
      curl -fsS -o /dev/null --max-time 1 "$url" 2>/dev/null && return 0
    else
      (exec 3<>"/dev/tcp/${hostport%:*}/${hostport##*:}") 2>/dev/null && return 0
    fi
    sleep 0.1
  done
  return 1
}

# PIDs of the running target (nginx master + workers, or the bundled target), if any.
target_pids() {
  if [[ -n "$NGINX_MASTER" ]]; then echo "$NGINX_MASTER" $(pgrep -P "$NGINX_MASTER" || true); fi
  if [[ -n "$BTARGET_PID" ]]; then echo "$BTARGET_PID"; fi
}

# CPU seconds (user+sys, all threads) used so far by the given PIDs; "NA" if none.
cpu_seconds() { # pid...
  [[ $# -gt 0 ]] || { echo NA; return; }
  local tck total=0 p t
  tck="$(getconf CLK_TCK)"
  for p in "$@"; do
    # fields after "(comm)": state is 3rd overall, utime/stime are 14th/15th overall
    t="$(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null | awk '{ print $12 + $13 }')" || t=0
    total=$(( total + ${t:-0} ))
  done
  awk -v t="$total" -v k="$tck" 'BEGIN { printf "%.2f", t / k }'
}

# Median of the numbers given as arguments ("NA" if none). Even count: mean of the two middle ones.
median() {
  if [[ $# -eq 0 ]]; then echo NA; return; fi
  printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END {
    if (NR % 2) m = a[(NR + 1) / 2]; else m = (a[NR / 2] + a[NR / 2 + 1]) / 2;
    print m }'
}

# Read a GNU time output file written with -f "%e %U %S %M"; prints "wall user sys maxrss_kib".
# (time prefixes "Command exited with non-zero status N" / "Command terminated by signal N"
# lines when relevant; the numbers are always on the last line.)
read_time_file() { # file
  [[ -s "$1" ]] || { echo "NA NA NA NA"; return; }
  tail -n1 "$1" | awk 'NF >= 4 { print $1, $2, $3, $4; ok = 1 } END { if (!ok) print "NA NA NA NA" }'
}

# Prometheus with its remote-write receiver on ADDR, pinned to the target's CPU, with a
# throwaway data directory; sets PROM_PID (stop it by that PID).
start_prometheus() { # host:port
  local addr="$1"
  command -v prometheus >/dev/null || die "install prometheus (apt-get install prometheus)"
  bench_tmp
  port_in_use "$addr" && die "$addr is taken"
  printf 'global:\n  scrape_interval: 1h\n' > "$BENCH_TMP/prometheus.yml"
  taskset -c "$TARGET_CPU" prometheus --config.file="$BENCH_TMP/prometheus.yml" \
    --storage.tsdb.path="$BENCH_TMP/tsdb" --web.listen-address="$addr" \
    --web.enable-remote-write-receiver > "$BENCH_TMP/prometheus.log" 2>&1 &
  PROM_PID=$!
  wait_http "http://$addr/-/ready"
}
