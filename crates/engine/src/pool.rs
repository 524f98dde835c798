//! The `shared` connection model: a pool of N connections per worker thread. An HTTP/2
//! connection serves many clients at once (each request takes a stream; handles are clones);
//! an HTTP/1.1 connection is lent to one request at a time. Clients wait for a slot when all
//! are busy or being opened, so the pool never holds more than N connections.

use barrage_http::{AnyConnection, H2Id};
use std::cell::{Cell, RefCell};
use tokio::sync::Notify;

enum Slot {
    /// No connection: the next request that gets this slot opens one.
    Empty,
    /// A request is opening this slot's connection.
    Opening,
    /// A connection ready for requests (an HTTP/2 one may be serving some already).
    Ready(AnyConnection),
    /// An HTTP/1.1 connection lent to a request.
    Lent,
}

/// One worker's pool. Single-threaded: plain cells, no locks.
pub(crate) struct SharedPool {
    /// The slots used so far; those from `slots.len()` up to `size` are empty and not yet
    /// allocated (a pool of millions costs nothing until its connections exist).
    slots: RefCell<Vec<Slot>>,
    size: usize,
    /// Streams in flight per slot (HTTP/2); capped by `max_streams`.
    streams: RefCell<Vec<u32>>,
    max_streams: u32,
    cursor: Cell<usize>,
    changed: Notify,
}

/// What a lease holds of its slot.
enum Held {
    /// The slot was empty: the lease opens its connection.
    Opening,
    /// The slot's HTTP/1.1 connection, lent whole.
    Lent,
    /// One stream on the slot's HTTP/2 connection (identified).
    Stream(H2Id),
}

/// A slot held for one request: the connection to use (or `None`: open one into the slot).
/// Dropped without [`Lease::finish`] (a timed-out request), the slot is emptied.
pub(crate) struct Lease<'a> {
    pool: &'a SharedPool,
    slot: usize,
    held: Held,
    pub(crate) connection: Option<AnyConnection>,
    finished: bool,
}

impl SharedPool {
    pub(crate) fn new(size: usize, max_streams: Option<u32>) -> Self {
        Self {
            slots: RefCell::new(Vec::new()),
            size: size.max(1),
            streams: RefCell::new(Vec::new()),
            max_streams: max_streams.unwrap_or(u32::MAX).max(1),
            cursor: Cell::new(0),
            changed: Notify::new(),
        }
    }

    /// A slot for one request, waiting while every slot is lent, opening, or at its stream
    /// limit. Ready HTTP/2 connections are taken in turn, so load spreads over all of them;
    /// but a client's `preferred` slot (its last one) comes first when it has room: then
    /// the streams of one connection tend to finish and start again together, and their
    /// requests leave in one write (HTTP/2 batches the requests queued in one turn).
    pub(crate) async fn checkout(&self, preferred: Option<usize>) -> Lease<'_> {
        loop {
            let changed = self.changed.notified();
            if let Some(lease) = self.try_checkout(preferred) {
                return lease;
            }
            changed.await;
        }
    }

    fn try_checkout(&self, preferred: Option<usize>) -> Option<Lease<'_>> {
        let mut slots = self.slots.borrow_mut();
        let mut streams = self.streams.borrow_mut();
        let n = self.size;
        if let Some(i) = preferred.filter(|&i| i < slots.len()) {
            if let Slot::Ready(AnyConnection::Http2(h2)) = &slots[i] {
                if streams[i] < self.max_streams {
                    streams[i] += 1;
                    return Some(Lease {
                        pool: self,
                        slot: i,
                        held: Held::Stream(h2.id()),
                        connection: Some(AnyConnection::Http2(h2.clone())),
                        finished: false,
                    });
                }
            }
        }
        let start = self.cursor.get();
        for k in 0..n {
            let i = (start + k) % n;
            while i >= slots.len() {
                // The first slot not used yet (the cursor never passes the used ones by
                // more than one): allocate it now.
                slots.push(Slot::Empty);
                streams.push(0);
            }
            let (held, connection) = match &mut slots[i] {
                Slot::Ready(AnyConnection::Http2(h2)) if streams[i] < self.max_streams => {
                    streams[i] += 1;
                    (
                        Held::Stream(h2.id()),
                        Some(AnyConnection::Http2(h2.clone())),
                    )
                }
                Slot::Ready(AnyConnection::Http1(_)) => {
                    match std::mem::replace(&mut slots[i], Slot::Lent) {
                        Slot::Ready(connection) => (Held::Lent, Some(connection)),
                        _ => unreachable!("matched Ready above"),
                    }
                }
                Slot::Empty => {
                    slots[i] = Slot::Opening;
                    (Held::Opening, None)
                }
                _ => continue,
            };
            self.cursor.set(i + 1);
            return Some(Lease {
                pool: self,
                slot: i,
                held,
                connection,
                finished: false,
            });
        }
        None
    }

    /// Connections the pool holds (ready, lent or being opened).
    #[cfg(test)]
    pub(crate) fn occupied(&self) -> usize {
        self.slots
            .borrow()
            .iter()
            .filter(|s| !matches!(s, Slot::Empty))
            .count()
    }

    /// Takes a lease's slot back. `connection` is what the request ended with: the one it
    /// was given, a fresh one its retry opened, or none.
    fn release(&self, slot: usize, held: &Held, connection: Option<AnyConnection>, reusable: bool) {
        let mut slots = self.slots.borrow_mut();
        let mut streams = self.streams.borrow_mut();
        let keep = connection.filter(|_| reusable);
        match held {
            Held::Opening | Held::Lent => {
                streams[slot] = 0;
                slots[slot] = keep.map_or(Slot::Empty, Slot::Ready);
            }
            Held::Stream(given) => {
                // The slot may have moved on (emptied, reopened) while this stream ran: only
                // a slot still holding the connection this stream was given is touched.
                let still_there = matches!(
                    &slots[slot],
                    Slot::Ready(AnyConnection::Http2(current)) if current.is(given)
                );
                if still_there {
                    streams[slot] = streams[slot].saturating_sub(1);
                    match keep {
                        // The stream finished on the slot's connection: nothing changes.
                        Some(AnyConnection::Http2(ended)) if ended.is(given) => {}
                        // A retry replaced a connection that had failed.
                        Some(fresh) => {
                            streams[slot] = 0;
                            slots[slot] = Slot::Ready(fresh);
                        }
                        None => {
                            streams[slot] = 0;
                            slots[slot] = Slot::Empty;
                        }
                    }
                }
            }
        }
        // A release frees one unit (a stream, a lent connection, a slot to open), so it wakes
        // one waiter: waking every waiter for it made each of them scan the slots and sleep
        // again (a thundering herd, 5% of the CPU of a loaded pool in a profile). Only a
        // freshly opened HTTP/2 connection has room for many at once.
        let opened_for_many = matches!(held, Held::Opening)
            && matches!(&slots[slot], Slot::Ready(AnyConnection::Http2(_)))
            && self.max_streams > 1;
        drop((slots, streams));
        if opened_for_many {
            self.changed.notify_waiters();
        } else {
            self.changed.notify_one();
        }
    }
}

impl Lease<'_> {
    /// The pool slot this lease holds.
    pub(crate) fn slot(&self) -> usize {
        self.slot
    }

    /// Gives the slot back: with its connection when `reusable`, empty otherwise.
    pub(crate) fn finish(mut self, reusable: bool) {
        self.finished = true;
        let connection = self.connection.take();
        self.pool
            .release(self.slot, &self.held, connection, reusable);
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.pool.release(self.slot, &self.held, None, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    fn poll_once<F: Future>(future: std::pin::Pin<&mut F>) -> Poll<F::Output> {
        future.poll(&mut Context::from_waker(Waker::noop()))
    }

    #[test]
    fn never_holds_more_than_its_size_and_waiters_get_freed_slots() {
        let pool = SharedPool::new(2, None);
        let first = match poll_once(pin!(pool.checkout(None))) {
            Poll::Ready(lease) => lease,
            Poll::Pending => panic!("an empty slot is free"),
        };
        assert!(
            first.connection.is_none(),
            "an empty slot is opened by its lease"
        );
        let second = match poll_once(pin!(pool.checkout(None))) {
            Poll::Ready(lease) => lease,
            Poll::Pending => panic!("the second slot is free"),
        };
        assert_ne!(first.slot, second.slot);
        assert_eq!(pool.occupied(), 2);
        let mut third = pin!(pool.checkout(None));
        assert!(
            poll_once(third.as_mut()).is_pending(),
            "both slots are opening"
        );
        // An open that failed empties its slot, and the waiter gets it.
        first.finish(false);
        assert_eq!(pool.occupied(), 1);
        match poll_once(third.as_mut()) {
            Poll::Ready(lease) => assert!(lease.connection.is_none()),
            Poll::Pending => panic!("the freed slot goes to the waiter"),
        }
        // A lease dropped without finishing (a timeout) empties its slot too.
        drop(second);
        assert_eq!(pool.occupied(), 0);
    }

    #[test]
    fn a_huge_pool_allocates_only_the_slots_it_uses() {
        // `--pool-size 4294967295` once allocated 200 GB up front and aborted.
        let pool = SharedPool::new(u32::MAX as usize, None);
        assert_eq!(pool.slots.borrow().len(), 0);
        let first = checkout_now(&pool, None);
        let second = checkout_now(&pool, None);
        assert_ne!(first.slot, second.slot);
        assert_eq!(pool.slots.borrow().len(), 2);
        assert_eq!(pool.streams.borrow().len(), 2);
        first.finish(false);
        drop(second);
        assert_eq!(pool.occupied(), 0);
        assert_eq!(pool.slots.borrow().len(), 2);
    }

    /// A waker that counts its wake-ups.
    struct CountingWaker(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for CountingWaker {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[test]
    fn a_freed_slot_wakes_one_waiter_first_come_first_served() {
        use std::sync::atomic::Ordering::SeqCst;
        use std::sync::Arc;
        let pool = SharedPool::new(1, None);
        let held = checkout_now(&pool, None);
        let mut waiters = [
            Box::pin(pool.checkout(None)),
            Box::pin(pool.checkout(None)),
            Box::pin(pool.checkout(None)),
        ];
        let wakers: Vec<Arc<CountingWaker>> =
            (0..3).map(|_| Arc::new(CountingWaker(0.into()))).collect();
        for (waiter, counter) in waiters.iter_mut().zip(&wakers) {
            let waker = Waker::from(Arc::clone(counter));
            assert!(waiter
                .as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_pending());
        }
        held.finish(false);
        let woken: Vec<usize> = wakers.iter().map(|w| w.0.load(SeqCst)).collect();
        assert_eq!(
            woken,
            [1, 0, 0],
            "one unit freed wakes the first waiter only"
        );
        let waker = Waker::from(Arc::clone(&wakers[0]));
        let first = match waiters[0].as_mut().poll(&mut Context::from_waker(&waker)) {
            Poll::Ready(lease) => lease,
            Poll::Pending => panic!("the woken waiter gets the slot"),
        };
        first.finish(false);
        let woken: Vec<usize> = wakers.iter().map(|w| w.0.load(SeqCst)).collect();
        assert_eq!(woken, [1, 1, 0], "the next release wakes the next waiter");
    }

    /// An HTTP/2 handle on a socket (the handshake only writes the preface: no server needed).
    async fn h2_connection(listener: &tokio::net::TcpListener) -> AnyConnection {
        let tcp = barrage_http::connect(&[listener.local_addr().unwrap()])
            .await
            .unwrap();
        let settings = barrage_http::H2Settings::default();
        let h2 = barrage_http::H2Connection::handshake(tcp.into(), &settings)
            .await
            .unwrap();
        AnyConnection::Http2(h2)
    }

    fn checkout_now(pool: &SharedPool, preferred: Option<usize>) -> Lease<'_> {
        match poll_once(pin!(pool.checkout(preferred))) {
            Poll::Ready(lease) => lease,
            Poll::Pending => panic!("the pool has room"),
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_preferred_http2_slot_comes_first_and_others_go_in_turn() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let pool = SharedPool::new(3, Some(2));
        for _ in 0..3 {
            let mut lease = checkout_now(&pool, None);
            lease.connection = Some(h2_connection(&listener).await);
            lease.finish(true);
        }
        // Round robin without a preference...
        let a = checkout_now(&pool, None);
        let b = checkout_now(&pool, None);
        assert_ne!(a.slot(), b.slot());
        // ...the preferred slot while it has room (2 streams), then the next in turn.
        let preferred = a.slot();
        let c = checkout_now(&pool, Some(preferred));
        assert_eq!(c.slot(), preferred);
        let d = checkout_now(&pool, Some(preferred));
        assert_ne!(
            d.slot(),
            preferred,
            "the preferred slot is at its stream limit"
        );
        // A preference out of range is ignored.
        let e = checkout_now(&pool, Some(99));
        assert!(e.slot() < 3);
        for lease in [a, b, c, d, e] {
            lease.finish(true);
        }
        assert_eq!(pool.occupied(), 3);
    }
}
