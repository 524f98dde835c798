#!/usr/bin/env bash
# CPU per request of two barrage binaries side by side (quick -n N -c C against the bundled
# target's /health, which answers gzip: the default path decodes every response), generator
# pinned to CPU 0, target to CPU 1, runs interleaved, medians of RUNS.
# Usage: OLD=path NEW=path [N=100000] [C=50] [RUNS=3] bench/cpu-ab.sh
set -euo pipefail
# shellcheck source=lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
: "${N:=100000}" "${C:=50}" "${RUNS:=3}"
[[ -x "${OLD:-}" && -x "${NEW:-}" ]] || die "set OLD= and NEW= to two barrage binaries"
trap bench_cleanup EXIT
BARRAGE="$NEW" start_barrage_target
bench_tmp
for run in $(seq 1 "$RUNS"); do
  for which in OLD NEW; do
    bin="${!which}"
    taskset -c "$GEN_CPU" /usr/bin/time -f "%U %S %M" -o "$BENCH_TMP/t" \
      timeout 120 "$bin" quick -n "$N" -c "$C" "http://$BTARGET_ADDR/health" > /dev/null 2>&1
    read -r user sys rss < "$BENCH_TMP/t"
    awk -v w="$which" -v r="$run" -v u="$user" -v s="$sys" -v n="$N" -v m="$rss" \
      'BEGIN { printf "%s run %d: %.2f us CPU/request, peak RSS %.1f MiB\n", w, r, (u + s) * 1e6 / n, m / 1024 }'
  done
done
