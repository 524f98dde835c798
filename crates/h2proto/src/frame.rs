//! HTTP/2 frames on the wire (RFC 9113 §4 and §6): the 9-byte frame header, the frame types
//! and flags the client meets, and writers that append the frames it sends to a buffer.

/// The client connection preface (RFC 9113 §3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
pub const HEADER_LEN: usize = 9;
/// The largest frame payload we accept: the protocol default, which we never raise.
pub const MAX_FRAME_SIZE: usize = 16_384;
/// The protocol's initial flow-control window (connection and streams).
pub const DEFAULT_WINDOW: u32 = 65_535;
pub const MAX_WINDOW: i64 = (1 << 31) - 1;

pub const DATA: u8 = 0;
pub const HEADERS: u8 = 1;
pub const PRIORITY: u8 = 2;
pub const RST_STREAM: u8 = 3;
pub const SETTINGS: u8 = 4;
pub const PUSH_PROMISE: u8 = 5;
pub const PING: u8 = 6;
pub const GOAWAY: u8 = 7;
pub const WINDOW_UPDATE: u8 = 8;
pub const CONTINUATION: u8 = 9;

pub const FLAG_END_STREAM: u8 = 0x1;
pub const FLAG_ACK: u8 = 0x1;
pub const FLAG_END_HEADERS: u8 = 0x4;
pub const FLAG_PADDED: u8 = 0x8;
pub const FLAG_PRIORITY: u8 = 0x20;

pub const SETTINGS_HEADER_TABLE_SIZE: u16 = 1;
pub const SETTINGS_ENABLE_PUSH: u16 = 2;
pub const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 3;
pub const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 4;
pub const SETTINGS_MAX_FRAME_SIZE: u16 = 5;

pub const PROTOCOL_ERROR: u32 = 0x1;
pub const REFUSED_STREAM: u32 = 0x7;
pub const CANCEL: u32 = 0x8;

/// A parsed frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    pub len: usize,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
}

impl FrameHeader {
    /// Reads a frame header from the first 9 bytes of `bytes` (`None` if there are fewer).
    pub fn parse(bytes: &[u8]) -> Option<FrameHeader> {
        let b = bytes.get(..HEADER_LEN)?;
        Some(FrameHeader {
            len: (usize::from(b[0]) << 16) | (usize::from(b[1]) << 8) | usize::from(b[2]),
            kind: b[3],
            flags: b[4],
            stream: read_u32(&b[5..9]) & 0x7fff_ffff,
        })
    }
}

/// A big-endian u32 from the first 4 bytes of `b` (callers check the length).
#[inline]
pub fn read_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Appends a frame header.
#[inline]
pub fn write_header(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let len = len as u32;
    out.extend_from_slice(&[(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
}

/// Rewrites the length of the frame header at `at` (written with a placeholder length).
#[inline]
pub fn patch_len(out: &mut [u8], at: usize, len: usize) {
    out[at] = (len >> 16) as u8;
    out[at + 1] = (len >> 8) as u8;
    out[at + 2] = len as u8;
}

pub fn write_settings(out: &mut Vec<u8>, settings: &[(u16, u32)]) {
    write_header(out, settings.len() * 6, SETTINGS, 0, 0);
    for (id, value) in settings {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
}

pub fn write_settings_ack(out: &mut Vec<u8>) {
    write_header(out, 0, SETTINGS, FLAG_ACK, 0);
}

pub fn write_ping_ack(out: &mut Vec<u8>, payload: &[u8]) {
    write_header(out, 8, PING, FLAG_ACK, 0);
    out.extend_from_slice(payload);
}

pub fn write_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    write_header(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&(increment & 0x7fff_ffff).to_be_bytes());
}

pub fn write_rst_stream(out: &mut Vec<u8>, stream: u32, code: u32) {
    write_header(out, 4, RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_be_bytes());
}

pub fn write_data(out: &mut Vec<u8>, stream: u32, data: &[u8], end_stream: bool) {
    let flags = if end_stream { FLAG_END_STREAM } else { 0 };
    write_header(out, data.len(), DATA, flags, stream);
    out.extend_from_slice(data);
}

/// The payload of a DATA or HEADERS frame without its padding (and, for HEADERS, without the
/// priority fields); `None` when the padding is longer than the frame (a protocol error).
pub fn unpad<'a>(header: &FrameHeader, payload: &'a [u8]) -> Option<&'a [u8]> {
    let mut payload = payload;
    let mut pad = 0;
    if header.flags & FLAG_PADDED != 0 {
        let (&len, rest) = payload.split_first()?;
        pad = usize::from(len);
        payload = rest;
    }
    if header.kind == HEADERS && header.flags & FLAG_PRIORITY != 0 {
        payload = payload.get(5..)?;
    }
    payload.get(..payload.len().checked_sub(pad)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_headers_round_trip() {
        let mut out = Vec::new();
        write_header(&mut out, 70_000, HEADERS, FLAG_END_HEADERS, 0x8000_0003);
        assert_eq!(out.len(), HEADER_LEN);
        let parsed = FrameHeader::parse(&out).unwrap();
        // The reserved bit is ignored on receipt.
        assert_eq!(
            parsed,
            FrameHeader {
                len: 70_000,
                kind: HEADERS,
                flags: FLAG_END_HEADERS,
                stream: 3
            }
        );
        assert_eq!(FrameHeader::parse(&out[..8]), None);
        patch_len(&mut out, 0, 5);
        assert_eq!(FrameHeader::parse(&out).unwrap().len, 5);
    }

    #[test]
    fn padding_and_priority_are_stripped_and_bad_padding_refused() {
        let header = |kind, flags| FrameHeader {
            len: 0,
            kind,
            flags,
            stream: 1,
        };
        assert_eq!(
            unpad(&header(DATA, FLAG_PADDED), &[2, b'h', b'i', 0, 0]),
            Some(&b"hi"[..])
        );
        assert_eq!(unpad(&header(DATA, FLAG_PADDED), &[9, b'h']), None);
        assert_eq!(unpad(&header(DATA, FLAG_PADDED), &[]), None);
        assert_eq!(
            unpad(&header(HEADERS, FLAG_PRIORITY), &[0, 0, 0, 1, 16, 0x82]),
            Some(&[0x82][..])
        );
        assert_eq!(unpad(&header(HEADERS, FLAG_PRIORITY), &[0, 0]), None);
        assert_eq!(unpad(&header(DATA, 0), b"raw"), Some(&b"raw"[..]));
    }

    #[test]
    fn control_frames_have_their_fixed_sizes() {
        let mut out = Vec::new();
        write_window_update(&mut out, 5, 1000);
        write_rst_stream(&mut out, 5, CANCEL);
        write_ping_ack(&mut out, &[1; 8]);
        write_settings(&mut out, &[(SETTINGS_ENABLE_PUSH, 0)]);
        write_settings_ack(&mut out);
        let mut at = 0;
        let mut seen = Vec::new();
        while let Some(h) = FrameHeader::parse(&out[at..]) {
            seen.push((h.kind, h.len));
            at += HEADER_LEN + h.len;
        }
        assert_eq!(at, out.len());
        assert_eq!(
            seen,
            [
                (WINDOW_UPDATE, 4),
                (RST_STREAM, 4),
                (PING, 8),
                (SETTINGS, 6),
                (SETTINGS, 0)
            ]
        );
    }
}
