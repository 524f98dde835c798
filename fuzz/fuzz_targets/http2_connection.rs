//! libFuzzer target: the sans-IO HTTP/2 connection fed server bytes (`barrage_fuzz::targets::h2::connection_run`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| barrage_fuzz::targets::h2::connection_run(data));
