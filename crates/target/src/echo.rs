//! The `/echo` endpoint: describes the received request back as JSON.
//!
//! ```json
//! {"method":"POST","path":"/echo","version":"HTTP/1.1",
//!  "raw_query":"a=1&b=2&b=3","query":{"a":"1","b":["2","3"]},
//!  "headers":{"content-type":"text/plain","x-many":"1, 2"},
//!  "body":"hello","body_encoding":"utf-8"}
//! ```
//! Query values are percent-decoded; a repeated name gives an array. Header names are
//! lower-case; repeated headers are joined with `", "`. A body that is not UTF-8 is
//! given as standard base64 with `"body_encoding":"base64"`. `raw_query` is `null`
//! when the URL has no `?`. Bodies above 100 MB are refused with 413. A body sent with
//! `Content-Encoding: gzip`, `deflate` or `br` is decoded first; `"decoded_from"` names the
//! coding and `"wire_body_bytes"` its size as sent (a body that does not decode is a 400).

use base64::Engine as _;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::{Request, StatusCode};
use serde_json::{Map, Value};

use crate::params::MAX_SIZE;
use crate::respond::Reply;

/// Reads the whole request and answers its JSON description.
pub(crate) async fn echo(req: Request<Incoming>) -> Reply {
    let (parts, body) = req.into_parts();
    let body = match Limited::new(body, MAX_SIZE).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(err) => {
            return if err.is::<http_body_util::LengthLimitError>() {
                Reply::error(StatusCode::PAYLOAD_TOO_LARGE, "request body above 100 MB")
            } else {
                Reply::error(StatusCode::BAD_REQUEST, "could not read the request body")
            };
        }
    };

    let wire_body_bytes = body.len();
    let coding = parts
        .headers
        .get(hyper::header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_ascii_lowercase())
        .filter(|v| !v.is_empty() && v != "identity");
    let body = match &coding {
        None => body,
        Some(coding) => match decode_body(coding, &body) {
            Some(decoded) => bytes::Bytes::from(decoded),
            None => {
                return Reply::error(
                    StatusCode::BAD_REQUEST,
                    "the request body does not decode as its Content-Encoding says",
                )
            }
        },
    };

    let mut headers = Map::new();
    for (name, value) in &parts.headers {
        let value = String::from_utf8_lossy(value.as_bytes());
        match headers.get_mut(name.as_str()) {
            Some(Value::String(joined)) => {
                joined.push_str(", ");
                joined.push_str(&value);
            }
            _ => {
                headers.insert(name.as_str().to_owned(), Value::String(value.into_owned()));
            }
        }
    }

    let raw_query = parts.uri.query();
    let (body, encoding) = match std::str::from_utf8(&body) {
        Ok(text) => (text.to_owned(), "utf-8"),
        Err(_) => (
            base64::engine::general_purpose::STANDARD.encode(&body),
            "base64",
        ),
    };

    let description = serde_json::json!({
        "method": parts.method.as_str(),
        "path": parts.uri.path(),
        "version": format!("{:?}", parts.version),
        "raw_query": raw_query,
        "query": query_map(raw_query),
        "headers": headers,
        "body": body,
        "body_encoding": encoding,
        "decoded_from": coding,
        "wire_body_bytes": wire_body_bytes,
    });
    Reply::json(StatusCode::OK, description.to_string())
}

/// Decodes a request body sent with `Content-Encoding: coding` (bounded by `MAX_SIZE`).
fn decode_body(coding: &str, body: &[u8]) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut out = Vec::new();
    let limit = MAX_SIZE as u64 + 1;
    let read = match coding {
        "gzip" | "x-gzip" => flate2::read::GzDecoder::new(body)
            .take(limit)
            .read_to_end(&mut out),
        "deflate" => flate2::read::ZlibDecoder::new(body)
            .take(limit)
            .read_to_end(&mut out),
        "br" => brotli::Decompressor::new(body, 4096)
            .take(limit)
            .read_to_end(&mut out),
        _ => return None,
    };
    (read.is_ok() && out.len() <= MAX_SIZE).then_some(out)
}

/// Decoded query parameters; repeated names collect into an array.
fn query_map(query: Option<&str>) -> Map<String, Value> {
    let mut map = Map::new();
    let Some(query) = query else { return map };
    for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
        let value = Value::String(value.into_owned());
        match map.get_mut(key.as_ref()) {
            Some(Value::Array(values)) => values.push(value),
            Some(existing) => {
                let first = existing.take();
                *existing = Value::Array(vec![first, value]);
            }
            None => {
                map.insert(key.into_owned(), value);
            }
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_map_decodes_and_groups() {
        let map = query_map(Some("a=1&b=x%20y&b=2&c=a+b&flag"));
        assert_eq!(
            Value::Object(map),
            serde_json::json!({"a":"1","b":["x y","2"],"c":"a b","flag":""})
        );
        assert!(query_map(None).is_empty());
    }
}
