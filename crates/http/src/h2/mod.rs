//! One HTTP/2 connection (h2c by prior knowledge or h2 negotiated over TLS) on barrage's own
//! lean codec: BENCHMARKS.md ("HTTP/2 and TLS against h2load") shows the `h2` crate was most
//! of the client's cost. The protocol (frames, HPACK, streams, flow control) is the sans-IO
//! crate `barrage-h2proto`; this module drives it over a socket. Requests arrive as the same
//! HTTP/1.1 bytes the HTTP/1.1 path writes, so every request source works over both
//! protocols. Handles are cheap clones sharing one single-threaded state (`connection.rs`:
//! the socket, the protocol state, the waiting exchanges). Requests of the handles queued in
//! one event-loop turn leave in one write.

mod connection;
#[cfg(test)]
mod tests;

use crate::capture::Capture;
use crate::classify::classify_io_error;
use crate::connection::Exchange;
use crate::stream::Stream;
use barrage_h2proto::{Connection as Protocol, KeepBody, Phase};
use barrage_metrics::ErrorKind;
use connection::Conn;
use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::rc::{Rc, Weak};
use std::task::Poll;
use std::time::Instant;
use tokio::io::AsyncWriteExt;

/// HTTP/2 settings the client announces; `None` keeps the protocol default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct H2Settings {
    pub initial_window_size: Option<u32>,
    pub initial_connection_window_size: Option<u32>,
}

/// The identity of an HTTP/2 connection; equal for every handle on the same connection.
/// Holds no reference on the connection's state (it closes when the last handle goes).
#[derive(Debug, Clone)]
pub struct H2Id(Weak<RefCell<Conn>>);

impl PartialEq for H2Id {
    fn eq(&self, other: &H2Id) -> bool {
        Weak::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for H2Id {}

/// A handle on an HTTP/2 connection. Cloning it gives another handle on the same
/// connection (streams multiplex); the connection closes when every handle is gone.
/// Single-threaded: handles live on the worker thread that opened the connection.
#[derive(Clone)]
pub struct H2Connection {
    shared: Rc<RefCell<Conn>>,
    /// Whether any of the last exchange's response arrived; a failure before that (a
    /// connection the server closed or went away from) is safe to retry.
    response_started: bool,
}

/// Frees an exchange's stream slot however the exchange ends (a dropped exchange — a
/// timeout — cancels its stream).
struct StreamGuard<'a> {
    shared: &'a RefCell<Conn>,
    slot: usize,
    /// Where the stream's response bytes are added when it ends (also when dropped).
    received: &'a Cell<u64>,
}

impl Drop for StreamGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut conn) = self.shared.try_borrow_mut() {
            let slot = conn.proto.slot(self.slot);
            if slot.id != 0 {
                self.received.set(self.received.get() + slot.wire_bytes);
            }
            conn.release(self.slot);
        }
    }
}

impl H2Connection {
    /// Sends the connection preface and our SETTINGS over `stream`. The server's SETTINGS
    /// are read with the first exchange (no round trip here).
    pub async fn handshake(
        mut stream: Stream,
        settings: &H2Settings,
    ) -> Result<H2Connection, ErrorKind> {
        let mut proto = Protocol::new(
            stream.is_tls(),
            settings.initial_window_size,
            settings.initial_connection_window_size,
        );
        stream
            .write_all(proto.output())
            .await
            .map_err(|e| classify_io_error(&e, false))?;
        proto.wrote(proto.output().len());
        stream
            .flush()
            .await
            .map_err(|e| classify_io_error(&e, false))?;
        Ok(H2Connection {
            shared: Rc::new(RefCell::new(Conn::new(stream, proto))),
            response_started: false,
        })
    }

    /// Exchanges completed on this connection (by any handle).
    pub fn exchanges(&self) -> u64 {
        self.shared.borrow().proto.exchanges()
    }

    /// Identifies the connection behind this handle.
    pub fn id(&self) -> H2Id {
        H2Id(Rc::downgrade(&self.shared))
    }

    /// Whether this handle is on the connection `id` names.
    pub fn is(&self, id: &H2Id) -> bool {
        std::ptr::eq(Rc::as_ptr(&self.shared), id.0.as_ptr())
    }

    pub fn response_started(&self) -> bool {
        self.response_started
    }

    /// Sends `request` (an encoded HTTP/1.1 request) on a new stream and reads the whole
    /// response. Byte counts are the stream's frames on the wire (see [`Exchange`]); the
    /// body also as its DATA payload.
    pub async fn exchange(
        &mut self,
        request: &[u8],
        expects_body: bool,
        capture: Option<&mut Capture<'_>>,
    ) -> Result<Exchange, ErrorKind> {
        self.exchange_counted(request, expects_body, capture, &Cell::new(0))
            .await
    }

    /// [`exchange`](Self::exchange), adding the stream's response bytes to `received` when
    /// it ends, also when the caller drops the exchange (its timeout).
    pub async fn exchange_counted(
        &mut self,
        request: &[u8],
        expects_body: bool,
        mut capture: Option<&mut Capture<'_>>,
        received: &Cell<u64>,
    ) -> Result<Exchange, ErrorKind> {
        self.response_started = false;
        if let Some(capture) = capture.as_deref_mut() {
            capture.start();
        }
        let (keep_fields, keep_body) = match capture.as_deref() {
            Some(c) if expects_body && c.body => (true, KeepBody::Always(c.max_body)),
            Some(c) if expects_body && c.encoded_body => (true, KeepBody::IfEncoded),
            Some(_) => (true, KeepBody::Never),
            None => (false, KeepBody::Never),
        };
        poll_fn(|cx| self.shared.borrow_mut().poll_capacity(cx)).await?;
        // Other handles may queue requests in this turn too: then the first one to queue
        // yields once before writing, and the rest join its write.
        let shared_by_others = Rc::strong_count(&self.shared) > 1;
        let (started, mut defer) = {
            let mut conn = self.shared.borrow_mut();
            let was_empty = conn.proto.output_is_empty();
            let started = conn.proto.start_stream(request, keep_fields, keep_body)?;
            let defer = shared_by_others && was_empty && conn.flush_owner.is_none();
            if defer {
                conn.flush_owner = Some(started.slot);
            }
            (started, defer)
        };
        let _guard = StreamGuard {
            shared: &self.shared,
            slot: started.slot,
            received,
        };
        let body = &request[started.body_start..];
        let mut sent = 0;
        let mut body_wire = 0;
        let mut written_at = body.is_empty().then(Instant::now);
        let phase = poll_fn(|cx| {
            let mut conn = self.shared.borrow_mut();
            let conn = &mut *conn;
            let open = conn.proto.slot(started.slot).is_open();
            if open && sent < body.len() {
                body_wire += conn.proto.send_body(started.slot, body, &mut sent);
                if sent == body.len() {
                    written_at = Some(Instant::now());
                }
            }
            if defer {
                defer = false;
                conn.register(started.slot, cx);
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            if conn.proto.slot(started.slot).is_open() {
                conn.drive(cx, Some(started.slot));
            }
            match conn.proto.slot(started.slot).phase {
                phase @ (Phase::Done | Phase::Failed(_)) => Poll::Ready(phase),
                Phase::AwaitingHead | Phase::Body => {
                    conn.register(started.slot, cx);
                    Poll::Pending
                }
            }
        })
        .await;
        // The guard (declared before) frees the slot after this borrow ends.
        let mut conn = self.shared.borrow_mut();
        let conn = &mut *conn;
        let keep_alive = conn.proto.failed().is_none() && conn.proto.goaway().is_none();
        let slot = conn.proto.slot_mut(started.slot);
        self.response_started = slot.first_byte_at.is_some() && !slot.refused;
        if let Phase::Failed(kind) = phase {
            return Err(kind);
        }
        if let Some(capture) = capture {
            for (name, value) in slot.fields() {
                capture.header(std::str::from_utf8(name).unwrap_or(""), value);
            }
            // Swapped, not copied: both sinks keep their buffers for reuse.
            std::mem::swap(&mut capture.into.body, &mut slot.body);
        }
        let done_at = slot.done_at.unwrap_or_else(Instant::now);
        let exchange = Exchange {
            status: slot.status,
            keep_alive,
            bytes_sent: started.wire_bytes + body_wire,
            bytes_received: slot.wire_bytes,
            body_bytes: slot.body_bytes,
            written_at: written_at.unwrap_or(done_at),
            first_byte_at: slot.first_byte_at.unwrap_or(done_at),
            done_at,
        };
        if sent < body.len() {
            // The response ended before the request body was sent: stop sending it.
            conn.proto.stop_sending(started.id);
        }
        Ok(exchange)
    }
}
