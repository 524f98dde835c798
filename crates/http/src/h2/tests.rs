//! Tests of the HTTP/2 client: against the `h2` crate's server (an independent peer) for
//! normal traffic, flow control, stream limits and failures; against a raw socket server for
//! what a broken or non-HTTP/2 server may send (never a panic, always a classified error).

use super::*;
use crate::capture::Captured;
use crate::request::RequestSpec;
use barrage_body::TURN_BUDGET;
use barrage_h2proto::frame;
use bytes::Bytes;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// What the test server does with each stream.
#[derive(Clone, Copy)]
enum Behaviour {
    /// Echo the request body back, with the method in `x-method` (`/slow` waits 2 s,
    /// `/sleep/N` N milliseconds).
    Echo,
    Reset(h2::Reason),
    GoAway,
}

struct Server {
    addr: SocketAddr,
    connections: Arc<AtomicUsize>,
}

async fn serve_with(behaviour: Behaviour, max_streams: Option<u32>) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let connections = Arc::new(AtomicUsize::new(0));
    let accepted = Arc::clone(&connections);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            accepted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(serve_connection(tcp, behaviour, max_streams));
        }
    });
    Server { addr, connections }
}

async fn serve_connection(
    tcp: tokio::net::TcpStream,
    behaviour: Behaviour,
    max_streams: Option<u32>,
) {
    let mut builder = h2::server::Builder::new();
    if let Some(max) = max_streams {
        builder.max_concurrent_streams(max);
    }
    let mut connection = builder.handshake(tcp).await.unwrap();
    while let Some(Ok((request, mut respond))) = connection.accept().await {
        match behaviour {
            Behaviour::Reset(reason) => respond.send_reset(reason),
            Behaviour::GoAway => connection.abrupt_shutdown(h2::Reason::INTERNAL_ERROR),
            Behaviour::Echo => {
                tokio::spawn(async move {
                    let path = request.uri().path();
                    let wait = match path.strip_prefix("/sleep/") {
                        Some(ms) => ms.parse().unwrap_or(0),
                        None if path == "/slow" => 2000,
                        None => 0,
                    };
                    tokio::time::sleep(Duration::from_millis(wait)).await;
                    let method = request.method().to_string();
                    let mut body = request.into_body();
                    let mut data = Vec::new();
                    while let Some(Ok(chunk)) = body.data().await {
                        let _ = body.flow_control().release_capacity(chunk.len());
                        data.extend_from_slice(&chunk);
                    }
                    let response = http::Response::builder()
                        .header("x-method", method)
                        .header("content-encoding", "identity")
                        .body(())
                        .unwrap();
                    let Ok(mut send) = respond.send_response(response, false) else {
                        return;
                    };
                    // Sent in pieces as the client's window allows.
                    let mut data = Bytes::from(data);
                    while !data.is_empty() {
                        send.reserve_capacity(data.len());
                        let Some(Ok(room)) =
                            std::future::poll_fn(|cx| send.poll_capacity(cx)).await
                        else {
                            return;
                        };
                        let chunk = data.split_to(room.min(data.len()));
                        send.send_data(chunk, data.is_empty()).unwrap();
                    }
                    let _ = send.send_data(Bytes::new(), true);
                });
            }
        }
    }
    // Closing at once could reset the socket before the client reads the GOAWAY.
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(connection);
}

async fn serve(behaviour: Behaviour) -> SocketAddr {
    serve_with(behaviour, None).await.addr
}

async fn open_with(addr: SocketAddr, settings: &H2Settings) -> H2Connection {
    let tcp = crate::connect(&[addr]).await.unwrap();
    H2Connection::handshake(Stream::Plain(tcp), settings)
        .await
        .unwrap()
}

async fn open(addr: SocketAddr) -> H2Connection {
    open_with(addr, &H2Settings::default()).await
}

fn request_to(method: &str, path: &str, body: Option<&[u8]>) -> Vec<u8> {
    let headers = [("X-Request-Id".to_string(), "42".to_string())];
    RequestSpec {
        method,
        authority: "localhost:1",
        path,
        headers: &headers,
        body,
        keep_alive: true,
        accept_gzip: false,
    }
    .encode()
    .unwrap()
    .as_bytes()
    .to_vec()
}

fn request(method: &str, body: Option<&[u8]>) -> Vec<u8> {
    request_to(method, "/echo?x=1", body)
}

#[tokio::test(flavor = "current_thread")]
async fn sends_http1_bytes_as_http2_and_captures_the_response() {
    let addr = serve(Behaviour::Echo).await;
    let mut connection = open(addr).await;
    let names = vec!["x-method".to_string()];
    let mut captured = Captured::default();
    let mut capture = Capture {
        headers: &names,
        body: true,
        encoded_body: false,
        max_body: 1 << 20,
        into: &mut captured,
    };
    let exchange = connection
        .exchange(&request("POST", Some(b"hello")), true, Some(&mut capture))
        .await
        .unwrap();
    assert_eq!((exchange.status, exchange.body_bytes), (200, 5));
    assert!(exchange.keep_alive);
    assert!(connection.response_started());
    assert_eq!(captured.body(), Some(&b"hello"[..]));
    assert_eq!(captured.header(0), Some(&b"POST"[..]));
    let again = connection
        .exchange(&request("GET", None), true, None)
        .await
        .unwrap();
    assert_eq!((again.status, again.body_bytes), (200, 0));
    // Wire bytes (exactly counted against a raw server below): at least one frame, and less
    // than the same head as text (":status: 200\r\n" + "x-method: GET\r\n" +
    // "content-encoding: identity\r\n", 57 bytes) since HPACK indexes repeated fields.
    assert!(
        (10..57).contains(&again.bytes_received),
        "{}",
        again.bytes_received
    );
    assert_eq!(connection.exchanges(), 2);
}

#[tokio::test(flavor = "current_thread")]
async fn resets_and_goaway_are_counted_by_kind() {
    for (behaviour, kind) in [
        (
            Behaviour::Reset(h2::Reason::REFUSED_STREAM),
            ErrorKind::H2StreamLimit,
        ),
        (
            Behaviour::Reset(h2::Reason::INTERNAL_ERROR),
            ErrorKind::H2StreamReset,
        ),
        (Behaviour::GoAway, ErrorKind::H2GoAway),
    ] {
        let addr = serve(behaviour).await;
        let mut connection = open(addr).await;
        let result = connection.exchange(&request("GET", None), true, None).await;
        assert_eq!(result.unwrap_err(), kind);
        assert!(!connection.response_started());
    }
}

#[tokio::test(flavor = "current_thread")]
async fn streams_of_many_handles_share_one_connection_within_the_servers_limit() {
    let server = serve_with(Behaviour::Echo, Some(2)).await;
    let connection = open(server.addr).await;
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async {
            let tasks: Vec<_> = (0..12)
                .map(|i| {
                    let mut handle = connection.clone();
                    tokio::task::spawn_local(async move {
                        let body = vec![b'x'; i * 100];
                        let body = Some(&body[..]).filter(|b| !b.is_empty());
                        handle.exchange(&request("POST", body), true, None).await
                    })
                })
                .collect();
            for (i, task) in tasks.into_iter().enumerate() {
                let exchange = task.await.unwrap().unwrap();
                assert_eq!(
                    (exchange.status, exchange.body_bytes),
                    (200, i as u64 * 100)
                );
            }
        })
        .await;
    assert_eq!(connection.exchanges(), 12);
    assert_eq!(server.connections.load(Ordering::SeqCst), 1);
    assert_eq!(connection.shared.borrow().proto.active(), 0);
}

#[tokio::test(flavor = "current_thread")]
async fn large_bodies_flow_both_ways_through_small_windows() {
    let addr = serve(Behaviour::Echo).await;
    let settings = H2Settings {
        initial_window_size: Some(10_000),
        initial_connection_window_size: Some(1 << 20),
    };
    let mut connection = open_with(addr, &settings).await;
    let body: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let mut captured = Captured::default();
    for _ in 0..2 {
        let mut capture = Capture {
            headers: &[],
            body: true,
            encoded_body: false,
            max_body: 1 << 20,
            into: &mut captured,
        };
        let exchange = connection
            .exchange(&request("POST", Some(&body)), true, Some(&mut capture))
            .await
            .unwrap();
        assert_eq!(exchange.body_bytes, body.len() as u64);
        assert_eq!(captured.body(), Some(&body[..]));
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_dropped_exchange_cancels_its_stream_and_the_connection_goes_on() {
    let addr = serve(Behaviour::Echo).await;
    let mut connection = open(addr).await;
    let slow = request_to("GET", "/slow", None);
    let timed_out = tokio::time::timeout(
        Duration::from_millis(100),
        connection.exchange(&slow, true, None),
    )
    .await;
    assert!(timed_out.is_err());
    assert_eq!(connection.shared.borrow().proto.active(), 0);
    let exchange = connection
        .exchange(&request("GET", None), true, None)
        .await
        .unwrap();
    assert_eq!(exchange.status, 200);
}

#[tokio::test(flavor = "current_thread")]
async fn a_stream_still_waiting_takes_over_the_socket_when_the_one_reading_it_leaves() {
    let addr = serve(Behaviour::Echo).await;
    let connection = open(addr).await;
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async {
            let mut patient = connection.clone();
            let patient = tokio::task::spawn_local(async move {
                let request = request_to("GET", "/sleep/600", None);
                patient.exchange(&request, true, None).await
            });
            tokio::task::yield_now().await;
            // This one waits on the socket last (so the socket wakes it), then times out.
            let mut leaving = connection.clone();
            let leaving = tokio::task::spawn_local(async move {
                let request = request_to("GET", "/sleep/5000", None);
                let exchange = leaving.exchange(&request, true, None);
                tokio::time::timeout(Duration::from_millis(200), exchange).await
            });
            assert!(leaving.await.unwrap().is_err(), "timed out");
            let exchange = tokio::time::timeout(Duration::from_secs(3), patient)
                .await
                .expect("the waiting stream is woken by its response")
                .unwrap()
                .unwrap();
            assert_eq!(exchange.status, 200);
        })
        .await;
}

/// A raw server: after the client's preface (and its first HEADERS frame, unless
/// `answer_preface`), writes `reply` and keeps the socket open a moment.
async fn raw_server(reply: Vec<u8>, answer_preface: bool) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut tcp, _) = listener.accept().await.unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let Ok(n) = tcp.read(&mut buf).await else {
                return;
            };
            if n == 0 {
                return;
            }
            seen.extend_from_slice(&buf[..n]);
            if seen.len() >= frame::PREFACE.len() && (answer_preface || has_headers(&seen)) {
                break;
            }
        }
        let _ = tcp.write_all(&reply).await;
        // Read what the client still sends, so the close is a FIN, not a reset.
        let _ = tokio::time::timeout(Duration::from_millis(200), async {
            while let Ok(n) = tcp.read(&mut buf).await {
                if n == 0 {
                    break;
                }
            }
        })
        .await;
    });
    addr
}

fn has_headers(seen: &[u8]) -> bool {
    let mut at = frame::PREFACE.len();
    while let Some(header) = frame::FrameHeader::parse(&seen[at..]) {
        if header.kind == frame::HEADERS {
            return true;
        }
        at += frame::HEADER_LEN + header.len;
        if at > seen.len() {
            return false;
        }
    }
    false
}

fn settings_frame() -> Vec<u8> {
    let mut out = Vec::new();
    frame::write_settings(&mut out, &[(frame::SETTINGS_MAX_CONCURRENT_STREAMS, 100)]);
    out
}

fn raw_frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    frame::write_header(&mut out, payload.len(), kind, flags, stream);
    out.extend_from_slice(payload);
    out
}

async fn exchange_against(reply: Vec<u8>, answer_preface: bool) -> Result<Exchange, ErrorKind> {
    let addr = raw_server(reply, answer_preface).await;
    let mut connection = open(addr).await;
    tokio::time::timeout(
        Duration::from_secs(5),
        connection.exchange(&request("GET", None), true, None),
    )
    .await
    .expect("a broken server ends the exchange, it does not hang it")
}

#[tokio::test(flavor = "current_thread")]
async fn a_server_without_h2c_is_told_apart() {
    let http1 = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n".to_vec();
    assert_eq!(
        exchange_against(http1, true).await.unwrap_err(),
        ErrorKind::H2NotOffered
    );
    assert_eq!(
        exchange_against(Vec::new(), true).await.unwrap_err(),
        ErrorKind::H2NotOffered
    );
}

#[tokio::test(flavor = "current_thread")]
async fn hand_made_frames_are_understood() {
    const END_HEADERS_AND_STREAM: u8 = frame::FLAG_END_HEADERS | frame::FLAG_END_STREAM;
    // An interim 100 (literal :status), then 200 (static index 8) ending the stream.
    let mut reply = settings_frame();
    reply.extend(raw_frame(frame::PING, 0, 0, &[7; 8]));
    reply.extend(raw_frame(
        frame::HEADERS,
        frame::FLAG_END_HEADERS,
        1,
        &[0x48, 3, b'1', b'0', b'0'],
    ));
    reply.extend(raw_frame(frame::PRIORITY, 0, 1, &[0, 0, 0, 0, 16]));
    reply.extend(raw_frame(
        frame::HEADERS,
        frame::FLAG_END_HEADERS,
        1,
        &[0x88],
    ));
    reply.extend(raw_frame(
        frame::DATA,
        frame::FLAG_PADDED,
        1,
        &[2, b'o', b'k', 0, 0],
    ));
    reply.extend(raw_frame(0xfa, 0, 0, b"unknown type"));
    reply.extend(raw_frame(
        frame::HEADERS,
        END_HEADERS_AND_STREAM,
        1,
        &[0x88],
    ));
    let exchange = exchange_against(reply, false).await.unwrap();
    assert_eq!((exchange.status, exchange.body_bytes), (200, 2));
    // The stream's frames as received: both heads, the padded DATA and the trailers (the
    // PING, PRIORITY and unknown frames are not the response's).
    assert_eq!(
        exchange.bytes_received,
        (9 + 5) + (9 + 1) + (9 + 5) + (9 + 1)
    );

    // A head split over HEADERS and CONTINUATION.
    let mut reply = settings_frame();
    reply.extend(raw_frame(
        frame::HEADERS,
        frame::FLAG_END_STREAM,
        1,
        &[0x88],
    ));
    reply.extend(raw_frame(
        frame::CONTINUATION,
        frame::FLAG_END_HEADERS,
        1,
        &[0x5c, 1, b'0'], // content-length: 0
    ));
    let exchange = exchange_against(reply, false).await.unwrap();
    assert_eq!(exchange.status, 200);
    assert_eq!(exchange.bytes_received, (9 + 1) + (9 + 3));
}

/// The frames of stream 1 in what a client wrote after its preface, frame headers included.
fn stream_one_frames(seen: &[u8]) -> (u64, bool) {
    let mut at = frame::PREFACE.len();
    let (mut bytes, mut ended) = (0, false);
    while let Some(header) = frame::FrameHeader::parse(&seen[at.min(seen.len())..]) {
        if at + frame::HEADER_LEN + header.len > seen.len() {
            break;
        }
        if header.stream == 1 {
            bytes += (frame::HEADER_LEN + header.len) as u64;
            ended |= header.flags & frame::FLAG_END_STREAM != 0;
        }
        at += frame::HEADER_LEN + header.len;
    }
    (bytes, ended)
}

#[tokio::test(flavor = "current_thread")]
async fn bytes_sent_and_received_are_the_streams_frames_on_the_wire() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (mut tcp, _) = listener.accept().await.unwrap();
        let (mut seen, mut buf) = (Vec::new(), [0u8; 4096]);
        let written = loop {
            let n = tcp.read(&mut buf).await.unwrap();
            assert!(n > 0, "the client closed before its request ended");
            seen.extend_from_slice(&buf[..n]);
            if let (bytes, true) = stream_one_frames(&seen) {
                break bytes;
            }
        };
        let mut reply = settings_frame();
        reply.extend(raw_frame(
            frame::HEADERS,
            frame::FLAG_END_HEADERS,
            1,
            &[0x88],
        ));
        reply.extend(raw_frame(frame::DATA, frame::FLAG_END_STREAM, 1, b"ok"));
        tcp.write_all(&reply).await.unwrap();
        let _ = tokio::time::timeout(Duration::from_millis(200), tcp.read(&mut buf)).await;
        written
    });
    let mut connection = open(addr).await;
    let request = request("POST", Some(b"hello"));
    let exchange = tokio::time::timeout(
        Duration::from_secs(5),
        connection.exchange(&request, true, None),
    )
    .await
    .unwrap()
    .unwrap();
    let written = server.await.unwrap();
    assert_eq!(
        exchange.bytes_sent, written,
        "what the server read of stream 1"
    );
    assert!(
        exchange.bytes_sent < request.len() as u64,
        "HPACK-coded frames, not the HTTP/1.1 text ({} bytes)",
        request.len()
    );
    assert_eq!(exchange.bytes_received, (9 + 1) + (9 + 2));
    assert_eq!(exchange.body_bytes, 2);
}

#[tokio::test(flavor = "current_thread")]
async fn broken_frames_are_protocol_errors_not_panics() {
    let with_settings = |tail: Vec<u8>| {
        let mut reply = settings_frame();
        reply.extend(tail);
        reply
    };
    let cases: Vec<(&str, Vec<u8>, ErrorKind)> = vec![
        (
            "frame longer than our maximum",
            with_settings(vec![0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 1]),
            ErrorKind::H2Protocol,
        ),
        (
            "bad HPACK",
            with_settings(raw_frame(frame::HEADERS, 0x5, 1, &[0xff, 0xff, 0xff, 0xff])),
            ErrorKind::H2Protocol,
        ),
        (
            "push promise",
            with_settings(raw_frame(frame::PUSH_PROMISE, 0x4, 1, &[0, 0, 0, 2, 0x82])),
            ErrorKind::H2Protocol,
        ),
        (
            "data before the head",
            with_settings(raw_frame(frame::DATA, 0x1, 1, b"early")),
            ErrorKind::H2Protocol,
        ),
        (
            "padding longer than the frame",
            with_settings(raw_frame(frame::HEADERS, 0xd, 1, &[9, 0x88])),
            ErrorKind::H2Protocol,
        ),
        (
            "a head without :status",
            with_settings(raw_frame(frame::HEADERS, 0x5, 1, &[0x5c, 1, b'0'])),
            ErrorKind::H2Protocol,
        ),
        (
            "headers on a stream never opened",
            with_settings(raw_frame(frame::HEADERS, 0x5, 9, &[0x88])),
            ErrorKind::H2Protocol,
        ),
        (
            "truncated frame, then close",
            with_settings(vec![0, 0, 10, frame::DATA, 0, 0, 0, 0, 1, b'x']),
            ErrorKind::Closed,
        ),
        (
            "GOAWAY before the stream",
            with_settings(raw_frame(frame::GOAWAY, 0, 0, &[0; 8])),
            ErrorKind::H2GoAway,
        ),
        (
            "first frame is not SETTINGS",
            raw_frame(frame::PING, 0, 0, &[0; 8]),
            ErrorKind::H2Protocol,
        ),
        (
            "garbage instead of the server preface",
            b"\x17\x03\x03garbage garbage garbage".to_vec(),
            ErrorKind::H2Protocol,
        ),
        (
            "an HTTP/1.1 answer to the preface: no h2c",
            b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".to_vec(),
            ErrorKind::H2NotOffered,
        ),
        (
            "malformed SETTINGS",
            with_settings(raw_frame(
                frame::SETTINGS,
                0,
                0,
                &[0, 4, 0xff, 0xff, 0xff, 0xff],
            )),
            ErrorKind::H2Protocol,
        ),
        (
            "SETTINGS with a length not a multiple of 6",
            with_settings(raw_frame(frame::SETTINGS, 0, 0, &[0, 4, 0])),
            ErrorKind::H2Protocol,
        ),
        (
            "window overflow",
            with_settings(raw_frame(
                frame::WINDOW_UPDATE,
                0,
                0,
                &[0x7f, 0xff, 0xff, 0xff],
            )),
            ErrorKind::H2Protocol,
        ),
        (
            "RST_STREAM REFUSED_STREAM",
            with_settings(raw_frame(frame::RST_STREAM, 0, 1, &[0, 0, 0, 7])),
            ErrorKind::H2StreamLimit,
        ),
    ];
    for (name, reply, kind) in cases {
        assert_eq!(
            exchange_against(reply, false).await.map(|e| e.status),
            Err(kind),
            "{name}"
        );
    }
    // Pseudo-random garbage after a valid SETTINGS: some error, never a panic or a hang.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..20 {
        let garbage: Vec<u8> = (0..200)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect();
        let _ = exchange_against(with_settings(garbage), false).await;
    }
}

#[tokio::test(flavor = "current_thread")]
async fn an_encoded_body_is_decoded_as_it_streams_and_sized_decoded() {
    let gzipped = {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(&[b'a'; 10_000]).unwrap();
        e.finish().unwrap()
    };
    for (coding, decoded) in [(&b"gzip"[..], Some(10_000)), (b"identity", None)] {
        let mut reply = settings_frame();
        // 200, then content-encoding (static name 26) as a literal without indexing.
        let mut block = vec![0x88, 0x0f, 0x0b, coding.len() as u8];
        block.extend_from_slice(coding);
        reply.extend(raw_frame(
            frame::HEADERS,
            frame::FLAG_END_HEADERS,
            1,
            &block,
        ));
        reply.extend(raw_frame(frame::DATA, frame::FLAG_END_STREAM, 1, &gzipped));
        let addr = raw_server(reply, false).await;
        let mut connection = open(addr).await;
        let mut captured = Captured::default();
        let mut capture = Capture {
            headers: &[],
            body: false,
            encoded_body: true,
            max_body: 1 << 20,
            into: &mut captured,
        };
        let exchange = connection
            .exchange(&request("GET", None), true, Some(&mut capture))
            .await
            .unwrap();
        assert_eq!(exchange.body_bytes, gzipped.len() as u64);
        assert_eq!(captured.decoded_len(), decoded, "{coding:?}");
        assert_eq!(captured.body(), None, "counted, not kept");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_kept_body_past_its_limit_fails_the_stream_as_body_too_large() {
    let mut reply = settings_frame();
    reply.extend(raw_frame(
        frame::HEADERS,
        frame::FLAG_END_HEADERS,
        1,
        &[0x88],
    ));
    for _ in 0..4 {
        reply.extend(raw_frame(frame::DATA, 0, 1, &[b'x'; 1000]));
    }
    let addr = raw_server(reply, false).await;
    let mut connection = open(addr).await;
    let mut captured = Captured::default();
    let mut capture = Capture {
        headers: &[],
        body: true,
        encoded_body: true,
        max_body: 2500,
        into: &mut captured,
    };
    let result = connection
        .exchange(&request("GET", None), true, Some(&mut capture))
        .await;
    assert_eq!(result.err(), Some(ErrorKind::BodyTooLarge));
}

/// A server on its own thread that answers the first request with an endless gzip body of
/// barely compressible text (so the wire, not the decoder, is the work), as fast as the
/// socket takes it, for at most `secs` seconds.
fn endless_gzip_server(secs: u64) -> SocketAddr {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let (mut tcp, _) = listener.accept().unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while !(seen.len() >= frame::PREFACE.len() && has_headers(&seen)) {
            match tcp.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
        // Sync-flushed raw deflate blocks of a fresh encoder: any number in a row decode.
        let mut seed = 7u32;
        let text: Vec<u8> = (0..12_000)
            .map(|_| {
                seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                b'a' + (seed >> 16) as u8 % 26
            })
            .collect();
        let mut deflate =
            flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        deflate.write_all(&text).unwrap();
        deflate.flush().unwrap();
        let block = std::mem::take(deflate.get_mut());
        let mut first = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
        first.extend_from_slice(&block);
        let mut reply = settings_frame();
        reply.extend(raw_frame(
            frame::HEADERS,
            frame::FLAG_END_HEADERS,
            1,
            &[0x88, 0x0f, 0x0b, 4, b'g', b'z', b'i', b'p'],
        ));
        reply.extend(raw_frame(frame::DATA, 0, 1, &first));
        let next = raw_frame(frame::DATA, 0, 1, &block);
        let end = std::time::Instant::now() + Duration::from_secs(secs);
        if tcp.write_all(&reply).is_err() {
            return;
        }
        while std::time::Instant::now() < end && tcp.write_all(&next).is_ok() {}
    });
    addr
}

/// The cooperative budget: an exchange reading a stream that never ends (and never waits)
/// hands the thread back after a bounded amount of work per poll, so the timeouts of every
/// other exchange on the thread fire on time however many such streams it reads.
#[tokio::test(flavor = "current_thread")]
async fn an_endless_stream_is_read_in_bounded_turns() {
    let addr = endless_gzip_server(5);
    let settings = H2Settings {
        initial_window_size: Some(i32::MAX as u32),
        initial_connection_window_size: Some(i32::MAX as u32),
    };
    let mut connection = open_with(addr, &settings).await;
    let shared = Rc::clone(&connection.shared);
    let mut captured = Captured::default();
    let mut capture = Capture {
        headers: &[],
        body: false,
        encoded_body: true,
        max_body: 1 << 20,
        into: &mut captured,
    };
    let request = request("GET", None);
    let mut exchange = std::pin::pin!(connection.exchange(&request, true, Some(&mut capture)));
    let received = || {
        let conn = shared.borrow();
        (0..conn.proto.slot_count())
            .map(|i| conn.proto.slot(i).wire_bytes)
            .sum::<u64>()
    };
    let (mut total, mut largest_turn) = (0, 0);
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    while total < 4 << 20 && std::time::Instant::now() < deadline {
        let before = received();
        let poll = std::future::poll_fn(|cx| Poll::Ready(exchange.as_mut().poll(cx))).await;
        assert!(poll.is_pending(), "an endless body never ends: {poll:?}");
        let turn = received() - before;
        largest_turn = largest_turn.max(turn);
        total += turn;
        // Let the server fill the socket's buffer well past one turn's budget.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let budget = (connection::BYTES_PER_DRIVE + 20 * 1024) as u64;
    assert!(
        largest_turn > budget / 2,
        "the socket held more than a turn's worth (else this tests nothing): {largest_turn}"
    );
    assert!(
        largest_turn <= budget,
        "one poll read {largest_turn} bytes, over the cooperative budget {budget}"
    );
}

/// The decode budget: one DATA frame of a gzip bomb (8 MiB from about 8 KiB) is decoded over
/// many polls of its exchange, none decoding much more than a turn's budget, and the body
/// still comes out whole.
#[tokio::test(flavor = "current_thread")]
async fn a_bomb_frame_is_decoded_over_several_turns() {
    const SIZE: u64 = 8 << 20;
    let bomb = {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(&vec![0u8; SIZE as usize]).unwrap();
        e.finish().unwrap()
    };
    assert!(bomb.len() <= frame::MAX_FRAME_SIZE);
    let mut reply = settings_frame();
    reply.extend(raw_frame(
        frame::HEADERS,
        frame::FLAG_END_HEADERS,
        1,
        &[0x88, 0x0f, 0x0b, 4, b'g', b'z', b'i', b'p'],
    ));
    reply.extend(raw_frame(frame::DATA, frame::FLAG_END_STREAM, 1, &bomb));
    let addr = raw_server(reply, false).await;
    let mut connection = open(addr).await;
    let shared = Rc::clone(&connection.shared);
    let mut captured = Captured::default();
    let mut capture = Capture {
        headers: &[],
        body: false,
        encoded_body: true,
        max_body: 1 << 20,
        into: &mut captured,
    };
    let request = request("GET", None);
    let decoded = || {
        let conn = shared.borrow();
        (0..conn.proto.slot_count())
            .map(|i| conn.proto.slot(i).body.decoded_so_far())
            .sum::<u64>()
    };
    let (mut polls, mut largest_turn) = (0u64, 0);
    let result = {
        let mut exchange = std::pin::pin!(connection.exchange(&request, true, Some(&mut capture)));
        loop {
            let before = decoded();
            let poll = std::future::poll_fn(|cx| Poll::Ready(exchange.as_mut().poll(cx))).await;
            polls += 1;
            largest_turn = largest_turn.max(decoded().saturating_sub(before));
            if let Poll::Ready(result) = poll {
                break result;
            }
            assert!(polls < 100_000, "the exchange never ends");
            // The server (on this thread) gets its turn too.
            tokio::task::yield_now().await;
        }
    };
    result.unwrap();
    assert_eq!(captured.decoded_len(), Some(SIZE));
    let budget = TURN_BUDGET + 8 * 1024;
    assert!(
        largest_turn <= budget,
        "one poll decoded {largest_turn} bytes, over the turn's budget"
    );
    assert!(polls >= SIZE / budget, "decoded in {polls} polls");
}
