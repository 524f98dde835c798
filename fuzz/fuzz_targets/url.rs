//! libFuzzer target: target URLs (`barrage_fuzz::targets::values::url`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| barrage_fuzz::targets::values::url(data));
