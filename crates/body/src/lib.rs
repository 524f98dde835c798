//! A response body as it streams in: content-decoded on the fly (gzip, deflate, br) into a
//! small reused buffer, its decoded size counted, and kept (decoded) only when asked, up to a
//! limit. Nothing grows with the body unless it is kept, so an endless or bomb-like body costs
//! CPU, never memory; and decoding stops at an output budget per event-loop turn (see
//! [`BodySink::push`]), so a bomb costs its connection turns, never the thread's other
//! connections their timers.

use barrage_metrics::ErrorKind;
use brotli_decompressor::{
    Allocator, BrotliDecompressStream, BrotliResult, BrotliState, SliceWrapper, SliceWrapperMut,
    StandardAlloc,
};
use miniz_oxide::inflate::stream::{inflate, InflateState, MinReset};
use miniz_oxide::{DataFormat, MZError, MZFlush, MZStatus};
use std::cell::Cell;

/// The default for how much of a body is kept for extractions and checks.
pub const DEFAULT_MAX_BODY: usize = 4 * 1024 * 1024;

/// Decoded output is produced this much at a time.
const CHUNK: usize = 8 * 1024;
/// Decoded output one connection may produce per event-loop turn before it hands the thread
/// back ([`BodySink::push`]'s budget): a 1000:1 bomb in one 16 KiB read or HTTP/2 DATA frame
/// would otherwise be 16 MB of decoding without a turn for any other task or timer. A turn may
/// overshoot it by at most one chunk of output (8 KiB).
pub const TURN_BUDGET: u64 = 256 << 10;

/// How much of a piece [`BodySink::push`] took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum Pushed {
    /// All of it, decoded as far as it goes.
    All,
    /// The budget ran out after taking this many bytes of the piece. Give other tasks a
    /// turn, then push the rest with a fresh budget — also when no byte is left: decoded
    /// output may still be pending (push an empty piece to get it).
    Paused(usize),
}
/// A gzip header (with its optional name, comment and extra field) longer than this is
/// taken for garbage.
const MAX_GZIP_HEADER: usize = 4 * 1024;

/// How the body is encoded (`Content-Encoding`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ContentCoding {
    #[default]
    Identity,
    Gzip,
    Deflate,
    /// Brotli (`br`).
    Br,
    /// A coding barrage does not decode; the body is left as it came.
    Other,
}

impl ContentCoding {
    pub fn parse(value: &[u8]) -> ContentCoding {
        let value = value.trim_ascii();
        if value.is_empty() || value.eq_ignore_ascii_case(b"identity") {
            ContentCoding::Identity
        } else if value.eq_ignore_ascii_case(b"gzip") || value.eq_ignore_ascii_case(b"x-gzip") {
            ContentCoding::Gzip
        } else if value.eq_ignore_ascii_case(b"deflate") {
            ContentCoding::Deflate
        } else if value.eq_ignore_ascii_case(b"br") {
            ContentCoding::Br
        } else {
            ContentCoding::Other
        }
    }

    pub fn decodes(self) -> bool {
        matches!(
            self,
            ContentCoding::Gzip | ContentCoding::Deflate | ContentCoding::Br
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Decoding {
    /// Collecting the gzip or zlib header (in `header`).
    #[default]
    Header,
    Stream,
    /// The compressed stream ended; anything after it is ignored.
    Done,
    /// Not a valid stream of its coding.
    Failed,
}

type Brotli = BrotliState<BudgetedBytes, StandardAlloc, StandardAlloc>;

/// The most brotli window (ring buffer) memory one thread's bodies may hold at once. A
/// brotli stream declares its window, up to 16 MiB; 20 clients on a worker each decoding
/// such a body would hold 320 MiB. Past this budget a body is not decoded (see
/// [`BodySink::push`]).
pub const BROTLI_BUDGET: usize = 32 * 1024 * 1024;

thread_local! {
    /// Brotli byte buffers alive on this thread, in bytes.
    static BROTLI_IN_USE: Cell<usize> = const { Cell::new(0) };
    /// Whether a brotli allocation was refused since the last look.
    static BROTLI_REFUSED: Cell<bool> = const { Cell::new(false) };
}

/// The brotli decoder's byte allocator, held to [`BROTLI_BUDGET`] per thread: a refused
/// allocation comes back empty, which the decoder reports as a failure.
#[derive(Default, Clone, Copy)]
struct BudgetedBytes;

/// A byte buffer counted against its thread's brotli budget while it lives.
#[derive(Default)]
struct Counted(Box<[u8]>);

impl Drop for Counted {
    fn drop(&mut self) {
        let len = self.0.len();
        BROTLI_IN_USE.with(|used| used.set(used.get().saturating_sub(len)));
    }
}

impl SliceWrapper<u8> for Counted {
    fn slice(&self) -> &[u8] {
        &self.0
    }
}

impl SliceWrapperMut<u8> for Counted {
    fn slice_mut(&mut self) -> &mut [u8] {
        &mut self.0
    }
}

impl Allocator<u8> for BudgetedBytes {
    type AllocatedMemory = Counted;

    fn alloc_cell(&mut self, len: usize) -> Counted {
        let granted = BROTLI_IN_USE.with(|used| {
            let after = used.get().saturating_add(len);
            let granted = after <= BROTLI_BUDGET;
            if granted {
                used.set(after);
            }
            granted
        });
        if !granted {
            BROTLI_REFUSED.with(|refused| refused.set(true));
            return Counted::default();
        }
        Counted(vec![0; len].into_boxed_slice())
    }

    fn free_cell(&mut self, data: Counted) {
        drop(data);
    }
}

/// Brotli byte buffers alive on this thread (for tests and diagnostics).
pub fn brotli_bytes_in_use() -> usize {
    BROTLI_IN_USE.with(Cell::get)
}

/// Where one response body goes. Keep one around: its buffers and inflater are reused.
#[derive(Default)]
pub struct BodySink {
    keep: bool,
    limit: usize,
    coding: ContentCoding,
    decoding: Decoding,
    /// The (decoded) body, when kept.
    body: Vec<u8>,
    decoded: u64,
    header: Vec<u8>,
    /// Raw deflate, reset per body without zeroing its 32 KiB window: flate2's reset zeroes
    /// it, and that was most of a small gzip response's decoding cost (BENCHMARKS.md). A
    /// valid stream never reads window bytes it did not write; an invalid one that reaches
    /// back past its start reads an earlier body of this target instead of zeros.
    inflate: Option<Box<InflateState>>,
    /// Made per brotli body (its window is sized by the stream), dropped after it.
    brotli: Option<Box<Brotli>>,
    /// Where decoded output lands, [`CHUNK`] bytes, made once and reused: a fresh zeroed
    /// buffer per call cost a small gzip response about 10 % of its CPU.
    out: Vec<u8>,
}

impl std::fmt::Debug for BodySink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BodySink")
            .field("keep", &self.keep)
            .field("coding", &self.coding)
            .field("decoded", &self.decoded)
            .finish_non_exhaustive()
    }
}

/// Where the deflate stream of a gzip member starts (RFC 1952 header); `None` while the
/// header is incomplete.
fn gzip_payload(data: &[u8]) -> Option<usize> {
    const FHCRC: u8 = 2;
    const FEXTRA: u8 = 4;
    const FNAME: u8 = 8;
    const FCOMMENT: u8 = 16;
    if data.len() < 10 {
        return None;
    }
    let flags = data[3];
    let mut at = 10;
    if flags & FEXTRA != 0 {
        let length = usize::from(u16::from_le_bytes([*data.get(at)?, *data.get(at + 1)?]));
        at += 2 + length;
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            at += data.get(at..)?.iter().position(|&b| b == 0)? + 1;
        }
    }
    if flags & FHCRC != 0 {
        at += 2;
    }
    (at <= data.len()).then_some(at)
}

/// Whether `data` opens with a zlib header (RFC 1950); some servers send raw deflate.
fn has_zlib_header(cmf: u8, flg: u8) -> bool {
    cmf & 0x0f == 8 && (u16::from(cmf) << 8 | u16::from(flg)) % 31 == 0
}

impl BodySink {
    /// Readies the sink for a new body: `keep` keeps it (decoded), at most `limit` bytes.
    pub fn start(&mut self, keep: bool, limit: usize) {
        self.keep = keep;
        self.limit = limit;
        self.coding = ContentCoding::Identity;
        self.decoding = Decoding::Header;
        self.body.clear();
        self.decoded = 0;
        self.header.clear();
        self.brotli = None;
    }

    pub fn set_coding(&mut self, coding: ContentCoding) {
        self.coding = coding;
    }

    pub fn coding(&self) -> ContentCoding {
        self.coding
    }

    /// The body as the application sees it (decoded), when it was kept and could be decoded.
    pub fn body(&self) -> Option<&[u8]> {
        let complete = !self.coding.decodes() || self.decoding == Decoding::Done;
        (self.keep && complete).then_some(&self.body[..])
    }

    /// The decoded size of a content-encoded body that decoded completely.
    pub fn decoded_len(&self) -> Option<u64> {
        (self.coding.decodes() && self.decoding == Decoding::Done).then_some(self.decoded)
    }

    /// Decoded bytes so far (the wire bytes of a body that is not decoded).
    pub fn decoded_so_far(&self) -> u64 {
        self.decoded
    }

    /// Bytes of buffer this holds on to between bodies.
    pub fn retained_bytes(&self) -> usize {
        const INFLATER: usize = 48 * 1024;
        self.body.capacity()
            + self.header.capacity()
            + self.out.capacity()
            + if self.inflate.is_some() { INFLATER } else { 0 }
    }

    /// Takes the next piece of the body as framed on the wire, decoding at most about
    /// `budget` bytes of output (what it decodes is taken off `budget`): a body that
    /// compresses 1000:1 arrives faster than it decodes, and the task reading it must let
    /// the thread's other tasks and timers have their turn. [`Pushed::Paused`] says the
    /// budget ran out: yield, renew the budget ([`TURN_BUDGET`]), and push the rest. Past
    /// the limit of a kept body it fails with [`ErrorKind::BodyTooLarge`].
    #[inline]
    pub fn push(&mut self, data: &[u8], budget: &mut u64) -> Result<Pushed, ErrorKind> {
        if !self.coding.decodes() {
            self.decoded += data.len() as u64;
            if self.keep {
                if self.body.len() + data.len() > self.limit {
                    return Err(ErrorKind::BodyTooLarge);
                }
                self.body.extend_from_slice(data);
            }
            return Ok(Pushed::All);
        }
        match self.decoding {
            Decoding::Done | Decoding::Failed => Ok(Pushed::All),
            Decoding::Header => self.header(data, budget),
            Decoding::Stream => self.decode(data, budget),
        }
    }

    /// Takes the whole piece, decoding all of it now, however long it takes: for a body
    /// that is already whole in memory (bounded by the caller), never for one off a socket.
    pub fn push_all(&mut self, data: &[u8]) -> Result<(), ErrorKind> {
        let mut unbounded = u64::MAX;
        match self.push(data, &mut unbounded)? {
            Pushed::All => Ok(()),
            Pushed::Paused(_) => unreachable!("an unbounded budget never runs out"),
        }
    }

    /// Collects the gzip or zlib header, then starts the stream after it.
    #[inline]
    fn header(&mut self, data: &[u8], budget: &mut u64) -> Result<Pushed, ErrorKind> {
        if self.coding == ContentCoding::Br {
            self.brotli = Some(Box::new(BrotliState::new(
                BudgetedBytes,
                StandardAlloc::default(),
                StandardAlloc::default(),
            )));
            self.decoding = Decoding::Stream;
            return self.decode(data, budget);
        }
        // Most bodies bring their whole header in the first piece: read it in place.
        let in_place = self.header.is_empty();
        let earlier = self.header.len();
        if !in_place {
            self.header.extend_from_slice(data);
        }
        let seen: &[u8] = if in_place { data } else { &self.header };
        let start = match self.coding {
            ContentCoding::Gzip => {
                if seen.iter().zip([0x1f, 0x8b, 8]).any(|(a, b)| *a != b) {
                    self.decoding = Decoding::Failed;
                    return Ok(Pushed::All);
                }
                match gzip_payload(seen) {
                    Some(start) => start,
                    None if seen.len() > MAX_GZIP_HEADER => {
                        self.decoding = Decoding::Failed;
                        return Ok(Pushed::All);
                    }
                    None => return Ok(self.keep_header(in_place, data)),
                }
            }
            _ => match seen {
                [cmf, flg, ..] => 2 * usize::from(has_zlib_header(*cmf, *flg)),
                _ => return Ok(self.keep_header(in_place, data)),
            },
        };
        let inflate = self
            .inflate
            .get_or_insert_with(|| InflateState::new_boxed(DataFormat::Raw));
        inflate.reset_as(MinReset);
        self.decoding = Decoding::Stream;
        if in_place {
            return Ok(match self.decode(&data[start..], budget)? {
                Pushed::Paused(taken) => Pushed::Paused(start + taken),
                Pushed::All => Pushed::All,
            });
        }
        // The stream starts in an earlier piece only for raw deflate whose first piece was
        // one byte (a gzip header is never complete in the earlier pieces, a zlib one is
        // two bytes). One byte of deflate decodes to nothing (a block's header and its
        // first code take more than 8 bits), so it goes through without a budget.
        let header = std::mem::take(&mut self.header);
        let result = if start < earlier {
            let mut unbounded = u64::MAX;
            self.decode(&header[start..earlier], &mut unbounded)
                .map(|_| ())
        } else {
            Ok(())
        };
        self.header = header;
        self.header.clear();
        result?;
        let from = start.saturating_sub(earlier);
        Ok(match self.decode(&data[from..], budget)? {
            Pushed::Paused(taken) => Pushed::Paused(from + taken),
            Pushed::All => Pushed::All,
        })
    }

    /// Keeps an incomplete header (read in place) for the next piece to complete.
    fn keep_header(&mut self, in_place: bool, data: &[u8]) -> Pushed {
        if in_place {
            self.header.extend_from_slice(data);
        }
        Pushed::All
    }

    /// Decodes `input` chunk by chunk, counting (and keeping) what comes out, until the
    /// input is used up or `budget` is.
    fn decode(&mut self, input: &[u8], budget: &mut u64) -> Result<Pushed, ErrorKind> {
        let mut out = std::mem::take(&mut self.out);
        out.resize(CHUNK, 0);
        let result = self.decode_into(input, &mut out, budget);
        self.out = out;
        result
    }

    fn decode_into(
        &mut self,
        input: &[u8],
        out: &mut [u8],
        budget: &mut u64,
    ) -> Result<Pushed, ErrorKind> {
        let mut taken = 0;
        loop {
            if *budget == 0 {
                return Ok(Pushed::Paused(taken));
            }
            let (consumed, produced, ended) = match self.step(&input[taken..], out) {
                Some(step) => step,
                None => {
                    self.decoding = Decoding::Failed;
                    self.brotli = None;
                    // A window past the thread's brotli budget: a kept body cannot be had
                    // within bounded memory; a counted one stays at its wire size.
                    let refused = BROTLI_REFUSED.with(|refused| refused.replace(false));
                    return if refused && self.keep {
                        Err(ErrorKind::BodyTooLarge)
                    } else {
                        Ok(Pushed::All)
                    };
                }
            };
            taken += consumed;
            self.decoded += produced as u64;
            *budget = budget.saturating_sub(produced as u64);
            if self.keep {
                if self.body.len() + produced > self.limit {
                    return Err(ErrorKind::BodyTooLarge);
                }
                self.body.extend_from_slice(&out[..produced]);
            }
            if ended {
                self.decoding = Decoding::Done;
                self.brotli = None;
                return Ok(Pushed::All);
            }
            // Output not full and no input left: everything available came out.
            if produced < CHUNK && taken == input.len() {
                return Ok(Pushed::All);
            }
            if consumed == 0 && produced == 0 {
                // Input left, room for output, and no progress: a stream that cannot go on.
                self.decoding = Decoding::Failed;
                return Ok(Pushed::All);
            }
        }
    }

    /// One decoder call: (input consumed, output produced, stream ended), `None` on a
    /// corrupt stream.
    fn step(&mut self, input: &[u8], out: &mut [u8]) -> Option<(usize, usize, bool)> {
        if let Some(brotli) = self.brotli.as_deref_mut() {
            let (mut available_in, mut input_offset) = (input.len(), 0);
            let (mut available_out, mut output_offset, mut total) = (out.len(), 0, 0);
            let result = BrotliDecompressStream(
                &mut available_in,
                &mut input_offset,
                input,
                &mut available_out,
                &mut output_offset,
                out,
                &mut total,
                brotli,
            );
            return match result {
                BrotliResult::ResultFailure => None,
                result => Some((
                    input_offset,
                    output_offset,
                    matches!(result, BrotliResult::ResultSuccess),
                )),
            };
        }
        let state = self.inflate.as_deref_mut()?;
        let result = inflate(state, input, out, MZFlush::None);
        let ended = match result.status {
            Ok(status) => status == MZStatus::StreamEnd,
            // No progress possible with this input and room: the caller tells a stream
            // that needs more input from one that is stuck.
            Err(MZError::Buf) => false,
            Err(_) => return None,
        };
        Some((result.bytes_consumed, result.bytes_written, ended))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn feed(
        sink: &mut BodySink,
        coding: ContentCoding,
        wire: &[u8],
        piece: usize,
    ) -> Result<(), ErrorKind> {
        sink.set_coding(coding);
        for chunk in wire.chunks(piece) {
            sink.push_all(chunk)?;
        }
        Ok(())
    }

    #[test]
    fn gzip_deflate_and_brotli_decode_in_pieces_of_any_size() {
        let text: Vec<u8> = (0..100_000u32)
            .flat_map(|i| i.to_string().into_bytes())
            .collect();
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        zlib.write_all(&text).unwrap();
        let zlib = zlib.finish().unwrap();
        let mut raw = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        raw.write_all(&text).unwrap();
        let raw = raw.finish().unwrap();
        let mut br = Vec::new();
        {
            let mut w = brotli::CompressorWriter::new(&mut br, 4096, 5, 22);
            w.write_all(&text).unwrap();
        }
        let cases = [
            (ContentCoding::Gzip, gzip(&text)),
            (ContentCoding::Deflate, zlib),
            (ContentCoding::Deflate, raw),
            (ContentCoding::Br, br),
        ];
        let mut sink = BodySink::default();
        for (coding, wire) in &cases {
            for piece in [1, 7, 4096, wire.len()] {
                sink.start(true, 1 << 20);
                feed(&mut sink, *coding, wire, piece).unwrap();
                assert!(
                    sink.body() == Some(&text[..]),
                    "{coding:?} in {piece}-byte pieces"
                );
                assert_eq!(sink.decoded_len(), Some(text.len() as u64));
            }
        }
    }

    #[test]
    fn a_reused_inflater_decodes_each_body_alone_also_after_a_corrupt_one() {
        let mut sink = BodySink::default();
        let first = gzip(b"first body, long enough to fill some of the window");
        let mut corrupt = gzip(b"second body");
        corrupt[10] = 0xff; // block type 3: reserved, invalid
        for (wire, expected) in [
            (
                &first,
                Some(&b"first body, long enough to fill some of the window"[..]),
            ),
            (&corrupt, None),
            (&gzip(b"third"), Some(&b"third"[..])),
        ] {
            sink.start(true, 1 << 20);
            feed(&mut sink, ContentCoding::Gzip, wire, wire.len()).unwrap();
            assert_eq!(sink.body(), expected);
        }
    }

    #[test]
    fn brotli_windows_past_the_thread_budget_are_refused_not_allocated() {
        // 17 MiB in a 16 MiB window: the first meta-block is not the last, so the decoder
        // wants the whole window.
        let data = vec![0u8; 17 << 20];
        let mut br = Vec::new();
        {
            let mut w = brotli::CompressorWriter::new(&mut br, 1 << 16, 1, 24);
            w.write_all(&data).unwrap();
        }
        let head = &br[..br.len() / 2];
        let mut sinks: Vec<BodySink> = (0..3).map(|_| BodySink::default()).collect();
        for (i, sink) in sinks.iter_mut().enumerate() {
            sink.start(i == 2, 1 << 30);
            sink.set_coding(ContentCoding::Br);
            let pushed = sink.push_all(head);
            // The first fits; the second would pass the budget and is not decoded; the
            // third wanted its body kept, and cannot have it.
            let expected = if i == 2 {
                Err(ErrorKind::BodyTooLarge)
            } else {
                Ok(())
            };
            assert_eq!(pushed, expected, "sink {i}");
            assert!(brotli_bytes_in_use() <= BROTLI_BUDGET);
        }
        assert!(
            brotli_bytes_in_use() >= 16 << 20,
            "the first holds its window"
        );
        sinks[0].push_all(&br[br.len() / 2..]).unwrap();
        assert_eq!(sinks[0].decoded_len(), Some(17 << 20));
        assert_eq!(
            sinks[1].decoded_len(),
            None,
            "not decoded: counted at wire size"
        );
        assert_eq!(brotli_bytes_in_use(), 0, "every window given back");
    }

    #[test]
    fn counting_keeps_nothing_and_a_bomb_costs_no_memory() {
        let bomb = gzip(&vec![0u8; 64 << 20]);
        let mut sink = BodySink::default();
        sink.start(false, 1024);
        feed(&mut sink, ContentCoding::Gzip, &bomb, 16 * 1024).unwrap();
        assert_eq!(sink.decoded_len(), Some(64 << 20), "counted as decoded");
        assert_eq!(sink.body(), None);
        assert!(
            sink.retained_bytes() < 128 * 1024,
            "{}",
            sink.retained_bytes()
        );
    }

    #[test]
    fn a_kept_body_past_its_limit_is_too_large_encoded_or_not() {
        let mut sink = BodySink::default();
        sink.start(true, 1000);
        assert_eq!(
            feed(&mut sink, ContentCoding::Gzip, &gzip(&[b'a'; 1001]), 100),
            Err(ErrorKind::BodyTooLarge)
        );
        sink.start(true, 1000);
        assert_eq!(
            feed(&mut sink, ContentCoding::Identity, &[b'a'; 1000], 10),
            Ok(())
        );
        assert_eq!(sink.body().map(<[u8]>::len), Some(1000));
        assert_eq!(sink.push_all(b"b"), Err(ErrorKind::BodyTooLarge));
    }

    #[test]
    fn bodies_that_do_not_decode_are_neither_kept_nor_sized() {
        let mut sink = BodySink::default();
        for (coding, wire) in [
            (ContentCoding::Gzip, vec![b'x'; 100_000]),
            (
                ContentCoding::Gzip,
                gzip(b"truncated stream here")[..20].to_vec(),
            ),
            (ContentCoding::Br, vec![0xff; 10_000]),
        ] {
            sink.start(true, 1 << 20);
            feed(&mut sink, coding, &wire, 333).unwrap();
            assert_eq!(sink.body(), None, "{coding:?}");
            assert_eq!(sink.decoded_len(), None);
            assert!(sink.retained_bytes() < 128 * 1024);
        }
        sink.start(true, 10);
        feed(&mut sink, ContentCoding::Other, b"zstd?", 2).unwrap();
        assert_eq!(
            sink.body(),
            Some(&b"zstd?"[..]),
            "an unknown coding is kept as it came"
        );
        assert_eq!(sink.decoded_len(), None);
    }

    /// Feeds `wire` in `piece`-byte pieces with a budget of `budget` per turn, as a
    /// connection does; returns the output of each turn.
    fn turns(sink: &mut BodySink, wire: &[u8], piece: usize, budget: u64) -> Vec<u64> {
        let mut turns = Vec::new();
        let mut left = budget;
        let mut turn_start = sink.decoded_so_far();
        let mut next_turn = |sink: &BodySink, left: &mut u64| {
            turns.push(sink.decoded_so_far() - turn_start);
            turn_start = sink.decoded_so_far();
            *left = budget;
        };
        for chunk in wire.chunks(piece) {
            let mut rest = chunk;
            while let Pushed::Paused(taken) = sink.push(rest, &mut left).unwrap() {
                rest = &rest[taken..];
                next_turn(sink, &mut left);
            }
        }
        next_turn(sink, &mut left);
        turns
    }

    #[test]
    fn decoding_stops_at_the_budget_and_resumes_to_the_same_output() {
        // A bomb (about 1000:1) of varied bytes, so that resuming at the wrong place shows.
        let text: Vec<u8> = (0..(8u32 << 20))
            .map(|i| if i % 4099 == 0 { (i >> 12) as u8 } else { 0 })
            .collect();
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        zlib.write_all(&text).unwrap();
        let mut br = Vec::new();
        {
            let mut w = brotli::CompressorWriter::new(&mut br, 4096, 9, 22);
            w.write_all(&text).unwrap();
        }
        let cases = [
            (ContentCoding::Gzip, gzip(&text)),
            (ContentCoding::Deflate, zlib.finish().unwrap()),
            (ContentCoding::Br, br),
        ];
        let budget = TURN_BUDGET;
        for (coding, wire) in &cases {
            assert!(
                wire.len() < 64 << 10,
                "{coding:?}: a bomb ({} bytes)",
                wire.len()
            );
            for piece in [16 * 1024, wire.len(), 1000] {
                let mut sink = BodySink::default();
                sink.start(true, 16 << 20);
                sink.set_coding(*coding);
                let turns = turns(&mut sink, wire, piece, budget);
                assert!(
                    sink.body() == Some(&text[..]),
                    "{coding:?} in {piece}-byte pieces"
                );
                assert_eq!(sink.decoded_len(), Some(text.len() as u64));
                let most = turns.iter().max().copied().unwrap_or(0);
                assert!(
                    most <= budget + CHUNK as u64,
                    "{coding:?}: {most} bytes decoded in one turn, over the budget"
                );
                assert!(
                    turns.len() as u64 >= text.len() as u64 / (budget + CHUNK as u64),
                    "{coding:?}: {} turns",
                    turns.len()
                );
            }
        }
    }

    #[test]
    fn a_spent_budget_decodes_nothing_and_one_chunk_turns_resume_to_the_end() {
        let text = vec![7u8; 1 << 20];
        let wire = gzip(&text);
        let mut sink = BodySink::default();
        sink.start(false, 0);
        sink.set_coding(ContentCoding::Gzip);
        let mut budget = 0;
        let Ok(Pushed::Paused(header)) = sink.push(&wire, &mut budget) else {
            panic!("a spent budget decodes nothing");
        };
        assert!(header <= 10, "at most the gzip header is taken: {header}");
        assert_eq!(sink.decoded_so_far(), 0);
        let mut budget = CHUNK as u64;
        let mut rest = &wire[header..];
        let mut pushed = sink.push(rest, &mut budget).unwrap();
        assert_eq!(budget, 0);
        let mut turns = 1;
        while let Pushed::Paused(taken) = pushed {
            // Once all input is taken, output may still be pending: an empty push gets it.
            rest = &rest[taken..];
            budget = CHUNK as u64;
            let before = sink.decoded_so_far();
            pushed = sink.push(rest, &mut budget).unwrap();
            assert!(sink.decoded_so_far() - before <= CHUNK as u64);
            turns += 1;
        }
        assert_eq!(sink.decoded_len(), Some(text.len() as u64));
        assert!(turns >= text.len() / CHUNK, "{turns} turns");
    }
}
