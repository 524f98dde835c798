//! Fuzz targets of barrage's parsers of untrusted input (`src/targets/`), each run for a
//! bounded time over its committed corpus (`corpus/<target>/`) by `cargo test`; see `src/lib.rs`
//! for the driver and RELIABILITY.md for longer runs and the coverage-guided (libFuzzer) runs
//! of the same targets. The CLI's value parsers are fuzzed in the cli crate
//! (`crates/cli/src/values/tests.rs`), where they live.

#[path = "fuzz/regressions.rs"]
mod regressions;

use barrage_fuzz::fuzz;
use barrage_fuzz::targets::{body, h1, h2, results, thresholds, values};

#[test]
fn fuzz_http1_response_framing() {
    fuzz("http1_response", h1::one_response);
}

#[test]
fn fuzz_http2_connection() {
    fuzz("http2_connection", h2::connection_run);
}

#[test]
fn fuzz_hpack_and_huffman() {
    fuzz("hpack", h2::hpack_run);
}

#[test]
fn fuzz_results_file_reader() {
    fuzz("results_file", results::read_back);
}

#[test]
fn fuzz_results_sections_behind_their_checksums() {
    fuzz("results_file", results::read_behind_checksums);
}

#[test]
fn fuzz_threshold_expressions() {
    fuzz("thresholds", thresholds::expression);
}

#[test]
fn fuzz_body_decoding() {
    fuzz("body", body::one_body);
}

#[test]
fn fuzz_target_urls() {
    fuzz("url", values::url);
}

#[test]
fn fuzz_durations() {
    fuzz("duration", values::duration);
}
