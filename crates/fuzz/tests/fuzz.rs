//! Fuzz targets of barrage's parsers of untrusted input, each run for a bounded time over its
//! committed corpus (`corpus/<target>/`) by `cargo test`; see `src/lib.rs` for the driver and
//! RELIABILITY.md for longer runs. The CLI's value parsers are fuzzed in the cli crate
//! (`crates/cli/src/values/tests.rs`), where they live.

#[path = "fuzz/h1.rs"]
mod h1;
#[path = "fuzz/h2.rs"]
mod h2;
#[path = "fuzz/results.rs"]
mod results;
#[path = "fuzz/thresholds.rs"]
mod thresholds;
