//! The HPACK decoder for response header blocks (RFC 7541 §3–6): indexed fields from the
//! static and dynamic tables, literals with or without indexing, Huffman-coded strings and
//! dynamic table size updates. Fields are handed out as borrowed slices; nothing is
//! allocated per field except the entries the server asks us to index.

use crate::hpack::{DEFAULT_TABLE_SIZE, ENTRY_OVERHEAD, STATIC_TABLE};
use crate::huffman;
use std::collections::VecDeque;

/// A header block the decoder refused (a COMPRESSION_ERROR).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeError;

/// One dynamic table entry, name and value in one allocation.
struct Entry {
    bytes: Box<[u8]>,
    name_len: usize,
}

/// The response decoder: the dynamic table the server's encoder mirrors, newest first.
pub struct Decoder {
    table: VecDeque<Entry>,
    size: usize,
    max_size: usize,
    /// Huffman-decoded name and value of the current field (reused).
    name_buf: Vec<u8>,
    value_buf: Vec<u8>,
    /// Boxed and taken out while a field is decoded (a pointer move, not 400 bytes).
    huffman_cache: Option<Box<HuffmanCache>>,
}

/// The last few Huffman-coded strings and their decoding. Servers that index nothing send
/// the same coded values in every response (nginx: server, date, content-type...), and a
/// comparison is cheaper than decoding again.
#[derive(Default)]
struct HuffmanCache {
    entries: [(Vec<u8>, Vec<u8>); 8],
    next: usize,
}

impl HuffmanCache {
    /// Decodes `coded` into `out` (replacing its contents), from the cache when it can.
    fn decode(&mut self, coded: &[u8], out: &mut Vec<u8>) -> Result<(), DecodeError> {
        out.clear();
        if let Some((_, decoded)) = self.entries.iter().find(|(c, _)| c == coded) {
            out.extend_from_slice(decoded);
            return Ok(());
        }
        huffman::decode(coded, out).map_err(|_| DecodeError)?;
        if coded.len() <= 64 {
            let (c, d) = &mut self.entries[self.next];
            c.clear();
            c.extend_from_slice(coded);
            d.clear();
            d.extend_from_slice(out);
            self.next = (self.next + 1) % self.entries.len();
        }
        Ok(())
    }
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder {
            table: VecDeque::new(),
            size: 0,
            max_size: DEFAULT_TABLE_SIZE,
            name_buf: Vec::new(),
            value_buf: Vec::new(),
            huffman_cache: Some(Box::default()),
        }
    }
}

/// Reads an HPACK integer with a `prefix_bits`-bit prefix at `*at`.
fn read_int(block: &[u8], at: &mut usize, prefix_bits: u8) -> Result<usize, DecodeError> {
    let max_prefix = (1usize << prefix_bits) - 1;
    let first = usize::from(*block.get(*at).ok_or(DecodeError)?) & max_prefix;
    *at += 1;
    if first < max_prefix {
        return Ok(first);
    }
    let mut value = max_prefix;
    let mut shift = 0;
    loop {
        let byte = *block.get(*at).ok_or(DecodeError)?;
        *at += 1;
        if shift > 28 {
            return Err(DecodeError); // far beyond any sane length or index
        }
        value += usize::from(byte & 0x7f) << shift;
        shift += 7;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
}

/// Where a string literal's bytes are: in the block, or decoded into a buffer.
enum Str {
    Raw(usize, usize),
    Decoded,
}

/// Reads a string literal at `*at`; Huffman-coded ones are decoded into `buf`.
fn read_str(
    block: &[u8],
    at: &mut usize,
    buf: &mut Vec<u8>,
    cache: &mut HuffmanCache,
) -> Result<Str, DecodeError> {
    let huffman = block.get(*at).ok_or(DecodeError)? & 0x80 != 0;
    let len = read_int(block, at, 7)?;
    let end = at.checked_add(len).filter(|&e| e <= block.len());
    let end = end.ok_or(DecodeError)?;
    let start = *at;
    *at = end;
    if huffman {
        cache.decode(&block[start..end], buf)?;
        Ok(Str::Decoded)
    } else {
        Ok(Str::Raw(start, end))
    }
}

impl Decoder {
    /// The (name, value) at table `index` (1-based: static entries, then dynamic).
    fn entry(&self, index: usize) -> Result<(&[u8], &[u8]), DecodeError> {
        if index == 0 {
            return Err(DecodeError);
        }
        if let Some((name, value)) = STATIC_TABLE.get(index - 1) {
            return Ok((name.as_bytes(), value.as_bytes()));
        }
        let entry = self
            .table
            .get(index - STATIC_TABLE.len() - 1)
            .ok_or(DecodeError)?;
        Ok((
            &entry.bytes[..entry.name_len],
            &entry.bytes[entry.name_len..],
        ))
    }

    fn evict_to(&mut self, room: usize) {
        while self.size > room {
            match self.table.pop_back() {
                Some(entry) => self.size -= entry.bytes.len() + ENTRY_OVERHEAD,
                None => break,
            }
        }
    }

    fn insert(&mut self, name: &[u8], value: &[u8]) {
        let size = name.len() + value.len() + ENTRY_OVERHEAD;
        if size > self.max_size {
            // An entry larger than the table empties it (RFC 7541 §4.4).
            self.evict_to(0);
            return;
        }
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

    /// Decodes a whole header block, calling `field` for each field in order.
    pub fn decode(
        &mut self,
        block: &[u8],
        mut field: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), DecodeError> {
        let mut at = 0;
        let mut fields_seen = false;
        while at < block.len() {
            let first = block[at];
            if first & 0x80 != 0 {
                let index = read_int(block, &mut at, 7)?;
                let (name, value) = self.entry(index)?;
                field(name, value);
                fields_seen = true;
                continue;
            }
            if first & 0xe0 == 0x20 {
                // A table size update: only before the block's first field, and never
                // beyond the size we allow (the protocol default: we announce no other).
                let size = read_int(block, &mut at, 5)?;
                if fields_seen || size > DEFAULT_TABLE_SIZE {
                    return Err(DecodeError);
                }
                self.max_size = size;
                self.evict_to(size);
                continue;
            }
            let (prefix_bits, index_it) = if first & 0x40 != 0 {
                (6, true)
            } else {
                (4, false) // without indexing (0000) or never indexed (0001)
            };
            let name_index = read_int(block, &mut at, prefix_bits)?;
            let mut name_buf = std::mem::take(&mut self.name_buf);
            let mut value_buf = std::mem::take(&mut self.value_buf);
            let mut cache = self.huffman_cache.take().unwrap_or_default();
            let result = (|| {
                let name_str = if name_index == 0 {
                    Some(read_str(block, &mut at, &mut name_buf, &mut cache)?)
                } else {
                    None
                };
                let value_str = read_str(block, &mut at, &mut value_buf, &mut cache)?;
                let name: &[u8] = match name_str {
                    None => self.entry(name_index)?.0,
                    Some(Str::Raw(s, e)) => &block[s..e],
                    Some(Str::Decoded) => &name_buf,
                };
                let value: &[u8] = match value_str {
                    Str::Raw(s, e) => &block[s..e],
                    Str::Decoded => &value_buf,
                };
                field(name, value);
                if index_it {
                    let (name, value) = (name.to_vec(), value.to_vec());
                    self.insert(&name, &value);
                }
                Ok(())
            })();
            self.name_buf = name_buf;
            self.value_buf = value_buf;
            self.huffman_cache = Some(cache);
            result?;
            fields_seen = true;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Fields = Vec<(Vec<u8>, Vec<u8>)>;

    fn decode_all(decoder: &mut Decoder, block: &[u8]) -> Result<Fields, DecodeError> {
        let mut fields = Vec::new();
        decoder.decode(block, |n, v| fields.push((n.to_vec(), v.to_vec())))?;
        Ok(fields)
    }

    #[test]
    fn decodes_the_rfc_response_sequence_with_huffman_and_eviction() {
        // RFC 7541 C.6: three responses, Huffman-coded, table size 256 (set by an update).
        let mut decoder = Decoder::default();
        let update = [0x3f, 0xe1, 0x01]; // size update to 256
        let first: Vec<u8> = update
            .iter()
            .copied()
            .chain([
                0x48, 0x82, 0x64, 0x02, 0x58, 0x85, 0xae, 0xc3, 0x77, 0x1a, 0x4b, 0x61, 0x96, 0xd0,
                0x7a, 0xbe, 0x94, 0x10, 0x54, 0xd4, 0x44, 0xa8, 0x20, 0x05, 0x95, 0x04, 0x0b, 0x81,
                0x66, 0xe0, 0x82, 0xa6, 0x2d, 0x1b, 0xff, 0x6e, 0x91, 0x9d, 0x29, 0xad, 0x17, 0x18,
                0x63, 0xc7, 0x8f, 0x0b, 0x97, 0xc8, 0xe9, 0xae, 0x82, 0xae, 0x43, 0xd3,
            ])
            .collect();
        let fields = decode_all(&mut decoder, &first).unwrap();
        assert_eq!(fields[0], (b":status".to_vec(), b"302".to_vec()));
        assert_eq!(fields[1], (b"cache-control".to_vec(), b"private".to_vec()));
        assert_eq!(
            fields[2],
            (b"date".to_vec(), b"Mon, 21 Oct 2013 20:13:21 GMT".to_vec())
        );
        assert_eq!(
            fields[3],
            (b"location".to_vec(), b"https://www.example.com".to_vec())
        );
        assert_eq!(decoder.size, 222);
        // C.6.2: ":status: 307" evicts the oldest entry; the others are indexed.
        let second = [0x48, 0x83, 0x64, 0x0e, 0xff, 0xc1, 0xc0, 0xbf];
        let fields = decode_all(&mut decoder, &second).unwrap();
        assert_eq!(fields[0].1, b"307");
        assert_eq!(fields[1].1, b"private");
        assert_eq!(fields[3].1, b"https://www.example.com");
        assert_eq!(decoder.size, 222);
    }

    #[test]
    fn repeated_huffman_strings_decode_the_same_from_the_cache() {
        let host = [
            0x01, 0x8c, 0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff,
        ];
        let no_cache = [0x01, 0x86, 0xa8, 0xeb, 0x10, 0x64, 0x9c, 0xbf];
        let mut decoder = Decoder::default();
        for block in [&host[..], &no_cache, &host, &no_cache, &host] {
            let expected: &[u8] = if block.len() == host.len() {
                b"www.example.com"
            } else {
                b"no-cache"
            };
            let fields = decode_all(&mut decoder, block).unwrap();
            assert_eq!(fields, [(b":authority".to_vec(), expected.to_vec())]);
        }
        // A cached string does not hide a bad one that merely starts the same.
        assert_eq!(decode_all(&mut decoder, &host[..13]), Err(DecodeError));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for block in [
            &[0x80][..],                           // index 0
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff], // endless integer
            &[0xbf],                               // dynamic index into an empty table
            &[0x40, 0x05, b'a'],                   // string longer than the block
            &[0x82, 0x3f, 0xe1, 0x01],             // size update after a field
            &[0x3f, 0xe1, 0x7f],                   // size update beyond what we allow
            &[0x40, 0x81, 0x00, 0x00],             // bad Huffman padding
        ] {
            assert_eq!(
                decode_all(&mut Decoder::default(), block),
                Err(DecodeError),
                "{block:x?}"
            );
        }
    }
}
