//! Response bodies as they stream in: `BodySink` with each content coding (gzip, deflate,
//! br, identity), kept or not, under a limit, fed in pieces as a socket delivers them.

use barrage_body::{BodySink, ContentCoding};

const CODINGS: [ContentCoding; 5] = [
    ContentCoding::Gzip,
    ContentCoding::Deflate,
    ContentCoding::Br,
    ContentCoding::Identity,
    ContentCoding::Other,
];

/// The first byte chooses the coding, whether the body is kept and the piece size; the
/// second the kept limit; the rest is the body on the wire.
pub fn one_body(input: &[u8]) {
    let [control, limit, body @ ..] = input else {
        return;
    };
    let coding = CODINGS[usize::from(control % 5)];
    let keep = control & 8 == 8;
    let limit = usize::from(*limit) * 64;
    let step = usize::from(control >> 4) + 1;
    let mut sink = BodySink::default();
    sink.start(keep, limit);
    sink.set_coding(coding);
    for piece in body.chunks(step) {
        if sink.push(piece).is_err() {
            // Only a kept body meets its limit.
            assert!(keep, "an unkept body failed");
            break;
        }
        let _ = sink.should_yield();
    }
    if let Some(kept) = sink.body() {
        assert!(keep, "a body that was not asked for was kept");
        assert!(
            kept.len() <= limit,
            "kept {} bytes over a limit of {limit}",
            kept.len()
        );
    }
    if coding == ContentCoding::Identity || coding == ContentCoding::Other {
        assert_eq!(sink.decoded_len(), None);
    }
    // A second body on the same sink starts clean (buffers are reused between bodies).
    sink.start(true, 16);
    sink.set_coding(ContentCoding::Identity);
    sink.push(b"ok").expect("a small identity body fits");
    assert_eq!(sink.body(), Some(&b"ok"[..]));
}
