#!/usr/bin/env bash
# Throughput of barrage's bundled target server, measured with wrk.
# See bench/README.md. All load goes to 127.0.0.1 only; every run is bounded in time.
set -euo pipefail

# shellcheck source=lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

usage() {
  cat <<EOF
Usage: bench/target.sh [options]

Starts \$BARRAGE target --listen 127.0.0.1:0 --threads 1 pinned to CPU $TARGET_CPU, then runs
taskset -c $GEN_CPU wrk -t1 -cC -dDs against PATH N times and prints each run's req/s and the
median. Compare with nginx on the same setup: bench/compare.sh --generators wrk --conns 50.

Options:
  --runs N        number of wrk runs (default: 3)
  --duration S    seconds per run (default: 10)
  --conns C       wrk connections (default: 50)
  --path PATH     request path (default: /health)
  -h, --help      this help

Environment:
  BARRAGE   barrage binary (default: $REPO_DIR/target/release/barrage)
  TARGET_CPU / GEN_CPU   CPUs for target / wrk (default: 1 / 0)
EOF
}

RUNS=3
DURATION=10
CONNS=50
URL_PATH=/health
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) RUNS="$2"; shift 2 ;;
    --runs=*) RUNS="${1#*=}"; shift ;;
    --duration) DURATION="$2"; shift 2 ;;
    --duration=*) DURATION="${1#*=}"; shift ;;
    --conns) CONNS="$2"; shift 2 ;;
    --conns=*) CONNS="${1#*=}"; shift ;;
    --path) URL_PATH="$2"; shift 2 ;;
    --path=*) URL_PATH="${1#*=}"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) log "unknown argument: $1"; usage >&2; exit 2 ;;
  esac
done
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || die "--runs must be a positive integer"
[[ "$DURATION" =~ ^[1-9][0-9]*$ ]] || die "--duration must be a positive integer (seconds)"
[[ "$CONNS" =~ ^[1-9][0-9]*$ ]] || die "--conns must be a positive integer"
command -v wrk >/dev/null || die "wrk not installed (apt-get install -y wrk)"

trap bench_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
raise_nofile
start_barrage_target
URL="http://$BTARGET_ADDR$URL_PATH"
wait_http "$URL" || log "warning: $URL did not answer a probe request"

declare -a RPS=()
for r in $(seq 1 "$RUNS"); do
  out="$BENCH_TMP/wrk-$r.out"
  rc=0
  taskset -c "$GEN_CPU" timeout --foreground --kill-after=5 "$(( DURATION + 30 ))" \
    wrk -t1 "-c$CONNS" "-d${DURATION}s" --latency "$URL" > "$out" 2>&1 || rc=$?
  rps="$(awk '/^Requests\/sec:/ { print $2; exit }' "$out")"
  non2xx="$(awk '/Non-2xx or 3xx responses:/ { print $NF; exit }' "$out")"
  errs="$(grep -m1 'Socket errors' "$out" || true)"
  if [[ $rc -ne 0 || -z "$rps" ]]; then
    log "run $r: FAILED (wrk exit $rc)"; sed 's/^/  /' "$out" >&2
    continue
  fi
  note=""
  [[ -n "$non2xx" ]] && note="$note, non-2xx: $non2xx"
  [[ -n "$errs" ]] && note="$note, ${errs#"${errs%%[![:space:]]*}"}"
  printf 'run %d: %s req/s%s\n' "$r" "$rps" "$note"
  RPS+=("$rps")
  sleep 1
done
kill -0 "$BTARGET_PID" 2>/dev/null || log "warning: the target exited during the runs"
[[ ${#RPS[@]} -gt 0 ]] || die "no successful run"
printf 'barrage target %s, wrk -t1 -c%s -d%ss, %d/%d runs ok: median %.0f req/s\n' \
  "$URL" "$CONNS" "$DURATION" "${#RPS[@]}" "$RUNS" "$(median "${RPS[@]}")"
