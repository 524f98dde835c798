//! libFuzzer target: response bodies through BodySink (gzip, deflate, br) (`barrage_fuzz::targets::body::one_body`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| barrage_fuzz::targets::body::one_body(data));
