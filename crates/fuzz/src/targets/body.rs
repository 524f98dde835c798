//! Response bodies as they stream in: `BodySink` with each content coding (gzip, deflate,
//! br, identity), kept or not, under a limit, fed in pieces as a socket delivers them.

use barrage_body::{BodySink, ContentCoding, Pushed};

const CODINGS: [ContentCoding; 5] = [
    ContentCoding::Gzip,
    ContentCoding::Deflate,
    ContentCoding::Br,
    ContentCoding::Identity,
    ContentCoding::Other,
];

/// The first byte chooses the coding, whether the body is kept and the piece size; the
/// second the kept limit and the decode budget per turn; the rest is the body on the wire.
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
    let turn_budget = limit as u64 * 16;
    let mut budget = turn_budget;
    'pieces: for piece in body.chunks(step) {
        let mut rest = piece;
        loop {
            match sink.push(rest, &mut budget) {
                Ok(Pushed::All) => break,
                Ok(Pushed::Paused(taken)) => {
                    assert!(taken <= rest.len(), "took {taken} of {}", rest.len());
                    rest = &rest[taken..];
                    // The next turn; a budget of 0 would never make progress.
                    budget = turn_budget.max(1);
                }
                Err(_) => {
                    // Only a kept body meets its limit.
                    assert!(keep, "an unkept body failed");
                    break 'pieces;
                }
            }
        }
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
    sink.push_all(b"ok").expect("a small identity body fits");
    assert_eq!(sink.body(), Some(&b"ok"[..]));
}
