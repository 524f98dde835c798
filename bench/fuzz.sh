#!/usr/bin/env bash
# Coverage-guided fuzzing of barrage's parsers with cargo-fuzz (libFuzzer, nightly toolchain).
# Not part of CI (.ci/run stays on stable and under 30 min): run by hand, numbers go in
# RELIABILITY.md. Each target runs for FUZZ_SECS seconds (default 150) on one core, seeded
# from the committed corpus crates/fuzz/corpus/<target>/; new inputs go to fuzz/corpus/<target>/
# (not committed), crashes to fuzz/artifacts/<target>/.
#
#   bench/fuzz.sh                 # every target
#   FUZZ_SECS=30 bench/fuzz.sh body url
#
# Needs: rustup toolchain install nightly; cargo install cargo-fuzz.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${FUZZ_SECS:-150}
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(http1_response http2_connection hpack body url duration thresholds results_file)
fi
# The libFuzzer build of every target (release, debug assertions on).
cargo +nightly fuzz build
mkdir -p bench/results
log=bench/results/fuzz-$(date -u +%Y%m%dT%H%M%SZ)-$$.log
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t"
  echo "== $t ($secs s)" | tee -a "$log"
  # -max_len: our stable driver's limit; -rss_limit_mb: a body target must stay bounded.
  cargo +nightly fuzz run "$t" "fuzz/corpus/$t" "crates/fuzz/corpus/$t" -- \
    -max_total_time="$secs" -max_len=65536 -rss_limit_mb=1024 -print_final_stats=1 2>&1 |
    grep -E '^(#[0-9]+[[:space:]]+(INITED|DONE)|stat::|==[0-9]+==|SUMMARY|Done)|panicked|artifact' | tee -a "$log" || true
done
echo "log: $log"
# Coverage reached: replay each target's whole corpus once (libFuzzer's INITED line: cov = edges,
# ft = features).
for t in "${targets[@]}"; do
  echo "== $t corpus replay: $(ls "fuzz/corpus/$t" | wc -l) generated + $(ls "crates/fuzz/corpus/$t" | wc -l) committed entries" | tee -a "$log"
  "fuzz/target/x86_64-unknown-linux-gnu/release/$t" -runs=0 -max_len=65536 \
    "fuzz/corpus/$t" "crates/fuzz/corpus/$t" 2>&1 | grep -E 'INITED' | tee -a "$log" || true
done
