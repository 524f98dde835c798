//! HTTP/1.1 response framing: the head (httparse and our header rules) and the chunked body
//! decoder, fed in pieces as a socket would.

use barrage_http::{parse_head, parse_head_with, BodyFraming, ChunkedDecoder};

/// Feeds `body` to a chunked decoder `step` bytes at a time, offering unconsumed bytes again.
fn decode_chunked(body: &[u8], step: usize) -> u64 {
    let mut decoder = ChunkedDecoder::default();
    let mut pending: Vec<u8> = Vec::new();
    let mut data = 0u64;
    for piece in body.chunks(step.max(1)) {
        pending.extend_from_slice(piece);
        let taken = |d: &[u8]| {
            data += d.len() as u64;
            d.len()
        };
        match decoder.feed(&pending, taken) {
            Ok(used) => {
                assert!(used <= pending.len(), "consumed more than offered");
                pending.drain(..used);
            }
            Err(_) => return data,
        }
        if decoder.is_done() {
            break;
        }
    }
    data
}

pub fn one_response(input: &[u8]) {
    let expects_body = input.first().is_some_and(|b| b & 1 == 0);
    let mut headers = 0usize;
    let head = parse_head_with(input, expects_body, |_, _| headers += 1);
    // The same bytes give the same head with and without the header callback.
    assert_eq!(head, parse_head(input, expects_body));
    // A head is complete at one length only: every shorter prefix needs more (or errs).
    if let Ok(Some(head)) = head {
        assert!(head.head_len <= input.len());
        assert!((100..=599).contains(&head.status));
        if let Ok(Some(shorter)) = parse_head(&input[..head.head_len - 1], expects_body) {
            panic!("a head ends before its end: {shorter:?}");
        }
        let body = &input[head.head_len..];
        if head.body == BodyFraming::Chunked {
            let step = input.last().map_or(1, |&b| usize::from(b % 17) + 1);
            // Piece sizes do not change the data decoded.
            assert_eq!(decode_chunked(body, step), decode_chunked(body, body.len()));
        }
    }
}
