//! Turning an endpoint's [`Reply`] into the HTTP response: status override, size padding, gzip.

use std::sync::LazyLock;

use bytes::Bytes;
use flate2::write::GzEncoder;
use flate2::Compression;
use http_body_util::Full;
use hyper::header::{
    HeaderMap, HeaderValue, ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_TYPE, VARY,
};
use hyper::{Response, StatusCode};

use crate::params::{ParamError, Params};

/// Response body type of every endpoint.
pub(crate) type Body = Full<Bytes>;

pub(crate) const JSON: HeaderValue = HeaderValue::from_static("application/json");
pub(crate) const OCTETS: HeaderValue = HeaderValue::from_static("application/octet-stream");
const GZIP: HeaderValue = HeaderValue::from_static("gzip");
const VARY_ACCEPT_ENCODING: HeaderValue = HeaderValue::from_static("accept-encoding");

/// Bodies larger than this are gzipped on the blocking pool, not on a worker thread.
const BLOCKING_GZIP_THRESHOLD: usize = 256 * 1024;

/// What an endpoint answers, before the generic parameters are applied.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    pub status: StatusCode,
    pub content_type: HeaderValue,
    pub body: Bytes,
    /// The gzip form of `body`, when it is a constant computed once.
    pub gzipped: Option<&'static Bytes>,
}

impl Reply {
    /// A JSON reply.
    pub(crate) fn json(status: StatusCode, body: impl Into<Bytes>) -> Reply {
        Reply {
            status,
            content_type: JSON,
            body: body.into(),
            gzipped: None,
        }
    }

    /// A constant JSON reply with its gzip form cached.
    pub(crate) fn constant(status: StatusCode, body: &'static Precomputed) -> Reply {
        Reply {
            status,
            content_type: JSON,
            body: body.plain.clone(),
            gzipped: Some(&body.gzipped),
        }
    }

    /// A JSON error: `{"error": message, ...extra}`.
    pub(crate) fn error(status: StatusCode, message: &str) -> Reply {
        let body = serde_json::json!({ "error": message });
        Reply::json(status, body.to_string())
    }

    /// 400 for a rejected parameter: `{"error": ..., "parameter": name, "value": value}`.
    pub(crate) fn bad_param(err: &ParamError) -> Reply {
        let body = serde_json::json!({
            "error": err.to_string(),
            "parameter": err.parameter,
            "value": err.value,
        });
        Reply::json(StatusCode::BAD_REQUEST, body.to_string())
    }
}

/// A constant body together with its gzip encoding.
pub(crate) struct Precomputed {
    plain: Bytes,
    gzipped: Bytes,
}

impl Precomputed {
    pub(crate) fn new(text: &'static str) -> Precomputed {
        let plain = Bytes::from_static(text.as_bytes());
        let gzipped = gzip(&plain);
        Precomputed { plain, gzipped }
    }
}

/// Whether the request's `Accept-Encoding` allows gzip (`gzip`, `x-gzip` or `*`, q > 0).
pub(crate) fn accepts_gzip(headers: &HeaderMap) -> bool {
    let mut gzip_q: Option<bool> = None;
    let mut star_q: Option<bool> = None;
    for value in headers.get_all(ACCEPT_ENCODING) {
        let Ok(value) = value.to_str() else { continue };
        for item in value.split(',') {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or("").trim();
            let allowed = parts.all(|p| !is_zero_q(p));
            if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
                gzip_q = Some(allowed);
            } else if coding == "*" {
                star_q = Some(allowed);
            }
        }
    }
    gzip_q.or(star_q).unwrap_or(false)
}

/// `q=0`, `q=0.0`, `q=0.000` (the weight that forbids a coding).
fn is_zero_q(param: &str) -> bool {
    let Some((name, value)) = param.trim().split_once('=') else {
        return false;
    };
    name.trim().eq_ignore_ascii_case("q")
        && value
            .trim()
            .parse::<f64>()
            .map(|q| q <= 0.0)
            .unwrap_or(false)
}

/// Applies `status` and `size`, gzips when asked, and builds the response.
pub(crate) async fn finish(reply: Reply, params: &Params, gzip_ok: bool) -> Response<Body> {
    let Reply {
        mut status,
        content_type,
        mut body,
        mut gzipped,
    } = reply;
    if let Some(code) = params.status {
        status = code;
    }
    // 204 and 304 carry no content: hyper drops a body over HTTP/1.1, but would send it as
    // DATA frames over HTTP/2 (a malformed response).
    if status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED {
        body = Bytes::new();
    } else if let Some(size) = params.size {
        if body.len() < size {
            body = pad(&body, size);
            gzipped = None;
        }
    }
    let compress = gzip_ok && !body.is_empty();
    if compress {
        body = match gzipped {
            Some(cached) => cached.clone(),
            None if body.len() > BLOCKING_GZIP_THRESHOLD => {
                let plain = body.clone();
                tokio::task::spawn_blocking(move || gzip(&plain))
                    .await
                    .unwrap_or_else(|_| gzip(&body))
            }
            None => gzip(&body),
        };
    }
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, content_type);
    if compress {
        headers.insert(CONTENT_ENCODING, GZIP);
        headers.insert(VARY, VARY_ACCEPT_ENCODING);
    }
    response
}

/// Pads with trailing spaces up to `size` bytes (keeps JSON valid).
fn pad(body: &[u8], size: usize) -> Bytes {
    let mut padded = Vec::with_capacity(size);
    padded.extend_from_slice(body);
    padded.resize(size, b' ');
    padded.into()
}

/// gzip with the fastest compression level.
pub(crate) fn gzip(data: &[u8]) -> Bytes {
    use std::io::Write;
    let mut encoder = GzEncoder::new(Vec::with_capacity(data.len() / 2 + 64), Compression::fast());
    // Writing into a Vec cannot fail.
    let _ = encoder.write_all(data);
    encoder.finish().unwrap_or_default().into()
}

/// The repeating pattern of `/bytes/<n>` bodies.
pub(crate) const BYTES_PATTERN: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// `n` bytes of [`BYTES_PATTERN`] repeated; small sizes share one cached buffer.
pub(crate) fn pattern_bytes(n: usize) -> Bytes {
    const CACHED: usize = 64 * 1024;
    static SMALL: LazyLock<Bytes> = LazyLock::new(|| BYTES_PATTERN.repeat(CACHED / 64).into());
    if n <= CACHED {
        return SMALL.slice(..n);
    }
    let mut body = Vec::with_capacity(n);
    while body.len() + CACHED <= n {
        body.extend_from_slice(&SMALL);
    }
    body.extend_from_slice(&SMALL[..n - body.len()]);
    body.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for v in values {
            map.append(ACCEPT_ENCODING, HeaderValue::from_str(v).unwrap());
        }
        map
    }

    #[test]
    fn accept_encoding_negotiation() {
        assert!(!accepts_gzip(&headers(&[])));
        assert!(accepts_gzip(&headers(&["gzip"])));
        assert!(accepts_gzip(&headers(&["br, GZIP;q=0.5"])));
        assert!(accepts_gzip(&headers(&["deflate", "x-gzip"])));
        assert!(accepts_gzip(&headers(&["*"])));
        assert!(!accepts_gzip(&headers(&["gzip;q=0"])));
        assert!(!accepts_gzip(&headers(&["*, gzip;q=0.000"])));
        assert!(!accepts_gzip(&headers(&["identity, br"])));
    }

    #[test]
    fn pattern_is_exact_and_continuous() {
        for n in [0, 1, 63, 64, 65, 65_536, 65_537, 200_000] {
            let body = pattern_bytes(n);
            assert_eq!(body.len(), n);
            assert!(body
                .iter()
                .enumerate()
                .all(|(i, &b)| b == BYTES_PATTERN[i % 64]));
        }
    }

    #[test]
    fn padding_keeps_prefix() {
        assert_eq!(&pad(b"{}", 5)[..], b"{}   ");
    }

    #[test]
    fn gzip_round_trips() {
        use std::io::Read;
        let data = b"hello hello hello";
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&gzip(data)[..])
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, data);
    }
}
