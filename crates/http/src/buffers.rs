//! Read buffers lent to exchanges while they run, so an idle connection (a client in think
//! time) holds no read buffer: one pool per worker thread, no allocation per request.

use std::cell::{Cell, RefCell};
use std::ops::{Deref, DerefMut};

/// Size of a read buffer; a response head must fit in [`MAX_HEAD`], bodies stream through.
pub(crate) const READ_BUFFER: usize = 16 * 1024;
/// Buffers kept resting in the pool; more are freed when they come back. A burst (tens of
/// thousands of clients connecting, each first request in flight at once) would otherwise
/// keep a buffer per request of its peak for the rest of the run — 16 KiB each, more than the
/// waiting clients themselves — while freed, that memory serves the clients' own state.
pub(crate) const MAX_IDLE: usize = 256;
pub(crate) const MAX_HEAD: usize = 64 * 1024;

/// A pool of read buffers for the connections of one thread. Exchanges borrow a buffer when
/// they start and give it back when they end (or are cancelled), so the pool holds as many
/// buffers as exchanges are in flight at once (and at most [`MAX_IDLE`] more), whatever the
/// number of connections.
#[derive(Debug, Default)]
pub struct ReadBuffers {
    free: RefCell<Vec<Vec<u8>>>,
    /// The fewest buffers resting in the pool since the last [`ReadBuffers::trim`]: that many
    /// were not needed all along.
    idle_low: Cell<usize>,
}

impl ReadBuffers {
    pub fn new() -> Self {
        Self::default()
    }

    /// Buffers resting in the pool.
    pub fn idle(&self) -> usize {
        self.free.borrow().len()
    }

    pub(crate) fn lend(&self) -> LentBuffer<'_> {
        let mut free = self.free.borrow_mut();
        let buf = free.pop().unwrap_or_else(|| vec![0; READ_BUFFER]);
        self.idle_low.set(self.idle_low.get().min(free.len()));
        LentBuffer { pool: self, buf }
    }

    /// Frees the buffers no exchange needed since the last trim, and returns their bytes:
    /// the pool holds what as many exchanges as were ever in flight at once needed, and a
    /// burst (a stalled machine piling up sessions) would otherwise be held for the rest of
    /// the run. Call it now and then (seconds apart), never per request.
    pub fn trim(&self) -> usize {
        let Ok(mut free) = self.free.try_borrow_mut() else {
            return 0;
        };
        // The buffers at the bottom of the stack are the ones that rested all along.
        let unused = self.idle_low.get().min(free.len());
        let bytes = free[..unused].iter().map(Vec::capacity).sum();
        free.drain(..unused);
        self.idle_low.set(free.len());
        bytes
    }
}

/// A buffer on loan from a [`ReadBuffers`]; returned on drop.
pub(crate) struct LentBuffer<'a> {
    pool: &'a ReadBuffers,
    buf: Vec<u8>,
}

impl Deref for LentBuffer<'_> {
    type Target = Vec<u8>;
    fn deref(&self) -> &Vec<u8> {
        &self.buf
    }
}

impl DerefMut for LentBuffer<'_> {
    fn deref_mut(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }
}

impl Drop for LentBuffer<'_> {
    fn drop(&mut self) {
        let mut buf = std::mem::take(&mut self.buf);
        // A buffer grown for a large head goes back at its normal size.
        if buf.len() > READ_BUFFER {
            buf.truncate(READ_BUFFER);
            buf.shrink_to_fit();
        }
        if let Ok(mut free) = self.pool.free.try_borrow_mut() {
            if free.len() < MAX_IDLE {
                free.push(buf);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_reused_and_come_back_at_normal_size() {
        let pool = ReadBuffers::new();
        {
            let mut a = pool.lend();
            let _b = pool.lend();
            a.resize(READ_BUFFER * 2, 0);
            assert_eq!(pool.idle(), 0);
        }
        assert_eq!(pool.idle(), 2);
        let a = pool.lend();
        assert_eq!(a.len(), READ_BUFFER);
        assert_eq!(pool.idle(), 1);
    }

    #[test]
    fn a_trim_frees_the_buffers_no_exchange_needed_since_the_last_one() {
        let pool = ReadBuffers::new();
        // A burst of 10 exchanges, then 2 at a time.
        drop((0..10).map(|_| pool.lend()).collect::<Vec<_>>());
        assert_eq!(pool.trim(), 0, "all 10 were needed since the start");
        for _ in 0..5 {
            let _a = pool.lend();
            let _b = pool.lend();
        }
        assert_eq!(pool.trim(), 8 * READ_BUFFER, "8 rested since the last trim");
        assert_eq!(pool.idle(), 2);
        let _c = pool.lend();
        assert_eq!(pool.trim(), READ_BUFFER, "one of the two rested");
        assert_eq!(pool.trim(), 0);
    }

    #[test]
    fn a_burst_leaves_at_most_the_idle_limit_behind() {
        let pool = ReadBuffers::new();
        let burst: Vec<_> = (0..MAX_IDLE + 100).map(|_| pool.lend()).collect();
        drop(burst);
        assert_eq!(pool.idle(), MAX_IDLE);
    }
}
