#!/usr/bin/env bash
# Side-by-side HTTP load generator comparison (barrage vs wrk / oha / hey / k6).
# See bench/README.md. All load goes to 127.0.0.1 only; every run is bounded in time.
set -euo pipefail

# shellcheck source=lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

usage() {
  cat <<EOF
Usage: bench/compare.sh [options]

Runs each load generator against a local target, generator pinned to CPU $GEN_CPU,
target pinned to CPU $TARGET_CPU, each run under /usr/bin/time, and prints a markdown
table of medians: req/s, CPU µs per completed request ((user+sys)/requests), peak RSS.

Options:
  --target nginx|barrage  target server (default: nginx)
                            nginx:   nginx -p TMP -c $NGINX_CONF  (127.0.0.1:18080)
                            barrage: \$BARRAGE target --listen 127.0.0.1:0 --threads 1
  --generators "LIST"     space/comma separated (default: "barrage wrk oha hey", plus k6 if found)
  --conns "LIST"          connection counts (default: "50 500")
  --runs N                runs per generator and connection count (default: 3)
  --duration S            seconds per run (default: 10)
  --path PATH             request path (default: / for nginx, /health for the barrage target)
  --url URL               use an already-running target at URL (must be 127.0.0.1/localhost);
                          no target is started
  --log FILE              raw per-run rows (default: bench/results/compare-<date>.log)
  -h, --help              this help

Environment:
  BARRAGE     barrage binary (default: $REPO_DIR/target/release/barrage)
  NGINX_CONF  nginx conf (default: ../shared/bench/ (beside the repo) nginx-reference.conf)
  NGINX_PORT  run a copy of the conf on this port instead of 18080 (if 18080 is taken)
  TARGET_CPU / GEN_CPU   CPUs for target / generator (default: 1 / 0)

Runs are interleaved (run 1 of every generator and connection count, then run 2, ...)
so that machine noise spreads evenly across generators.
A generator that is not installed (or a barrage binary that is not built) is skipped
with a note.
EOF
}

TARGET=nginx
GENERATORS=""
CONNS="50 500"
RUNS=3
DURATION=10
URL_PATH=""
URL=""
LOGFILE=""

while [[ $# -gt 0 ]]; do
  case "$1" in
    --target) TARGET="$2"; shift 2 ;;
    --target=*) TARGET="${1#*=}"; shift ;;
    --generators|--gens) GENERATORS="$2"; shift 2 ;;
    --generators=*) GENERATORS="${1#*=}"; shift ;;
    --conns|--connections) CONNS="$2"; shift 2 ;;
    --conns=*) CONNS="${1#*=}"; shift ;;
    --runs) RUNS="$2"; shift 2 ;;
    --runs=*) RUNS="${1#*=}"; shift ;;
    --duration) DURATION="$2"; shift 2 ;;
    --duration=*) DURATION="${1#*=}"; shift ;;
    --path) URL_PATH="$2"; shift 2 ;;
    --path=*) URL_PATH="${1#*=}"; shift ;;
    --url) URL="$2"; shift 2 ;;
    --url=*) URL="${1#*=}"; shift ;;
    --log) LOGFILE="$2"; shift 2 ;;
    --log=*) LOGFILE="${1#*=}"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) log "unknown argument: $1"; usage >&2; exit 2 ;;
  esac
done

[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || die "--runs must be a positive integer"
[[ "$DURATION" =~ ^[1-9][0-9]*$ ]] || die "--duration must be a positive integer (seconds)"
case "$TARGET" in nginx|barrage) ;; *) die "--target must be nginx or barrage" ;; esac
CONNS="${CONNS//,/ }"
for c in $CONNS; do [[ "$c" =~ ^[1-9][0-9]*$ ]] || die "bad connection count: $c"; done
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found (apt-get install -y time)"
command -v taskset >/dev/null || die "taskset not found (util-linux)"

JQ=""
if command -v jq >/dev/null; then JQ=jq
elif ! command -v python3 >/dev/null; then die "need jq or python3 to parse JSON output"
fi

# Find k6 on PATH or in the go bin dir.
K6=""
if command -v k6 >/dev/null; then K6="$(command -v k6)"
elif [[ -x "${GOBIN:-}/k6" ]]; then K6="$GOBIN/k6"
elif [[ -x "${GOPATH:-$HOME/go}/bin/k6" ]]; then K6="${GOPATH:-$HOME/go}/bin/k6"
fi

if [[ -z "$GENERATORS" ]]; then
  GENERATORS="barrage wrk oha hey"
  [[ -n "$K6" ]] && GENERATORS="$GENERATORS k6"
fi
GENERATORS="${GENERATORS//,/ }"

trap bench_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
raise_nofile
bench_tmp

# ---- target ---------------------------------------------------------------
if [[ -n "$URL" ]]; then
  require_loopback_url "$URL"
  TARGET="url"
elif [[ "$TARGET" == nginx ]]; then
  start_nginx
  URL="http://$NGINX_ADDR${URL_PATH:-/}"
else
  start_barrage_target
  URL="http://$BTARGET_ADDR${URL_PATH:-/health}"
fi
wait_http "$URL" || log "warning: $URL did not answer a probe request"

# ---- generators -----------------------------------------------------------
declare -a ACTIVE=() SKIPPED=()
skip() { SKIPPED+=("$1"); log "note: skipping $1"; }
for g in $GENERATORS; do
  case "$g" in
    barrage)
      if [[ -x "$BARRAGE" ]]; then ACTIVE+=("$g")
      else skip "barrage: binary not found at $BARRAGE (build it with cargo build --release, or set BARRAGE=)"; fi ;;
    wrk|hey|oha)
      if command -v "$g" >/dev/null; then ACTIVE+=("$g")
      else skip "$g: not installed"; fi ;;
    k6)
      if [[ -n "$K6" ]]; then ACTIVE+=("$g")
      else skip "k6: not installed (go install go.k6.io/k6@latest)"; fi ;;
    *) skip "$g: unknown generator" ;;
  esac
done
[[ ${#ACTIVE[@]} -gt 0 ]] || die "no generator available"

# oha's JSON flag changed across versions: --output-format json (newer) vs --json (older).
OHA_JSON=()
if [[ " ${ACTIVE[*]} " == *" oha "* ]]; then
  oha_help="$(timeout 5 oha --help 2>&1 || true)"   # no pipe into grep -q: pipefail + SIGPIPE
  if [[ "$oha_help" == *--output-format* ]]; then OHA_JSON=(--output-format json)
  else OHA_JSON=(--json); fi
fi

K6_SCRIPT="$BENCH_TMP/k6-script.js"
cat > "$K6_SCRIPT" <<EOF
import http from 'k6/http';
export default function () { http.get('$URL'); }
EOF

version_of() {
  case "$1" in
    barrage) timeout 5 "$BARRAGE" --version 2>/dev/null | head -n1 || echo "barrage (version unknown)" ;;
    wrk) wrk --version 2>&1 | head -n1 | awk '{print $1, $2}' ;;
    oha) timeout 5 oha --version 2>/dev/null | head -n1 ;;
    hey) echo "hey (debian $(dpkg-query -W -f='${Version}' hey 2>/dev/null || echo '?'))" ;;
    k6) timeout 5 "$K6" version 2>/dev/null | head -n1 ;;
  esac
}

# json_get FILE EXPR-jq EXPR-python
json_get() {
  local file="$1" jqexpr="$2" pyexpr="$3"
  if [[ -n "$JQ" ]]; then
    jq -r "$jqexpr" "$file" 2>/dev/null || echo NA
  else
    python3 - "$file" "$pyexpr" <<'PY' 2>/dev/null || echo NA
import json, sys
d = json.load(open(sys.argv[1]))
print(eval(sys.argv[2], {"d": d}))
PY
  fi
}

# Extract a JSON document from mixed stdout: the whole file if it parses, else from the
# first line starting with '{' to the end.
extract_json() { # in out
  if { [[ -n "$JQ" ]] && jq -e . "$1" >/dev/null 2>&1; } ||
     { [[ -z "$JQ" ]] && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$1" 2>/dev/null; }; then
    cp "$1" "$2"
  else
    awk 'f || /^[[:space:]]*\{/ { f = 1; print }' "$1" > "$2"
  fi
}

# parse_output GEN OUTFILE EXTRAFILE -> "rps requests"
parse_output() {
  local g="$1" out="$2" extra="$3" rps=NA req=NA
  case "$g" in
    wrk)
      rps="$(awk '/^Requests\/sec:/ { print $2; exit }' "$out")"
      req="$(awk '/ requests in / { print $1; exit }' "$out")" ;;
    hey)
      rps="$(awk '/Requests\/sec:/ { print $2; exit }' "$out")"
      req="$(awk '/^[[:space:]]*\[[0-9]+\][[:space:]]+[0-9]+[[:space:]]+responses/ { s += $2; n++ }
                  END { if (n) print s }' "$out")" ;;
    oha)
      extract_json "$out" "$extra"
      rps="$(json_get "$extra" '.summary.requestsPerSec' 'd["summary"]["requestsPerSec"]')"
      req="$(json_get "$extra" '[.statusCodeDistribution[]?] | add // 0' 'sum(d.get("statusCodeDistribution", {}).values())')" ;;
    k6)
      if [[ -s "$extra" ]]; then
        rps="$(json_get "$extra" '.metrics.http_reqs.rate' 'd["metrics"]["http_reqs"]["rate"]')"
        req="$(json_get "$extra" '.metrics.http_reqs.count' 'd["metrics"]["http_reqs"]["count"]')"
      fi
      if [[ -z "$rps" || "$rps" == NA || "$rps" == null ]]; then
        # text summary: "http_reqs......: 123456  12345.6/s"
        local line
        line="$(grep -E '^[[:space:]]*http_reqs' "$out" | head -n1 || true)"
        req="$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+$/) { print $i; exit } }' <<<"$line")"
        rps="$(grep -oE '[0-9.]+/s' <<<"$line" | head -n1 | sed 's,/s,,' || true)"
      fi ;;
    barrage)
      extract_json "$out" "$extra"
      rps="$(json_get "$extra" '.requests_per_second' 'd["requests_per_second"]')"
      req="$(json_get "$extra" '.requests' 'd["requests"]')" ;;
  esac
  [[ -z "$rps" || "$rps" == null ]] && rps=NA
  [[ -z "$req" || "$req" == null ]] && req=NA
  echo "$rps $req"
}

# ---- log ------------------------------------------------------------------
RESULTS_DIR="$BENCH_DIR/results"
mkdir -p "$RESULTS_DIR"
STAMP="$(date +%Y%m%d-%H%M%S)"
[[ -n "$LOGFILE" ]] || LOGFILE="$RESULTS_DIR/compare-$STAMP.log"
mkdir -p "$(dirname "$LOGFILE")"
{
  echo "# barrage bench/compare.sh $(date -Is)"
  echo "# host: $(uname -srm), $(nproc) cpus; target=$TARGET url=$URL; target CPU $TARGET_CPU, generator CPU $GEN_CPU"
  echo "# runs=$RUNS duration=${DURATION}s conns=\"$CONNS\" generators=\"${ACTIVE[*]}\""
  for g in "${ACTIVE[@]}"; do echo "# version $g: $(version_of "$g")"; done
  for n in "${SKIPPED[@]}"; do echo "# skipped $n"; done
  echo "# loadavg at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  printf '# %s\n' "generator conns run exit rps requests wall_s user_s sys_s maxrss_kib cpu_us_per_req target_cpu_s load1"
} > "$LOGFILE"

RAW="$BENCH_TMP/raw.tsv"   # gen conns run ok rps req cpuus rss_kib
: > "$RAW"

# A run may not exceed its duration by more than this (connection setup, teardown, report).
GRACE=$(( 30 + DURATION / 2 ))

run_one() { # gen conns run
  local g="$1" c="$2" r="$3"
  local out="$BENCH_TMP/$g-$c-$r.out" tf="$BENCH_TMP/$g-$c-$r.time" extra="$BENCH_TMP/$g-$c-$r.json"
  local -a cmd
  case "$g" in
    wrk) cmd=(wrk -t1 "-c$c" "-d${DURATION}s" --latency "$URL") ;;
    hey) cmd=(hey -z "${DURATION}s" -c "$c" "$URL") ;;
    oha) cmd=(oha -z "${DURATION}s" -c "$c" --no-tui "${OHA_JSON[@]}" "$URL") ;;
    k6)  cmd=("$K6" run --quiet --no-color --no-usage-report --vus "$c" --duration "${DURATION}s"
               --summary-export "$extra" "$K6_SCRIPT") ;;
    barrage) cmd=("$BARRAGE" quick -z "${DURATION}s" -c "$c" -o json "$URL") ;;
  esac
  rm -f "$extra"
  local rc=0 tpids tcpu0 tcpu1 tcpu load1
  tpids="$(target_pids)"
  # shellcheck disable=SC2086
  tcpu0="$(cpu_seconds $tpids)"
  # time measures the generator (timeout's own CPU is negligible); timeout bounds the run.
  taskset -c "$GEN_CPU" /usr/bin/time -f "%e %U %S %M" -o "$tf" \
    timeout --foreground --kill-after=5 "$(( DURATION + GRACE ))" "${cmd[@]}" > "$out" 2> "$out.err" || rc=$?
  # shellcheck disable=SC2086
  tcpu1="$(cpu_seconds $tpids)"
  load1="$(cut -d' ' -f1 /proc/loadavg)"
  if [[ "$tcpu0" == NA || "$tcpu1" == NA ]]; then tcpu=NA
  else tcpu="$(awk -v a="$tcpu0" -v b="$tcpu1" 'BEGIN { printf "%.2f", b - a }')"; fi

  local rps req wall user sys rss cpuus ok=1
  read -r rps req <<<"$(parse_output "$g" "$out" "$extra")"
  read -r wall user sys rss <<<"$(read_time_file "$tf")"
  if [[ "$req" =~ ^[0-9.]+$ && "$user" != NA ]] && awk -v n="$req" 'BEGIN { exit !(n > 0) }'; then
    cpuus="$(awk -v u="$user" -v s="$sys" -v n="$req" 'BEGIN { printf "%.2f", (u + s) * 1e6 / n }')"
  else
    cpuus=NA
  fi
  if [[ $rc -ne 0 || "$rps" == NA || "$cpuus" == NA ]]; then
    ok=0
    log "  $g c=$c run $r FAILED (exit $rc); output kept in log"
    {
      echo "# --- failed run $g c=$c run $r (exit $rc): stdout tail"
      tail -n 20 "$out" | sed 's/^/#   /'
      echo "# stderr tail"
      tail -n 20 "$out.err" | sed 's/^/#   /'
    } >> "$LOGFILE"
  fi
  echo "$g $c $r $rc $rps $req $wall $user $sys $rss $cpuus $tcpu $load1" >> "$LOGFILE"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$g" "$c" "$r" "$ok" "$rps" "$req" "$cpuus" "$rss" >> "$RAW"
  log "  $g c=$c run $r: $rps req/s, $req requests, cpu ${cpuus} µs/req, user ${user}s sys ${sys}s, rss ${rss} KiB, target cpu ${tcpu}s, load ${load1}"
}

TOTAL=$(( ${#ACTIVE[@]} * $(wc -w <<<"$CONNS") * RUNS ))
log "running $TOTAL runs of ${DURATION}s against $URL (log: $LOGFILE)"
for r in $(seq 1 "$RUNS"); do
  for c in $CONNS; do
    for g in "${ACTIVE[@]}"; do
      run_one "$g" "$c" "$r"
      sleep 1   # let sockets drain between runs
    done
  done
done

# ---- table ----------------------------------------------------------------
fmt() { # value decimals
  [[ "$1" == NA ]] && { echo NA; return; }
  awk -v v="$1" -v d="$2" 'BEGIN { printf "%.*f", d, v }'
}

TABLE="$BENCH_TMP/table.md"
{
  echo
  echo "target: $TARGET ($URL), ${DURATION}s runs, generator on CPU $GEN_CPU, target on CPU $TARGET_CPU, $(date -Is)"
  echo
  echo "| generator | connections | req/s (median) | CPU µs/req (median) | peak RSS MiB (median) | runs |"
  echo "|---|---|---|---|---|---|"
  for g in "${ACTIVE[@]}"; do
    for c in $CONNS; do
      mapfile -t rpsv < <(awk -F'\t' -v g="$g" -v c="$c" '$1 == g && $2 == c && $4 == 1 { print $5 }' "$RAW")
      mapfile -t cpuv < <(awk -F'\t' -v g="$g" -v c="$c" '$1 == g && $2 == c && $4 == 1 { print $7 }' "$RAW")
      mapfile -t rssv < <(awk -F'\t' -v g="$g" -v c="$c" '$1 == g && $2 == c && $4 == 1 && $8 != "NA" { print $8 / 1024 }' "$RAW")
      n_ok=${#rpsv[@]}
      n_all="$(awk -F'\t' -v g="$g" -v c="$c" '$1 == g && $2 == c' "$RAW" | wc -l)"
      printf '| %s | %s | %s | %s | %s | %s |\n' "$g" "$c" \
        "$(fmt "$(median "${rpsv[@]}")" 0)" "$(fmt "$(median "${cpuv[@]}")" 1)" \
        "$(fmt "$(median "${rssv[@]}")" 1)" "$n_ok/$n_all ok"
    done
  done
  if [[ ${#SKIPPED[@]} -gt 0 ]]; then
    echo
    for n in "${SKIPPED[@]}"; do echo "skipped $n"; done
  fi
} > "$TABLE"

cat "$TABLE"
sed 's/^/# /' "$TABLE" >> "$LOGFILE"
echo "# loadavg at end: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$LOGFILE"
log ""
log "raw per-run rows: $LOGFILE"
n_failed="$(awk -F'\t' '$4 == 0' "$RAW" | wc -l)"
if [[ "$n_failed" -gt 0 ]]; then
  log "$n_failed run(s) failed; see the log"
  exit 1
fi
