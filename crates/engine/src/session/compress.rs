//! Request-body compression by `Content-Encoding`: gzip and deflate with deflaters a worker
//! reuses, brotli per body (its encoder keeps no reusable state worth pooling).

use super::request::gzip_into;
use barrage_plan::BodyCoding;
use flate2::{Compress, Compression, FlushCompress, Status};
use std::io::Write;

/// Brotli quality: 5 is the usual dynamic-content setting (fast, most of the gain).
const BROTLI_QUALITY: u32 = 5;
const BROTLI_WINDOW: u32 = 22;

/// A worker's compression state.
#[derive(Default)]
pub(crate) struct Compressors {
    /// Raw deflate, for gzip members.
    raw: Option<Compress>,
    /// zlib-wrapped deflate, for `deflate`.
    zlib: Option<Compress>,
}

impl Compressors {
    /// Compresses `input` into `out` (cleared first) with `coding`.
    pub(crate) fn compress_into(&mut self, coding: BodyCoding, input: &[u8], out: &mut Vec<u8>) {
        match coding {
            BodyCoding::Gzip => gzip_into(
                self.raw
                    .get_or_insert_with(|| Compress::new(Compression::default(), false)),
                input,
                out,
            ),
            BodyCoding::Deflate => {
                let zlib = self
                    .zlib
                    .get_or_insert_with(|| Compress::new(Compression::default(), true));
                zlib.reset();
                out.clear();
                loop {
                    out.reserve(input.len() / 2 + 64);
                    let consumed = zlib.total_in() as usize;
                    match zlib.compress_vec(&input[consumed..], out, FlushCompress::Finish) {
                        Ok(Status::StreamEnd) | Err(_) => break,
                        Ok(_) => {}
                    }
                }
            }
            BodyCoding::Br => {
                out.clear();
                let mut writer =
                    brotli::CompressorWriter::new(&mut *out, 4096, BROTLI_QUALITY, BROTLI_WINDOW);
                // Writing into a Vec cannot fail.
                let _ = writer.write_all(input);
                let _ = writer.flush();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn every_coding_round_trips() {
        let input = b"{\"channel\":\"news\",\"position\":1234,\"padding\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}"
            .repeat(20);
        let mut compressors = Compressors::default();
        let mut out = Vec::new();
        for coding in [BodyCoding::Gzip, BodyCoding::Deflate, BodyCoding::Br] {
            // Twice: the reused deflaters must start clean.
            for _ in 0..2 {
                compressors.compress_into(coding, &input, &mut out);
                assert!(out.len() < input.len() / 4, "{coding:?} compresses");
                let mut decoded = Vec::new();
                match coding {
                    BodyCoding::Gzip => flate2::read::GzDecoder::new(&out[..])
                        .read_to_end(&mut decoded)
                        .unwrap(),
                    BodyCoding::Deflate => flate2::read::ZlibDecoder::new(&out[..])
                        .read_to_end(&mut decoded)
                        .unwrap(),
                    BodyCoding::Br => brotli::Decompressor::new(&out[..], 4096)
                        .read_to_end(&mut decoded)
                        .unwrap(),
                };
                assert_eq!(decoded, input, "{coding:?}");
            }
        }
    }
}
