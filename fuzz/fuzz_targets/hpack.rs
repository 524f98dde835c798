//! libFuzzer target: HPACK blocks and Huffman code (`barrage_fuzz::targets::h2::hpack_run`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| barrage_fuzz::targets::h2::hpack_run(data));
