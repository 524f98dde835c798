//! HTTP/2 as a server can answer: frames, HPACK, Huffman and stream state, through the
//! sans-IO connection (bytes in, in the pieces a socket might deliver), and the HPACK and
//! Huffman decoders on their own.

use barrage_h2proto::{huffman_decode, Connection, Decoder, KeepBody, Phase};
use std::time::Instant;

const REQUEST: &[u8] = b"GET /fuzz HTTP/1.1\r\nHost: 127.0.0.1\r\nx-request-id: 1\r\n\r\n";
const POST: &[u8] = b"POST /fuzz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n\r\nhello";

/// Server bytes through the sans-IO connection (the first two bytes choose its settings).
pub fn connection_run(input: &[u8]) {
    let (control, frames) = input.split_at(input.len().min(2));
    let control = [
        control.first().copied().unwrap_or(0),
        control.get(1).copied().unwrap_or(0),
    ];
    let window = if control[0] & 1 == 1 {
        Some(1 + u32::from(control[1]) * 97)
    } else {
        None
    };
    let mut conn = Connection::new(control[0] & 2 == 2, window, window.map(|w| w * 3));
    let now = Instant::now();
    let mut streams = Vec::new();
    let mut sent = 0usize;
    if conn.can_open() == Ok(true) {
        let request = if control[0] & 4 == 4 { POST } else { REQUEST };
        let started = conn
            .start_stream(request, true, KeepBody::Always(1 << 20))
            .unwrap();
        let body = &request[started.body_start..];
        conn.send_body(started.slot, body, &mut sent);
        streams.push(started.slot);
    }
    // Deliver in pieces of a size the input chooses.
    let step = usize::from(control[1] % 31) + 1;
    for piece in frames.chunks(step) {
        conn.receive_all(piece, now);
        let out = conn.output().len();
        conn.wrote(out);
        // Once SETTINGS raised the limit, more streams may open mid-stream.
        if streams.len() < 4 && conn.can_open() == Ok(true) {
            if let Ok(started) = conn.start_stream(REQUEST, false, KeepBody::IfEncoded) {
                streams.push(started.slot);
            }
        }
        let events = conn.events();
        assert!(events.streams.iter().all(|&s| s < 64));
        events.streams.clear();
    }
    for &slot in &streams {
        let s = conn.slot(slot);
        match s.phase {
            Phase::Done => assert!((200..=999).contains(&s.status)),
            Phase::Failed(_) | Phase::AwaitingHead | Phase::Body => {}
        }
        assert_eq!(s.fields().count(), s.fields.len());
        conn.release(slot);
    }
    assert_eq!(conn.active(), 0, "every stream released");
}

/// Two HPACK blocks sharing a dynamic table, and the same bytes as Huffman code.
pub fn hpack_run(input: &[u8]) {
    let mut decoder = Decoder::default();
    // Two blocks from one input: the dynamic table carries over.
    let cut = input
        .first()
        .map_or(0, |&b| usize::from(b))
        .min(input.len());
    for block in [&input[..cut], &input[cut..]] {
        let mut total = 0usize;
        let _ = decoder.decode(block, |name, value| total += name.len() + value.len());
    }
    let mut out = Vec::new();
    if huffman_decode(input, &mut out).is_ok() {
        // Huffman codes are at least 5 bits: at most 8/5 symbols per input byte.
        assert!(out.len() <= input.len() * 8 / 5 + 1);
    }
}
