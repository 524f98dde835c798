//! Extractions: response values stored in session variables. JSONPath (RFC 9535, first
//! match; a string as is, anything else as its JSON text) and regular expressions (first
//! capture group, or the whole match) read the body, decompressed as it arrived when the
//! response says `Content-Encoding: gzip`/`deflate`/`br`; header extractions read captured header values.
//! Expressions are compiled with the plan. A failed extraction leaves the variable unset.

use super::program::Scope;
use super::state::SessionState;
use super::values::VarId;
use super::SessionProblem;
use barrage_http::Captured;
use barrage_plan::{Extraction, Extractor};
use serde_json_path::JsonPath;

#[derive(Debug)]
enum Source {
    JsonPath(Box<JsonPath>),
    Regex(regex::bytes::Regex),
    /// Index into [`Extractions::headers`].
    Header(usize),
    /// Checked at compile time; built per response, as sxd-xpath's compiled form cannot be
    /// shared between worker threads (the XML parse costs far more anyway).
    XPath(String),
    /// The body's [`barrage_plan::json_shape`].
    JsonShape,
}

/// Compiles an XPath 1.0 expression, or says why it is not one.
pub(crate) fn check_xpath(expression: &str) -> Result<sxd_xpath::XPath, String> {
    match sxd_xpath::Factory::new().build(expression) {
        Ok(Some(xpath)) => Ok(xpath),
        Ok(None) => Err("the expression is empty".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// The string value of `expression` over `body` parsed as XML; `None` when the body is not
/// XML or the result is an empty node set.
fn xpath_value(expression: &str, body: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?;
    let package = sxd_document::parser::parse(text).ok()?;
    let document = package.as_document();
    let xpath = check_xpath(expression).ok()?;
    let context = sxd_xpath::Context::new();
    match xpath.evaluate(&context, document.root()).ok()? {
        sxd_xpath::Value::Nodeset(nodes) => nodes.document_order_first().map(|n| n.string_value()),
        value => Some(value.string()),
    }
}

/// The extractions of one request.
#[derive(Debug, Default)]
pub(crate) struct Extractions {
    items: Vec<(VarId, Source)>,
    /// Response headers to capture, by name.
    pub headers: Vec<String>,
    /// Whether the body must be captured.
    pub body: bool,
}

impl Extractions {
    pub(crate) fn compile(
        extractions: &[Extraction],
        scope: &mut Scope,
    ) -> Result<Self, SessionProblem> {
        let mut out = Extractions::default();
        for extraction in extractions {
            let source = match &extraction.extractor {
                Extractor::JsonPath { path } => {
                    out.body = true;
                    Source::JsonPath(Box::new(JsonPath::parse(path).map_err(|e| {
                        SessionProblem::JsonPath {
                            path: path.clone(),
                            reason: e.to_string(),
                        }
                    })?))
                }
                Extractor::Regexp { pattern } => {
                    out.body = true;
                    Source::Regex(regex::bytes::Regex::new(pattern).map_err(|e| {
                        SessionProblem::Regex {
                            pattern: pattern.clone(),
                            reason: e.to_string(),
                        }
                    })?)
                }
                Extractor::Header { name } => {
                    out.headers.push(name.clone());
                    Source::Header(out.headers.len() - 1)
                }
                Extractor::XPath { expression } => {
                    out.body = true;
                    check_xpath(expression).map_err(|reason| SessionProblem::XPath {
                        expression: expression.clone(),
                        reason,
                    })?;
                    Source::XPath(expression.clone())
                }
                Extractor::JsonShape => {
                    out.body = true;
                    Source::JsonShape
                }
            };
            out.items.push((scope.var(&extraction.var), source));
        }
        Ok(out)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Unsets every variable this request extracts (it got no response).
    pub(crate) fn unset(&self, state: &mut SessionState) {
        for (var, _) in &self.items {
            state.unset(*var);
        }
    }

    /// Extracts from a response into `state`; returns how many extractions found nothing.
    pub(crate) fn apply(&self, captured: &Captured, state: &mut SessionState) -> u64 {
        // Decoded as it streamed in (`barrage_http::BodySink`); `None` when it did not decode.
        let body = if self.body { captured.body() } else { None };
        // Parsed once, on first use, for every JSONPath of the request.
        let mut json: Option<Option<serde_json::Value>> = None;
        let mut failures = 0;
        for (var, source) in &self.items {
            let found = match source {
                Source::Header(index) => captured.header(*index).map(|value| {
                    let text = state.set_text(*var);
                    text.push_str(&String::from_utf8_lossy(value));
                }),
                Source::Regex(regex) => body.and_then(|body| {
                    let captures = regex.captures(body)?;
                    let found = captures.get(1).or_else(|| captures.get(0))?;
                    let text = state.set_text(*var);
                    text.push_str(&String::from_utf8_lossy(found.as_bytes()));
                    Some(())
                }),
                Source::XPath(expression) => body
                    .and_then(|body| xpath_value(expression, body))
                    .map(|found| state.set_text(*var).push_str(&found)),
                Source::JsonShape => {
                    let document = json.get_or_insert_with(|| {
                        body.and_then(|body| serde_json::from_slice(body).ok())
                    });
                    document.as_ref().map(|document| {
                        state
                            .set_text(*var)
                            .push_str(&barrage_plan::json_shape(document))
                    })
                }
                Source::JsonPath(path) => {
                    let document = json.get_or_insert_with(|| {
                        body.and_then(|body| serde_json::from_slice(body).ok())
                    });
                    document.as_ref().and_then(|document| {
                        let found = path.query(document).first()?;
                        let text = state.set_text(*var);
                        match found {
                            serde_json::Value::String(s) => text.push_str(s),
                            other => text.push_str(&other.to_string()),
                        }
                        Some(())
                    })
                }
            };
            if found.is_none() {
                state.unset(*var);
                failures += 1;
            }
        }
        failures
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_http::{Capture, ReadBuffers};
    use flate2::write::{GzEncoder, ZlibEncoder};
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    /// A `Captured` filled by a real exchange over a loopback socket.
    fn captured(response: Vec<u8>, headers: &[String]) -> Captured {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            tokio::spawn(async move {
                let (mut socket, _) = listener.accept().await.unwrap();
                let mut buf = [0u8; 1024];
                let _ = socket.read(&mut buf).await.unwrap();
                socket.write_all(&response).await.unwrap();
            });
            let stream = barrage_http::connect(&[addr]).await.unwrap();
            let mut connection = barrage_http::Connection::new(stream);
            let mut captured = Captured::default();
            let mut capture = Capture {
                headers,
                body: true,
                encoded_body: false,
                max_body: barrage_http::DEFAULT_MAX_BODY,
                into: &mut captured,
            };
            connection
                .exchange(
                    &ReadBuffers::new(),
                    b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
                    true,
                    Some(&mut capture),
                )
                .await
                .unwrap();
            captured
        })
    }

    fn response(headers: &str, body: &[u8]) -> Vec<u8> {
        let mut r = format!(
            "HTTP/1.1 200 OK\r\n{headers}Content-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        r.extend_from_slice(body);
        r
    }

    fn extraction(var: &str, extractor: Extractor) -> Extraction {
        Extraction {
            var: var.into(),
            extractor,
        }
    }

    fn compiled(list: &[Extraction]) -> (Extractions, SessionState) {
        let mut scope = Scope::new(&[], &[]).unwrap();
        let extractions = Extractions::compile(list, &mut scope).unwrap();
        let mut state = SessionState::default();
        state.reset(scope.var_count());
        (extractions, state)
    }

    #[test]
    fn jsonpath_regexp_and_header_from_a_gzipped_response() {
        let list = [
            extraction(
                "token",
                Extractor::JsonPath {
                    path: "$.token".into(),
                },
            ),
            extraction(
                "obj",
                Extractor::JsonPath {
                    path: "$.items[1]".into(),
                },
            ),
            extraction(
                "digits",
                Extractor::Regexp {
                    pattern: r#""n":(\d+)"#.into(),
                },
            ),
            extraction(
                "whole",
                Extractor::Regexp {
                    pattern: r"tok-[a-z]+".into(),
                },
            ),
            extraction(
                "id",
                Extractor::Header {
                    name: "x-request-id".into(),
                },
            ),
            extraction(
                "missing",
                Extractor::JsonPath {
                    path: "$.nope".into(),
                },
            ),
        ];
        let (extractions, mut state) = compiled(&list);
        assert!(extractions.body);
        let json = br#"{"token":"tok-abc","items":[1,{"a":true}],"n":42}"#;
        let captured = captured(
            response(
                "Content-Encoding: gzip\r\nX-Request-Id: r-1\r\n",
                &gzip(json),
            ),
            &extractions.headers,
        );
        state.set_text(5).push_str("stale");
        let failures = extractions.apply(&captured, &mut state);
        assert_eq!(failures, 1);
        let texts: Vec<&str> = (0..6).map(|v| state.text(v)).collect();
        assert_eq!(
            texts,
            ["tok-abc", r#"{"a":true}"#, "42", "tok-abc", "r-1", ""]
        );
    }

    #[test]
    fn deflate_bodies_are_decoded_with_or_without_zlib_header() {
        let mut z = ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(b"{\"a\":\"zlib\"}").unwrap();
        let zlib = z.finish().unwrap();
        let list = [extraction("a", Extractor::JsonPath { path: "$.a".into() })];
        let (extractions, mut state) = compiled(&list);
        let deflated = captured(
            response("Content-Encoding: deflate\r\n", &zlib),
            &extractions.headers,
        );
        assert_eq!(extractions.apply(&deflated, &mut state), 0);
        assert_eq!(state.text(0), "zlib");
        // A corrupt gzip body fails the extraction instead of hanging or panicking.
        let corrupt = captured(
            response(
                "Content-Encoding: gzip\r\n",
                b"\x1f\x8b\x08\0\0\0\0\0\0\xffgarbage",
            ),
            &extractions.headers,
        );
        assert_eq!(extractions.apply(&corrupt, &mut state), 1);
        assert_eq!(state.text(0), "");
    }

    #[test]
    fn brotli_bodies_are_decoded() {
        let mut br = Vec::new();
        {
            let mut w = brotli::CompressorWriter::new(&mut br, 4096, 5, 22);
            w.write_all(b"{\"a\":\"brotli\"}").unwrap();
        }
        let list = [extraction("a", Extractor::JsonPath { path: "$.a".into() })];
        let (extractions, mut state) = compiled(&list);
        let encoded = captured(
            response("Content-Encoding: br\r\n", &br),
            &extractions.headers,
        );
        assert_eq!(extractions.apply(&encoded, &mut state), 0);
        assert_eq!(state.text(0), "brotli");
        let corrupt = captured(
            response("Content-Encoding: br\r\n", b"not brotli"),
            &extractions.headers,
        );
        assert_eq!(extractions.apply(&corrupt, &mut state), 1);
    }

    #[test]
    fn xpath_reads_xml_bodies() {
        let body = br#"<?xml version="1.0"?><feed><entry id="e1"><title>First</title></entry><entry id="e2"/></feed>"#;
        assert_eq!(
            xpath_value("/feed/entry/title", body).as_deref(),
            Some("First")
        );
        assert_eq!(xpath_value("//entry[2]/@id", body).as_deref(), Some("e2"));
        assert_eq!(xpath_value("count(//entry)", body).as_deref(), Some("2"));
        assert_eq!(xpath_value("//missing", body), None);
        assert_eq!(xpath_value("/feed", b"{\"not\": \"xml\"}"), None);
        assert!(check_xpath("//[").is_err());
    }

    #[test]
    fn invalid_expressions_are_compile_errors_naming_them() {
        let mut scope = Scope::new(&[], &[]).unwrap();
        let bad = [extraction("x", Extractor::JsonPath { path: "$[".into() })];
        let e = Extractions::compile(&bad, &mut scope).unwrap_err();
        assert!(e.to_string().contains("`$[`"), "{e}");
        let bad = [extraction(
            "x",
            Extractor::Regexp {
                pattern: "(".into(),
            },
        )];
        assert!(Extractions::compile(&bad, &mut scope).is_err());
        let ok = [extraction("x", Extractor::Header { name: "A".into() })];
        let compiled = Extractions::compile(&ok, &mut scope).unwrap();
        assert!(
            !compiled.body,
            "a header extraction does not capture the body"
        );
    }
}
