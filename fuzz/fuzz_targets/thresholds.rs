//! libFuzzer target: threshold keys and expressions (`barrage_fuzz::targets::thresholds::expression`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| barrage_fuzz::targets::thresholds::expression(data));
