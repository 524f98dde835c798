//! libFuzzer target: HTTP/1.1 response heads and chunked bodies (`barrage_fuzz::targets::h1::one_response`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| barrage_fuzz::targets::h1::one_response(data));
