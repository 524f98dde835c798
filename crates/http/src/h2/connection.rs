//! The state of one HTTP/2 connection shared by its handles: the socket with its read and
//! write buffers, stream slots (reused, so a request allocates nothing once warm), flow
//! control, HPACK state, and the frame processing that fills the slots. There is no
//! connection task: whichever exchange polls drives the socket (`drive`), so a connection
//! used by one client costs no cross-task wake-up per request; with several exchanges in
//! flight, the last one to wait on the socket is its `driver` and hands the role on when it
//! leaves.

use super::frame::{self, FrameHeader, HEADER_LEN};
use super::hpack::Encoder;
use super::hpack_decoder::Decoder;
use crate::body::{BodySink, ContentCoding};
use crate::classify::classify_io_error;
use crate::stream::Stream;
use barrage_metrics::ErrorKind;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The read buffer's size: a whole frame of the largest size we accept fits, with room to
/// spare for the next ones (kept small: a pool may hold thousands of connections).
const READ_BUFFER: usize = 20 * 1024;
/// A write buffer grown past this (large request bodies) is given back once flushed.
const WRITE_BUFFER_KEPT: usize = 256 * 1024;
/// Reads per `drive` before yielding to other tasks (the peer may keep sending).
const READS_PER_DRIVE: usize = 16;

/// Where a stream's response is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// Sent (or sending); no final response head yet.
    AwaitingHead,
    /// The final head arrived; the body is coming.
    Body,
    Done,
    Failed(ErrorKind),
}

/// Whether a stream keeps its response body (for a capture).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum KeepBody {
    Never,
    /// Kept (decoded), up to this many bytes.
    Always(usize),
    /// Only a content-encoded body (to count its decoded size); decided by the head.
    IfEncoded,
}

/// One stream's slot. Its buffers keep their capacity from one stream to the next.
pub(super) struct Slot {
    /// 0: the slot is free.
    pub id: u32,
    pub phase: Phase,
    pub status: u16,
    /// The stream's response frames as received (HEADERS, CONTINUATION, DATA), frame
    /// headers included: the wire size, HPACK-compressed.
    pub wire_bytes: u64,
    /// DATA payload bytes, padding excluded: the body as sent (before content decoding).
    pub body_bytes: u64,
    pub first_byte_at: Option<Instant>,
    pub done_at: Option<Instant>,
    /// Whether the exchange captures anything: then fields and body are kept here.
    pub keep_fields: bool,
    keep_body_when: KeepBody,
    /// Whether DATA is kept, once the head is known.
    keep_body: bool,
    /// Response fields, each as name then value; `fields` holds (name end, value end).
    pub field_bytes: Vec<u8>,
    pub fields: Vec<(u32, u32)>,
    /// The body's sink (decoding, and keeping up to a limit); swapped with the capture's.
    pub body: BodySink,
    pub send_window: i64,
    /// Received DATA bytes not yet given back by a WINDOW_UPDATE.
    unacked: u32,
    /// Whether the request body is still being sent (wake on window updates).
    pub sending: bool,
    /// Whether the stream was refused by GOAWAY: the server did not process it.
    pub refused: bool,
    pub waker: Option<Waker>,
}

impl Slot {
    fn new() -> Slot {
        Slot {
            id: 0,
            phase: Phase::AwaitingHead,
            status: 0,
            wire_bytes: 0,
            body_bytes: 0,
            first_byte_at: None,
            done_at: None,
            keep_fields: false,
            keep_body_when: KeepBody::Never,
            keep_body: false,
            field_bytes: Vec::new(),
            fields: Vec::new(),
            body: BodySink::default(),
            send_window: 0,
            unacked: 0,
            sending: false,
            refused: false,
            waker: None,
        }
    }

    fn is_open(&self) -> bool {
        self.id != 0 && matches!(self.phase, Phase::AwaitingHead | Phase::Body)
    }

    fn wake(&mut self) {
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }
}

/// The connection state behind every handle.
pub(super) struct Conn {
    io: Stream,
    tls: bool,
    read_buf: Vec<u8>,
    read_start: usize,
    read_end: usize,
    pub write_buf: Vec<u8>,
    write_pos: usize,
    /// TLS: records written into the session but maybe not yet onto the socket.
    needs_flush: bool,
    /// An exchange that queued its request into an empty write buffer and yielded once so
    /// the other requests of this event-loop turn join the same write; only it flushes.
    pub flush_owner: Option<usize>,
    /// The slot whose exchange last waited on the socket (the one the socket will wake).
    driver: Option<usize>,
    pub slots: Vec<Slot>,
    free: Vec<usize>,
    /// Streams open (counted against the peer's SETTINGS_MAX_CONCURRENT_STREAMS).
    pub active: u32,
    pub next_id: u32,
    pub peer_max_streams: u32,
    peer_initial_window: i64,
    pub peer_max_frame: usize,
    pub send_window: i64,
    /// Our windows (what we announced) and the connection's received-but-not-acked bytes.
    stream_window: u32,
    conn_window: u32,
    conn_unacked: u32,
    pub encoder: Encoder,
    decoder: Decoder,
    /// A header block being assembled from HEADERS and CONTINUATION frames.
    block: Vec<u8>,
    /// The frames of that block as received, frame headers included (its wire size).
    block_wire: u64,
    /// The stream of that block and whether its HEADERS ended the stream.
    continuation: Option<(u32, bool)>,
    got_settings: bool,
    /// When the bytes being processed were read: one clock reading per read, not per frame.
    read_at: Instant,
    /// The last stream id of a GOAWAY the server sent.
    pub goaway: Option<u32>,
    /// Why the connection is unusable, once it is.
    pub failed: Option<ErrorKind>,
    pub exchanges: u64,
    /// Exchanges waiting for a stream under the peer's concurrency limit.
    pub capacity_waiters: Vec<Waker>,
    /// Scratch for lower-casing header names.
    pub scratch: Vec<u8>,
}

impl Conn {
    pub fn new(io: Stream, stream_window: u32, conn_window: u32) -> Conn {
        let tls = io.is_tls();
        Conn {
            io,
            tls,
            read_buf: vec![0; READ_BUFFER],
            read_start: 0,
            read_end: 0,
            write_buf: Vec::with_capacity(4096),
            write_pos: 0,
            needs_flush: false,
            flush_owner: None,
            driver: None,
            slots: Vec::new(),
            free: Vec::new(),
            active: 0,
            next_id: 1,
            peer_max_streams: u32::MAX,
            peer_initial_window: i64::from(frame::DEFAULT_WINDOW),
            peer_max_frame: frame::MAX_FRAME_SIZE,
            send_window: i64::from(frame::DEFAULT_WINDOW),
            stream_window,
            conn_window,
            conn_unacked: 0,
            encoder: Encoder::default(),
            decoder: Decoder::default(),
            block: Vec::new(),
            block_wire: 0,
            continuation: None,
            got_settings: false,
            read_at: Instant::now(),
            goaway: None,
            failed: None,
            exchanges: 0,
            capacity_waiters: Vec::new(),
            scratch: Vec::new(),
        }
    }

    pub fn is_tls(&self) -> bool {
        self.tls
    }

    /// Takes a slot for a new stream with the next id (the caller checked capacity).
    pub fn open_stream(&mut self, keep_fields: bool, keep_body: KeepBody) -> (usize, u32) {
        let index = self.free.pop().unwrap_or_else(|| {
            self.slots.push(Slot::new());
            self.slots.len() - 1
        });
        let id = self.next_id;
        self.next_id += 2;
        self.active += 1;
        let window = self.peer_initial_window;
        let slot = &mut self.slots[index];
        slot.id = id;
        slot.phase = Phase::AwaitingHead;
        slot.status = 0;
        slot.wire_bytes = 0;
        slot.body_bytes = 0;
        slot.first_byte_at = None;
        slot.done_at = None;
        slot.keep_fields = keep_fields;
        slot.keep_body_when = keep_body;
        slot.keep_body = false;
        slot.field_bytes.clear();
        slot.fields.clear();
        match keep_body {
            KeepBody::Always(limit) => slot.body.start(true, limit),
            _ => slot.body.start(false, 0),
        }
        slot.send_window = window;
        slot.unacked = 0;
        slot.sending = false;
        slot.refused = false;
        slot.waker = None;
        (index, id)
    }

    /// Gives a slot back. A stream still open is cancelled (its exchange was dropped, e.g.
    /// by a timeout): RST_STREAM tells the server, and later frames for it are ignored.
    pub fn release(&mut self, index: usize) {
        let slot = &mut self.slots[index];
        if slot.id == 0 {
            return;
        }
        if slot.is_open() {
            frame::write_rst_stream(&mut self.write_buf, slot.id, frame::CANCEL);
            self.stream_closed();
        }
        let slot = &mut self.slots[index];
        slot.id = 0;
        slot.waker = None;
        self.free.push(index);
        if self.flush_owner == Some(index) {
            self.flush_owner = None;
        }
        if self.driver == Some(index) {
            // The socket would wake a task that no longer waits on it: wake one that does.
            self.driver = None;
            if let Some(next) = self.slots.iter_mut().find(|s| s.waker.is_some()) {
                next.wake();
            }
        }
    }

    /// A stream stopped counting against the concurrency limit.
    fn stream_closed(&mut self) {
        self.active = self.active.saturating_sub(1);
        if let Some(waiter) = self.capacity_waiters.pop() {
            waiter.wake();
        }
    }

    fn find(&self, id: u32) -> Option<usize> {
        self.slots.iter().position(|s| s.id == id)
    }

    fn finish(&mut self, index: usize, phase: Phase) {
        let slot = &mut self.slots[index];
        if !slot.is_open() {
            return;
        }
        if phase == Phase::Failed(ErrorKind::H2Protocol) && self.failed.is_none() {
            // A stream-level error: the server still thinks the stream is open.
            frame::write_rst_stream(&mut self.write_buf, slot.id, frame::PROTOCOL_ERROR);
        }
        if phase == Phase::Failed(ErrorKind::BodyTooLarge) && self.failed.is_none() {
            // We stop reading a body past its limit: the server may stop sending it.
            frame::write_rst_stream(&mut self.write_buf, slot.id, frame::CANCEL);
        }
        let slot = &mut self.slots[index];
        slot.phase = phase;
        slot.done_at = Some(self.read_at);
        slot.sending = false;
        slot.wake();
        if phase == Phase::Done {
            self.exchanges += 1;
        }
        self.stream_closed();
    }

    /// Ends the connection: every open stream fails with `kind` (GOAWAY if the server had
    /// announced its end), and so does every later exchange.
    pub fn fail(&mut self, kind: ErrorKind) {
        if self.failed.is_some() {
            return;
        }
        self.read_at = Instant::now();
        let kind = match kind {
            // Prior knowledge sent to a server without h2c: it answers the preface with an
            // HTTP/1.1 error or a close, never with SETTINGS.
            ErrorKind::Reset | ErrorKind::Closed if !self.tls && !self.got_settings => {
                ErrorKind::H2NotOffered
            }
            ErrorKind::Reset | ErrorKind::Closed | ErrorKind::Io if self.goaway.is_some() => {
                ErrorKind::H2GoAway
            }
            kind => kind,
        };
        self.failed = Some(kind);
        for index in 0..self.slots.len() {
            self.finish(index, Phase::Failed(kind));
        }
        for waiter in self.capacity_waiters.drain(..) {
            waiter.wake();
        }
    }

    /// Whether a new stream may open now; registers `cx` to be woken when one closes.
    pub fn poll_capacity(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ErrorKind>> {
        if self.active == 0 {
            // An idle connection has not been read: learn now whether the server closed
            // it or sent GOAWAY meanwhile, while the request is still safe to retry.
            self.drive(cx, None);
        }
        if let Some(kind) = self.failed {
            return Poll::Ready(Err(kind));
        }
        if self.goaway.is_some() || self.next_id > (1 << 31) - 1 {
            return Poll::Ready(Err(ErrorKind::H2GoAway));
        }
        // Until the server's SETTINGS tell its limit, one stream: a burst beyond a limit
        // not yet known would be refused.
        let limit = if self.got_settings {
            self.peer_max_streams
        } else {
            1
        };
        if self.active < limit {
            return Poll::Ready(Ok(()));
        }
        self.capacity_waiters.push(cx.waker().clone());
        Poll::Pending
    }

    /// Moves bytes: writes what is queued (unless another exchange is about to, with more),
    /// reads and processes what arrived, until the socket has nothing more. `me` is the
    /// calling exchange's slot. Failures end the connection (see [`Conn::fail`]).
    pub fn drive(&mut self, cx: &mut Context<'_>, me: Option<usize>) {
        if self.failed.is_some() {
            return;
        }
        for _ in 0..READS_PER_DRIVE {
            if self.flush_owner.is_none() || self.flush_owner == me {
                self.flush_owner = None;
                if let Err(kind) = self.poll_write(cx) {
                    return self.fail(kind);
                }
            }
            if self.read_start == self.read_end {
                self.read_start = 0;
                self.read_end = 0;
            } else if self.read_buf.len() - self.read_end < HEADER_LEN + frame::MAX_FRAME_SIZE {
                // Keep room for a whole frame after the partial one.
                self.read_buf.copy_within(self.read_start..self.read_end, 0);
                self.read_end -= self.read_start;
                self.read_start = 0;
            }
            let mut buf = ReadBuf::new(&mut self.read_buf[self.read_end..]);
            match Pin::new(&mut self.io).poll_read(cx, &mut buf) {
                Poll::Pending => {
                    self.driver = me;
                    return;
                }
                Poll::Ready(Err(e)) => return self.fail(classify_io_error(&e, false)),
                Poll::Ready(Ok(())) if buf.filled().is_empty() => {
                    return self.fail(ErrorKind::Closed);
                }
                Poll::Ready(Ok(())) => {
                    self.read_end += buf.filled().len();
                    self.read_at = Instant::now();
                    if let Err(kind) = self.process() {
                        return self.fail(kind);
                    }
                }
            }
        }
        // Still more to read: come back after the other tasks had their turn.
        if let Err(kind) = self.poll_write(cx) {
            return self.fail(kind);
        }
        self.driver = me;
        cx.waker().wake_by_ref();
    }

    fn poll_write(&mut self, cx: &mut Context<'_>) -> Result<(), ErrorKind> {
        while self.write_pos < self.write_buf.len() {
            match Pin::new(&mut self.io).poll_write(cx, &self.write_buf[self.write_pos..]) {
                Poll::Ready(Ok(0)) => return Err(ErrorKind::Closed),
                Poll::Ready(Ok(n)) => {
                    self.write_pos += n;
                    self.needs_flush = self.tls;
                }
                Poll::Ready(Err(e)) => return Err(classify_io_error(&e, false)),
                Poll::Pending => break,
            }
        }
        if self.write_pos == self.write_buf.len() {
            self.write_buf.clear();
            self.write_pos = 0;
            if self.write_buf.capacity() > WRITE_BUFFER_KEPT {
                self.write_buf = Vec::with_capacity(4096);
            }
        }
        if self.needs_flush {
            match Pin::new(&mut self.io).poll_flush(cx) {
                Poll::Ready(Ok(())) => self.needs_flush = false,
                Poll::Ready(Err(e)) => return Err(classify_io_error(&e, false)),
                Poll::Pending => {}
            }
        }
        Ok(())
    }

    /// Processes every whole frame in the read buffer.
    fn process(&mut self) -> Result<(), ErrorKind> {
        loop {
            let available = &self.read_buf[self.read_start..self.read_end];
            let Some(header) = FrameHeader::parse(available) else {
                return Ok(());
            };
            if !self.got_settings && (header.kind != frame::SETTINGS || header.flags != 0) {
                // The server's preface must be a SETTINGS frame. An HTTP/1.1 answer means
                // the server does not speak h2c; anything else is a broken HTTP/2 server.
                return Err(if !self.tls && available.starts_with(b"HTTP/") {
                    ErrorKind::H2NotOffered
                } else {
                    ErrorKind::H2Protocol
                });
            }
            if header.len > frame::MAX_FRAME_SIZE {
                return Err(ErrorKind::H2Protocol);
            }
            if available.len() < HEADER_LEN + header.len {
                return Ok(());
            }
            let start = self.read_start + HEADER_LEN;
            self.read_start = start + header.len;
            self.frame(header, start)?;
        }
    }

    /// Handles one frame whose payload is `read_buf[start..start + header.len]`.
    fn frame(&mut self, header: FrameHeader, start: usize) -> Result<(), ErrorKind> {
        let end = start + header.len;
        if let Some((stream, _)) = self.continuation {
            if header.kind != frame::CONTINUATION || header.stream != stream {
                return Err(ErrorKind::H2Protocol);
            }
        }
        match header.kind {
            frame::DATA => self.data(header, start, end),
            frame::HEADERS => {
                if header.stream == 0
                    || header.stream.is_multiple_of(2)
                    || header.stream >= self.next_id
                {
                    return Err(ErrorKind::H2Protocol);
                }
                let payload = &self.read_buf[start..end];
                let fragment = frame::unpad(&header, payload).ok_or(ErrorKind::H2Protocol)?;
                self.block.clear();
                self.block.extend_from_slice(fragment);
                self.block_wire = (HEADER_LEN + header.len) as u64;
                let end_stream = header.flags & frame::FLAG_END_STREAM != 0;
                if header.flags & frame::FLAG_END_HEADERS != 0 {
                    self.headers(header.stream, end_stream)
                } else {
                    self.continuation = Some((header.stream, end_stream));
                    Ok(())
                }
            }
            frame::CONTINUATION => {
                let Some((stream, end_stream)) = self.continuation else {
                    return Err(ErrorKind::H2Protocol);
                };
                if self.block.len() + header.len > 256 * 1024 {
                    return Err(ErrorKind::H2Protocol);
                }
                self.block.extend_from_slice(&self.read_buf[start..end]);
                self.block_wire += (HEADER_LEN + header.len) as u64;
                if header.flags & frame::FLAG_END_HEADERS != 0 {
                    self.continuation = None;
                    self.headers(stream, end_stream)
                } else {
                    Ok(())
                }
            }
            frame::PRIORITY => Ok(()),
            frame::RST_STREAM => {
                if header.stream == 0 || header.len != 4 {
                    return Err(ErrorKind::H2Protocol);
                }
                let code = frame::read_u32(&self.read_buf[start..end]);
                let kind = if code == frame::REFUSED_STREAM {
                    ErrorKind::H2StreamLimit
                } else {
                    ErrorKind::H2StreamReset
                };
                if let Some(index) = self.find(header.stream) {
                    self.finish(index, Phase::Failed(kind));
                }
                Ok(())
            }
            frame::SETTINGS => self.settings(header, start, end),
            frame::PUSH_PROMISE => Err(ErrorKind::H2Protocol), // we sent ENABLE_PUSH=0
            frame::PING => {
                if header.stream != 0 || header.len != 8 {
                    return Err(ErrorKind::H2Protocol);
                }
                if header.flags & frame::FLAG_ACK == 0 {
                    frame::write_ping_ack(&mut self.write_buf, &self.read_buf[start..end]);
                }
                Ok(())
            }
            frame::GOAWAY => {
                if header.stream != 0 || header.len < 8 {
                    return Err(ErrorKind::H2Protocol);
                }
                let last = frame::read_u32(&self.read_buf[start..]) & 0x7fff_ffff;
                self.goaway = Some(self.goaway.map_or(last, |seen| seen.min(last)));
                for index in 0..self.slots.len() {
                    if self.slots[index].id > last && self.slots[index].is_open() {
                        self.slots[index].refused = true;
                        self.finish(index, Phase::Failed(ErrorKind::H2GoAway));
                    }
                }
                for waiter in self.capacity_waiters.drain(..) {
                    waiter.wake();
                }
                Ok(())
            }
            frame::WINDOW_UPDATE => {
                if header.len != 4 {
                    return Err(ErrorKind::H2Protocol);
                }
                let increment = i64::from(frame::read_u32(&self.read_buf[start..]) & 0x7fff_ffff);
                if header.stream == 0 {
                    if increment == 0 {
                        return Err(ErrorKind::H2Protocol);
                    }
                    self.send_window += increment;
                    if self.send_window > frame::MAX_WINDOW {
                        return Err(ErrorKind::H2Protocol);
                    }
                    for slot in self.slots.iter_mut().filter(|s| s.sending) {
                        slot.wake();
                    }
                } else if let Some(index) = self.find(header.stream) {
                    let slot = &mut self.slots[index];
                    slot.send_window += increment;
                    if increment == 0 || slot.send_window > frame::MAX_WINDOW {
                        self.finish(index, Phase::Failed(ErrorKind::H2Protocol));
                    } else if slot.sending {
                        slot.wake();
                    }
                }
                Ok(())
            }
            _ => Ok(()), // unknown frame types are ignored (RFC 9113 §4.1)
        }
    }

    fn data(&mut self, header: FrameHeader, start: usize, end: usize) -> Result<(), ErrorKind> {
        if header.stream == 0 {
            return Err(ErrorKind::H2Protocol);
        }
        // The whole payload, padding included, counts against flow control.
        self.conn_unacked += header.len as u32;
        if self.conn_unacked >= self.conn_window / 2 {
            frame::write_window_update(&mut self.write_buf, 0, self.conn_unacked);
            self.conn_unacked = 0;
        }
        let Some(index) = self.find(header.stream) else {
            return Ok(()); // a stream we cancelled
        };
        let payload = &self.read_buf[start..end];
        let Some(data) = frame::unpad(&header, payload) else {
            self.finish(index, Phase::Failed(ErrorKind::H2Protocol));
            return Ok(());
        };
        let slot = &mut self.slots[index];
        if slot.phase != Phase::Body {
            // DATA before the response head (or after the stream ended).
            self.finish(index, Phase::Failed(ErrorKind::H2Protocol));
            return Ok(());
        }
        slot.body_bytes += data.len() as u64;
        slot.wire_bytes += (HEADER_LEN + header.len) as u64;
        if slot.keep_body {
            if let Err(kind) = slot.body.push(data) {
                self.finish(index, Phase::Failed(kind));
                return Ok(());
            }
        }
        if header.flags & frame::FLAG_END_STREAM != 0 {
            self.finish(index, Phase::Done);
        } else {
            slot.unacked += header.len as u32;
            if slot.unacked >= self.stream_window / 2 {
                frame::write_window_update(&mut self.write_buf, slot.id, slot.unacked);
                slot.unacked = 0;
            }
        }
        Ok(())
    }

    /// A complete header block for `stream`: decoded always (the HPACK state is the
    /// connection's), kept when the stream is ours and waiting for it.
    fn headers(&mut self, stream: u32, end_stream: bool) -> Result<(), ErrorKind> {
        let index = self.find(stream).filter(|&i| self.slots[i].is_open());
        let Some(index) = index else {
            return self
                .decoder
                .decode(&self.block, |_, _| {})
                .map_err(|_| ErrorKind::H2Protocol);
        };
        let slot = &mut self.slots[index];
        slot.wire_bytes += self.block_wire;
        let is_head = slot.phase == Phase::AwaitingHead;
        let mut status = 0u16;
        let mut bad_status = false;
        let mut encoded = false;
        let mark_fields = slot.field_bytes.len();
        let mark_spans = slot.fields.len();
        let decoded = self.decoder.decode(&self.block, |name, value| {
            if !is_head {
                return; // trailers
            }
            if name == b":status" {
                match value {
                    [a @ b'1'..=b'9', b @ b'0'..=b'9', c @ b'0'..=b'9'] => {
                        status = u16::from(a - b'0') * 100
                            + u16::from(b - b'0') * 10
                            + u16::from(c - b'0');
                    }
                    _ => bad_status = true,
                }
                return;
            }
            if name.first() == Some(&b':') {
                return;
            }
            if name == b"content-encoding" {
                let coding = ContentCoding::parse(value);
                encoded = coding != ContentCoding::Identity;
                slot.body.set_coding(coding);
            }
            if slot.keep_fields {
                slot.field_bytes.extend_from_slice(name);
                let name_end = slot.field_bytes.len() as u32;
                slot.field_bytes.extend_from_slice(value);
                slot.fields.push((name_end, slot.field_bytes.len() as u32));
            }
        });
        decoded.map_err(|_| ErrorKind::H2Protocol)?;
        if !is_head {
            if end_stream {
                self.finish(index, Phase::Done);
            } else {
                self.finish(index, Phase::Failed(ErrorKind::H2Protocol));
            }
            return Ok(());
        }
        if bad_status || status == 0 {
            self.finish(index, Phase::Failed(ErrorKind::H2Protocol));
            return Ok(());
        }
        if status < 200 {
            // An interim response: the final one follows.
            slot.field_bytes.truncate(mark_fields);
            slot.fields.truncate(mark_spans);
            return if end_stream {
                self.finish(index, Phase::Failed(ErrorKind::H2Protocol));
                Ok(())
            } else {
                Ok(())
            };
        }
        slot.status = status;
        slot.keep_body = match slot.keep_body_when {
            KeepBody::Never => false,
            KeepBody::Always(_) => true,
            KeepBody::IfEncoded => encoded,
        };
        slot.first_byte_at = Some(self.read_at);
        slot.phase = Phase::Body;
        if end_stream {
            self.finish(index, Phase::Done);
        }
        Ok(())
    }

    fn settings(&mut self, header: FrameHeader, start: usize, end: usize) -> Result<(), ErrorKind> {
        if header.stream != 0 {
            return Err(ErrorKind::H2Protocol);
        }
        if header.flags & frame::FLAG_ACK != 0 {
            return if header.len == 0 {
                Ok(())
            } else {
                Err(ErrorKind::H2Protocol)
            };
        }
        if !header.len.is_multiple_of(6) {
            return Err(ErrorKind::H2Protocol);
        }
        self.got_settings = true;
        let mut at = start;
        while at < end {
            let b = &self.read_buf[at..at + 6];
            let id = u16::from_be_bytes([b[0], b[1]]);
            let value = frame::read_u32(&b[2..]);
            at += 6;
            match id {
                frame::SETTINGS_HEADER_TABLE_SIZE => self.encoder.set_max_size(value as usize),
                frame::SETTINGS_MAX_CONCURRENT_STREAMS => self.peer_max_streams = value,
                frame::SETTINGS_INITIAL_WINDOW_SIZE => {
                    let value = i64::from(value);
                    if value > frame::MAX_WINDOW {
                        return Err(ErrorKind::H2Protocol);
                    }
                    let delta = value - self.peer_initial_window;
                    self.peer_initial_window = value;
                    for slot in self.slots.iter_mut().filter(|s| s.is_open()) {
                        slot.send_window += delta;
                        if slot.sending {
                            slot.wake();
                        }
                    }
                }
                frame::SETTINGS_MAX_FRAME_SIZE => {
                    if !(frame::MAX_FRAME_SIZE..=(1 << 24) - 1).contains(&(value as usize)) {
                        return Err(ErrorKind::H2Protocol);
                    }
                    self.peer_max_frame = value as usize;
                }
                _ => {}
            }
        }
        frame::write_settings_ack(&mut self.write_buf);
        for waiter in self.capacity_waiters.drain(..) {
            waiter.wake();
        }
        Ok(())
    }
}

/// The client preface and our SETTINGS (push off, our window sizes).
pub(super) fn preface(out: &mut Vec<u8>, stream_window: Option<u32>, conn_window: Option<u32>) {
    out.extend_from_slice(frame::PREFACE);
    let mut settings = vec![(frame::SETTINGS_ENABLE_PUSH, 0)];
    if let Some(size) = stream_window {
        settings.push((frame::SETTINGS_INITIAL_WINDOW_SIZE, size));
    }
    frame::write_settings(out, &settings);
    if let Some(size) = conn_window.filter(|&s| s > frame::DEFAULT_WINDOW) {
        frame::write_window_update(out, 0, size - frame::DEFAULT_WINDOW);
    }
}
