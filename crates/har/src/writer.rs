//! Writing a HAR 1.2 file entry by entry, as `barrage record` captures exchanges: the document
//! is streamed (memory stays bounded however long the recording runs), bodies are kept up to a
//! limit and marked `_truncated` beyond it, binary bodies are base64.

use crate::model::{Content, Entry, NameValue, PostData, Request, Response};
use base64::Engine as _;
use std::io::{self, Write};
use std::time::{Duration, SystemTime};
use time::OffsetDateTime;

/// A body as the recorder saw it: its first bytes (up to the limit) and its full size.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CapturedBody {
    pub kept: Vec<u8>,
    /// Every byte that went through, kept or not.
    pub size: u64,
}

impl CapturedBody {
    /// Adds `chunk` to the count, keeping it up to `limit` bytes in all.
    pub fn push(&mut self, chunk: &[u8], limit: usize) {
        self.size += chunk.len() as u64;
        let room = limit.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }

    pub fn truncated(&self) -> bool {
        (self.kept.len() as u64) < self.size
    }

    /// The kept bytes as HAR text: UTF-8 as it is, anything else base64 (`Some("base64")`).
    fn text(&self) -> (String, Option<String>) {
        match std::str::from_utf8(&self.kept) {
            Ok(text) => (text.to_string(), None),
            // A UTF-8 body cut inside a character is still text up to the cut.
            Err(e) if self.truncated() && e.error_len().is_none() => (
                String::from_utf8_lossy(&self.kept[..e.valid_up_to()]).into_owned(),
                None,
            ),
            Err(_) => (
                base64::engine::general_purpose::STANDARD.encode(&self.kept),
                Some("base64".to_string()),
            ),
        }
    }
}

/// One request and its response as the recording proxy forwarded them.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub started: SystemTime,
    pub method: String,
    /// The absolute URL as the upstream was asked for it.
    pub url: String,
    /// `HTTP/1.1` or `HTTP/2`, as the upstream spoke it.
    pub http_version: String,
    pub request_headers: Vec<(String, String)>,
    pub request_body: CapturedBody,
    pub status: u16,
    pub status_text: String,
    pub response_headers: Vec<(String, String)>,
    /// Decoded from its `Content-Encoding` (HAR holds bodies decoded); its `size` is the
    /// decoded size (HAR `content.size`) when the whole body decoded, else the wire size.
    pub response_body: CapturedBody,
    /// False when the body could not be decoded (cut by the limit, or an unknown coding): the
    /// entry then holds its size but no text.
    pub response_body_decoded: bool,
    /// The body's bytes as received, content-encoded (HAR `response.bodySize`); with a
    /// `Content-Encoding` whose decoded size is known, `content.compression` is the bytes
    /// it saved.
    pub response_wire_size: u64,
    /// Whether `response_body.size` is the decoded size of a content-encoded body (so
    /// `content.compression` can be written).
    pub response_compressed: bool,
    /// From the request's start to the response's head.
    pub wait: Duration,
    /// From the request's start to the response body's end.
    pub total: Duration,
}

/// A HAR 1.2 document being written to `out`: the head at [`HarWriter::start`], one entry per
/// [`HarWriter::entry`], the tail at [`HarWriter::finish`].
#[derive(Debug)]
pub struct HarWriter<W: Write> {
    out: W,
    entries: usize,
}

impl<W: Write> HarWriter<W> {
    pub fn start(mut out: W, creator: &str, version: &str) -> io::Result<Self> {
        let creator = serde_json::json!({ "name": creator, "version": version });
        write!(
            out,
            "{{\"log\":{{\"version\":\"1.2\",\"creator\":{creator},\"pages\":[],\"entries\":["
        )?;
        Ok(Self { out, entries: 0 })
    }

    pub fn entry(&mut self, exchange: &Exchange) -> io::Result<()> {
        let json = entry_json(exchange);
        if self.entries > 0 {
            self.out.write_all(b",")?;
        }
        self.out.write_all(b"\n")?;
        serde_json::to_writer(&mut self.out, &json)?;
        self.out.flush()?;
        self.entries += 1;
        Ok(())
    }

    pub fn entries(&self) -> usize {
        self.entries
    }

    /// Closes the document and returns the writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.write_all(b"\n]}}\n")?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// An ISO 8601 UTC timestamp with milliseconds, as HAR writes `startedDateTime`.
pub fn iso_time(at: SystemTime) -> String {
    let nanos = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128);
    let t = OffsetDateTime::from_unix_timestamp_nanos(nanos).unwrap_or(OffsetDateTime::UNIX_EPOCH);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}

fn pairs(headers: &[(String, String)]) -> Vec<NameValue> {
    headers
        .iter()
        .map(|(name, value)| NameValue {
            name: name.clone(),
            value: value.clone(),
        })
        .collect()
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// The request's cookies, from its `Cookie` headers.
fn request_cookies(headers: &[(String, String)]) -> Vec<NameValue> {
    headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("cookie"))
        .flat_map(|(_, v)| v.split(';'))
        .filter_map(|pair| {
            let (name, value) = pair.trim().split_once('=')?;
            Some(NameValue {
                name: name.to_string(),
                value: value.to_string(),
            })
        })
        .collect()
}

fn query_string(url: &str) -> Vec<NameValue> {
    url::Url::parse(url)
        .map(|u| {
            u.query_pairs()
                .map(|(name, value)| NameValue {
                    name: name.into_owned(),
                    value: value.into_owned(),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn millis(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0
}

/// HAR `response.headersSize`: the bytes from the status line to the blank line before the
/// body, as an HTTP/1.x response writes them (`name: value` lines); -1 for HTTP/2, whose
/// headers travel HPACK-compressed in frames (browsers write -1 there too).
fn response_headers_size(x: &Exchange) -> i64 {
    if !x.http_version.starts_with("HTTP/1") {
        return -1;
    }
    let status_line = format!("{} {} {}\r\n", x.http_version, x.status, x.status_text);
    let fields: usize = x
        .response_headers
        .iter()
        .map(|(name, value)| name.len() + 2 + value.len() + 2)
        .sum();
    (status_line.len() + fields + 2) as i64
}

/// The HAR entry of one exchange, with the fields HAR 1.2 requires that the reader's model
/// leaves out (`cache`, `timings`, header and body sizes) and `_truncated` on cut bodies.
fn entry_json(x: &Exchange) -> serde_json::Value {
    let post_data = (x.request_body.size > 0).then(|| {
        let (text, encoding) = x.request_body.text();
        PostData {
            mime_type: header(&x.request_headers, "content-type")
                .unwrap_or("")
                .to_string(),
            text: Some(text),
            params: vec![],
            encoding,
            truncated: x.request_body.truncated(),
        }
    });
    let (text, encoding) = if x.response_body_decoded {
        let (text, encoding) = x.response_body.text();
        (Some(text), encoding)
    } else {
        (None, None)
    };
    let entry = Entry {
        pageref: None,
        started_date_time: iso_time(x.started),
        time: millis(x.total),
        request: Request {
            method: x.method.clone(),
            url: x.url.clone(),
            http_version: x.http_version.clone(),
            headers: pairs(&x.request_headers),
            cookies: request_cookies(&x.request_headers),
            query_string: query_string(&x.url),
            post_data,
        },
        response: Response {
            status: x.status,
            status_text: x.status_text.clone(),
            headers: pairs(&x.response_headers),
            content: Content {
                size: x.response_body.size as i64,
                mime_type: header(&x.response_headers, "content-type")
                    .unwrap_or("")
                    .to_string(),
                text,
                encoding,
            },
            redirect_url: header(&x.response_headers, "location")
                .unwrap_or("")
                .to_string(),
        },
    };
    let mut json = serde_json::to_value(&entry).unwrap_or_default();
    let receive = x.total.saturating_sub(x.wait);
    json["cache"] = serde_json::json!({});
    json["timings"] = serde_json::json!({
        "send": 0, "wait": millis(x.wait), "receive": millis(receive)
    });
    json["request"]["httpVersion"] = x.http_version.clone().into();
    json["request"]["headersSize"] = (-1).into();
    json["request"]["bodySize"] = x.request_body.size.into();
    json["response"]["httpVersion"] = x.http_version.clone().into();
    json["response"]["cookies"] = serde_json::json!([]);
    json["response"]["headersSize"] = response_headers_size(x).into();
    json["response"]["bodySize"] = x.response_wire_size.into();
    if x.response_compressed {
        let saved = x.response_body.size as i64 - x.response_wire_size as i64;
        json["response"]["content"]["compression"] = saved.into();
    }
    if x.response_body.truncated() {
        json["response"]["content"]["_truncated"] = true.into();
    }
    json
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::parse_har;

    fn exchange(request_body: &[u8], response_body: &[u8], limit: usize) -> Exchange {
        let mut req = CapturedBody::default();
        req.push(request_body, limit);
        let mut resp = CapturedBody::default();
        for chunk in response_body.chunks(3) {
            resp.push(chunk, limit);
        }
        Exchange {
            started: SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_123),
            method: "POST".into(),
            url: "http://127.0.0.1:9/orders?id=7&x=a%20b".into(),
            http_version: "HTTP/1.1".into(),
            request_headers: vec![
                ("content-type".into(), "application/json".into()),
                ("cookie".into(), "a=1; b=2".into()),
            ],
            request_body: req,
            status: 201,
            status_text: "Created".into(),
            response_headers: vec![("content-type".into(), "text/plain".into())],
            response_wire_size: resp.size,
            response_body: resp,
            response_body_decoded: true,
            response_compressed: false,
            wait: Duration::from_micros(1_500),
            total: Duration::from_micros(2_250),
        }
    }

    fn written(exchanges: &[Exchange]) -> Vec<u8> {
        let mut writer = HarWriter::start(Vec::new(), "barrage", "0").unwrap();
        for x in exchanges {
            writer.entry(x).unwrap();
        }
        writer.finish().unwrap()
    }

    #[test]
    fn a_written_recording_reads_back_with_every_field() {
        let bytes = written(&[
            exchange(b"{\"n\":1}", b"made", 100),
            exchange(b"", b"", 100),
        ]);
        let har = parse_har("rec.har", &bytes).unwrap();
        assert_eq!(har.log.entries.len(), 2);
        let e = &har.log.entries[0];
        assert_eq!(e.started_date_time, "2023-11-14T22:13:20.123Z");
        assert_eq!(e.time, 2.25);
        assert_eq!(e.request.method, "POST");
        assert_eq!(e.request.query_string.len(), 2);
        assert_eq!(e.request.query_string[1].value, "a b");
        assert_eq!(e.request.cookies.len(), 2);
        let post = e.request.post_data.as_ref().unwrap();
        assert_eq!(post.body().unwrap(), b"{\"n\":1}");
        assert_eq!(post.mime_type, "application/json");
        assert_eq!(e.response.status, 201);
        assert_eq!(e.response.content.body().unwrap(), b"made");
        assert_eq!(e.response.content.mime_type, "text/plain");
        assert!(har.log.entries[1].request.post_data.is_none());
        let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(json["log"]["entries"][0]["timings"]["wait"], 1.5);
        assert!(json["log"]["entries"][0]["cache"].is_object());
    }

    #[test]
    fn compressed_responses_keep_wire_and_decoded_sizes_apart() {
        let mut x = exchange(b"", &[b'a'; 1000], 2000);
        x.response_wire_size = 40;
        x.response_compressed = true;
        x.response_headers = vec![
            ("content-type".into(), "text/plain".into()),
            ("content-encoding".into(), "gzip".into()),
        ];
        let plain = exchange(b"", b"made", 100);
        let json: serde_json::Value = serde_json::from_slice(&written(&[x, plain])).unwrap();
        let response = &json["log"]["entries"][0]["response"];
        assert_eq!(response["bodySize"], 40);
        assert_eq!(response["content"]["size"], 1000);
        assert_eq!(response["content"]["compression"], 960);
        // "HTTP/1.1 201 Created\r\n" (22), two fields (26 + 24), the blank line (2).
        assert_eq!(response["headersSize"], 22 + 26 + 24 + 2);
        // Without a coding: the same size twice, nothing saved.
        let response = &json["log"]["entries"][1]["response"];
        assert_eq!(
            (&response["bodySize"], &response["content"]["size"]),
            (&4.into(), &4.into())
        );
        assert!(response["content"].get("compression").is_none());
        assert_eq!(response["headersSize"], 22 + 26 + 2);
        // HTTP/2 headers are compressed in frames: no size to give.
        let mut h2 = exchange(b"", b"made", 100);
        h2.http_version = "HTTP/2".into();
        let json: serde_json::Value = serde_json::from_slice(&written(&[h2])).unwrap();
        assert_eq!(json["log"]["entries"][0]["response"]["headersSize"], -1);
    }

    #[test]
    fn bodies_beyond_the_limit_are_cut_and_marked_binary_ones_base64() {
        let big: Vec<u8> = (0..=255u8).rev().cycle().take(1000).collect();
        let bytes = written(&[exchange(b"short", &big, 10)]);
        let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        let content = &json["log"]["entries"][0]["response"]["content"];
        assert_eq!(content["_truncated"], true);
        assert_eq!(content["size"], 1000);
        assert_eq!(content["encoding"], "base64");
        let har = parse_har("rec.har", &bytes).unwrap();
        assert_eq!(
            har.log.entries[0].response.content.body().unwrap(),
            &big[..10]
        );
        // A request body cut by the limit cannot be replayed as it was: one line, its field.
        let bytes = written(&[exchange(&big, b"", 10)]);
        let error = parse_har("rec.har", &bytes).unwrap_err().to_string();
        assert!(
            error.starts_with("rec.har: log.entries[0].request.postData: "),
            "{error}"
        );
        assert!(error.contains("--max-body-size"), "{error}");
    }

    #[test]
    fn a_body_that_could_not_be_decoded_has_its_size_but_no_text() {
        let mut x = exchange(b"", b"\x1f\x8b\x08 cut gzip", 4);
        x.response_body_decoded = false;
        let bytes = written(&[x]);
        let har = parse_har("rec.har", &bytes).unwrap();
        let content = &har.log.entries[0].response.content;
        assert_eq!((content.text.as_deref(), content.size), (None, 12));
    }

    #[test]
    fn text_cut_inside_a_character_stays_text() {
        let mut body = CapturedBody::default();
        body.push("ééé".as_bytes(), 3);
        assert!(body.truncated());
        assert_eq!(body.text(), ("é".to_string(), None));
    }
}
