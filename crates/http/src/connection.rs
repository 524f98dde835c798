//! One HTTP/1.1 connection: write prepared bytes, read and frame the response (capturing what
//! the caller asked for), time each phase. The read buffer is borrowed per exchange.

use crate::buffers::{ReadBuffers, MAX_HEAD};
use crate::capture::Capture;
use crate::classify::classify_io_error;
use crate::framing::{parse_head_limited, BodyFraming, ChunkedDecoder, DEFAULT_MAX_HEADERS};
use crate::stream::{connect_from, Stream};
use barrage_body::{BodySink, Pushed, TURN_BUDGET};
use barrage_metrics::ErrorKind;
use std::cell::Cell;
use std::io;
use std::net::SocketAddr;
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Opens a TCP connection to the first of `addrs` that accepts, with Nagle off.
pub async fn connect(addrs: &[SocketAddr]) -> Result<TcpStream, ErrorKind> {
    connect_from(addrs, None).await
}

/// The outcome of one request/response exchange.
#[derive(Debug, Clone, Copy)]
pub struct Exchange {
    pub status: u16,
    /// Whether the connection can carry the next request.
    pub keep_alive: bool,
    /// Request bytes put on the wire (HTTP/1.1: the request as written; HTTP/2: its
    /// HEADERS, CONTINUATION and DATA frames, frame headers included).
    pub bytes_sent: u64,
    /// Response bytes read from the wire (HTTP/1.1: head and body as framed; HTTP/2: the
    /// stream's frames, frame headers included).
    pub bytes_received: u64,
    /// Body bytes as framed on the wire (before any content decoding).
    pub body_bytes: u64,
    pub written_at: Instant,
    pub first_byte_at: Instant,
    pub done_at: Instant,
}

/// A keep-alive HTTP/1.1 connection, plain or over TLS. Between exchanges it holds only its
/// socket.
pub struct Connection {
    stream: Stream,
    exchanges: u64,
    /// Whether any byte of the current (or last) response arrived.
    response_started: bool,
    /// The most header fields a response head may carry.
    max_headers: usize,
}

/// An exchange's body sink (when it decodes or keeps the body) with its decoding budget
/// for this event-loop turn: a highly compressed body arrives faster than it decodes, so
/// decoding stops at [`TURN_BUDGET`] bytes of output, the task yields, and decoding resumes
/// where it stopped. The thread's other tasks (and this request's timeout) get their turn
/// however much one read decodes to.
struct Decode<'a> {
    sink: Option<&'a mut BodySink>,
    budget: u64,
    /// Whether the budget ran out with decoded output maybe still pending.
    paused: bool,
}

impl<'a> Decode<'a> {
    fn new(sink: Option<&'a mut BodySink>) -> Self {
        Decode {
            sink,
            budget: TURN_BUDGET,
            paused: false,
        }
    }

    /// Takes as much of `data` as this turn's budget allows; returns the bytes taken. An
    /// empty `data` gets output still pending from earlier pieces.
    #[inline]
    fn take(&mut self, data: &[u8]) -> Result<usize, ErrorKind> {
        let Some(sink) = self.sink.as_deref_mut() else {
            return Ok(data.len());
        };
        self.paused = false;
        match sink.push(data, &mut self.budget)? {
            Pushed::All => Ok(data.len()),
            Pushed::Paused(taken) => {
                self.paused = true;
                Ok(taken)
            }
        }
    }

    /// Gives the other tasks a turn, then renews the budget and decodes what is still
    /// pending from the last piece (until the budget runs out again: then `paused`).
    async fn next_turn(&mut self) -> Result<(), ErrorKind> {
        tokio::task::yield_now().await;
        self.budget = TURN_BUDGET;
        self.take(&[]).map(drop)
    }

    /// Takes all of `data`, over as many turns as its decoding needs.
    async fn push(&mut self, mut data: &[u8]) -> Result<(), ErrorKind> {
        loop {
            data = &data[self.take(data)?..];
            if !self.paused {
                return Ok(());
            }
            self.next_turn().await?;
        }
    }

    /// At the body's end: decodes what is still pending, over as many turns as it needs.
    async fn finish(&mut self) -> Result<(), ErrorKind> {
        while self.paused {
            self.next_turn().await?;
        }
        Ok(())
    }
}

impl Connection {
    pub fn new(stream: impl Into<Stream>) -> Self {
        Self {
            stream: stream.into(),
            exchanges: 0,
            response_started: false,
            max_headers: DEFAULT_MAX_HEADERS,
        }
    }

    /// Allows response heads of up to `max` header fields.
    pub fn with_max_headers(mut self, max: usize) -> Self {
        self.max_headers = max;
        self
    }

    /// Requests this connection has completed; 0 means it is fresh.
    pub fn exchanges(&self) -> u64 {
        self.exchanges
    }

    /// Whether the last exchange received any response byte. A reused connection that fails
    /// before that was most likely closed by the server while idle, and is safe to retry.
    pub fn response_started(&self) -> bool {
        self.response_started
    }

    /// Sends `request` (a whole encoded request) and reads its whole response, with a read
    /// buffer borrowed from `buffers` for the duration. `expects_body` is false for HEAD.
    /// `capture` says which response headers and whether the body (de-chunked, not
    /// decompressed) to keep.
    pub async fn exchange(
        &mut self,
        buffers: &ReadBuffers,
        request: &[u8],
        expects_body: bool,
        capture: Option<&mut Capture<'_>>,
    ) -> Result<Exchange, ErrorKind> {
        self.exchange_counted(buffers, request, expects_body, capture, &Cell::new(0))
            .await
    }

    /// [`exchange`](Self::exchange), adding every response byte read to `received` as it
    /// arrives: a caller that drops the exchange (its timeout) still knows what came.
    pub async fn exchange_counted(
        &mut self,
        buffers: &ReadBuffers,
        request: &[u8],
        expects_body: bool,
        mut capture: Option<&mut Capture<'_>>,
        received: &Cell<u64>,
    ) -> Result<Exchange, ErrorKind> {
        let counted_before = received.get();
        let count = |n: usize| received.set(received.get() + n as u64);
        self.response_started = false;
        if let Some(capture) = capture.as_deref_mut() {
            capture.start();
        }
        self.stream
            .write_all(request)
            .await
            .map_err(|e| classify_io_error(&e, false))?;
        if self.stream.is_tls() {
            // TLS may hold written records back until flushed.
            self.stream
                .flush()
                .await
                .map_err(|e| classify_io_error(&e, false))?;
        }
        let written_at = Instant::now();
        // Borrow the read buffer once the response is there, not while waiting for it: the
        // exchanges of a thread then share the one or two buffers being read into, hot in
        // cache, instead of each holding its own (500 connections held 500 cold 16 KiB
        // buffers). TLS may already hold decrypted bytes, so it reads at once.
        if let Stream::Plain(tcp) = &self.stream {
            tcp.readable()
                .await
                .map_err(|e| classify_io_error(&e, false))?;
        }
        let mut buf = buffers.lend();

        // Read until the head is complete, skipping interim 1xx responses.
        let mut filled = 0;
        let mut first_byte_at = None;
        let head = loop {
            if filled > 0 {
                let parsed = parse_head_limited(
                    &buf[..filled],
                    expects_body,
                    self.max_headers,
                    |name, value| {
                        if let Some(capture) = capture.as_deref_mut() {
                            capture.header(name, value);
                        }
                    },
                );
                match parsed {
                    Ok(Some(head)) if head.status < 200 && head.status != 101 => {
                        buf.copy_within(head.head_len..filled, 0);
                        filled -= head.head_len;
                        continue;
                    }
                    Ok(Some(head)) => break head,
                    Ok(None) => {}
                    Err(_) => return Err(ErrorKind::Malformed),
                }
            }
            if filled == buf.len() {
                if buf.len() >= MAX_HEAD {
                    return Err(ErrorKind::Malformed);
                }
                let doubled = buf.len() * 2;
                buf.resize(doubled, 0);
            }
            let n = self.read_into(&mut buf[filled..]).await?;
            first_byte_at.get_or_insert_with(Instant::now);
            filled += n;
            count(n);
        };
        let first_byte_at = first_byte_at.unwrap_or(written_at);
        let mut keep_alive = head.keep_alive;
        let mut body_bytes = 0u64;
        let start = head.head_len;
        let mut decode = Decode::new(capture.and_then(Capture::body_sink));
        match head.body {
            BodyFraming::Empty => keep_alive &= filled == start,
            BodyFraming::Length(length) => {
                let available = (filled - start) as u64;
                let take = available.min(length) as usize;
                decode.push(&buf[start..start + take]).await?;
                // Bytes past the body mean the server pipelined something we did not ask for.
                keep_alive &= available <= length;
                let mut remaining = length - take as u64;
                body_bytes = take as u64;
                while remaining > 0 {
                    let n = self.read_into(&mut buf[..]).await?;
                    count(n);
                    let take = (n as u64).min(remaining) as usize;
                    decode.push(&buf[..take]).await?;
                    remaining -= take as u64;
                    body_bytes += take as u64;
                    keep_alive &= n == take;
                }
            }
            BodyFraming::Chunked => {
                let mut decoder = ChunkedDecoder::default();
                let mut pending_from = start;
                loop {
                    let mut sunk = Ok(());
                    let used = decoder
                        .feed(&buf[pending_from..filled], |data| {
                            let taken = match sunk {
                                Ok(()) => decode.take(data).unwrap_or_else(|kind| {
                                    sunk = Err(kind);
                                    data.len()
                                }),
                                Err(_) => data.len(),
                            };
                            body_bytes += taken as u64;
                            taken
                        })
                        .map_err(|_| ErrorKind::Malformed)?;
                    sunk?;
                    pending_from += used;
                    if decode.paused {
                        // The decode budget ran out in this piece: resume it next turn.
                        decode.next_turn().await?;
                        continue;
                    }
                    if decoder.is_done() {
                        keep_alive &= pending_from == filled;
                        break;
                    }
                    // Keep the unconsumed tail (a partial size line) and read more after it.
                    buf.copy_within(pending_from..filled, 0);
                    filled -= pending_from;
                    pending_from = 0;
                    if filled == buf.len() {
                        return Err(ErrorKind::Malformed);
                    }
                    let n = self.read_into(&mut buf[filled..]).await?;
                    filled += n;
                    count(n);
                }
            }
            BodyFraming::UntilClose => {
                body_bytes = (filled - start) as u64;
                decode.push(&buf[start..filled]).await?;
                loop {
                    let n = match self.stream.read(&mut buf[..]).await {
                        Ok(0) => break,
                        Ok(n) => n,
                        Err(e) => return Err(classify_io_error(&e, false)),
                    };
                    count(n);
                    body_bytes += n as u64;
                    decode.push(&buf[..n]).await?;
                }
            }
        }
        decode.finish().await?;
        drop(buf);
        self.exchanges += 1;
        Ok(Exchange {
            status: head.status,
            keep_alive,
            bytes_sent: request.len() as u64,
            bytes_received: received.get() - counted_before,
            body_bytes,
            written_at,
            first_byte_at,
            done_at: Instant::now(),
        })
    }

    /// Reads into `buf`; end of stream before a response is complete is an error (the peer
    /// closed early).
    async fn read_into(&mut self, buf: &mut [u8]) -> Result<usize, ErrorKind> {
        match self.stream.read(buf).await {
            Ok(0) => Err(classify_io_error(
                &io::Error::from(io::ErrorKind::UnexpectedEof),
                false,
            )),
            Ok(n) => {
                self.response_started = true;
                Ok(n)
            }
            Err(e) => Err(classify_io_error(&e, false)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Captured;
    use crate::request::{RequestBytes, RequestSpec};
    use std::future::Future;
    use std::task::Poll;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    fn get() -> RequestBytes {
        RequestSpec {
            method: "GET",
            authority: "t",
            path: "/",
            headers: &[],
            body: None,
            keep_alive: true,
            accept_gzip: false,
        }
        .encode()
        .unwrap()
    }

    /// Serves the given raw responses, one per request read, on a fresh listener.
    async fn serve(responses: Vec<&'static [u8]>, chunked_writes: bool) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            for response in responses {
                let _ = socket.read(&mut buf).await.unwrap();
                if chunked_writes {
                    for piece in response.chunks(3) {
                        socket.write_all(piece).await.unwrap();
                        socket.flush().await.unwrap();
                        tokio::task::yield_now().await;
                    }
                } else {
                    socket.write_all(response).await.unwrap();
                }
            }
        });
        addr
    }

    #[tokio::test(flavor = "current_thread")]
    async fn keep_alive_exchanges_with_every_framing() {
        let responses: Vec<&'static [u8]> = vec![
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
            b"HTTP/1.0 200 OK\r\n\r\nuntil close",
        ];
        for pieces in [false, true] {
            let addr = serve(responses.clone(), pieces).await;
            let mut conn = Connection::new(connect(&[addr]).await.unwrap());
            let buffers = ReadBuffers::new();
            let request = get();
            let mut captured = Captured::default();
            let names = vec!["content-length".to_string()];
            let mut capture = Capture {
                headers: &names,
                body: true,
                encoded_body: false,
                max_body: 1 << 20,
                into: &mut captured,
            };
            let first = conn
                .exchange(&buffers, request.as_bytes(), true, Some(&mut capture))
                .await
                .unwrap();
            assert_eq!(
                (first.status, first.body_bytes, first.keep_alive),
                (200, 5, true)
            );
            assert_eq!(capture.into.body(), Some(&b"hello"[..]));
            assert_eq!(capture.into.header(0), Some(&b"5"[..]));
            assert_eq!(buffers.idle(), 1, "the read buffer is back in the pool");
            let second = conn
                .exchange(&buffers, request.as_bytes(), true, Some(&mut capture))
                .await
                .unwrap();
            assert_eq!((second.status, second.body_bytes), (201, 3));
            assert_eq!(captured.body(), Some(&b"abc"[..]));
            assert_eq!(captured.header(0), None);
            let third = conn
                .exchange(&buffers, request.as_bytes(), true, None)
                .await
                .unwrap();
            assert_eq!(third.status, 404);
            let fourth = conn
                .exchange(&buffers, request.as_bytes(), true, None)
                .await
                .unwrap();
            assert_eq!(
                (fourth.status, fourth.body_bytes, fourth.keep_alive),
                (200, 11, false)
            );
            assert_eq!(conn.exchanges(), 4);
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn exchanges_waiting_for_their_responses_hold_no_read_buffer() {
        // A server that answers only once all four requests are in: the four exchanges wait
        // at the same time, then read one after the other.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let mut sockets = Vec::new();
            for _ in 0..4 {
                let (mut socket, _) = listener.accept().await.unwrap();
                let mut buf = [0u8; 4096];
                let _ = socket.read(&mut buf).await.unwrap();
                sockets.push(socket);
            }
            for socket in &mut sockets {
                socket
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                    .await
                    .unwrap();
            }
            tokio::time::sleep(std::time::Duration::from_secs(5)).await;
        });
        let mut conns = Vec::new();
        for _ in 0..4 {
            conns.push(Connection::new(connect(&[addr]).await.unwrap()));
        }
        let buffers = ReadBuffers::new();
        let request = get();
        let [a, b, c, d] = &mut conns[..] else {
            unreachable!()
        };
        let results = tokio::join!(
            a.exchange(&buffers, request.as_bytes(), true, None),
            b.exchange(&buffers, request.as_bytes(), true, None),
            c.exchange(&buffers, request.as_bytes(), true, None),
            d.exchange(&buffers, request.as_bytes(), true, None),
        );
        for result in [results.0, results.1, results.2, results.3] {
            assert_eq!(result.unwrap().status, 200);
        }
        assert_eq!(
            buffers.idle(),
            1,
            "one buffer served the four exchanges: none was held while waiting"
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn early_close_and_garbage_are_classified() {
        let addr = serve(
            vec![b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort"],
            false,
        )
        .await;
        let mut conn = Connection::new(connect(&[addr]).await.unwrap());
        let buffers = ReadBuffers::new();
        assert_eq!(
            conn.exchange(&buffers, get().as_bytes(), true, None)
                .await
                .unwrap_err(),
            ErrorKind::Closed
        );

        let addr = serve(vec![b"NOT HTTP AT ALL\r\n\r\n"], false).await;
        let mut conn = Connection::new(connect(&[addr]).await.unwrap());
        assert_eq!(
            conn.exchange(&buffers, get().as_bytes(), true, None)
                .await
                .unwrap_err(),
            ErrorKind::Malformed
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn refused_connection_is_classified() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        assert_eq!(connect(&[addr]).await.unwrap_err(), ErrorKind::Refused);
    }

    /// The decode budget over HTTP/1.1: a gzip bomb (8 MiB from about 8 KiB, one read) is
    /// decoded over many polls of its exchange, whatever the framing, and still whole.
    #[tokio::test(flavor = "current_thread")]
    async fn a_bomb_in_one_read_is_decoded_over_several_turns() {
        use std::io::Write;
        const SIZE: u64 = 8 << 20;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(&vec![0u8; SIZE as usize]).unwrap();
        let bomb = e.finish().unwrap();
        let head = "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n";
        let mut chunked = format!("{head}Transfer-Encoding: chunked\r\n\r\n").into_bytes();
        for piece in bomb.chunks(bomb.len() / 3 + 1) {
            chunked.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
            chunked.extend_from_slice(piece);
            chunked.extend_from_slice(b"\r\n");
        }
        chunked.extend_from_slice(b"0\r\n\r\n");
        let framings = [
            format!("{head}Content-Length: {}\r\n\r\n", bomb.len()).into_bytes(),
            chunked,
            b"HTTP/1.0 200 OK\r\nContent-Encoding: gzip\r\n\r\n".to_vec(),
        ];
        for (i, mut response) in framings.into_iter().enumerate() {
            if i != 1 {
                response.extend_from_slice(&bomb);
            }
            assert!(response.len() < crate::buffers::READ_BUFFER);
            let addr = serve(vec![Box::leak(response.into_boxed_slice())], false).await;
            let mut conn = Connection::new(connect(&[addr]).await.unwrap());
            let buffers = ReadBuffers::new();
            let mut captured = Captured::default();
            let mut capture = Capture {
                headers: &[],
                body: false,
                encoded_body: true,
                max_body: 0,
                into: &mut captured,
            };
            let request = get();
            let mut polls = 0u64;
            let result = {
                let mut exchange = std::pin::pin!(conn.exchange(
                    &buffers,
                    request.as_bytes(),
                    true,
                    Some(&mut capture)
                ));
                loop {
                    let poll =
                        std::future::poll_fn(|cx| Poll::Ready(exchange.as_mut().poll(cx))).await;
                    polls += 1;
                    if let Poll::Ready(result) = poll {
                        break result;
                    }
                    assert!(polls < 100_000, "the exchange never ends");
                    tokio::task::yield_now().await;
                }
            };
            result.unwrap();
            assert_eq!(captured.decoded_len(), Some(SIZE), "framing {i}");
            let budget = TURN_BUDGET + 8 * 1024;
            assert!(
                polls >= SIZE / budget,
                "framing {i}: decoded in {polls} polls"
            );
        }
    }
}
