//! libFuzzer target: the results-file reader, behind fixed checksums (`barrage_fuzz::targets::results::read_behind_checksums`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| barrage_fuzz::targets::results::read_behind_checksums(data));
