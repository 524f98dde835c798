//! httpbin-style endpoints, the shapes k6 and hey runbooks expect (httpbin.org's layout):
//! - `/get`, `/post`, `/put`, `/patch`, `/delete` (that method only, else 405), `/anything[/..]`
//!   (any method) → `{"args","headers","origin","url"}`, with `"data","files","form","json"`
//!   for methods with a body and `"method"` for `/anything`
//! - `/headers` → `{"headers":{...}}`
//! - `/cookies` → `{"cookies":{name: value}}` from the request's `Cookie` header
//! - `/cookies/set?name=value&...` → 302 to `/cookies` with one `Set-Cookie: name=value; Path=/`
//!   per pair; `/cookies/delete?name` → 302 to `/cookies`, expiring them
//! - `/redirect/<n>` → 302 to `/redirect/<n-1>`, `/redirect/1` → 302 to `/get`
//!   (`/relative-redirect/<n>` the same; `/absolute-redirect/<n>` with absolute URLs)
//! - `/redirect-to?url=<u>&status_code=<3xx>` → that redirect
//! - `/basic-auth/<user>/<pass>` → 200 `{"authenticated":true,"user":...}` with matching
//!   `Authorization: Basic`, else 401 with `WWW-Authenticate: Basic realm="Fake Realm"`
//! - `/base64/<b64url>` → the decoded text (`text/html`)
//! - `/html` → a small HTML page; `/json` → httpbin's slideshow document
//!
//! Header names are title-cased (`X-Custom-Header`) as httpbin shows them; repeated headers
//! are joined with `,`.

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderName, HeaderValue, LOCATION, SET_COOKIE, WWW_AUTHENTICATE};
use hyper::{Method, Request, StatusCode};
use serde_json::{json, Map, Value};

use crate::params::MAX_SIZE;
use crate::respond::Reply;

/// A reply and the headers it adds (`Location`, `Set-Cookie`, `WWW-Authenticate`).
pub(crate) type WithHeaders = (Reply, HeaderMap);

/// The most hops `/redirect/<n>` accepts.
const MAX_REDIRECTS: u32 = 100;

const HTML: &str = "<!DOCTYPE html>\n<html>\n  <head>\n    <title>barrage target</title>\n  </head>\n  <body>\n    <h1>Herman Melville - Moby-Dick</h1>\n    <div>\n      <p>Availing himself of the mild, summer-cool weather that now reigned in these latitudes, and in preparation for the peculiarly active pursuits shortly to be anticipated, Perth, the begrimed, blistered old blacksmith, had not removed his portable forge to the hold again.</p>\n    </div>\n  </body>\n</html>\n";

/// Whether `path` is one of these endpoints.
pub(crate) fn serves(path: &str) -> bool {
    matches!(
        path,
        "/get" | "/post" | "/put" | "/patch" | "/delete" | "/headers" | "/cookies" | "/html"
    ) || path == "/json"
        || path == "/redirect-to"
        || [
            "/anything",
            "/cookies/",
            "/redirect/",
            "/relative-redirect/",
            "/absolute-redirect/",
            "/basic-auth/",
            "/base64/",
        ]
        .iter()
        .any(|prefix| path.starts_with(prefix))
}

/// Answers one of the endpoints [`serves`] names.
pub(crate) async fn route(req: Request<Incoming>) -> WithHeaders {
    let path = req.uri().path().to_string();
    let no_headers = HeaderMap::new;
    match path.as_str() {
        "/get" | "/post" | "/put" | "/patch" | "/delete" => {
            if req.method().as_str() != path[1..].to_ascii_uppercase() {
                let reply = Reply::error(StatusCode::METHOD_NOT_ALLOWED, "method not allowed");
                return (reply, no_headers());
            }
            (describe(req, false).await, no_headers())
        }
        "/headers" => (
            Reply::json(
                StatusCode::OK,
                json!({ "headers": headers_json(req.headers()) }).to_string(),
            ),
            no_headers(),
        ),
        "/cookies" => (cookies(req.headers()), no_headers()),
        "/html" => (
            text(StatusCode::OK, "text/html; charset=utf-8", HTML),
            no_headers(),
        ),
        "/json" => (Reply::json(StatusCode::OK, slideshow()), no_headers()),
        "/redirect-to" => redirect_to(req.uri().query()),
        _ if path.starts_with("/anything") => (describe(req, true).await, no_headers()),
        _ if path.starts_with("/cookies/") => set_cookies(&path, req.uri().query()),
        _ => other(&path, &req),
    }
}

fn other(path: &str, req: &Request<Incoming>) -> WithHeaders {
    if let Some(n) = path.strip_prefix("/redirect/") {
        redirect(n, "/redirect/", None)
    } else if let Some(n) = path.strip_prefix("/relative-redirect/") {
        redirect(n, "/relative-redirect/", None)
    } else if let Some(n) = path.strip_prefix("/absolute-redirect/") {
        let host = req
            .headers()
            .get(hyper::header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("localhost");
        redirect(n, "/absolute-redirect/", Some(host))
    } else if let Some(pair) = path.strip_prefix("/basic-auth/") {
        basic_auth(pair, req.headers())
    } else if let Some(encoded) = path.strip_prefix("/base64/") {
        (base64_text(encoded), HeaderMap::new())
    } else {
        let reply = Reply::error(StatusCode::NOT_FOUND, "not found");
        (reply, HeaderMap::new())
    }
}

fn text(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Reply {
    Reply {
        content_type: HeaderValue::from_static(content_type),
        ..Reply::json(status, body)
    }
}

/// A header map holding `name: value` (a value that is not a valid header is skipped).
fn one_header(name: HeaderName, value: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Ok(value) = HeaderValue::from_str(value) {
        headers.insert(name, value);
    }
    headers
}

/// A redirect reply: httpbin answers with an empty body; ours says where it points.
pub(crate) fn redirect_reply(status: StatusCode, location: &str) -> WithHeaders {
    let body = json!({ "redirect": location }).to_string();
    (Reply::json(status, body), one_header(LOCATION, location))
}

fn redirect(n: &str, prefix: &str, absolute_host: Option<&str>) -> WithHeaders {
    let hops = match n.parse::<u32>() {
        Ok(hops) if (1..=MAX_REDIRECTS).contains(&hops) => hops,
        _ => {
            let message =
                format!("{prefix}<n>: n must be a whole number from 1 to {MAX_REDIRECTS}");
            return (
                Reply::error(StatusCode::BAD_REQUEST, &message),
                HeaderMap::new(),
            );
        }
    };
    let path = if hops == 1 {
        "/get".to_string()
    } else {
        format!("{prefix}{}", hops - 1)
    };
    let location = match absolute_host {
        Some(host) => format!("http://{host}{path}"),
        None => path,
    };
    redirect_reply(StatusCode::FOUND, &location)
}

fn redirect_to(query: Option<&str>) -> WithHeaders {
    let url = crate::routes::query_value(query, "url");
    let status = crate::routes::query_value(query, "status_code")
        .and_then(|s| s.parse::<u16>().ok())
        .and_then(|s| StatusCode::from_u16(s).ok())
        .filter(StatusCode::is_redirection)
        .unwrap_or(StatusCode::FOUND);
    match url {
        Some(url) if !url.is_empty() => redirect_reply(status, &url),
        _ => (
            Reply::error(StatusCode::BAD_REQUEST, "/redirect-to needs ?url="),
            HeaderMap::new(),
        ),
    }
}

fn cookies(headers: &HeaderMap) -> Reply {
    let mut cookies = Map::new();
    for value in headers.get_all(hyper::header::COOKIE) {
        for pair in String::from_utf8_lossy(value.as_bytes()).split(';') {
            if let Some((name, value)) = pair.trim().split_once('=') {
                cookies.insert(name.to_string(), Value::String(value.to_string()));
            }
        }
    }
    Reply::json(StatusCode::OK, json!({ "cookies": cookies }).to_string())
}

fn set_cookies(path: &str, query: Option<&str>) -> WithHeaders {
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let mut headers = match path {
        "/cookies/set" => {
            let mut headers = HeaderMap::new();
            for (name, value) in &pairs {
                if let Ok(value) = HeaderValue::from_str(&format!("{name}={value}; Path=/")) {
                    headers.append(SET_COOKIE, value);
                }
            }
            headers
        }
        "/cookies/delete" => {
            let mut headers = HeaderMap::new();
            for (name, _) in &pairs {
                let expired =
                    format!("{name}=; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; Path=/");
                if let Ok(value) = HeaderValue::from_str(&expired) {
                    headers.append(SET_COOKIE, value);
                }
            }
            headers
        }
        _ => {
            return (
                Reply::error(StatusCode::NOT_FOUND, "not found"),
                HeaderMap::new(),
            )
        }
    };
    let (reply, location) = redirect_reply(StatusCode::FOUND, "/cookies");
    headers.extend(location);
    (reply, headers)
}

fn basic_auth(pair: &str, headers: &HeaderMap) -> WithHeaders {
    let Some((user, password)) = pair.split_once('/') else {
        let reply = Reply::error(StatusCode::NOT_FOUND, "/basic-auth/<user>/<password>");
        return (reply, HeaderMap::new());
    };
    let sent = headers
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|b64| {
            base64::engine::general_purpose::STANDARD
                .decode(b64.trim())
                .ok()
        });
    if sent.as_deref() == Some(format!("{user}:{password}").as_bytes()) {
        let body = json!({ "authenticated": true, "user": user }).to_string();
        (Reply::json(StatusCode::OK, body), HeaderMap::new())
    } else {
        let body = json!({ "authenticated": false }).to_string();
        let challenge = one_header(WWW_AUTHENTICATE, "Basic realm=\"Fake Realm\"");
        (Reply::json(StatusCode::UNAUTHORIZED, body), challenge)
    }
}

fn base64_text(encoded: &str) -> Reply {
    let engines = [
        &base64::engine::general_purpose::URL_SAFE,
        &base64::engine::general_purpose::STANDARD,
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        &base64::engine::general_purpose::STANDARD_NO_PAD,
    ];
    let decoded = engines
        .iter()
        .find_map(|engine| engine.decode(encoded).ok());
    match decoded {
        Some(bytes) => text(StatusCode::OK, "text/html; charset=utf-8", bytes),
        None => text(
            StatusCode::OK,
            "text/html; charset=utf-8",
            "Incorrect Base64 data try: SFRUUEJJTiBpcyBhd2Vzb21l",
        ),
    }
}

fn slideshow() -> String {
    json!({"slideshow": {
        "author": "Yours Truly",
        "date": "date of publication",
        "slides": [
            {"title": "Wake up to WonderWidgets!", "type": "all"},
            {"items": ["Why <em>WonderWidgets</em> are great", "Who <em>buys</em> WonderWidgets"],
             "title": "Overview", "type": "all"}
        ],
        "title": "Sample Slide Show"
    }})
    .to_string()
}

/// Title-cases a header name as httpbin shows it: `x-custom-header` → `X-Custom-Header`.
fn title_case(name: &str) -> String {
    name.split('-')
        .map(|part| {
            let mut chars = part.chars();
            match chars.next() {
                Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join("-")
}

fn headers_json(headers: &HeaderMap) -> Map<String, Value> {
    let mut out = Map::new();
    for (name, value) in headers {
        let name = title_case(name.as_str());
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        match out.get_mut(&name) {
            Some(Value::String(joined)) => {
                joined.push(',');
                joined.push_str(&value);
            }
            _ => {
                out.insert(name, Value::String(value));
            }
        }
    }
    out
}

/// One value per name, an array for repeated names (httpbin's `args` and `form`).
fn pairs_json(pairs: url::form_urlencoded::Parse<'_>) -> Map<String, Value> {
    let mut out = Map::new();
    for (key, value) in pairs {
        let value = Value::String(value.into_owned());
        match out.get_mut(key.as_ref()) {
            Some(Value::Array(values)) => values.push(value),
            Some(existing) => {
                let first = existing.take();
                *existing = Value::Array(vec![first, value]);
            }
            None => {
                out.insert(key.into_owned(), value);
            }
        }
    }
    out
}

/// The `/get`, `/post`, ..., `/anything` description of a request.
async fn describe(req: Request<Incoming>, anything: bool) -> Reply {
    let (parts, body) = req.into_parts();
    let body = match Limited::new(body, MAX_SIZE).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return Reply::error(StatusCode::PAYLOAD_TOO_LARGE, "request body above 100 MB"),
    };
    let host = parts
        .headers
        .get(hyper::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    let mut out = Map::new();
    let query = parts.uri.query().unwrap_or("");
    out.insert(
        "args".into(),
        Value::Object(pairs_json(url::form_urlencoded::parse(query.as_bytes()))),
    );
    out.insert(
        "headers".into(),
        Value::Object(headers_json(&parts.headers)),
    );
    out.insert("origin".into(), Value::String("127.0.0.1".into()));
    out.insert(
        "url".into(),
        Value::String(format!("http://{host}{}", parts.uri)),
    );
    let has_body = anything || parts.method != Method::GET;
    if has_body {
        let content_type = parts
            .headers
            .get(hyper::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let is_form = content_type.starts_with("application/x-www-form-urlencoded");
        let form = if is_form {
            pairs_json(url::form_urlencoded::parse(&body))
        } else {
            Map::new()
        };
        let data = if is_form {
            String::new()
        } else {
            String::from_utf8_lossy(&body).into_owned()
        };
        let json_value = serde_json::from_slice::<Value>(&body).unwrap_or(Value::Null);
        out.insert("data".into(), Value::String(data));
        out.insert("files".into(), Value::Object(Map::new()));
        out.insert("form".into(), Value::Object(form));
        out.insert("json".into(), json_value);
    }
    if anything {
        out.insert("method".into(), Value::String(parts.method.to_string()));
    }
    Reply::json(StatusCode::OK, Value::Object(out).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_names_are_title_cased() {
        assert_eq!(title_case("x-custom-header"), "X-Custom-Header");
        assert_eq!(title_case("host"), "Host");
    }

    #[test]
    fn redirect_chains_count_down_to_get() {
        let (reply, headers) = redirect("3", "/redirect/", None);
        assert_eq!(reply.status, StatusCode::FOUND);
        assert_eq!(headers[LOCATION], "/redirect/2");
        assert_eq!(redirect("1", "/redirect/", None).1[LOCATION], "/get");
        let absolute = redirect("2", "/absolute-redirect/", Some("h:1")).1;
        assert_eq!(absolute[LOCATION], "http://h:1/absolute-redirect/1");
        assert_eq!(
            redirect("0", "/redirect/", None).0.status,
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            redirect("x", "/redirect/", None).0.status,
            StatusCode::BAD_REQUEST
        );
    }

    #[test]
    fn base64_decodes_url_safe_and_standard() {
        assert_eq!(&base64_text("aGVsbG8=").body[..], b"hello");
        assert_eq!(&base64_text("aGk_").body[..], b"hi?");
        assert!(base64_text("!!!").body.starts_with(b"Incorrect Base64"));
    }
}
