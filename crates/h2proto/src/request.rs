//! A prepared HTTP/1.1 request turned into an HTTP/2 stream's HEADERS: the head is parsed
//! back (httparse), `Host` becomes `:authority`, headers HTTP/2 forbids are dropped, names are
//! lower-cased, and the block is HPACK-encoded straight into the connection's write buffer.

use crate::frame;
use crate::hpack::Indexing;
use crate::state::{Connection, KeepBody};
use barrage_metrics::ErrorKind;

/// Headers of the request's head that HTTP/2 forbids (RFC 9113 §8.2.2) or carries
/// otherwise (`Host` becomes `:authority`).
fn is_connection_specific(name: &[u8]) -> bool {
    [
        &b"host"[..],
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"transfer-encoding",
        b"upgrade",
        b"te",
    ]
    .iter()
    .any(|n| name.eq_ignore_ascii_case(n))
}

/// A new stream carrying `request`'s head.
#[derive(Debug, Clone, Copy)]
pub struct Started {
    pub slot: usize,
    pub id: u32,
    /// Where the body starts in the request bytes.
    pub body_start: usize,
    /// The head's HEADERS (and CONTINUATION) frames, frame headers included.
    pub wire_bytes: u64,
}

impl Connection {
    /// Parses `request` (an encoded HTTP/1.1 request), opens a stream and queues its
    /// HEADERS (with END_STREAM when there is no body); the caller checked
    /// [`Connection::can_open`]. A malformed request opens no stream.
    pub fn start_stream(
        &mut self,
        request: &[u8],
        keep_fields: bool,
        keep_body: KeepBody,
    ) -> Result<Started, ErrorKind> {
        start_stream(self, request, keep_fields, keep_body)
    }
}

fn start_stream(
    conn: &mut Connection,
    request: &[u8],
    keep_fields: bool,
    keep_body: KeepBody,
) -> Result<Started, ErrorKind> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut parsed = httparse::Request::new(&mut headers);
    let head_len = match parsed.parse(request) {
        Ok(httparse::Status::Complete(len)) => len,
        _ => return Err(ErrorKind::Malformed),
    };
    let method = parsed.method.ok_or(ErrorKind::Malformed)?;
    let path = parsed.path.ok_or(ErrorKind::Malformed)?;
    let authority = parsed
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("host"))
        .map(|h| h.value)
        .filter(|v| !v.is_empty())
        .ok_or(ErrorKind::Malformed)?;
    let end_stream = head_len == request.len();

    let (slot, id) = conn.open_stream(keep_fields, keep_body);
    let scheme: &[u8] = if conn.is_https() { b"https" } else { b"http" };
    let max_frame = conn.peer_max_frame;
    let mut name = std::mem::take(&mut conn.scratch);
    let (out, encoder) = (&mut conn.write_buf, &mut conn.encoder);
    let mut flags = frame::FLAG_END_HEADERS;
    if end_stream {
        flags |= frame::FLAG_END_STREAM;
    }
    let at = out.len();
    frame::write_header(out, 0, frame::HEADERS, flags, id);
    encoder.begin_block(out);
    encoder.encode(b":method", method.as_bytes(), Indexing::Index, out);
    encoder.encode(b":scheme", scheme, Indexing::Index, out);
    encoder.encode(b":authority", authority, Indexing::Index, out);
    encoder.encode(b":path", path.as_bytes(), Indexing::Index, out);
    for header in parsed.headers.iter() {
        if is_connection_specific(header.name.as_bytes()) {
            continue;
        }
        name.clear();
        name.extend(header.name.bytes().map(|b| b.to_ascii_lowercase()));
        // Unique per request: never worth a slot in the HPACK table (indexing it would
        // evict useful entries).
        let indexing = if name == b"x-request-id" {
            Indexing::Never
        } else {
            Indexing::Index
        };
        encoder.encode(&name, header.value, indexing, out);
    }
    conn.scratch = name;
    let out = &mut conn.write_buf;
    let len = out.len() - at - frame::HEADER_LEN;
    if len <= max_frame {
        frame::patch_len(out, at, len);
    } else {
        // Rare: a head larger than a frame goes as HEADERS and CONTINUATION frames.
        let block = out.split_off(at + frame::HEADER_LEN);
        out.truncate(at);
        let mut chunks = block.chunks(max_frame).peekable();
        let mut kind = frame::HEADERS;
        while let Some(chunk) = chunks.next() {
            let mut chunk_flags = 0;
            if kind == frame::HEADERS && end_stream {
                chunk_flags |= frame::FLAG_END_STREAM;
            }
            if chunks.peek().is_none() {
                chunk_flags |= frame::FLAG_END_HEADERS;
            }
            frame::write_header(out, chunk.len(), kind, chunk_flags, id);
            out.extend_from_slice(chunk);
            kind = frame::CONTINUATION;
        }
    }
    Ok(Started {
        slot,
        id,
        body_start: head_len,
        wire_bytes: (conn.write_buf.len() - at) as u64,
    })
}
