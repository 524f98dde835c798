//! The fuzz targets: one function per parser of untrusted input, each taking arbitrary bytes
//! and panicking only on a bug. The stable driver (`tests/fuzz.rs`) and the libFuzzer targets
//! (`fuzz/`, nightly, coverage-guided) call the same functions.

pub mod body;
pub mod h1;
pub mod h2;
pub mod results;
pub mod thresholds;
pub mod values;
