//! Bounded, sharded memory of issued tokens (for `/random/get_token` and `/ping`).
//!
//! Tokens are random 128-bit values, shown as 32 lowercase hex characters. The store
//! is split into [`SHARDS`] independently locked shards chosen from the token's high half,
//! each keeping insertion order so that, once full, the oldest token is evicted.
//! Locks are held only for one set operation.

use std::collections::{HashSet, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Mutex, MutexGuard};

/// Default number of tokens remembered server-wide.
pub(crate) const DEFAULT_CAPACITY: usize = 1_000_000;
/// Number of independently locked shards (a power of two).
pub(crate) const SHARDS: usize = 64;

/// Issued tokens, capped at a fixed capacity with oldest-first eviction.
pub(crate) struct TokenStore {
    shards: Box<[Mutex<Shard>]>,
    per_shard: usize,
}

#[derive(Default)]
struct Shard {
    set: HashSet<u128, BuildHasherDefault<TokenHasher>>,
    order: VecDeque<u128>,
}

impl TokenStore {
    /// A store remembering at most about `capacity` tokens (rounded up to a multiple of [`SHARDS`]).
    pub(crate) fn new(capacity: usize) -> TokenStore {
        TokenStore {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            per_shard: capacity.div_ceil(SHARDS).max(1),
        }
    }

    /// Creates, remembers and returns a fresh random token.
    pub(crate) fn issue(&self) -> u128 {
        let token: u128 = rand::random();
        self.insert(token);
        token
    }

    /// Remembers `token`, evicting the oldest token of its shard if that shard is full.
    pub(crate) fn insert(&self, token: u128) {
        let mut shard = self.shard(token);
        if !shard.set.insert(token) {
            return;
        }
        shard.order.push_back(token);
        if shard.order.len() > self.per_shard {
            if let Some(oldest) = shard.order.pop_front() {
                shard.set.remove(&oldest);
            }
        }
    }

    /// Whether `token` was issued and not yet evicted.
    pub(crate) fn contains(&self, token: u128) -> bool {
        self.shard(token).set.contains(&token)
    }

    /// Number of tokens currently remembered.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).order.len())
            .sum()
    }

    fn shard(&self, token: u128) -> MutexGuard<'_, Shard> {
        // The high half picks the shard, so the set's hash (which mixes in the low
        // half) stays well spread inside each shard.
        let index = ((token >> 64) as usize) % SHARDS;
        // A poisoned shard still holds a consistent set: keep using it.
        self.shards[index].lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Formats a token as 32 lowercase hex characters.
pub(crate) fn format_token(token: u128) -> String {
    format!("{token:032x}")
}

/// Parses a token written as exactly 32 hex characters.
pub(crate) fn parse_token(text: &str) -> Option<u128> {
    if text.len() != 32 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u128::from_str_radix(text, 16).ok()
}

/// Mixes the two halves of a token into a well-spread 64-bit hash.
fn fold(token: u128) -> u64 {
    ((token as u64) ^ ((token >> 64) as u64)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Hasher for tokens: they are random (or, for lookups, at worst client-chosen, which
/// cannot grow the set), so a multiply-fold is enough and much cheaper than SipHash.
#[derive(Default)]
struct TokenHasher(u64);

impl Hasher for TokenHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u128(&mut self, token: u128) {
        self.0 ^= fold(token);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issued_tokens_are_remembered() {
        let store = TokenStore::new(DEFAULT_CAPACITY);
        let a = store.issue();
        let b = store.issue();
        assert_ne!(a, b);
        assert!(store.contains(a));
        assert!(store.contains(b));
        assert!(!store.contains(a ^ 1));
        assert_eq!(store.len(), 2);
    }

    #[test]
    fn evicts_oldest_when_full() {
        // One token per shard: the second token landing in a shard evicts the first.
        let store = TokenStore::new(SHARDS);
        let tokens: Vec<u128> = (0..SHARDS * 20).map(|_| store.issue()).collect();
        assert!(store.len() <= SHARDS);
        // The newest token is always there, the very first one is long gone.
        assert!(store.contains(*tokens.last().unwrap()));
        let remembered = tokens.iter().filter(|&&t| store.contains(t)).count();
        assert_eq!(remembered, store.len());
    }

    #[test]
    fn eviction_is_oldest_first_within_a_shard() {
        let store = TokenStore::new(3 * SHARDS);
        // Same shard: same high half.
        let same_shard: Vec<u128> = (1..=5).map(|i| (7u128 << 64) | i).collect();
        for &t in &same_shard {
            store.insert(t);
        }
        assert!(!store.contains(same_shard[0]));
        assert!(!store.contains(same_shard[1]));
        assert!(same_shard[2..].iter().all(|&t| store.contains(t)));
        assert_eq!(store.len(), 3);
    }

    #[test]
    fn duplicate_insert_is_ignored() {
        let store = TokenStore::new(SHARDS);
        store.insert(42);
        store.insert(42);
        assert_eq!(store.len(), 1);
    }

    #[test]
    fn token_text_round_trip() {
        let t = 0x0123_4567_89ab_cdef_0011_2233_4455_6677_u128;
        let text = format_token(t);
        assert_eq!(text, "0123456789abcdef0011223344556677");
        assert_eq!(parse_token(&text), Some(t));
        assert_eq!(parse_token(&text.to_uppercase()), Some(t));
        assert_eq!(parse_token(&format_token(7)), Some(7));
        assert_eq!(parse_token("abc"), None);
        assert_eq!(parse_token("+123456789abcdef0011223344556677"), None);
        assert_eq!(parse_token("g123456789abcdef0011223344556677"), None);
    }
}
