//! The client-side CPU cost of one small gzip response, without sockets: parse the head of
//! the bundled target's `/health` answer and stream its gzip body through a reused
//! `BodySink`, N times. Meant for instruction counts under callgrind (deterministic on a
//! shared machine), old tree against new:
//! `valgrind --tool=callgrind target/release/examples/response_cost 100000`.

use barrage_http::{
    parse_head_limited, BodySink, ContentCoding, Pushed, DEFAULT_MAX_HEADERS, TURN_BUDGET,
};
use std::io::Write;

fn main() {
    let rounds: u64 = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gzip.write_all(br#"{"status":"ok","version":"0.1.0"}"#)
        .expect("in memory");
    let body = gzip.finish().expect("in memory");
    let mut response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\nvary: accept-encoding\r\ncontent-length: {}\r\ndate: Mon, 23 Nov 2026 23:00:00 GMT\r\n\r\n",
        body.len()
    )
    .into_bytes();
    response.extend_from_slice(&body);
    let mut sink = BodySink::default();
    let mut decoded = 0u64;
    for _ in 0..rounds {
        let mut coding = ContentCoding::Identity;
        let head = parse_head_limited(
            std::hint::black_box(&response),
            true,
            DEFAULT_MAX_HEADERS,
            |name, value| {
                if name.eq_ignore_ascii_case("content-encoding") {
                    coding = ContentCoding::parse(value);
                }
            },
        )
        .expect("valid head")
        .expect("complete head");
        sink.start(false, 0);
        sink.set_coding(coding);
        let mut budget = TURN_BUDGET;
        let pushed = sink
            .push(&response[head.head_len..], &mut budget)
            .expect("not kept");
        assert_eq!(pushed, Pushed::All, "a small body is one turn's work");
        decoded += sink.decoded_len().unwrap_or(0);
    }
    println!("{rounds} responses, {decoded} bytes decoded");
}
