//! The HAR 1.2 document (serde types) and reading one from a file, with every problem reported
//! as one line naming the file, the JSON line and the field's path (`log.entries[3].request.url`).
//!
//! Fields replay does not need (`cache`, `timings`, sizes) are optional, so exports of browsers
//! and proxies that leave them out still parse; fields it needs (`startedDateTime`, `request`,
//! `method`, `url`, `response.status`) are required.

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;
use time::OffsetDateTime;

/// HAR versions this reader understands (1.1 and 1.2 differ only in optional fields).
pub const SUPPORTED_VERSIONS: &[&str] = &["1.1", "1.2"];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Har {
    pub log: Log,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Log {
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creator: Option<Creator>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser: Option<Creator>,
    #[serde(default)]
    pub pages: Vec<Page>,
    pub entries: Vec<Entry>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Creator {
    pub name: String,
    #[serde(default)]
    pub version: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Page {
    pub started_date_time: String,
    pub id: String,
    #[serde(default)]
    pub title: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pageref: Option<String>,
    pub started_date_time: String,
    /// Total time of the exchange in milliseconds (-1 or absent: unknown).
    #[serde(default)]
    pub time: f64,
    pub request: Request,
    pub response: Response,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Request {
    pub method: String,
    pub url: String,
    #[serde(default)]
    pub http_version: String,
    #[serde(default)]
    pub headers: Vec<NameValue>,
    #[serde(default)]
    pub cookies: Vec<NameValue>,
    #[serde(default)]
    pub query_string: Vec<NameValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_data: Option<PostData>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NameValue {
    pub name: String,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PostData {
    #[serde(default)]
    pub mime_type: String,
    /// The body as text; for a form it may be absent and `params` hold the fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default)]
    pub params: Vec<PostParam>,
    /// Not in HAR 1.2, but written by some tools (Charles, Fiddler) for binary bodies:
    /// `"base64"` means `text` is base64.
    #[serde(default, alias = "_encoding", skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
    /// Written by `barrage record` when the body was longer than its `--max-body-size`: only
    /// the first bytes are here, so the request cannot be replayed as it was sent.
    #[serde(
        default,
        rename = "_truncated",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub truncated: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PostParam {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Response {
    pub status: u16,
    #[serde(default)]
    pub status_text: String,
    #[serde(default)]
    pub headers: Vec<NameValue>,
    #[serde(default)]
    pub content: Content,
    #[serde(default, rename = "redirectURL")]
    pub redirect_url: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Content {
    #[serde(default)]
    pub size: i64,
    #[serde(default)]
    pub mime_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// `"base64"` when `text` is base64 (binary responses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
}

/// A HAR file that cannot be used: `Display` is the one line to print.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{file}: {message}")]
pub struct HarError {
    pub file: String,
    pub message: String,
}

impl HarError {
    pub fn new(file: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            file: file.into(),
            message: message.into(),
        }
    }
}

/// Reads and checks a HAR file.
pub fn read_har(path: &Path) -> Result<Har, HarError> {
    let file = path.display().to_string();
    let bytes =
        std::fs::read(path).map_err(|e| HarError::new(&file, format!("cannot read: {e}")))?;
    parse_har(&file, &bytes)
}

/// Parses and checks a HAR document; `file` names it in errors.
pub fn parse_har(file: &str, bytes: &[u8]) -> Result<Har, HarError> {
    // Browsers write a UTF-8 byte order mark now and then.
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let har: Har = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
        let inner = e.inner();
        let path = e.path().to_string();
        let message = inner.to_string();
        // serde_json's message ends with " at line L column C"; put the position first.
        let message = message
            .rsplit_once(" at line ")
            .map_or(message.as_str(), |(head, _)| head)
            .to_string();
        let what = if inner.is_syntax() || inner.is_eof() || path == "." {
            "not valid JSON".to_string()
        } else {
            path
        };
        HarError::new(
            format!("{file}:{}:{}", inner.line(), inner.column()),
            format!("{what}: {message}"),
        )
    })?;
    deserializer.end().map_err(|e| {
        HarError::new(
            format!("{file}:{}", e.line()),
            "trailing data after the HAR document",
        )
    })?;
    check(file, &har)?;
    Ok(har)
}

/// The checks serde cannot make: version, timestamps, methods and URLs, bodies.
fn check(file: &str, har: &Har) -> Result<(), HarError> {
    if !SUPPORTED_VERSIONS.contains(&har.log.version.as_str()) {
        return Err(HarError::new(
            file,
            format!(
                "log.version: HAR version `{}` is not supported (1.1 or 1.2)",
                har.log.version
            ),
        ));
    }
    if har.log.entries.is_empty() {
        return Err(HarError::new(
            file,
            "log.entries: the recording has no requests",
        ));
    }
    for (index, entry) in har.log.entries.iter().enumerate() {
        let at = |field: &str, problem: String| {
            HarError::new(file, format!("log.entries[{index}].{field}: {problem}"))
        };
        parse_time(&entry.started_date_time).map_err(|problem| at("startedDateTime", problem))?;
        let url = url::Url::parse(&entry.request.url).map_err(|e| {
            at(
                "request.url",
                format!("`{}` is not a URL: {e}", entry.request.url),
            )
        })?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(at(
                "request.url",
                format!("`{}` is not an http:// or https:// URL", entry.request.url),
            ));
        }
        if barrage_plan::Method::parse(&entry.request.method).is_none() {
            return Err(at(
                "request.method",
                format!(
                    "method `{}` cannot be replayed (GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS)",
                    entry.request.method
                ),
            ));
        }
        if let Some(post) = &entry.request.post_data {
            if post.truncated {
                return Err(at(
                    "request.postData",
                    "the recorder kept only the first bytes of this body; record again with \
                     a larger --max-body-size"
                        .to_string(),
                ));
            }
            post.body()
                .map_err(|problem| at("request.postData.text", problem))?;
        }
        if let Some(pageref) = &entry.pageref {
            if !har.log.pages.iter().any(|p| &p.id == pageref) {
                return Err(at("pageref", format!("no page has the id `{pageref}`")));
            }
        }
    }
    Ok(())
}

/// Parses an ISO 8601 / RFC 3339 timestamp as HAR writes them.
pub fn parse_time(text: &str) -> Result<OffsetDateTime, String> {
    OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .map_err(|e| format!("`{text}` is not an ISO 8601 date and time ({e})"))
}

impl Entry {
    /// When the request started (checked by [`parse_har`]).
    pub fn started(&self) -> OffsetDateTime {
        parse_time(&self.started_date_time).unwrap_or(OffsetDateTime::UNIX_EPOCH)
    }

    /// How long the exchange took, as recorded (zero when unknown).
    pub fn duration(&self) -> Duration {
        if self.time.is_finite() && self.time > 0.0 {
            Duration::from_secs_f64(self.time / 1000.0)
        } else {
            Duration::ZERO
        }
    }
}

impl PostData {
    /// The request body's bytes: `text` (decoded when base64), else the form `params`
    /// url-encoded; an upload of a file (`fileName`) has no recorded bytes and is refused.
    pub fn body(&self) -> Result<Vec<u8>, String> {
        if let Some(text) = &self.text {
            return match self.encoding.as_deref() {
                None | Some("") => Ok(text.as_bytes().to_vec()),
                Some("base64") => base64::engine::general_purpose::STANDARD
                    .decode(text.trim())
                    .map_err(|e| format!("the base64 body does not decode: {e}")),
                Some(other) => Err(format!("unknown body encoding `{other}` (base64 or none)")),
            };
        }
        if let Some(param) = self.params.iter().find(|p| p.file_name.is_some()) {
            return Err(format!(
                "form field `{}` uploads a file the recording does not hold",
                param.name
            ));
        }
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        for param in &self.params {
            form.append_pair(&param.name, param.value.as_deref().unwrap_or(""));
        }
        Ok(form.finish().into_bytes())
    }
}

impl Content {
    /// The response body as recorded, decoded from base64 when it was; `None` when the
    /// recording holds no body.
    pub fn body(&self) -> Option<Vec<u8>> {
        let text = self.text.as_ref()?;
        match self.encoding.as_deref() {
            Some("base64") => base64::engine::general_purpose::STANDARD
                .decode(text.trim())
                .ok(),
            _ => Some(text.as_bytes().to_vec()),
        }
    }
}

/// The value of the first header called `name` (case-insensitive).
pub fn header<'a>(headers: &'a [NameValue], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case(name))
        .map(|h| h.value.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn minimal(entries: &str) -> String {
        format!(
            r#"{{"log":{{"version":"1.2","creator":{{"name":"t","version":"1"}},"entries":[{entries}]}}}}"#
        )
    }

    const ENTRY: &str = r#"{"startedDateTime":"2026-01-01T10:00:00.000Z","time":12.5,
        "request":{"method":"GET","url":"http://example.test/a","headers":[]},
        "response":{"status":200,"content":{"mimeType":"text/plain","text":"hi"}}}"#;

    #[test]
    fn a_minimal_recording_parses() {
        let har = parse_har("x.har", minimal(ENTRY).as_bytes()).unwrap();
        assert_eq!(har.log.entries.len(), 1);
        assert_eq!(har.log.entries[0].duration(), Duration::from_micros(12_500));
        assert_eq!(har.log.entries[0].response.content.body().unwrap(), b"hi");
    }

    #[test]
    fn a_missing_field_names_the_entry_and_the_field() {
        let broken = ENTRY.replace(r#""url":"http://example.test/a","#, "");
        let error =
            parse_har("x.har", minimal(&format!("{ENTRY},{broken}")).as_bytes()).unwrap_err();
        let line = error.to_string();
        assert!(line.starts_with("x.har:"), "{line}");
        assert!(line.contains("log.entries[1].request"), "{line}");
        assert!(line.contains("missing field `url`"), "{line}");
    }

    #[test]
    fn not_json_and_unknown_versions_are_one_line_each() {
        let error = parse_har("x.har", b"{\"log\": [").unwrap_err().to_string();
        assert!(error.starts_with("x.har:1:"), "{error}");
        assert!(error.contains("not valid JSON"), "{error}");
        let old = minimal(ENTRY).replace("\"1.2\"", "\"0.9\"");
        let error = parse_har("x.har", old.as_bytes()).unwrap_err().to_string();
        assert_eq!(
            error,
            "x.har: log.version: HAR version `0.9` is not supported (1.1 or 1.2)"
        );
        assert!(!error.contains('\n'));
    }

    #[test]
    fn bad_values_name_entry_index_and_field() {
        let cases = [
            (
                r#""method":"GET""#,
                r#""method":"BREW""#,
                "log.entries[0].request.method",
            ),
            (
                r#""url":"http://example.test/a""#,
                r#""url":"ftp://x/a""#,
                "log.entries[0].request.url",
            ),
            (
                r#""2026-01-01T10:00:00.000Z""#,
                r#""yesterday""#,
                "log.entries[0].startedDateTime",
            ),
            (
                r#""headers":[]}"#,
                r#""headers":[],"postData":{"mimeType":"application/octet-stream","text":"%%%","encoding":"base64"}}"#,
                "log.entries[0].request.postData.text",
            ),
        ];
        for (from, to, field) in cases {
            let error = parse_har("x.har", minimal(&ENTRY.replace(from, to)).as_bytes())
                .unwrap_err()
                .to_string();
            assert!(error.starts_with(&format!("x.har: {field}: ")), "{error}");
        }
    }

    #[test]
    fn base64_request_bodies_and_forms_decode() {
        let post = PostData {
            mime_type: "application/octet-stream".into(),
            text: Some("AAEC/w==".into()),
            params: vec![],
            encoding: Some("base64".into()),
            truncated: false,
        };
        assert_eq!(post.body().unwrap(), vec![0, 1, 2, 255]);
        let form = PostData {
            mime_type: "application/x-www-form-urlencoded".into(),
            text: None,
            params: vec![PostParam {
                name: "user".into(),
                value: Some("a b&c".into()),
                file_name: None,
            }],
            encoding: None,
            truncated: false,
        };
        assert_eq!(form.body().unwrap(), b"user=a+b%26c");
    }
}
