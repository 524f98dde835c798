//! The HPACK (RFC 7541) static table and the request encoder, tuned for load generation:
//! requests repeat the same fields, so each field is sent with incremental indexing once and
//! as a one- or two-byte index afterwards (values unique per request, like `x-request-id`,
//! go never-indexed). The decoder is in `hpack_decoder.rs`.

use std::collections::VecDeque;

/// The static table (RFC 7541 Appendix A); index = position + 1.
pub const STATIC_TABLE: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];
const DYNAMIC_BASE: usize = STATIC_TABLE.len() + 1;
/// The table size both sides start with (SETTINGS_HEADER_TABLE_SIZE default).
pub const DEFAULT_TABLE_SIZE: usize = 4096;
/// Per-entry overhead in the table size (RFC 7541 §4.1).
pub const ENTRY_OVERHEAD: usize = 32;

/// How a field may be stored by the peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Indexing {
    /// Worth a table entry: it will repeat.
    Index,
    /// Unique or sensitive: never indexed, here or by intermediaries.
    Never,
}

/// One dynamic table entry, name and value in one allocation.
struct Entry {
    bytes: Box<[u8]>,
    name_len: usize,
}

impl Entry {
    fn name(&self) -> &[u8] {
        &self.bytes[..self.name_len]
    }
    fn value(&self) -> &[u8] {
        &self.bytes[self.name_len..]
    }
    fn size(&self) -> usize {
        self.bytes.len() + ENTRY_OVERHEAD
    }
}

/// The request encoder: a mirror of the peer decoder's dynamic table, newest entry first.
pub struct Encoder {
    table: VecDeque<Entry>,
    size: usize,
    max_size: usize,
    /// A table size change to announce at the start of the next header block.
    pending_size_update: Option<usize>,
}

impl Default for Encoder {
    fn default() -> Self {
        Encoder {
            table: VecDeque::new(),
            size: 0,
            max_size: DEFAULT_TABLE_SIZE,
            pending_size_update: None,
        }
    }
}

/// Appends an HPACK integer with an `prefix_bits`-bit prefix; `first` holds the pattern bits.
fn encode_int(out: &mut Vec<u8>, value: usize, prefix_bits: u8, first: u8) {
    let max_prefix = (1usize << prefix_bits) - 1;
    if value < max_prefix {
        out.push(first | value as u8);
        return;
    }
    out.push(first | max_prefix as u8);
    let mut rest = value - max_prefix;
    while rest >= 128 {
        out.push((rest % 128) as u8 | 0x80);
        rest /= 128;
    }
    out.push(rest as u8);
}

/// Appends a string literal without Huffman coding (cheaper to produce; loopback bandwidth is
/// not what a load generator runs out of).
fn encode_str(out: &mut Vec<u8>, s: &[u8]) {
    encode_int(out, s.len(), 7, 0);
    out.extend_from_slice(s);
}

fn static_name_index(name: &[u8]) -> Option<usize> {
    STATIC_TABLE
        .iter()
        .position(|(n, _)| n.as_bytes() == name)
        .map(|i| i + 1)
}

impl Encoder {
    /// The peer's SETTINGS_HEADER_TABLE_SIZE: our table never exceeds it (nor 4 KiB).
    pub fn set_max_size(&mut self, peer_max: usize) {
        let max = peer_max.min(DEFAULT_TABLE_SIZE);
        if max != self.max_size {
            self.max_size = max;
            self.evict_to(max);
            self.pending_size_update = Some(max);
        }
    }

    fn evict_to(&mut self, room: usize) {
        while self.size > room {
            match self.table.pop_back() {
                Some(entry) => self.size -= entry.size(),
                None => break,
            }
        }
    }

    /// Starts a header block (announces a pending table size change).
    pub fn begin_block(&mut self, out: &mut Vec<u8>) {
        if let Some(size) = self.pending_size_update.take() {
            encode_int(out, size, 5, 0x20);
        }
    }

    /// Appends one field (`name` lower-case) to the header block in `out`.
    pub fn encode(&mut self, name: &[u8], value: &[u8], indexing: Indexing, out: &mut Vec<u8>) {
        let mut name_index = None;
        for (position, entry) in self.table.iter().enumerate() {
            if entry.name_len == name.len() && entry.name() == name {
                if entry.value() == value && indexing == Indexing::Index {
                    encode_int(out, DYNAMIC_BASE + position, 7, 0x80);
                    return;
                }
                name_index.get_or_insert(DYNAMIC_BASE + position);
            }
        }
        if let Some(index) = static_exact_index(name, value) {
            encode_int(out, index, 7, 0x80);
            return;
        }
        let name_index = static_name_index(name).or(name_index);
        let size = name.len() + value.len() + ENTRY_OVERHEAD;
        let (prefix_bits, pattern) = match indexing {
            Indexing::Index if size <= self.max_size => (6, 0x40),
            Indexing::Index => (4, 0x00),
            Indexing::Never => (4, 0x10),
        };
        match name_index {
            Some(index) => encode_int(out, index, prefix_bits, pattern),
            None => {
                out.push(pattern);
                encode_str(out, name);
            }
        }
        encode_str(out, value);
        if pattern == 0x40 {
            self.evict_to(self.max_size - size);
            let mut bytes = Vec::with_capacity(name.len() + value.len());
            bytes.extend_from_slice(name);
            bytes.extend_from_slice(value);
            self.table.push_front(Entry {
                bytes: bytes.into_boxed_slice(),
                name_len: name.len(),
            });
            self.size += size;
        }
    }
}

/// The static entries whose value a request may carry verbatim.
fn static_exact_index(name: &[u8], value: &[u8]) -> Option<usize> {
    match (name, value) {
        (b":method", b"GET") => Some(2),
        (b":method", b"POST") => Some(3),
        (b":path", b"/") => Some(4),
        (b":path", b"/index.html") => Some(5),
        (b":scheme", b"http") => Some(6),
        (b":scheme", b"https") => Some(7),
        (b"accept-encoding", b"gzip, deflate") => Some(16),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hpack_decoder::Decoder;

    fn decode_all(decoder: &mut Decoder, block: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut fields = Vec::new();
        decoder
            .decode(block, |n, v| fields.push((n.to_vec(), v.to_vec())))
            .unwrap();
        fields
    }

    fn request_fields(id: &str) -> Vec<(&'static str, String, Indexing)> {
        vec![
            (":method", "GET".into(), Indexing::Index),
            (":scheme", "http".into(), Indexing::Index),
            (":authority", "localhost:8080".into(), Indexing::Index),
            (":path", "/health?x=1".into(), Indexing::Index),
            ("user-agent", "barrage/0.1".into(), Indexing::Index),
            ("x-request-id", id.into(), Indexing::Never),
        ]
    }

    #[test]
    fn repeated_fields_shrink_to_indices_and_decode_back() {
        let mut encoder = Encoder::default();
        let mut decoder = Decoder::default();
        let mut sizes = Vec::new();
        for id in ["1", "22", "333"] {
            let mut block = Vec::new();
            encoder.begin_block(&mut block);
            let fields = request_fields(id);
            for (name, value, indexing) in &fields {
                encoder.encode(name.as_bytes(), value.as_bytes(), *indexing, &mut block);
            }
            sizes.push(block.len());
            let decoded = decode_all(&mut decoder, &block);
            let expected: Vec<_> = fields
                .iter()
                .map(|(n, v, _)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
                .collect();
            assert_eq!(decoded, expected);
        }
        // After the first block, five indexed fields (one byte each) and the never-indexed
        // id (name index 4 bits + length + value) — the second block's id is 2 bytes long.
        assert_eq!(sizes[1], 5 + 1 + 1 + 1 + 12 + 2);
        assert!(sizes[0] > sizes[1] + 20, "{sizes:?}");
    }

    #[test]
    fn eviction_and_table_size_updates_stay_in_step_with_the_decoder() {
        let mut encoder = Encoder::default();
        let mut decoder = Decoder::default();
        for round in 0..200 {
            let mut block = Vec::new();
            if round == 50 {
                encoder.set_max_size(100);
            }
            if round == 120 {
                encoder.set_max_size(0);
            }
            if round == 160 {
                encoder.set_max_size(65_536);
            }
            encoder.begin_block(&mut block);
            let path = format!("/items/{}", round % 37);
            let long = "v".repeat(round * 40);
            encoder.encode(b":path", path.as_bytes(), Indexing::Index, &mut block);
            encoder.encode(b"x-long", long.as_bytes(), Indexing::Index, &mut block);
            encoder.encode(b"x-custom", b"same", Indexing::Index, &mut block);
            let decoded = decode_all(&mut decoder, &block);
            assert_eq!(decoded[0].1, path.as_bytes(), "round {round}");
            assert_eq!(decoded[1].1, long.as_bytes(), "round {round}");
            assert_eq!(decoded[2].1, b"same", "round {round}");
            assert!(encoder.size <= encoder.max_size);
        }
        assert_eq!(encoder.max_size, DEFAULT_TABLE_SIZE);
    }

    #[test]
    fn integers_use_continuation_bytes_past_the_prefix() {
        let mut out = Vec::new();
        encode_int(&mut out, 1337, 5, 0);
        assert_eq!(out, [31, 154, 10]); // RFC 7541 C.1.2
        out.clear();
        encode_int(&mut out, 10, 5, 0);
        assert_eq!(out, [10]);
    }
}
