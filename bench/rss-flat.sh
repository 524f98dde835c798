#!/usr/bin/env bash
# Shows that barrage's memory does not grow with run length: peak RSS of
# `barrage quick` for a short and a long run against the nginx reference.
# See bench/README.md. All load goes to 127.0.0.1 only; every run is bounded in time.
set -euo pipefail

# shellcheck source=lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

usage() {
  cat <<EOF
Usage: bench/rss-flat.sh [options]

Starts nginx with the reference conf (pinned to CPU $TARGET_CPU), then for each duration S runs
taskset -c $GEN_CPU \$BARRAGE quick -z Ss -c C URL under /usr/bin/time and prints the peak RSS
of each run, plus the ratio of the longest to the shortest run's peak RSS (about 1.0 = flat).

Options:
  --durations "LIST"  run lengths in seconds, space/comma separated (default: "10 60")
  --conns C           connections (default: 50)
  --url URL           use an already-running target on 127.0.0.1/localhost (no nginx started)
  -h, --help          this help

Environment:
  BARRAGE     barrage binary (default: $REPO_DIR/target/release/barrage)
  NGINX_CONF  nginx conf (default: ../shared/bench/ (beside the repo) nginx-reference.conf)
  NGINX_PORT  run a copy of the conf on this port instead of 18080 (if 18080 is taken)
EOF
}

DURATIONS="10 60"
CONNS=50
URL=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --durations) DURATIONS="$2"; shift 2 ;;
    --durations=*) DURATIONS="${1#*=}"; shift ;;
    --conns) CONNS="$2"; shift 2 ;;
    --conns=*) CONNS="${1#*=}"; shift ;;
    --url) URL="$2"; shift 2 ;;
    --url=*) URL="${1#*=}"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) log "unknown argument: $1"; usage >&2; exit 2 ;;
  esac
done
DURATIONS="${DURATIONS//,/ }"
for s in $DURATIONS; do [[ "$s" =~ ^[1-9][0-9]*$ ]] || die "bad duration: $s"; done
[[ "$CONNS" =~ ^[1-9][0-9]*$ ]] || die "--conns must be a positive integer"
[[ -x "$BARRAGE" ]] || die "barrage binary not found at $BARRAGE (cargo build --release, or set BARRAGE=)"
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found (apt-get install -y time)"

trap bench_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
raise_nofile
bench_tmp
if [[ -n "$URL" ]]; then
  require_loopback_url "$URL"
else
  start_nginx
  URL="http://$NGINX_ADDR/"
fi

declare -a RSS=()
printf '| run length | peak RSS MiB | wall s | CPU s (user+sys) | exit |\n|---|---|---|---|---|\n'
for s in $DURATIONS; do
  tf="$BENCH_TMP/time-$s"
  rc=0
  taskset -c "$GEN_CPU" /usr/bin/time -f "%e %U %S %M" -o "$tf" \
    timeout --foreground --kill-after=5 "$(( s + 30 + s / 2 ))" \
    "$BARRAGE" quick -z "${s}s" -c "$CONNS" "$URL" > "$BENCH_TMP/out-$s" 2>&1 || rc=$?
  read -r wall user sys rss <<<"$(read_time_file "$tf")"
  if [[ "$rss" == NA ]]; then
    log "run of ${s}s: no time output"; tail -n 20 "$BENCH_TMP/out-$s" >&2
    continue
  fi
  [[ $rc -eq 0 ]] || { log "run of ${s}s: barrage exited $rc; output tail:"; tail -n 20 "$BENCH_TMP/out-$s" >&2; }
  printf '| %ss | %.1f | %s | %.2f | %s |\n' "$s" "$(awk -v k="$rss" 'BEGIN { print k / 1024 }')" \
    "$wall" "$(awk -v u="$user" -v y="$sys" 'BEGIN { print u + y }')" "$rc"
  RSS+=("$rss")
  sleep 1
done
if [[ ${#RSS[@]} -ge 2 ]]; then
  awk -v a="${RSS[0]}" -v b="${RSS[${#RSS[@]}-1]}" \
    'BEGIN { printf "\npeak RSS of the last run / the first run: %.2f (about 1.0 = memory flat in run length)\n", b / a }'
fi
