#!/usr/bin/env bash
# HTTP/2 side by side: barrage quick vs h2load over h2c and h2+TLS, against the bundled target
# and nginx, both generators pinned to the same core; and the TLS handshake rate of barrage's
# new-per-request model. See bench/README.md. Load goes to 127.0.0.1 only; every run is bounded.
set -euo pipefail

# shellcheck source=lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

usage() {
  cat <<USAGE
Usage: bench/h2.sh [--runs N] [--duration S] [--targets "barrage nginx"] [--no-handshakes]
                   [--baseline BIN]

Each cell is the median of N runs (default 3) of S seconds (default 5): barrage quick
(--h2, --disable-compression, --threads 1) and h2load, generator on CPU $GEN_CPU, target on
CPU $TARGET_CPU. Two shapes: 50 connections x 1 stream (barrage per-client, h2load -c 50 -m 1)
and 10 connections x 10 streams (barrage -c 100 --connection-model shared --pool-size 10,
h2load -c 10 -m 10). Reports requests/s and generator CPU µs per request ((user+sys)/requests).
Then: TLS handshakes per second with --connection-model new-per-request (with and without
session resumption) against the bundled target. --baseline BIN adds another barrage binary
(e.g. the previous commit's) as a third generator, run interleaved with the others.
USAGE
}

RUNS=3
DURATION=5
TARGETS="barrage nginx"
HANDSHAKES=1
BASELINE=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) RUNS="$2"; shift 2 ;;
    --duration) DURATION="$2"; shift 2 ;;
    --targets) TARGETS="$2"; shift 2 ;;
    --no-handshakes) HANDSHAKES=0; shift ;;
    --baseline) BASELINE="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done

command -v h2load >/dev/null || die "h2load not installed (apt-get install -y nghttp2-client)"
[[ -x "$BARRAGE" ]] || die "barrage binary not found at $BARRAGE (cargo build --release)"
trap bench_cleanup EXIT
raise_nofile
bench_tmp
LIMIT=$(( DURATION + 30 ))

# --- targets ---------------------------------------------------------------------------
H2C_URL="" ; TLS_URL="" ; CACERT=""

start_target() { # barrage|nginx
  case "$1" in
    barrage)
      local out="$BENCH_TMP/tls-target.out"
      taskset -c "$TARGET_CPU" "$BARRAGE" target --listen 127.0.0.1:0 --threads 1 --tls \
        --cert-out "$BENCH_TMP/target.pem" > "$out" 2>/dev/null &
      BTARGET_PID=$!
      local i; for i in $(seq 1 100); do [[ $(wc -l < "$out") -ge 2 ]] && break; sleep 0.1; done
      local tls_addr; tls_addr="$(awk 'NR==1 { print $NF }' "$out")"
      TLS_URL="https://$tls_addr/health"; CACERT="$BENCH_TMP/target.pem"
      # A second, cleartext target (it recognises h2c prior knowledge) for the h2c rows.
      local out2="$BENCH_TMP/h2c-target.out"
      taskset -c "$TARGET_CPU" "$BARRAGE" target --listen 127.0.0.1:0 --threads 1 --h2c > "$out2" 2>/dev/null &
      H2C_PID=$!
      for i in $(seq 1 100); do [[ -s "$out2" ]] && break; sleep 0.1; done
      H2C_URL="http://$(awk 'NR==1 { print $NF }' "$out2")/health"
      ;;
    nginx)
      # A leaf certificate (CA:FALSE: rustls rejects a CA certificate used as the server's own),
      # ECDSA P-256 like the bundled target's.
      cat > "$BENCH_TMP/openssl.cnf" <<CNF
[req]
distinguished_name = dn
x509_extensions = leaf
prompt = no
[dn]
CN = localhost
[leaf]
basicConstraints = critical,CA:FALSE
subjectAltName = DNS:localhost,IP:127.0.0.1
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
CNF
      openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
        -config "$BENCH_TMP/openssl.cnf" \
        -keyout "$BENCH_TMP/nginx.key" -out "$BENCH_TMP/nginx.pem" 2>/dev/null
      sed -e "s#@CERT@#$BENCH_TMP/nginx.pem#" -e "s#@KEY@#$BENCH_TMP/nginx.key#" \
        "$BENCH_DIR/nginx-h2.conf" > "$BENCH_TMP/nginx-h2.conf"
      NGINX_CONF="$BENCH_TMP/nginx-h2.conf" NGINX_ADDR=127.0.0.1:18082 start_nginx_h2
      H2C_URL="http://127.0.0.1:18082/"; TLS_URL="https://127.0.0.1:18443/"; CACERT="$BENCH_TMP/nginx.pem"
      ;;
  esac
}

start_nginx_h2() {
  NGINX_PREFIX="$BENCH_TMP/nginx"; mkdir -p "$NGINX_PREFIX"
  port_in_use 127.0.0.1:18082 && die "127.0.0.1:18082 is in use"
  port_in_use 127.0.0.1:18443 && die "127.0.0.1:18443 is in use"
  nginx -p "$NGINX_PREFIX/" -c "$NGINX_CONF" || die "nginx failed (see $NGINX_PREFIX/error.log)"
  local i; for i in $(seq 1 50); do [[ -s "$NGINX_PREFIX/nginx.pid" ]] && break; sleep 0.1; done
  NGINX_MASTER="$(tr -d '[:space:]' < "$NGINX_PREFIX/nginx.pid")"
  sleep 0.3
  pin "$TARGET_CPU" "$NGINX_MASTER"
  local w; for w in $(pgrep -P "$NGINX_MASTER"); do pin "$TARGET_CPU" "$w"; done
  STOP_NGINX_CONF="$NGINX_CONF"
}

stop_targets() {
  stop_barrage_target
  if [[ -n "${H2C_PID:-}" ]]; then kill "$H2C_PID" 2>/dev/null || true; wait "$H2C_PID" 2>/dev/null || true; H2C_PID=""; fi
  if [[ -n "$NGINX_MASTER" ]]; then
    nginx -p "$NGINX_PREFIX/" -c "$STOP_NGINX_CONF" -s stop 2>/dev/null || kill "$NGINX_MASTER" 2>/dev/null || true
    local i; for i in $(seq 1 50); do kill -0 "$NGINX_MASTER" 2>/dev/null || break; sleep 0.1; done
    NGINX_MASTER=""
  fi
}

# --- one run: prints "requests cpu_seconds" ---------------------------------------------
timed() { # cmd...  (stdout -> $BENCH_TMP/run.out, "user sys" -> $BENCH_TMP/run.time)
  timeout "$LIMIT" taskset -c "$GEN_CPU" /usr/bin/time -f "%U %S" -o "$BENCH_TMP/run.time" "$@" \
    > "$BENCH_TMP/run.out" 2>/dev/null || true
}

run_baseline() { # url shape: the --baseline binary, same flags
  BARRAGE="$BASELINE" run_barrage "$@"
}

run_barrage() { # url shape
  local url="$1" shape="$2" tls=()
  [[ "$url" == https* ]] && tls=(--cacert "$CACERT")
  local shape_args=(-c 50)
  [[ "$shape" == pooled ]] && shape_args=(-c 100 --connection-model shared --pool-size 10)
  timed "$BARRAGE" quick -z "${DURATION}s" "${shape_args[@]}" --h2 --disable-compression \
    --threads 1 -o json "${tls[@]}" "$url"
  local requests; requests="$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["status_codes"].get("200",0))' "$BENCH_TMP/run.out" 2>/dev/null || echo 0)"
  echo "$requests $(awk '{ print $1 + $2 }' "$BENCH_TMP/run.time")"
}

run_h2load() { # url shape
  local url="$1" shape="$2" shape_args=(-c 50 -m 1)
  [[ "$shape" == pooled ]] && shape_args=(-c 10 -m 10)
  timed h2load -t 1 "${shape_args[@]}" -D "$DURATION" "$url"
  local requests; requests="$(awk '/^requests:/ { print $8; exit }' "$BENCH_TMP/run.out")"
  echo "${requests:-0} $(awk '{ print $1 + $2 }' "$BENCH_TMP/run.time")"
}

GENERATORS="barrage h2load"
[[ -n "$BASELINE" ]] && GENERATORS="barrage baseline h2load"

printf '| target | protocol | shape | generator | req/s (median) | CPU µs/request (median) | requests per CPU-second |\n'
printf '|---|---|---|---|---:|---:|---:|\n'
for target in $TARGETS; do
  start_target "$target"
  for proto in h2c h2+tls; do
    url="$H2C_URL"; [[ "$proto" == h2+tls ]] && url="$TLS_URL"
    for shape in per-connection pooled; do
      declare -A rps=() cost=()
      for gen in $GENERATORS; do rps[$gen]=""; cost[$gen]=""; done
      for run in $(seq 1 "$RUNS"); do
        for gen in $GENERATORS; do
          read -r requests cpu < <("run_$gen" "$url" "$shape")
          log "$target $proto $shape $gen run $run: $requests requests, ${cpu}s CPU"
          [[ "$requests" -gt 0 ]] || continue
          rps[$gen]+=" $(awk -v r="$requests" -v d="$DURATION" 'BEGIN { printf "%.0f", r / d }')"
          cost[$gen]+=" $(awk -v r="$requests" -v c="$cpu" 'BEGIN { printf "%.2f", c * 1e6 / r }')"
        done
      done
      for gen in $GENERATORS; do
        # shellcheck disable=SC2086
        m_rps="$(median ${rps[$gen]})"; m_cost="$(median ${cost[$gen]})"
        per_cpu="$(awk -v c="$m_cost" 'BEGIN { if (c != "NA" && c > 0) printf "%.0f", 1e6 / c; else print "NA" }')"
        printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$target" "$proto" "$shape" "$gen" "$m_rps" "$m_cost" "$per_cpu"
      done
    done
  done
  stop_targets
done

# --- TLS handshake rate, new connection per request -------------------------------------
[[ "$HANDSHAKES" == 1 ]] || exit 0
printf '\n| TLS handshakes (bundled target, new-per-request, -c 20) | handshakes/s (median) | generator CPU µs per handshake |\n|---|---:|---:|\n'
start_target barrage
for resumption in on off; do
  extra=(); [[ "$resumption" == off ]] && extra=(--no-tls-resumption)
  rates=""; costs=""
  for run in $(seq 1 "$RUNS"); do
    timed "$BARRAGE" quick -z "${DURATION}s" -c 20 --threads 1 --disable-compression \
      --connection-model new-per-request --cacert "$CACERT" "${extra[@]}" -o json "$TLS_URL"
    opened="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["connections_tls"])' "$BENCH_TMP/run.out" 2>/dev/null || echo 0)"
    cpu="$(awk '{ print $1 + $2 }' "$BENCH_TMP/run.time")"
    log "handshakes resumption=$resumption run $run: $opened in ${DURATION}s, ${cpu}s CPU"
    [[ "$opened" -gt 0 ]] || continue
    rates+=" $(awk -v n="$opened" -v d="$DURATION" 'BEGIN { printf "%.0f", n / d }')"
    costs+=" $(awk -v n="$opened" -v c="$cpu" 'BEGIN { printf "%.1f", c * 1e6 / n }')"
  done
  # shellcheck disable=SC2086
  printf '| resumption %s | %s | %s |\n' "$resumption" "$(median $rates)" "$(median $costs)"
done
stop_targets
