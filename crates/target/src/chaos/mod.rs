//! Chaos mode: endpoints under `/chaos/` where the target misbehaves on purpose, so load
//! generators (barrage's own tests, or any client) can be tried against a hostile server.
//!
//! | path                      | HTTP/1.1 (cleartext)                                   | HTTP/2 |
//! |---------------------------|--------------------------------------------------------|--------|
//! | `/chaos/reset`            | TCP reset before any response byte                     | same (connection) |
//! | `/chaos/reset-mid`        | head + 1 KB of a 100 KB body, then TCP reset            | RST_STREAM after 1 KB |
//! | `/chaos/close`            | close (FIN) without a response                         | same (connection) |
//! | `/chaos/stall`            | read the request, never answer (`secs`, default 600)   | same |
//! | `/chaos/stall-body`       | head + 1 KB, then nothing (`secs`)                     | same |
//! | `/chaos/slow-body`        | `size` bytes (default 100 KB) at `rate` B/s (default 1000) | same |
//! | `/chaos/endless`          | body until close, no length (`secs` cap)               | endless DATA |
//! | `/chaos/endless-chunked`  | endless chunked body                                   | endless DATA |
//! | `/chaos/endless-gzip`     | endless chunked body, `Content-Encoding: gzip`          | endless gzip DATA |
//! | `/chaos/huge-length`      | `Content-Length: 10^18`, streams until close           | same length header |
//! | `/chaos/lying-length`     | `Content-Length: 100000`, 1 KB, then close             | 1 KB then END_STREAM |
//! | `/chaos/many-headers`     | `n` headers (default 300)                              | same |
//! | `/chaos/huge-header`      | one header of `size` bytes (default 1 MiB)             | same |
//! | `/chaos/malformed-status` | `HTTP/1.1 abc OK`                                      | — (501) |
//! | `/chaos/bad-chunk`        | a chunk size of `zz`                                    | — (501) |
//! | `/chaos/gzip-bomb`        | gzip body decoding to `size` bytes (default 1 GiB)     | same |
//! | `/chaos/bad-gzip`         | 1 MB labelled gzip that does not decode                | same |
//! | `/chaos/garbage`          | random bytes instead of a response                     | garbage instead of frames |
//! | `/chaos/goaway`           | — (501)                                                 | GOAWAY, then close |
//!
//! Cleartext HTTP/1.1 connections whose first request is for `/chaos/` are served by a
//! hand-written HTTP/1.1 responder (`raw.rs`), so the framing itself can be broken; HTTP/2
//! (and HTTP/1.1 over TLS) go through hyper (`served.rs`), with connection-level misdeeds
//! (GOAWAY, garbage, resets) written by a wrapper around the connection's socket.
//! Every endless or stalled response stops after `secs` (default 600) at the latest.

pub(crate) mod raw;
pub(crate) mod served;

use std::io::Write;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

/// The path prefix of chaos endpoints.
pub(crate) const PREFIX: &str = "/chaos/";
/// The longest any chaos response lasts.
const MAX_SECS: u64 = 600;

/// One misbehaviour, parsed from the path and query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Case {
    Reset,
    ResetMid,
    Close,
    Stall,
    StallBody,
    SlowBody { size: u64, rate: u64 },
    Endless,
    EndlessChunked,
    EndlessGzip,
    HugeLength,
    LyingLength,
    ManyHeaders { n: usize },
    HugeHeader { size: usize },
    MalformedStatus,
    BadChunk,
    GzipBomb { size: u64 },
    BadGzip,
    Garbage,
    GoAway,
}

/// A case and how long it may last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Chaos {
    pub case: Case,
    pub limit: Duration,
}

fn number(query: Option<&str>, name: &str, default: u64, max: u64) -> u64 {
    crate::routes::query_value(query, name)
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(default)
        .min(max)
}

impl Chaos {
    /// The chaos case `path` names (`None`: not a chaos path, or an unknown case).
    pub(crate) fn parse(path: &str, query: Option<&str>) -> Option<Chaos> {
        let name = path.strip_prefix(PREFIX)?;
        let case = match name {
            "reset" => Case::Reset,
            "reset-mid" => Case::ResetMid,
            "close" => Case::Close,
            "stall" => Case::Stall,
            "stall-body" => Case::StallBody,
            "slow-body" => Case::SlowBody {
                size: number(query, "size", 100_000, 1 << 30),
                rate: number(query, "rate", 1000, 1 << 30).max(1),
            },
            "endless" => Case::Endless,
            "endless-chunked" => Case::EndlessChunked,
            "endless-gzip" => Case::EndlessGzip,
            "huge-length" => Case::HugeLength,
            "lying-length" => Case::LyingLength,
            "many-headers" => Case::ManyHeaders {
                n: number(query, "n", 300, 100_000) as usize,
            },
            "huge-header" => Case::HugeHeader {
                size: number(query, "size", 1 << 20, 64 << 20) as usize,
            },
            "malformed-status" => Case::MalformedStatus,
            "bad-chunk" => Case::BadChunk,
            "gzip-bomb" => Case::GzipBomb {
                size: number(query, "size", 1 << 30, 4 << 30),
            },
            "bad-gzip" => Case::BadGzip,
            "garbage" => Case::Garbage,
            "goaway" => Case::GoAway,
            _ => return None,
        };
        let limit = Duration::from_secs(number(query, "secs", MAX_SECS, MAX_SECS));
        Some(Chaos { case, limit })
    }
}

/// A block of text for plain endless bodies.
pub(crate) static FILLER: LazyLock<Vec<u8>> =
    LazyLock::new(|| b"chaos ".iter().copied().cycle().take(16 * 1024).collect());

/// An endless gzip stream, in pieces: the gzip header, then one repeated deflate block that
/// never ends the stream (a sync-flushed, non-final block of text).
pub(crate) struct EndlessGzip;

impl EndlessGzip {
    /// The first piece: a gzip header and a first block.
    pub(crate) fn first() -> &'static [u8] {
        &ENDLESS_GZIP.0
    }

    /// Every later piece (a stored-free, sync-flushed block; valid after any earlier one).
    pub(crate) fn next() -> &'static [u8] {
        &ENDLESS_GZIP.1
    }
}

static ENDLESS_GZIP: LazyLock<(Vec<u8>, Vec<u8>)> = LazyLock::new(|| {
    // Raw deflate blocks, each sync-flushed (ends on a byte boundary, not final): any number
    // of them in a row is a valid, never-ending deflate stream.
    let mut deflate = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
    deflate.write_all(&FILLER).expect("in memory");
    deflate.flush().expect("in memory");
    let block = std::mem::take(deflate.get_mut());
    let mut first = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    first.extend_from_slice(&block);
    // Later blocks must not refer back beyond their own data: a fresh encoder's block does
    // not (it only references its own bytes).
    (first, block)
});

/// A gzip body that decodes to `size` zero bytes (about a thousandth of it on the wire).
/// The last one made is kept: a load test asks for the same bomb again and again.
pub(crate) fn gzip_bomb(size: u64) -> Arc<Vec<u8>> {
    static LAST: Mutex<Option<(u64, Arc<Vec<u8>>)>> = Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    match &*last {
        Some((made, bomb)) if *made == size => Arc::clone(bomb),
        _ => {
            let bomb = Arc::new(make_bomb(size));
            *last = Some((size, Arc::clone(&bomb)));
            bomb
        }
    }
}

fn make_bomb(size: u64) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1 << 20];
    let mut left = size;
    while left > 0 {
        let n = left.min(zeros.len() as u64) as usize;
        gz.write_all(&zeros[..n]).expect("in memory");
        left -= n as u64;
    }
    gz.finish().expect("in memory")
}

/// 1 MB that claims to be gzip and is not.
pub(crate) static BAD_GZIP: LazyLock<Vec<u8>> = LazyLock::new(|| vec![b'z'; 1_000_000]);

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn cases_parse_with_their_parameters_and_a_capped_duration() {
        let c = Chaos::parse("/chaos/slow-body", Some("size=10&rate=5&secs=9999")).unwrap();
        assert_eq!(c.case, Case::SlowBody { size: 10, rate: 5 });
        assert_eq!(c.limit, Duration::from_secs(MAX_SECS));
        assert_eq!(Chaos::parse("/chaos/nope", None), None);
        assert_eq!(Chaos::parse("/other", None), None);
    }

    #[test]
    fn the_endless_gzip_stream_decodes_and_never_ends() {
        let mut wire = EndlessGzip::first().to_vec();
        for _ in 0..20 {
            wire.extend_from_slice(EndlessGzip::next());
        }
        let mut decoded = Vec::new();
        let mut reader = flate2::read::GzDecoder::new(&wire[..]);
        let err = reader.read_to_end(&mut decoded);
        assert!(err.is_err(), "truncated: the stream has no end");
        assert!(decoded.len() >= 20 * FILLER.len(), "{}", decoded.len());
        assert!(decoded.starts_with(b"chaos chaos"));
    }

    #[test]
    fn a_bomb_is_small_on_the_wire() {
        let bomb = make_bomb(64 << 20);
        assert!(bomb.len() < 100_000, "{}", bomb.len());
    }
}
