//! Requests serialised to bytes once, so sending one costs a single write of ready bytes; and
//! the header rules (defaults, token and value checks) that per-client request builders share.

use std::sync::Arc;

/// What to send; turned into wire bytes by [`RequestSpec::encode`].
#[derive(Debug, Clone)]
pub struct RequestSpec<'a> {
    pub method: &'a str,
    /// `Host` header value.
    pub authority: &'a str,
    /// Path and query, starting with `/`.
    pub path: &'a str,
    /// Extra headers; a name given here replaces barrage's default of the same name.
    pub headers: &'a [(String, String)],
    pub body: Option<&'a [u8]>,
    pub keep_alive: bool,
    /// Send `Accept-Encoding: gzip, deflate, br` (the codings barrage decodes).
    pub accept_gzip: bool,
}

/// An encoded HTTP/1.1 request, cheap to clone and share between clients.
#[derive(Debug, Clone)]
pub struct RequestBytes {
    bytes: Arc<[u8]>,
    /// Where the blank line that ends the head starts.
    blank_line: usize,
    expects_body: bool,
}

impl RequestBytes {
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The head up to and including its last header line (without the blank line), and the
    /// body: a per-request header fits between the two.
    pub fn head_and_body(&self) -> (&[u8], &[u8]) {
        (
            &self.bytes[..self.blank_line],
            &self.bytes[self.blank_line + 2..],
        )
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// False for HEAD, whose response carries no body whatever its headers say.
    pub fn expects_body(&self) -> bool {
        self.expects_body
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RequestError {
    #[error("header name `{0}` is not a valid HTTP token")]
    BadHeaderName(String),
    #[error("header `{0}` has a value with a line break or control character")]
    BadHeaderValue(String),
    #[error("method `{0}` is not a valid HTTP token")]
    BadMethod(String),
    #[error("path `{0}` must start with `/` and contain no spaces or control characters")]
    BadPath(String),
}

/// Whether `s` is an HTTP token (a valid method or header name).
pub fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Whether `byte` may appear in a header value (no line breaks or control characters).
#[inline]
pub fn is_header_value_byte(byte: u8) -> bool {
    byte == b'\t' || (byte >= 0x20 && byte != 0x7f)
}

fn is_clean_value(s: &str) -> bool {
    s.bytes().all(is_header_value_byte)
}

/// Whether `path` can go on the request line: starts with `/`, no spaces or control bytes.
pub fn is_clean_path(path: &str) -> bool {
    path.starts_with('/') && path.bytes().all(is_path_byte)
}

/// Whether `byte` may appear in a request-line path.
#[inline]
pub fn is_path_byte(byte: u8) -> bool {
    byte > 0x20 && byte != 0x7f
}

/// The `User-Agent` every request carries unless the plan sets one.
pub const USER_AGENT: &str = concat!("barrage/", env!("CARGO_PKG_VERSION"));

/// The headers barrage sends unless the request gives its own of the same name, in order;
/// `None` means the header is not sent with these settings.
pub fn default_headers(
    authority: &str,
    keep_alive: bool,
    accept_gzip: bool,
) -> [(&'static str, Option<&str>); 5] {
    [
        ("Host", Some(authority)),
        ("User-Agent", Some(USER_AGENT)),
        ("Accept", Some("*/*")),
        (
            "Accept-Encoding",
            accept_gzip.then_some("gzip, deflate, br"),
        ),
        ("Connection", (!keep_alive).then_some("close")),
    ]
}

/// Whether a request with this method carries `Content-Length` even without a body.
pub fn method_sends_length(method: &str) -> bool {
    matches!(method, "POST" | "PUT" | "PATCH")
}

fn push_header(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\r\n");
}

impl RequestSpec<'_> {
    pub fn encode(&self) -> Result<RequestBytes, RequestError> {
        if !is_token(self.method) {
            return Err(RequestError::BadMethod(self.method.to_string()));
        }
        if !is_clean_path(self.path) {
            return Err(RequestError::BadPath(self.path.to_string()));
        }
        for (name, value) in self.headers {
            if !is_token(name) {
                return Err(RequestError::BadHeaderName(name.clone()));
            }
            if !is_clean_value(value) {
                return Err(RequestError::BadHeaderValue(name.clone()));
            }
        }
        let user_has = |name: &str| {
            self.headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case(name))
        };
        let mut out = Vec::with_capacity(160 + self.path.len() + self.body.map_or(0, <[u8]>::len));
        out.extend_from_slice(format!("{} {} HTTP/1.1\r\n", self.method, self.path).as_bytes());
        for (name, value) in default_headers(self.authority, self.keep_alive, self.accept_gzip) {
            if let Some(value) = value.filter(|_| !user_has(name)) {
                push_header(&mut out, name, value);
            }
        }
        for (name, value) in self.headers {
            if !name.eq_ignore_ascii_case("content-length") {
                push_header(&mut out, name, value);
            }
        }
        if self.body.is_some() || method_sends_length(self.method) {
            let length = self.body.map_or(0, <[u8]>::len).to_string();
            push_header(&mut out, "Content-Length", &length);
        }
        let blank_line = out.len();
        out.extend_from_slice(b"\r\n");
        if let Some(body) = self.body {
            out.extend_from_slice(body);
        }
        Ok(RequestBytes {
            bytes: out.into(),
            blank_line,
            expects_body: self.method != "HEAD",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec<'a>(headers: &'a [(String, String)], body: Option<&'a [u8]>) -> RequestSpec<'a> {
        RequestSpec {
            method: "POST",
            authority: "127.0.0.1:8080",
            path: "/echo?x=1",
            headers,
            body,
            keep_alive: true,
            accept_gzip: true,
        }
    }

    #[test]
    fn encodes_head_defaults_and_body() {
        let r = spec(&[], Some(b"hello")).encode().unwrap();
        let text = String::from_utf8(r.as_bytes().to_vec()).unwrap();
        assert!(
            text.starts_with("POST /echo?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"),
            "{text}"
        );
        assert!(text.contains("Accept-Encoding: gzip, deflate, br\r\n"));
        assert!(text.contains("Content-Length: 5\r\n"));
        assert!(!text.contains("Connection: close"));
        assert!(text.ends_with("\r\n\r\nhello"));
        let (head, body) = r.head_and_body();
        assert!(head.ends_with(b"Content-Length: 5\r\n"));
        assert_eq!(body, b"hello");
    }

    #[test]
    fn user_headers_replace_defaults() {
        let headers = vec![("user-agent".to_string(), "me".to_string())];
        let r = spec(&headers, None).encode().unwrap();
        let text = String::from_utf8(r.as_bytes().to_vec()).unwrap();
        assert!(!text.contains("barrage/"));
        assert!(text.contains("user-agent: me\r\n"));
        assert!(text.contains("Content-Length: 0\r\n"));
    }

    #[test]
    fn rejects_header_injection_and_bad_tokens() {
        let headers = vec![("X-A".to_string(), "a\r\nX-B: b".to_string())];
        assert_eq!(
            spec(&headers, None).encode().unwrap_err(),
            RequestError::BadHeaderValue("X-A".into())
        );
        let headers = vec![("Bad Name".to_string(), "v".to_string())];
        assert!(matches!(
            spec(&headers, None).encode(),
            Err(RequestError::BadHeaderName(_))
        ));
    }

    #[test]
    fn head_requests_expect_no_body() {
        let mut s = spec(&[], None);
        s.method = "HEAD";
        assert!(!s.encode().unwrap().expects_body());
    }
}
