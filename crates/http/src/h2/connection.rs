//! The IO side of one HTTP/2 connection shared by its handles: the socket, the protocol state
//! it feeds (`barrage_h2proto::Connection`: streams, flow control, frames, HPACK) and the
//! wakers of the exchanges waiting on it. There is no connection task: whichever exchange
//! polls drives the socket (`drive`), so a connection used by one client costs no cross-task
//! wake-up per request; with several exchanges in flight, the last one to wait on the socket
//! is its `driver` and hands the role on when it leaves.

use crate::classify::classify_io_error;
use crate::stream::Stream;
use barrage_h2proto::Connection as Protocol;
use barrage_metrics::ErrorKind;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Reads per `drive` before yielding to other tasks (the peer may keep sending).
const READS_PER_DRIVE: usize = 16;

/// Wire bytes one `drive` processes before yielding: the cooperative budget. Every exchange
/// of every connection on the thread may be ready at once (endless bodies), and timers are
/// only looked at between rounds of them, so a round must stay short — in a debug build and
/// on a busy machine too — for request timeouts and the run's end to fire on time.
pub(super) const BYTES_PER_DRIVE: usize = 64 * 1024;

/// The connection state behind every handle.
pub(super) struct Conn {
    io: Stream,
    pub proto: Protocol,
    /// TLS: records written into the session but maybe not yet onto the socket.
    needs_flush: bool,
    /// An exchange that queued its request into an empty write buffer and yielded once so
    /// the other requests of this event-loop turn join the same write; only it flushes.
    pub flush_owner: Option<usize>,
    /// The slot whose exchange last waited on the socket (the one the socket will wake).
    driver: Option<usize>,
    /// The waker of each slot's exchange (indexed like the protocol's slots).
    wakers: Vec<Option<Waker>>,
    /// Exchanges waiting for a stream under the peer's concurrency limit.
    capacity_waiters: Vec<Waker>,
}

impl Conn {
    pub fn new(io: Stream, proto: Protocol) -> Conn {
        Conn {
            io,
            proto,
            needs_flush: false,
            flush_owner: None,
            driver: None,
            wakers: Vec::new(),
            capacity_waiters: Vec::new(),
        }
    }

    /// Remembers `cx` as the waker of `slot`'s exchange.
    pub fn register(&mut self, slot: usize, cx: &Context<'_>) {
        if slot >= self.wakers.len() {
            self.wakers.resize_with(slot + 1, || None);
        }
        let waker = &mut self.wakers[slot];
        if !waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            *waker = Some(cx.waker().clone());
        }
    }

    /// Wakes what the protocol's last steps concern.
    fn dispatch(&mut self) {
        let events = self.proto.events();
        for index in events.streams.drain(..) {
            if let Some(waker) = self.wakers.get_mut(index).and_then(Option::take) {
                waker.wake();
            }
        }
        if std::mem::take(&mut events.capacity_all) {
            events.capacity_freed = 0;
            for waiter in self.capacity_waiters.drain(..) {
                waiter.wake();
            }
        }
        for _ in 0..std::mem::take(&mut events.capacity_freed) {
            match self.capacity_waiters.pop() {
                Some(waiter) => waiter.wake(),
                None => break,
            }
        }
    }

    /// Gives a slot back (see `Protocol::release`); the socket's waiter role moves on if
    /// this exchange held it.
    pub fn release(&mut self, index: usize) {
        if self.proto.slot(index).id == 0 {
            return;
        }
        self.proto.release(index);
        if let Some(waker) = self.wakers.get_mut(index) {
            *waker = None;
        }
        if self.flush_owner == Some(index) {
            self.flush_owner = None;
        }
        if self.driver == Some(index) {
            // The socket would wake a task that no longer waits on it: wake one that does.
            self.driver = None;
            if let Some(next) = self.wakers.iter_mut().find_map(Option::take) {
                next.wake();
            }
        }
        self.dispatch();
    }

    /// Ends the connection with `kind` (see `Protocol::fail`).
    fn fail(&mut self, kind: ErrorKind) {
        self.proto.fail(kind, Instant::now());
        self.dispatch();
    }

    /// Whether a new stream may open now; registers `cx` to be woken when one closes.
    pub fn poll_capacity(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ErrorKind>> {
        if self.proto.active() == 0 {
            // An idle connection has not been read: learn now whether the server closed
            // it or sent GOAWAY meanwhile, while the request is still safe to retry.
            self.drive(cx, None);
        }
        match self.proto.can_open() {
            Err(kind) => Poll::Ready(Err(kind)),
            Ok(true) => Poll::Ready(Ok(())),
            Ok(false) => {
                self.capacity_waiters.push(cx.waker().clone());
                Poll::Pending
            }
        }
    }

    /// Moves bytes: writes what is queued (unless another exchange is about to, with more),
    /// reads and processes what arrived, until the socket has nothing more, or the turn's
    /// wire or decode budget is spent. `me` is the calling exchange's slot. Failures end the
    /// connection.
    pub fn drive(&mut self, cx: &mut Context<'_>, me: Option<usize>) {
        if self.proto.failed().is_some() {
            return;
        }
        self.proto.new_turn();
        if self.proto.decode_paused() {
            // Decoding stopped at the last turn's budget: go on before reading more.
            self.proto.resume(Instant::now());
            self.dispatch();
            if self.proto.failed().is_some() {
                return;
            }
            if self.proto.decode_paused() {
                return self.come_back(cx, me);
            }
        }
        let mut read = 0;
        for _ in 0..READS_PER_DRIVE {
            if self.flush_owner.is_none() || self.flush_owner == me {
                self.flush_owner = None;
                if let Err(kind) = self.poll_write(cx) {
                    return self.fail(kind);
                }
            }
            let mut buf = ReadBuf::new(self.proto.read_space());
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
                    let n = buf.filled().len();
                    read += n;
                    self.proto.receive(n, Instant::now());
                    self.dispatch();
                    if self.proto.failed().is_some() {
                        return;
                    }
                    // After a stretch of reading, or of decoding (a highly compressed
                    // body decodes slower than it arrives), let the other tasks (and
                    // timeouts) have a turn.
                    if read >= BYTES_PER_DRIVE || self.proto.decode_paused() {
                        break;
                    }
                }
            }
        }
        // Still more to read (or decode): come back after the other tasks had their turn.
        self.come_back(cx, me);
    }

    /// Ends a drive that left work (bytes to read, a paused decode): writes what is queued,
    /// then has the calling exchange polled again after the other tasks' turn.
    fn come_back(&mut self, cx: &mut Context<'_>, me: Option<usize>) {
        if let Err(kind) = self.poll_write(cx) {
            return self.fail(kind);
        }
        self.driver = me;
        cx.waker().wake_by_ref();
    }

    fn poll_write(&mut self, cx: &mut Context<'_>) -> Result<(), ErrorKind> {
        let tls = self.io.is_tls();
        while !self.proto.output_is_empty() {
            match Pin::new(&mut self.io).poll_write(cx, self.proto.output()) {
                Poll::Ready(Ok(0)) => return Err(ErrorKind::Closed),
                Poll::Ready(Ok(n)) => {
                    self.proto.wrote(n);
                    self.needs_flush = tls;
                }
                Poll::Ready(Err(e)) => return Err(classify_io_error(&e, false)),
                Poll::Pending => break,
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
}
