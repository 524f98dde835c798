//! HTTP/1.1 response framing: the head, and where the body ends (length, chunked, or close).

use std::mem::MaybeUninit;

/// How many headers a response may carry before it is called malformed, unless set.
pub const DEFAULT_MAX_HEADERS: usize = 256;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FramingError {
    #[error("invalid response head: {0}")]
    Head(String),
    #[error("invalid Content-Length")]
    ContentLength,
    #[error("invalid chunk")]
    Chunk,
}

/// Where the body of a response ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFraming {
    Empty,
    Length(u64),
    Chunked,
    /// HTTP/1.0 style: the body runs until the server closes the connection.
    UntilClose,
}

/// The parts of a response head the client acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseHead {
    pub status: u16,
    /// Bytes of the head, including the blank line.
    pub head_len: usize,
    pub body: BodyFraming,
    /// Whether the connection may carry another request after this response.
    pub keep_alive: bool,
}

/// Parses a response head from the start of `buf`. `Ok(None)` means more bytes are needed.
pub fn parse_head(buf: &[u8], expects_body: bool) -> Result<Option<ResponseHead>, FramingError> {
    parse_head_with(buf, expects_body, |_, _| {})
}

/// [`parse_head`], handing every header of a complete, final (not interim 1xx) head to
/// `on_header` as `(name, value)`.
pub fn parse_head_with(
    buf: &[u8],
    expects_body: bool,
    on_header: impl FnMut(&str, &[u8]),
) -> Result<Option<ResponseHead>, FramingError> {
    parse_head_limited(buf, expects_body, DEFAULT_MAX_HEADERS, on_header)
}

/// [`parse_head_with`] allowing at most `max_headers` header fields.
pub fn parse_head_limited(
    buf: &[u8],
    expects_body: bool,
    max_headers: usize,
    on_header: impl FnMut(&str, &[u8]),
) -> Result<Option<ResponseHead>, FramingError> {
    if max_headers <= DEFAULT_MAX_HEADERS {
        // Uninitialised: zeroing 256 slots (8 KiB) per parse was a measurable share of a
        // small response's cost (BENCHMARKS.md, "CPU per request, old vs new").
        let mut headers = [const { MaybeUninit::uninit() }; DEFAULT_MAX_HEADERS];
        parse_into(buf, expects_body, &mut headers[..max_headers], on_header)
    } else {
        // Only when asked for more than the default: a head of that many is rare.
        let mut headers = vec![MaybeUninit::uninit(); max_headers];
        parse_into(buf, expects_body, &mut headers, on_header)
    }
}

fn parse_into<'b>(
    buf: &'b [u8],
    expects_body: bool,
    headers: &mut [MaybeUninit<httparse::Header<'b>>],
    mut on_header: impl FnMut(&str, &[u8]),
) -> Result<Option<ResponseHead>, FramingError> {
    let mut response = httparse::Response::new(&mut []);
    let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut response,
        buf,
        headers,
    );
    let head_len = match parsed {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(FramingError::Head(e.to_string())),
    };
    let status = response
        .code
        .ok_or_else(|| FramingError::Head("no status".into()))?;
    if !(100..=599).contains(&status) {
        return Err(FramingError::Head(format!("status {status} out of range")));
    }
    let mut keep_alive = response.version == Some(1);
    let mut content_length: Option<u64> = None;
    let mut chunked = false;
    let is_final = status >= 200 || status == 101;
    for header in response.headers.iter() {
        if is_final {
            on_header(header.name, header.value);
        }
        if header.name.eq_ignore_ascii_case("content-length") {
            let value = std::str::from_utf8(header.value)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .ok_or(FramingError::ContentLength)?;
            if content_length.is_some_and(|previous| previous != value) {
                return Err(FramingError::ContentLength);
            }
            content_length = Some(value);
        } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = header
                .value
                .rsplit(|&b| b == b',')
                .next()
                .is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        } else if header.name.eq_ignore_ascii_case("connection") {
            for token in header.value.split(|&b| b == b',') {
                let token = token.trim_ascii();
                if token.eq_ignore_ascii_case(b"close") {
                    keep_alive = false;
                } else if token.eq_ignore_ascii_case(b"keep-alive") {
                    keep_alive = true;
                }
            }
        }
    }
    let body = if !expects_body || status < 200 || status == 204 || status == 304 {
        BodyFraming::Empty
    } else if chunked {
        BodyFraming::Chunked
    } else if let Some(length) = content_length {
        BodyFraming::Length(length)
    } else {
        keep_alive = false;
        BodyFraming::UntilClose
    };
    Ok(Some(ResponseHead {
        status,
        head_len,
        body,
        keep_alive,
    }))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum ChunkState {
    #[default]
    Size,
    Data(u64),
    DataEnd,
    Trailers,
    Done,
}

/// Incremental decoder of a chunked body: fed whatever bytes arrived, it reports how many it
/// consumed and hands the body data to a callback.
#[derive(Debug, Default)]
pub struct ChunkedDecoder {
    state: ChunkState,
}

impl ChunkedDecoder {
    pub fn is_done(&self) -> bool {
        self.state == ChunkState::Done
    }

    /// Consumes as much of `buf` as forms whole framing units; returns the bytes consumed.
    /// Unconsumed bytes must be offered again, with more appended. `on_data` gets each run
    /// of body bytes and returns how many it took; taking fewer stops the feed there.
    pub fn feed(
        &mut self,
        buf: &[u8],
        mut on_data: impl FnMut(&[u8]) -> usize,
    ) -> Result<usize, FramingError> {
        let mut pos = 0;
        loop {
            let rest = &buf[pos..];
            match self.state {
                ChunkState::Done => return Ok(pos),
                ChunkState::Size => match httparse::parse_chunk_size(rest) {
                    Ok(httparse::Status::Complete((used, 0))) => {
                        pos += used;
                        self.state = ChunkState::Trailers;
                    }
                    Ok(httparse::Status::Complete((used, size))) => {
                        pos += used;
                        self.state = ChunkState::Data(size);
                    }
                    Ok(httparse::Status::Partial) => return Ok(pos),
                    Err(_) => return Err(FramingError::Chunk),
                },
                ChunkState::Data(remaining) => {
                    if rest.is_empty() {
                        return Ok(pos);
                    }
                    let offered = remaining.min(rest.len() as u64) as usize;
                    let take = on_data(&rest[..offered]).min(offered);
                    pos += take;
                    self.state = match remaining - take as u64 {
                        0 => ChunkState::DataEnd,
                        left => ChunkState::Data(left),
                    };
                    if take < offered {
                        // The consumer stopped (its decode budget ran out): the rest of
                        // this chunk is offered again next time.
                        return Ok(pos);
                    }
                }
                ChunkState::DataEnd => {
                    if rest.len() < 2 {
                        return Ok(pos);
                    }
                    if &rest[..2] != b"\r\n" {
                        return Err(FramingError::Chunk);
                    }
                    pos += 2;
                    self.state = ChunkState::Size;
                }
                ChunkState::Trailers => {
                    let Some(line_end) = rest.windows(2).position(|w| w == b"\r\n") else {
                        return Ok(pos);
                    };
                    pos += line_end + 2;
                    if line_end == 0 {
                        self.state = ChunkState::Done;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_content_length_and_keep_alive() {
        let raw = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
        let head = parse_head(raw, true).unwrap().unwrap();
        assert_eq!(head.status, 200);
        assert_eq!(head.body, BodyFraming::Length(5));
        assert!(head.keep_alive);
        assert_eq!(&raw[head.head_len..], b"hello");
    }

    #[test]
    fn headers_of_final_heads_reach_the_callback() {
        let raw = b"HTTP/1.1 200 OK\r\nX-A: 1\r\nContent-Length: 0\r\n\r\n";
        let mut seen = Vec::new();
        parse_head_with(raw, true, |n, v| seen.push((n.to_string(), v.to_vec())))
            .unwrap()
            .unwrap();
        assert_eq!(seen[0], ("X-A".to_string(), b"1".to_vec()));
        let mut calls = 0;
        parse_head_with(b"HTTP/1.1 100 Continue\r\nX-A: 1\r\n\r\n", true, |_, _| {
            calls += 1
        })
        .unwrap()
        .unwrap();
        assert_eq!(calls, 0, "interim heads are skipped");
    }

    #[test]
    fn partial_head_needs_more() {
        assert_eq!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Le", true), Ok(None));
    }

    #[test]
    fn connection_close_http10_and_missing_length() {
        let head = parse_head(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            true,
        )
        .unwrap()
        .unwrap();
        assert!(!head.keep_alive);
        let head = parse_head(b"HTTP/1.0 200 OK\r\n\r\n", true)
            .unwrap()
            .unwrap();
        assert_eq!(head.body, BodyFraming::UntilClose);
        assert!(!head.keep_alive);
    }

    #[test]
    fn head_request_and_204_have_no_body() {
        let raw = b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n";
        assert_eq!(
            parse_head(raw, false).unwrap().unwrap().body,
            BodyFraming::Empty
        );
        let raw = b"HTTP/1.1 204 No Content\r\n\r\n";
        assert_eq!(
            parse_head(raw, true).unwrap().unwrap().body,
            BodyFraming::Empty
        );
    }

    #[test]
    fn garbage_and_conflicting_lengths_are_malformed() {
        assert!(parse_head(b"SSH-2.0-OpenSSH\r\n\r\n", true).is_err());
        let raw = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n";
        assert_eq!(parse_head(raw, true), Err(FramingError::ContentLength));
        let raw = b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n";
        assert_eq!(parse_head(raw, true), Err(FramingError::ContentLength));
    }

    #[test]
    fn chunked_decoding_byte_by_byte_equals_all_at_once() {
        let wire = b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nX-Trailer: 1\r\n\r\n";
        let mut whole = Vec::new();
        let mut decoder = ChunkedDecoder::default();
        assert_eq!(
            decoder
                .feed(wire, |d| {
                    whole.extend_from_slice(d);
                    d.len()
                })
                .unwrap(),
            wire.len()
        );
        assert!(decoder.is_done());
        assert_eq!(whole, b"hello, world");

        let mut pieces = Vec::new();
        let mut decoder = ChunkedDecoder::default();
        let mut pending: Vec<u8> = Vec::new();
        for &byte in wire.iter() {
            pending.push(byte);
            let used = decoder
                .feed(&pending, |d| {
                    pieces.extend_from_slice(d);
                    d.len()
                })
                .unwrap();
            pending.drain(..used);
        }
        assert!(decoder.is_done());
        assert_eq!(pieces, b"hello, world");
    }

    #[test]
    fn bad_chunk_size_is_an_error() {
        let mut decoder = ChunkedDecoder::default();
        assert_eq!(
            decoder.feed(b"zz\r\n", <[u8]>::len),
            Err(FramingError::Chunk)
        );
    }
}
