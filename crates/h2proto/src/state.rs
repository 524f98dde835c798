//! The state of one HTTP/2 client connection, sans IO: bytes the peer sent go in
//! (`read_space` + `receive`), bytes to send come out (`output` + `wrote`), and what changed
//! is reported as events (`events`: streams to wake, stream capacity freed). Stream slots
//! are reused, so a request allocates nothing once warm; flow control, HPACK state and frame
//! processing live here. No socket, no runtime, no clock: the caller passes the time a read
//! happened.

use crate::frame::{self, FrameHeader, HEADER_LEN};
use crate::hpack::Encoder;
use crate::hpack_decoder::Decoder;
use barrage_body::{BodySink, ContentCoding, Pushed, TURN_BUDGET};
use barrage_metrics::ErrorKind;
use std::time::Instant;

/// The read buffer's size: a whole frame of the largest size we accept fits, with room to
/// spare for the next ones (kept small: a pool may hold thousands of connections).
const READ_BUFFER: usize = 20 * 1024;
/// A write buffer grown past this (large request bodies) is given back once flushed.
const WRITE_BUFFER_KEPT: usize = 256 * 1024;

/// Where a stream's response is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Sent (or sending); no final response head yet.
    AwaitingHead,
    /// The final head arrived; the body is coming.
    Body,
    Done,
    Failed(ErrorKind),
}

/// Whether a stream keeps its response body (for a capture).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeepBody {
    Never,
    /// Kept (decoded), up to this many bytes.
    Always(usize),
    /// Only a content-encoded body (to count its decoded size); decided by the head.
    IfEncoded,
}

/// One stream's slot. Its buffers keep their capacity from one stream to the next.
#[derive(Debug)]
pub struct Slot {
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
    /// The body's sink (decoding, and keeping up to a limit); the driver swaps it with the
    /// capture's.
    pub body: BodySink,
    pub send_window: i64,
    /// Received DATA bytes not yet given back by a WINDOW_UPDATE.
    unacked: u32,
    /// Whether the request body is still being sent (wake on window updates).
    pub sending: bool,
    /// Whether the stream was refused by GOAWAY: the server did not process it.
    pub refused: bool,
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
        }
    }

    #[inline]
    pub fn is_open(&self) -> bool {
        self.id != 0 && matches!(self.phase, Phase::AwaitingHead | Phase::Body)
    }

    /// The response's header fields as (name, value) pairs, in order.
    pub fn fields(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        let mut name_start = 0;
        self.fields.iter().map(move |&(name_end, value_end)| {
            let name = &self.field_bytes[name_start as usize..name_end as usize];
            let value = &self.field_bytes[name_end as usize..value_end as usize];
            name_start = value_end;
            (name, value)
        })
    }
}

/// What changed for the driver of the connection to act on (wake waiting exchanges).
#[derive(Debug, Default)]
pub struct Events {
    /// Slots whose stream ended or whose send window opened (may repeat).
    pub streams: Vec<usize>,
    /// Streams that stopped counting against the peer's limit: one waiter each may open.
    pub capacity_freed: usize,
    /// Everything waiting for capacity should look again (SETTINGS, GOAWAY, failure).
    pub capacity_all: bool,
}

/// A DATA frame whose body decoding stopped at the turn's budget: the rest of its payload
/// (`read_buf[from..to]`, before `read_start`) waits for [`Connection::resume`].
#[derive(Debug, Clone, Copy)]
struct PausedData {
    index: usize,
    /// The stream it is for: the slot may be released (and reused) meanwhile.
    id: u32,
    from: usize,
    to: usize,
    end_stream: bool,
}

/// An HTTP/2 client connection's protocol state.
pub struct Connection {
    https: bool,
    read_buf: Vec<u8>,
    read_start: usize,
    read_end: usize,
    pub(crate) write_buf: Vec<u8>,
    write_pos: usize,
    slots: Vec<Slot>,
    free: Vec<usize>,
    /// Streams open (counted against the peer's SETTINGS_MAX_CONCURRENT_STREAMS).
    active: u32,
    next_id: u32,
    peer_max_streams: u32,
    peer_initial_window: i64,
    pub(crate) peer_max_frame: usize,
    send_window: i64,
    /// Our windows (what we announced) and the connection's received-but-not-acked bytes.
    stream_window: u32,
    conn_window: u32,
    conn_unacked: u32,
    pub(crate) encoder: Encoder,
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
    goaway: Option<u32>,
    /// Why the connection is unusable, once it is.
    failed: Option<ErrorKind>,
    exchanges: u64,
    events: Events,
    /// Decoded body output the connection may still produce in this turn (all streams
    /// together); [`Connection::new_turn`] renews it.
    decode_budget: u64,
    /// Set when the budget ran out inside a DATA frame: frames after it wait.
    paused: Option<PausedData>,
    /// Scratch for lower-casing header names.
    pub(crate) scratch: Vec<u8>,
}

impl Connection {
    /// A connection whose client preface and SETTINGS (push off, our window sizes) are
    /// already queued as output. `https` names the `:scheme` of requests.
    pub fn new(https: bool, stream_window: Option<u32>, conn_window: Option<u32>) -> Connection {
        let mut write_buf = Vec::with_capacity(4096);
        preface(&mut write_buf, stream_window, conn_window);
        let stream_window = stream_window.unwrap_or(frame::DEFAULT_WINDOW);
        // The connection window starts at the default and can only grow.
        let conn_window = conn_window.unwrap_or(0).max(frame::DEFAULT_WINDOW);
        Connection {
            https,
            read_buf: vec![0; READ_BUFFER],
            read_start: 0,
            read_end: 0,
            write_buf,
            write_pos: 0,
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
            events: Events::default(),
            decode_budget: TURN_BUDGET,
            paused: None,
            scratch: Vec::new(),
        }
    }

    #[inline]
    pub fn is_https(&self) -> bool {
        self.https
    }

    /// Streams completed on this connection.
    #[inline]
    pub fn exchanges(&self) -> u64 {
        self.exchanges
    }

    /// Streams open now.
    #[inline]
    pub fn active(&self) -> u32 {
        self.active
    }

    /// Why the connection is unusable, once it is.
    #[inline]
    pub fn failed(&self) -> Option<ErrorKind> {
        self.failed
    }

    /// The last stream id of a GOAWAY the server sent.
    #[inline]
    pub fn goaway(&self) -> Option<u32> {
        self.goaway
    }

    #[inline]
    pub fn slot(&self, index: usize) -> &Slot {
        &self.slots[index]
    }

    #[inline]
    pub fn slot_mut(&mut self, index: usize) -> &mut Slot {
        &mut self.slots[index]
    }

    /// How many slots exist (indices reported in events are below this).
    #[inline]
    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// What changed since the last call; the caller wakes what waits on it.
    #[inline]
    pub fn events(&mut self) -> &mut Events {
        &mut self.events
    }

    /// Whether nothing is queued to send.
    #[inline]
    pub fn output_is_empty(&self) -> bool {
        self.write_pos == self.write_buf.len()
    }

    /// Bytes waiting to be sent.
    #[inline]
    pub fn output(&self) -> &[u8] {
        &self.write_buf[self.write_pos..]
    }

    /// `n` bytes of [`Connection::output`] were sent.
    #[inline]
    pub fn wrote(&mut self, n: usize) {
        self.write_pos = (self.write_pos + n).min(self.write_buf.len());
        if self.write_pos == self.write_buf.len() {
            self.write_buf.clear();
            self.write_pos = 0;
            if self.write_buf.capacity() > WRITE_BUFFER_KEPT {
                self.write_buf = Vec::with_capacity(4096);
            }
        }
    }

    /// Room to read into (at least a whole frame's worth); then call
    /// [`Connection::receive`] with how much was read. Not while [`Connection::decode_paused`]
    /// (resume first): the paused frame's payload is kept, and the room may be short.
    #[inline]
    pub fn read_space(&mut self) -> &mut [u8] {
        let keep_from = self.paused.map_or(self.read_start, |p| p.from);
        if keep_from == self.read_end {
            self.read_start = 0;
            self.read_end = 0;
        } else if self.read_buf.len() - self.read_end < HEADER_LEN + frame::MAX_FRAME_SIZE {
            // Keep room for a whole frame after the partial one.
            self.read_buf.copy_within(keep_from..self.read_end, 0);
            self.read_end -= keep_from;
            self.read_start -= keep_from;
            if let Some(paused) = self.paused.as_mut() {
                paused.from -= keep_from;
                paused.to -= keep_from;
            }
        }
        &mut self.read_buf[self.read_end..]
    }

    /// `n` bytes were read into [`Connection::read_space`] at `now`: processes every whole
    /// frame, until the turn's decode budget runs out (see [`Connection::decode_paused`]).
    /// A connection error ends the connection (see [`Connection::fail`]).
    pub fn receive(&mut self, n: usize, now: Instant) {
        if self.failed.is_some() {
            return;
        }
        self.read_end = (self.read_end + n).min(self.read_buf.len());
        if self.paused.is_some() {
            return; // processed after the paused frame, by `resume`
        }
        self.read_at = now;
        if let Err(kind) = self.process() {
            self.fail(kind, now);
        }
    }

    /// A new event-loop turn: the decode budget is renewed ([`TURN_BUDGET`] bytes of decoded
    /// body output for all the connection's streams together).
    #[inline]
    pub fn new_turn(&mut self) {
        self.decode_budget = TURN_BUDGET;
    }

    /// Whether a body's decoding stopped at the turn's budget, with the rest of its DATA
    /// frame (and the frames after it) waiting: the driver gives the thread's other tasks a
    /// turn, then calls [`Connection::new_turn`] and [`Connection::resume`] before reading more.
    #[inline]
    pub fn decode_paused(&self) -> bool {
        self.paused.is_some()
    }

    /// Goes on where the decode budget stopped: the paused DATA frame's body (dropped if its
    /// stream was cancelled meanwhile), then the frames after it, at `now`.
    pub fn resume(&mut self, now: Instant) {
        let Some(paused) = self.paused.take() else {
            return;
        };
        if self.failed.is_some() {
            return;
        }
        self.read_at = now;
        let slot = &self.slots[paused.index];
        if slot.id == paused.id && slot.phase == Phase::Body {
            self.push_body(paused);
        }
        if self.paused.is_none() {
            if let Err(kind) = self.process() {
                self.fail(kind, now);
            }
        }
    }

    /// Feeds `bytes` through [`Connection::read_space`] and [`Connection::receive`], each
    /// paused decode resumed at once (a turn each): the whole-buffer form (tests, fuzzing).
    pub fn receive_all(&mut self, mut bytes: &[u8], now: Instant) {
        while !bytes.is_empty() && self.failed.is_none() {
            while self.paused.is_some() {
                self.new_turn();
                self.resume(now);
            }
            let space = self.read_space();
            let n = space.len().min(bytes.len());
            space[..n].copy_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            self.receive(n, now);
        }
        while self.paused.is_some() {
            self.new_turn();
            self.resume(now);
        }
    }

    /// Takes a slot for a new stream with the next id (the caller checked capacity).
    pub(crate) fn open_stream(&mut self, keep_fields: bool, keep_body: KeepBody) -> (usize, u32) {
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
        self.slots[index].id = 0;
        self.free.push(index);
    }

    /// Stops sending a request body the response made moot (RST_STREAM NO_ERROR).
    pub fn stop_sending(&mut self, stream: u32) {
        frame::write_rst_stream(&mut self.write_buf, stream, 0);
    }

    /// A stream stopped counting against the concurrency limit.
    fn stream_closed(&mut self) {
        self.active = self.active.saturating_sub(1);
        self.events.capacity_freed += 1;
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
        self.events.streams.push(index);
        if phase == Phase::Done {
            self.exchanges += 1;
        }
        self.stream_closed();
    }

    /// Ends the connection: every open stream fails with `kind` (GOAWAY if the server had
    /// announced its end), and so does every later exchange.
    pub fn fail(&mut self, kind: ErrorKind, now: Instant) {
        if self.failed.is_some() {
            return;
        }
        self.read_at = now;
        self.paused = None;
        let kind = match kind {
            // Prior knowledge sent to a server without h2c: it answers the preface with an
            // HTTP/1.1 error or a close, never with SETTINGS.
            ErrorKind::Reset | ErrorKind::Closed if !self.https && !self.got_settings => {
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
        self.events.capacity_all = true;
    }

    /// Whether a new stream may open now (`Ok(false)`: wait for a stream to close, see
    /// [`Events::capacity_freed`]); an error when the connection cannot take more.
    #[inline]
    pub fn can_open(&self) -> Result<bool, ErrorKind> {
        if let Some(kind) = self.failed {
            return Err(kind);
        }
        if self.goaway.is_some() || self.next_id > (1 << 31) - 1 {
            return Err(ErrorKind::H2GoAway);
        }
        // Until the server's SETTINGS tell its limit, one stream: a burst beyond a limit
        // not yet known would be refused.
        let limit = if self.got_settings {
            self.peer_max_streams
        } else {
            1
        };
        Ok(self.active < limit)
    }

    /// Queues as much of a request body as the flow-control windows allow (`sent` bytes of
    /// `body` are already queued); returns the wire size of the DATA frames queued.
    pub fn send_body(&mut self, slot: usize, body: &[u8], sent: &mut usize) -> u64 {
        let id = self.slots[slot].id;
        let mut wire = 0;
        while *sent < body.len() {
            let window = self.send_window.min(self.slots[slot].send_window);
            let n = (body.len() - *sent)
                .min(self.peer_max_frame)
                .min(window.max(0) as usize);
            if n == 0 {
                self.slots[slot].sending = true;
                return wire;
            }
            let end = *sent + n == body.len();
            frame::write_data(&mut self.write_buf, id, &body[*sent..*sent + n], end);
            self.send_window -= n as i64;
            self.slots[slot].send_window -= n as i64;
            *sent += n;
            wire += (frame::HEADER_LEN + n) as u64;
        }
        self.slots[slot].sending = false;
        wire
    }

    /// Processes every whole frame in the read buffer, until a body's decoding pauses.
    fn process(&mut self) -> Result<(), ErrorKind> {
        while self.paused.is_none() {
            let available = &self.read_buf[self.read_start..self.read_end];
            let Some(header) = FrameHeader::parse(available) else {
                return Ok(());
            };
            if !self.got_settings && (header.kind != frame::SETTINGS || header.flags != 0) {
                // The server's preface must be a SETTINGS frame. An HTTP/1.1 answer means
                // the server does not speak h2c; anything else is a broken HTTP/2 server.
                return Err(if !self.https && available.starts_with(b"HTTP/") {
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
        Ok(())
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
                self.events.capacity_all = true;
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
                    for (index, slot) in self.slots.iter().enumerate() {
                        if slot.sending {
                            self.events.streams.push(index);
                        }
                    }
                } else if let Some(index) = self.find(header.stream) {
                    let slot = &mut self.slots[index];
                    slot.send_window += increment;
                    if increment == 0 || slot.send_window > frame::MAX_WINDOW {
                        self.finish(index, Phase::Failed(ErrorKind::H2Protocol));
                    } else if slot.sending {
                        self.events.streams.push(index);
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
        // Where the data lies in the read buffer (padding excluded).
        let from = start + (data.as_ptr() as usize - payload.as_ptr() as usize);
        let to = from + data.len();
        let slot = &mut self.slots[index];
        if slot.phase != Phase::Body {
            // DATA before the response head (or after the stream ended).
            self.finish(index, Phase::Failed(ErrorKind::H2Protocol));
            return Ok(());
        }
        slot.body_bytes += data.len() as u64;
        slot.wire_bytes += (HEADER_LEN + header.len) as u64;
        let end_stream = header.flags & frame::FLAG_END_STREAM != 0;
        if !end_stream {
            slot.unacked += header.len as u32;
            if slot.unacked >= self.stream_window / 2 {
                frame::write_window_update(&mut self.write_buf, slot.id, slot.unacked);
                slot.unacked = 0;
            }
        }
        let id = slot.id;
        if slot.keep_body {
            self.push_body(PausedData {
                index,
                id,
                from,
                to,
                end_stream,
            });
        } else if end_stream {
            self.finish(index, Phase::Done);
        }
        Ok(())
    }

    /// Hands `data`'s payload to its stream's body within the turn's decode budget; ends the
    /// stream after its last DATA, or pauses the connection where the budget ran out.
    fn push_body(&mut self, data: PausedData) {
        let slot = &mut self.slots[data.index];
        let pushed = slot
            .body
            .push(&self.read_buf[data.from..data.to], &mut self.decode_budget);
        match pushed {
            Err(kind) => self.finish(data.index, Phase::Failed(kind)),
            Ok(Pushed::Paused(taken)) => {
                self.paused = Some(PausedData {
                    from: data.from + taken,
                    ..data
                });
            }
            Ok(Pushed::All) if data.end_stream => self.finish(data.index, Phase::Done),
            Ok(Pushed::All) => {}
        }
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
                    for (index, slot) in self.slots.iter_mut().enumerate() {
                        if slot.is_open() {
                            slot.send_window += delta;
                            if slot.sending {
                                self.events.streams.push(index);
                            }
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
        self.events.capacity_all = true;
        Ok(())
    }
}

/// The client preface and our SETTINGS (push off, our window sizes).
fn preface(out: &mut Vec<u8>, stream_window: Option<u32>, conn_window: Option<u32>) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hpack::Indexing;

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        frame::write_header(&mut out, payload.len(), kind, flags, stream);
        out.extend_from_slice(payload);
        out
    }

    fn status_block(status: &[u8]) -> Vec<u8> {
        let mut block = Vec::new();
        Encoder::default().encode(b":status", status, Indexing::Index, &mut block);
        block
    }

    const REQUEST: &[u8] = b"GET /a HTTP/1.1\r\nHost: example\r\n\r\n";

    #[test]
    fn a_response_fed_as_bytes_completes_its_stream_and_reports_it() {
        let mut conn = Connection::new(false, None, None);
        assert!(conn.output().starts_with(frame::PREFACE));
        conn.wrote(conn.output().len());
        assert_eq!(conn.can_open(), Ok(true));
        let started = conn
            .start_stream(REQUEST, true, KeepBody::Always(1 << 20))
            .unwrap();
        assert_eq!(started.id, 1);
        assert!(!conn.output_is_empty());
        let mut input = frame(frame::SETTINGS, 0, 0, &[]);
        input.extend(frame(
            frame::HEADERS,
            frame::FLAG_END_HEADERS,
            1,
            &status_block(b"200"),
        ));
        input.extend(frame(frame::DATA, frame::FLAG_END_STREAM, 1, b"hello"));
        let now = Instant::now();
        conn.receive_all(&input, now);
        let slot = conn.slot(started.slot);
        assert_eq!(slot.phase, Phase::Done);
        assert_eq!(slot.status, 200);
        assert_eq!(slot.body.body(), Some(&b"hello"[..]));
        assert_eq!(slot.done_at, Some(now));
        assert_eq!(conn.events().streams, vec![started.slot]);
        assert_eq!(conn.exchanges(), 1);
        conn.release(started.slot);
        assert_eq!(conn.active(), 0);
    }

    #[test]
    fn garbage_instead_of_settings_fails_the_connection_and_its_streams() {
        let mut conn = Connection::new(true, None, None);
        let started = conn.start_stream(REQUEST, false, KeepBody::Never).unwrap();
        conn.receive_all(b"HTTP/1.1 400 Bad Request\r\n\r\n", Instant::now());
        assert_eq!(conn.failed(), Some(ErrorKind::H2Protocol));
        assert_eq!(
            conn.slot(started.slot).phase,
            Phase::Failed(ErrorKind::H2Protocol)
        );
        assert!(conn.events().capacity_all);
        assert_eq!(conn.can_open(), Err(ErrorKind::H2Protocol));
    }

    /// A gzip body that decodes to `size` zero bytes (about 1000:1, one DATA frame).
    fn bomb(size: usize) -> Vec<u8> {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(&vec![0u8; size]).unwrap();
        e.finish().unwrap()
    }

    /// Two streams' heads (the first gzip-encoded), a bomb of `size` for the first and a
    /// small body for the second after it, as one read.
    fn bomb_then_small(size: usize) -> (Connection, usize, usize, Vec<u8>) {
        let mut conn = Connection::new(false, None, None);
        conn.wrote(conn.output().len());
        let first = conn
            .start_stream(REQUEST, true, KeepBody::IfEncoded)
            .unwrap();
        let mut input = frame(frame::SETTINGS, 0, 0, &[]);
        conn.receive_all(&input, Instant::now());
        let second = conn
            .start_stream(REQUEST, true, KeepBody::Always(1 << 20))
            .unwrap();
        let mut gzip_head = status_block(b"200");
        Encoder::default().encode(
            b"content-encoding",
            b"gzip",
            Indexing::Never,
            &mut gzip_head,
        );
        input = frame(frame::HEADERS, frame::FLAG_END_HEADERS, 1, &gzip_head);
        input.extend(frame(
            frame::HEADERS,
            frame::FLAG_END_HEADERS,
            3,
            &status_block(b"200"),
        ));
        let bomb = bomb(size);
        assert!(
            bomb.len() <= frame::MAX_FRAME_SIZE,
            "one frame: {}",
            bomb.len()
        );
        input.extend(frame(frame::DATA, frame::FLAG_END_STREAM, 1, &bomb));
        input.extend(frame(frame::DATA, frame::FLAG_END_STREAM, 3, b"after"));
        (conn, first.slot, second.slot, input)
    }

    /// Reads `input` in one read, as the driver does.
    fn read(conn: &mut Connection, input: &[u8]) {
        let space = conn.read_space();
        assert!(space.len() >= input.len());
        space[..input.len()].copy_from_slice(input);
        conn.receive(input.len(), Instant::now());
    }

    #[test]
    fn a_bomb_frame_is_decoded_over_turns_and_the_frames_after_it_wait() {
        const SIZE: usize = 8 << 20;
        let (mut conn, first, second, input) = bomb_then_small(SIZE);
        conn.new_turn();
        read(&mut conn, &input);
        let most_per_turn = TURN_BUDGET + 8 * 1024;
        let mut turns = 1;
        let mut largest = conn.slot(first).body.decoded_so_far();
        while conn.decode_paused() {
            // The frames after the paused one wait, in order.
            assert_eq!(conn.slot(second).phase, Phase::Body);
            assert_eq!(conn.slot(first).phase, Phase::Body);
            let before = conn.slot(first).body.decoded_so_far();
            conn.new_turn();
            conn.resume(Instant::now());
            largest = largest.max(conn.slot(first).body.decoded_so_far() - before);
            turns += 1;
        }
        assert!(
            largest <= most_per_turn,
            "{largest} bytes decoded in one turn"
        );
        assert!(turns as u64 >= SIZE as u64 / most_per_turn, "{turns} turns");
        assert_eq!(conn.slot(first).phase, Phase::Done);
        assert_eq!(conn.slot(first).body.decoded_len(), Some(SIZE as u64));
        assert_eq!(conn.slot(second).phase, Phase::Done);
        assert_eq!(conn.slot(second).body.body(), Some(&b"after"[..]));
    }

    #[test]
    fn a_stream_cancelled_while_its_decoding_waits_drops_the_rest_and_the_connection_goes_on() {
        let (mut conn, first, second, input) = bomb_then_small(8 << 20);
        conn.new_turn();
        read(&mut conn, &input);
        assert!(conn.decode_paused());
        // Its exchange timed out.
        conn.wrote(conn.output().len());
        conn.release(first);
        assert!(!conn.output_is_empty(), "RST_STREAM queued");
        conn.new_turn();
        conn.resume(Instant::now());
        assert!(!conn.decode_paused());
        assert_eq!(conn.slot(second).phase, Phase::Done);
        assert_eq!(conn.slot(second).body.body(), Some(&b"after"[..]));
        assert_eq!(conn.failed(), None);
        // The released slot serves the next stream cleanly.
        let next = conn.start_stream(REQUEST, true, KeepBody::Never).unwrap();
        assert_eq!(next.slot, first);
        let mut reply = frame(
            frame::HEADERS,
            frame::FLAG_END_HEADERS,
            next.id,
            &status_block(b"204"),
        );
        reply.extend(frame(frame::DATA, frame::FLAG_END_STREAM, next.id, b""));
        conn.receive_all(&reply, Instant::now());
        assert_eq!(conn.slot(next.slot).phase, Phase::Done);
        assert_eq!(conn.slot(next.slot).status, 204);
    }
}
