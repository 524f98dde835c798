//! Request templates: a request step compiled to its wire form. A request with no per-client
//! part is encoded once (the static fast path); any other is a template of fixed bytes and
//! values (path placeholders URL-encoded, header values sanitised, JSON/form/text bodies,
//! optional gzip) rendered per request into a reused buffer. Every request gets a unique
//! `X-Request-Id` (unless the plan sets one itself).

use super::compress::Compressors;
use super::extract::Extractions;
use super::program::Scope;
use super::values::{encode_into, CValue, Encoding, Eval, Template};
use super::SessionProblem;
use barrage_http::{
    default_headers, is_clean_path, is_header_value_byte, is_token, method_sends_length,
    RequestError,
};
use barrage_plan::{Body, BodyCoding, Header, JsonTemplate, RequestStep, Value};
use flate2::{Compress, FlushCompress, Status};

/// What every request of the plan shares.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestContext<'a> {
    pub authority: &'a str,
    pub keep_alive: bool,
    pub accept_gzip: bool,
    /// Headers of every request (the plan's options), before request-specific ones.
    pub headers: &'a [Header],
    /// Redirects a request follows unless it sets its own limit.
    pub max_redirects: u32,
    /// A response still redirecting after the limit is the error `too_many_redirects`.
    pub too_many_redirects_is_error: bool,
    /// Clients keep cookie jars (responses' `Set-Cookie` are captured).
    pub cookies: bool,
    /// Written before every path (`http://host:port` through a proxy: absolute form).
    pub target_prefix: Option<&'a str>,
}

#[derive(Debug)]
enum Wire {
    /// Encoded once: the head through its last header line (`Content-Length` included, then
    /// `X-Request-Id: ` when barrage adds one), and the line end(s), blank line and body that
    /// follow the id.
    Static { head: Box<[u8]>, tail: Box<[u8]> },
    Dynamic {
        /// Request line and headers up to (not including) `Content-Length`.
        head: Template,
        body: Option<Template>,
        coding: Option<BodyCoding>,
        content_length: bool,
    },
}

/// A request step ready to send.
#[derive(Debug)]
pub(crate) struct CompiledRequest {
    pub tag: usize,
    /// False for HEAD.
    pub expects_body: bool,
    pub abort_on_error: bool,
    pub extraction: Extractions,
    /// Redirect hops this request follows (0: a 3xx is its response).
    pub max_redirects: u32,
    /// A response still redirecting after `max_redirects` hops is an error.
    pub too_many_redirects_is_error: bool,
    /// Where `Location` is among the captured headers, when redirects are followed (or
    /// one past the limit is an error).
    pub location_header: Option<usize>,
    /// Where `Set-Cookie` is among the captured headers, when clients keep cookie jars.
    pub cookie_header: Option<usize>,
    /// The origin the request goes to when it is not the plan target (`http://host:port/`):
    /// its first hop goes through the client's other-origin connection (`origins.rs`).
    pub origin: Option<url::Url>,
    wire: Wire,
    /// Whether barrage adds `X-Request-Id` (the plan did not set one).
    request_id: bool,
}

/// A worker's buffers for building bodies, and its compressors.
#[derive(Default)]
pub(crate) struct BuildScratch {
    body: Vec<u8>,
    zipped: Vec<u8>,
    compressors: Compressors,
}

impl std::fmt::Debug for BuildScratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuildScratch").finish_non_exhaustive()
    }
}

/// Gzip-compresses `input` into `out` (a single RFC 1952 member) with a reused deflater.
pub(crate) fn gzip_into(deflate: &mut Compress, input: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
    deflate.reset();
    loop {
        out.reserve(input.len() / 2 + 64);
        let consumed = deflate.total_in() as usize;
        match deflate.compress_vec(&input[consumed..], out, FlushCompress::Finish) {
            Ok(Status::StreamEnd) | Err(_) => break,
            Ok(_) => {}
        }
    }
    let mut crc = flate2::Crc::new();
    crc.update(input);
    out.extend_from_slice(&crc.sum().to_le_bytes());
    out.extend_from_slice(&(input.len() as u32).to_le_bytes());
}

/// Appends the decimal digits of `n`, without allocating.
fn push_decimal(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

fn header_line(out: &mut Template, name: &str, value: &str) {
    out.literal(name.as_bytes());
    out.literal(b": ");
    out.literal(value.as_bytes());
    out.literal(b"\r\n");
}

/// Splits `path` at its `:name` placeholders: a name in `params` takes that value, else a
/// variable some step binds or extracts; any other `:name` is left as it is.
fn path_template(
    path: &str,
    params: &[(String, Value)],
    scope: &mut Scope,
    out: &mut Template,
) -> Result<(), SessionProblem> {
    let bytes = path.as_bytes();
    let (mut literal_from, mut i) = (0, 0);
    while i < bytes.len() {
        let starts_name = bytes[i] == b':'
            && bytes
                .get(i + 1)
                .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_');
        if !starts_name {
            i += 1;
            continue;
        }
        let end = bytes[i + 1..]
            .iter()
            .position(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
            .map_or(bytes.len(), |p| i + 1 + p);
        let name = &path[i + 1..end];
        let value = match params.iter().find(|(n, _)| n == name) {
            Some((_, value)) => Some(CValue::compile(value, scope)?),
            None => scope.bound(name).map(CValue::Var),
        };
        if let Some(value) = value {
            out.literal(&bytes[literal_from..i]);
            out.value(value, Encoding::AsWritten);
            literal_from = end;
        }
        i = end;
    }
    out.literal(&bytes[literal_from..]);
    Ok(())
}

/// Appends a JSON template: fixed parts as JSON text, a number value as a number, any other
/// value as a JSON string.
fn json_template(
    template: &JsonTemplate,
    scope: &mut Scope,
    out: &mut Template,
) -> Result<(), SessionProblem> {
    match template {
        JsonTemplate::Literal { json } => {
            let value: serde_json::Value =
                serde_json::from_str(json).map_err(|e| SessionProblem::BadJson {
                    json: json.clone(),
                    reason: e.to_string(),
                })?;
            out.literal(value.to_string().as_bytes());
        }
        JsonTemplate::Value { value } => match CValue::compile(value, scope)? {
            CValue::Number { value, text } => out.literal(if value.is_finite() {
                text.as_bytes()
            } else {
                b"null"
            }),
            other => {
                out.literal(b"\"");
                out.value(other, Encoding::JsonString);
                out.literal(b"\"");
            }
        },
        JsonTemplate::Array { items } => {
            out.literal(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.literal(b",");
                }
                json_template(item, scope, out)?;
            }
            out.literal(b"]");
        }
        JsonTemplate::Object { fields } => {
            out.literal(b"{");
            for (i, (key, value)) in fields.iter().enumerate() {
                if i > 0 {
                    out.literal(b",");
                }
                out.literal(serde_json::Value::from(key.as_str()).to_string().as_bytes());
                out.literal(b":");
                json_template(value, scope, out)?;
            }
            out.literal(b"}");
        }
    }
    Ok(())
}

/// The body template and the `Content-Type` it implies.
fn body_template(
    body: &Body,
    scope: &mut Scope,
) -> Result<(Template, Option<&'static str>), SessionProblem> {
    let mut out = Template::default();
    let content_type = match body {
        Body::Raw { bytes } => {
            out.literal(bytes);
            None
        }
        Body::Text { value } => {
            out.value(CValue::compile(value, scope)?, Encoding::Plain);
            None
        }
        Body::Json { template } => {
            json_template(template, scope, &mut out)?;
            Some("application/json")
        }
        Body::Form { fields } => {
            for (i, (name, value)) in fields.iter().enumerate() {
                let mut key = Vec::new();
                encode_into(Encoding::Url, name, &mut key);
                if i > 0 {
                    out.literal(b"&");
                }
                out.literal(&key);
                out.literal(b"=");
                out.value(CValue::compile(value, scope)?, Encoding::Url);
            }
            Some("application/x-www-form-urlencoded")
        }
    };
    Ok((out, content_type))
}

impl CompiledRequest {
    pub(crate) fn compile(
        request: &RequestStep,
        cx: &RequestContext<'_>,
        mut extraction: Extractions,
        scope: &mut Scope,
    ) -> Result<Self, SessionProblem> {
        // A request to another origin names that origin's host (and, through a plain proxy,
        // its whole URL).
        let origin_authority = request.origin.as_ref().map(barrage_plan::Target::authority);
        let origin_prefix = request
            .origin
            .as_ref()
            .filter(|o| cx.target_prefix.is_some() && !o.is_https())
            .map(ToString::to_string);
        let own_cx;
        let cx = match &origin_authority {
            Some(authority) => {
                own_cx = RequestContext {
                    authority,
                    target_prefix: origin_prefix.as_deref(),
                    ..*cx
                };
                &own_cx
            }
            None => cx,
        };
        let origin = match &request.origin {
            Some(target) => Some(
                url::Url::parse(&format!("{target}/"))
                    .map_err(|e| SessionProblem::Origin(format!("{target}: {e}")))?,
            ),
            None => None,
        };
        let method = request.method.as_str();
        let max_redirects = request.max_redirects.unwrap_or(cx.max_redirects);
        let location_header = (max_redirects > 0 || cx.too_many_redirects_is_error).then(|| {
            extraction.headers.push("location".into());
            extraction.headers.len() - 1
        });
        let cookie_header = cx.cookies.then(|| {
            extraction.headers.push("set-cookie".into());
            extraction.headers.len() - 1
        });
        if !is_clean_path(&request.path) {
            return Err(RequestError::BadPath(request.path.clone()).into());
        }
        let user_has = |name: &str| {
            cx.headers.iter().any(|h| h.name.eq_ignore_ascii_case(name))
                || request
                    .headers
                    .iter()
                    .any(|h| h.name.eq_ignore_ascii_case(name))
        };
        let mut head = Template::default();
        head.literal(method.as_bytes());
        head.literal(b" ");
        if let Some(prefix) = cx.target_prefix {
            head.literal(prefix.as_bytes());
        }
        path_template(&request.path, &request.params, scope, &mut head)?;
        head.literal(b" HTTP/1.1\r\n");
        for (name, value) in default_headers(cx.authority, cx.keep_alive, cx.accept_gzip) {
            if let Some(value) = value.filter(|_| !user_has(name)) {
                header_line(&mut head, name, value);
            }
        }
        for header in cx.headers {
            if let Some(problem) = header.problem() {
                return Err(SessionProblem::Header(problem));
            }
            if !header.name.eq_ignore_ascii_case("content-length") {
                header_line(&mut head, &header.name, &header.value);
            }
        }
        for field in &request.headers {
            if !is_token(&field.name) {
                return Err(RequestError::BadHeaderName(field.name.clone()).into());
            }
            let value = CValue::compile(&field.value, scope)?;
            if value
                .constant()
                .is_some_and(|v| !v.bytes().all(is_header_value_byte))
            {
                return Err(RequestError::BadHeaderValue(field.name.clone()).into());
            }
            if !field.name.eq_ignore_ascii_case("content-length") {
                head.literal(field.name.as_bytes());
                head.literal(b": ");
                head.value(value, Encoding::HeaderValue);
                head.literal(b"\r\n");
            }
        }
        let body = match &request.body {
            None => None,
            Some(body) => {
                let (template, content_type) = body_template(body, scope)?;
                if let Some(content_type) = content_type.filter(|_| !user_has("content-type")) {
                    header_line(&mut head, "Content-Type", content_type);
                }
                if let Some(coding) = request
                    .body_coding()
                    .filter(|_| !user_has("content-encoding"))
                {
                    header_line(&mut head, "Content-Encoding", coding.name());
                }
                Some(template)
            }
        };
        let content_length = body.is_some() || method_sends_length(method);
        let request_id = !user_has("x-request-id");
        let wire = match (head.constant(), body.as_ref().map(Template::constant)) {
            (Some(fixed_head), None | Some(Some(_))) => {
                let mut body = body
                    .as_ref()
                    .and_then(Template::constant)
                    .unwrap_or_default()
                    .to_vec();
                if let Some(coding) = request.body_coding() {
                    let mut zipped = Vec::new();
                    Compressors::default().compress_into(coding, &body, &mut zipped);
                    body = zipped;
                }
                let mut fixed = fixed_head.to_vec();
                if content_length {
                    fixed.extend_from_slice(b"Content-Length: ");
                    push_decimal(&mut fixed, body.len());
                    fixed.extend_from_slice(b"\r\n");
                }
                let mut tail = Vec::with_capacity(4 + body.len());
                if request_id {
                    fixed.extend_from_slice(b"X-Request-Id: ");
                    tail.extend_from_slice(b"\r\n");
                }
                tail.extend_from_slice(b"\r\n");
                tail.extend_from_slice(&body);
                Wire::Static {
                    head: fixed.into(),
                    tail: tail.into(),
                }
            }
            _ => Wire::Dynamic {
                head,
                body,
                coding: request.body_coding(),
                content_length,
            },
        };
        Ok(Self {
            tag: request.tag,
            expects_body: method != "HEAD",
            abort_on_error: request.abort_on_error,
            extraction,
            max_redirects,
            too_many_redirects_is_error: cx.too_many_redirects_is_error,
            location_header,
            cookie_header,
            origin,
            wire,
            request_id,
        })
    }

    /// Writes the whole request for one client into `out` (after what it holds).
    pub(crate) fn build(
        &self,
        cx: Eval<'_>,
        request_id: &[u8],
        scratch: &mut BuildScratch,
        out: &mut Vec<u8>,
    ) {
        let body: &[u8] = match &self.wire {
            Wire::Static { head, tail } => {
                // The fast path: three copies of ready bytes.
                out.reserve(head.len() + request_id.len() + tail.len());
                out.extend_from_slice(head);
                if self.request_id {
                    out.extend_from_slice(request_id);
                }
                out.extend_from_slice(tail);
                return;
            }
            Wire::Dynamic {
                head,
                body,
                coding,
                content_length,
            } => {
                let BuildScratch {
                    body: plain,
                    zipped,
                    compressors,
                } = scratch;
                let body: &[u8] = match body {
                    None => &[],
                    Some(template) => {
                        plain.clear();
                        template.render(cx, plain);
                        if let Some(coding) = coding {
                            compressors.compress_into(*coding, plain, zipped);
                            zipped
                        } else {
                            plain
                        }
                    }
                };
                head.render(cx, out);
                if *content_length {
                    out.extend_from_slice(b"Content-Length: ");
                    push_decimal(out, body.len());
                    out.extend_from_slice(b"\r\n");
                }
                body
            }
        };
        if self.request_id {
            out.extend_from_slice(b"X-Request-Id: ");
            out.extend_from_slice(request_id);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(body);
    }

    /// Whether the request carries barrage's `X-Request-Id` (the plan sets none of its own).
    pub(crate) fn sends_request_id(&self) -> bool {
        self.request_id
    }

    /// Whether the request is encoded once for every client.
    #[cfg(test)]
    pub(crate) fn is_static(&self) -> bool {
        matches!(self.wire, Wire::Static { .. })
    }
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
