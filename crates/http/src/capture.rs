//! What an exchange keeps of a response beyond its status and sizes: selected header values,
//! the decoded size of a content-encoded body and the body itself (decoded, up to a limit),
//! into buffers the caller reuses (nothing is allocated when nothing is asked).

use barrage_body::{BodySink, ContentCoding};

/// Captured parts of one response; keep one around and pass it again, its buffers are reused.
#[derive(Debug, Default)]
pub struct Captured {
    pub(crate) body: BodySink,
    /// Captured header values, one after the other.
    values: Vec<u8>,
    /// Per requested header name: where its value lies in `values`, if the response had it.
    spans: Vec<Option<(u32, u32)>>,
    /// Later values of a repeated requested header (`Set-Cookie`): its index and span.
    repeats: Vec<(u32, u32, u32)>,
}

impl Captured {
    /// The response body (de-chunked, content-decoded), when it was asked for and decoded.
    pub fn body(&self) -> Option<&[u8]> {
        self.body.body()
    }

    /// The body's `Content-Encoding`.
    pub fn coding(&self) -> ContentCoding {
        self.body.coding()
    }

    /// The decoded size of a content-encoded body that was decoded whole.
    pub fn decoded_len(&self) -> Option<u64> {
        self.body.decoded_len()
    }

    /// The value of the `index`-th requested header (the first one, if it was repeated).
    pub fn header(&self, index: usize) -> Option<&[u8]> {
        let (start, end) = (*self.spans.get(index)?)?;
        Some(&self.values[start as usize..end as usize])
    }

    /// Every value of the `index`-th requested header, in the order they came.
    pub fn header_values(&self, index: usize) -> impl Iterator<Item = &[u8]> {
        let repeats = self
            .repeats
            .iter()
            .filter(move |(i, _, _)| *i as usize == index)
            .map(|&(_, start, end)| &self.values[start as usize..end as usize]);
        self.header(index).into_iter().chain(repeats)
    }

    /// Empties everything, keeping the allocations.
    pub fn clear(&mut self) {
        self.body.start(false, 0);
        self.values.clear();
        self.spans.clear();
        self.repeats.clear();
    }

    /// Bytes of buffer this holds on to (to decide whether keeping it for reuse is worth it).
    pub fn retained_bytes(&self) -> usize {
        self.body.retained_bytes() + self.values.capacity()
    }
}

/// What to capture in an exchange, and where.
#[derive(Debug)]
pub struct Capture<'a> {
    /// Response headers to capture, by name (case-insensitive); `*` captures every header
    /// as a `Name: value` line (for `--http-debug`).
    pub headers: &'a [String],
    /// Whether to keep the body.
    pub body: bool,
    /// Whether to decode a content-encoded body (to count its decoded size).
    pub encoded_body: bool,
    /// The most body bytes kept (decoded); a longer body fails as `body_too_large`.
    pub max_body: usize,
    pub into: &'a mut Captured,
}

impl Capture<'_> {
    pub(crate) fn start(&mut self) {
        self.into.clear();
        self.into.body.start(self.body, self.max_body);
        self.into.spans.resize(self.headers.len(), None);
    }

    pub(crate) fn header(&mut self, name: &str, value: &[u8]) {
        if (self.body || self.encoded_body) && name.eq_ignore_ascii_case("content-encoding") {
            self.into.body.set_coding(ContentCoding::parse(value));
        }
        for (index, (wanted, span)) in self
            .headers
            .iter()
            .zip(self.into.spans.iter_mut())
            .enumerate()
        {
            let every = wanted == "*";
            if every || wanted.eq_ignore_ascii_case(name) {
                let start = self.into.values.len() as u32;
                if every {
                    self.into.values.extend_from_slice(name.as_bytes());
                    self.into.values.extend_from_slice(b": ");
                }
                self.into.values.extend_from_slice(value);
                let end = self.into.values.len() as u32;
                match span {
                    None => *span = Some((start, end)),
                    Some(_) => self.into.repeats.push((index as u32, start, end)),
                }
            }
        }
    }

    #[inline]
    pub(crate) fn body_sink(&mut self) -> Option<&mut BodySink> {
        let keep =
            self.body || (self.encoded_body && self.into.coding() != ContentCoding::Identity);
        keep.then_some(&mut self.into.body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_first_value_of_each_requested_header_and_the_coding() {
        let names = vec!["x-id".to_string(), "Missing".to_string()];
        let mut captured = Captured::default();
        let mut capture = Capture {
            headers: &names,
            body: true,
            encoded_body: false,
            max_body: 100,
            into: &mut captured,
        };
        capture.start();
        capture.header("X-Id", b"abc");
        capture.header("x-id", b"second");
        capture.header("Content-Encoding", b" GZIP ");
        assert_eq!(captured.header(0), Some(&b"abc"[..]));
        let all: Vec<&[u8]> = captured.header_values(0).collect();
        assert_eq!(all, [&b"abc"[..], &b"second"[..]]);
        let every = vec!["*".to_string()];
        let mut lines = Captured::default();
        let mut capture = Capture {
            headers: &every,
            body: false,
            encoded_body: false,
            max_body: 100,
            into: &mut lines,
        };
        capture.start();
        capture.header("X-Id", b"1");
        capture.header("Server", b"s");
        let all: Vec<&[u8]> = lines.header_values(0).collect();
        assert_eq!(all, [&b"X-Id: 1"[..], &b"Server: s"[..]]);
        let all: Vec<&[u8]> = captured.header_values(0).collect();
        assert_eq!(all, [&b"abc"[..], &b"second"[..]]);
        assert_eq!(captured.header_values(1).count(), 0);
        assert_eq!(captured.header(1), None);
        assert_eq!(captured.header(2), None);
        assert_eq!(captured.coding(), ContentCoding::Gzip);
        assert_eq!(ContentCoding::parse(b"br"), ContentCoding::Br);
        assert_eq!(ContentCoding::parse(b"zstd"), ContentCoding::Other);
        assert_eq!(ContentCoding::parse(b"deflate"), ContentCoding::Deflate);
    }
}

#[cfg(test)]
mod encoded_tests {
    use super::*;

    #[test]
    fn encoded_bodies_are_kept_only_when_encoded() {
        let mut captured = Captured::default();
        let mut capture = Capture {
            headers: &[],
            body: false,
            encoded_body: true,
            max_body: 100,
            into: &mut captured,
        };
        capture.start();
        assert!(capture.body_sink().is_none(), "identity: nothing kept");
        capture.header("content-encoding", b"gzip");
        assert!(capture.body_sink().is_some());
    }
}
