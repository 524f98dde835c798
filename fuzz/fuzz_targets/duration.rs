//! libFuzzer target: durations (flags, scripts, plans) (`barrage_fuzz::targets::values::duration`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| barrage_fuzz::targets::values::duration(data));
