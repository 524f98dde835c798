//! The finished seconds of a per-second latency series, stored so that copies share them: a
//! live snapshot copies a worker's metrics every second, and a copy of the sealed seconds must
//! not grow with the run's length.
//!
//! A finished second never changes again (bar a rare late response), so each one is an
//! immutable `Arc<[u8]>`, grouped in chunks of [`CHUNK`] seconds behind another `Arc`. A clone
//! copies one pointer per chunk; writing into a chunk that a copy still shares first copies
//! that chunk's pointers (at most [`CHUNK`] of them), never the encoded bytes.

use std::sync::Arc;

/// Seconds per shared chunk.
pub(crate) const CHUNK: usize = 64;

/// One chunk: the seconds `CHUNK * i ..`, `None` for a second without responses.
#[derive(Debug, Default)]
struct Chunk(Vec<Option<Arc<[u8]>>>);

impl Clone for Chunk {
    fn clone(&self) -> Self {
        #[cfg(test)]
        tests::CHUNK_COPIES.with(|c| c.set(c.get() + 1));
        Self(self.0.clone())
    }
}

/// Encoded seconds, index = second since the run started.
#[derive(Debug, Clone, Default)]
pub(crate) struct SealedSeconds {
    chunks: Vec<Arc<Chunk>>,
    len: usize,
}

impl SealedSeconds {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The encoded bytes of `second`, `None` when it had no responses (or is not stored).
    pub(crate) fn get(&self, second: usize) -> Option<&Arc<[u8]>> {
        self.chunks
            .get(second / CHUNK)?
            .0
            .get(second % CHUNK)?
            .as_ref()
    }

    /// Stores `second`'s bytes (`None`: no responses), growing the series as needed.
    pub(crate) fn set(&mut self, second: usize, bytes: Option<Arc<[u8]>>) {
        if self.len <= second {
            self.len = second + 1;
        }
        let chunk = second / CHUNK;
        if self.chunks.len() <= chunk {
            self.chunks.resize_with(chunk + 1, Default::default);
        }
        let seconds = &mut Arc::make_mut(&mut self.chunks[chunk]).0;
        let index = second % CHUNK;
        if seconds.len() <= index {
            seconds.resize(index + 1, None);
        }
        seconds[index] = bytes;
    }

    /// Every second in order, `None` for one without responses.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Option<&Arc<[u8]>>> + '_ {
        (0..self.len).map(|second| self.get(second))
    }

    /// Moves every second `seconds` later (rare: a results merge; rebuilds the chunks).
    pub(crate) fn delay(&mut self, seconds: usize) {
        if self.len == 0 {
            return;
        }
        let old = std::mem::take(self);
        for (second, bytes) in old.iter().enumerate() {
            if let Some(bytes) = bytes {
                self.set(second + seconds, Some(Arc::clone(bytes)));
            }
        }
        self.len = old.len + seconds;
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        /// Chunks copied on write by this thread (each copies at most `CHUNK` pointers).
        pub(crate) static CHUNK_COPIES: Cell<usize> = const { Cell::new(0) };
    }

    pub(crate) fn chunk_copies() -> usize {
        CHUNK_COPIES.with(Cell::get)
    }

    #[test]
    fn copies_share_the_seconds_and_writes_copy_one_chunk() {
        let mut seconds = SealedSeconds::default();
        for second in 0..200 {
            seconds.set(second, Some(Arc::from(vec![second as u8; 10])));
        }
        seconds.set(201, None);
        assert_eq!(seconds.len(), 202);
        let before = chunk_copies();
        let copy = seconds.clone();
        assert_eq!(chunk_copies(), before, "a clone copies no chunk");
        seconds.set(202, Some(Arc::from(&[1u8][..])));
        assert_eq!(chunk_copies(), before + 1, "one write copies one chunk");
        assert_eq!(copy.len(), 202);
        assert!(copy.get(202).is_none() && copy.get(201).is_none());
        for second in 0..200 {
            assert!(Arc::ptr_eq(
                copy.get(second).unwrap(),
                seconds.get(second).unwrap()
            ));
        }
        let mut delayed = copy.clone();
        delayed.delay(3);
        assert_eq!(delayed.len(), 205);
        assert!(delayed.get(2).is_none());
        assert_eq!(&delayed.get(3).unwrap()[..], &[0u8; 10]);
        assert_eq!(&delayed.get(202).unwrap()[..], &[199u8; 10]);
    }
}
