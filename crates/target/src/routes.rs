//! Request handling: the generic query-parameter behaviours, then routing to the endpoints.
//!
//! Endpoints (any method is accepted on each):
//! - `/`, `/health` → 200 `{"status":"ok","version":"<crate version>"}`
//! - `/random/get_token?channel=<id>` → 200 `{"token":"<32 hex>","channel":"<id>"}`, 400 without channel
//! - `/ping?token=<t>` → 200 `{"ok":true}` for an issued token, else 401 `{"ok":false}`
//! - `/delay/<ms>` → sleeps, then 200 `{"delay_ms":ms}`
//! - `/status/<code>` → that code (100..=599), body `{"status":code}`
//!   (hyper cannot send a 1xx code as a final HTTP/1 response: 101 is sent and the
//!   connection closed, other 1xx become a bodiless 500; over h2c they reset the stream)
//! - `/bytes/<n>` → `n` bytes (repeating base64 alphabet), at most 100 MB
//! - `/echo` → the request as JSON (see [`crate::echo`])
//! - httpbin's endpoints (`/get`, `/post`, `/anything`, `/headers`, `/cookies`,
//!   `/cookies/set`, `/redirect/<n>`, `/basic-auth/<u>/<p>`, `/base64/<x>`, `/html`, `/json`,
//!   ...: see [`crate::httpbin`]); `/status/3xx` carries `Location: /redirect/1`
//! - anything else → 404 `{"error":"not found","path":...}`

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};

use crate::echo;
use crate::httpbin;
use crate::params::{self, Params};
use crate::respond::{self, Body, Precomputed, Reply};
use crate::tokens::{self, TokenStore};

/// State shared by every connection of one server.
pub(crate) struct State {
    tokens: TokenStore,
    /// Requests carrying `stall=` seen so far, for `stall_every`.
    stall_counter: AtomicU64,
    /// `capacity=R`: the server-wide queues, one per rate.
    capacity: crate::capacity::Capacity,
}

impl State {
    pub(crate) fn new() -> State {
        State {
            tokens: TokenStore::new(tokens::DEFAULT_CAPACITY),
            stall_counter: AtomicU64::new(0),
            capacity: crate::capacity::Capacity::default(),
        }
    }
}

/// Returned by the service to make hyper drop the connection without answering (`close=1`).
#[derive(Debug)]
pub(crate) struct CloseConnection;

impl std::fmt::Display for CloseConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection closed on request (close=1)")
    }
}

impl std::error::Error for CloseConnection {}

static HEALTH: LazyLock<Precomputed> = LazyLock::new(|| {
    Precomputed::new(concat!(
        r#"{"status":"ok","version":""#,
        env!("CARGO_PKG_VERSION"),
        r#""}"#
    ))
});
static PING_OK: LazyLock<Precomputed> = LazyLock::new(|| Precomputed::new(r#"{"ok":true}"#));
static PING_DENIED: LazyLock<Precomputed> = LazyLock::new(|| Precomputed::new(r#"{"ok":false}"#));

/// The service function: one request in, one response out (or a dropped connection).
pub(crate) async fn handle(
    state: Arc<State>,
    req: Request<Incoming>,
) -> Result<Response<Body>, CloseConnection> {
    let gzip_ok = respond::accepts_gzip(req.headers());
    let params = match req.uri().query() {
        None => Params::default(),
        Some(query) => match Params::parse(query) {
            Ok(params) => params,
            Err(err) => {
                let reply = Reply::bad_param(&err);
                return Ok(respond::finish(reply, &Params::default(), gzip_ok).await);
            }
        },
    };
    if params.close {
        return Err(CloseConnection);
    }
    if let Some(stall) = params.stall {
        let seen = state.stall_counter.fetch_add(1, Ordering::Relaxed) + 1;
        if seen.checked_rem(stall.every) == Some(0) {
            tokio::time::sleep(stall.pause).await;
        }
    }
    if let Some(rate) = params.capacity {
        state.capacity.wait_turn(rate).await;
    }
    if let Some(delay) = params.delay {
        tokio::time::sleep(delay).await;
    }
    if params.fail > 0.0 && rand::random::<f64>() < params.fail {
        let reply = Reply::error(StatusCode::INTERNAL_SERVER_ERROR, "injected failure (fail)");
        let params = Params {
            status: None,
            ..params
        };
        return Ok(respond::finish(reply, &params, gzip_ok).await);
    }
    let (reply, headers) = if httpbin::serves(req.uri().path()) {
        httpbin::route(req).await
    } else {
        let path = req.uri().path().to_owned();
        let reply = route(&state, req).await;
        let headers = status_headers(&path, reply.status);
        (reply, headers)
    };
    let mut response = respond::finish(reply, &params, gzip_ok).await;
    response.headers_mut().extend(headers);
    Ok(response)
}

/// What `/status/<code>` adds, as httpbin does: redirects point to `/redirect/1`, a 401
/// challenges for basic authentication.
fn status_headers(path: &str, status: StatusCode) -> hyper::HeaderMap {
    if !path.starts_with("/status/") {
        return hyper::HeaderMap::new();
    }
    match status.as_u16() {
        301 | 302 | 303 | 305 | 307 | 308 => httpbin::redirect_reply(status, "/redirect/1").1,
        401 => {
            let mut headers = hyper::HeaderMap::new();
            headers.insert(
                hyper::header::WWW_AUTHENTICATE,
                hyper::header::HeaderValue::from_static("Basic realm=\"Fake Realm\""),
            );
            headers
        }
        _ => hyper::HeaderMap::new(),
    }
}

/// Dispatches on the path.
async fn route(state: &State, req: Request<Incoming>) -> Reply {
    let path = req.uri().path();
    match path {
        "/" | "/health" => Reply::constant(StatusCode::OK, &HEALTH),
        "/random/get_token" => get_token(state, req.uri().query()),
        "/ping" => ping(state, req.uri().query()),
        "/echo" => echo::echo(req).await,
        _ => {
            if let Some(ms) = path.strip_prefix("/delay/") {
                delay(ms).await
            } else if let Some(code) = path.strip_prefix("/status/") {
                status(code)
            } else if let Some(n) = path.strip_prefix("/bytes/") {
                bytes(n)
            } else if path.starts_with("/echo/") {
                echo::echo(req).await
            } else {
                not_found(path)
            }
        }
    }
}

/// The last value of query parameter `name`, percent-decoded.
pub(crate) fn query_value<'q>(query: Option<&'q str>, name: &str) -> Option<Cow<'q, str>> {
    url::form_urlencoded::parse(query?.as_bytes())
        .filter(|(key, _)| key == name)
        .map(|(_, value)| value)
        .last()
}

fn get_token(state: &State, query: Option<&str>) -> Reply {
    let channel = match query_value(query, "channel") {
        Some(channel) if !channel.is_empty() => channel,
        _ => {
            return Reply::bad_param(&params::ParamError {
                parameter: "channel",
                value: String::new(),
                expected: "a non-empty channel id",
            })
        }
    };
    let token = tokens::format_token(state.tokens.issue());
    let channel_json = serde_json::Value::from(channel.as_ref()).to_string();
    let mut body = String::with_capacity(40 + token.len() + channel_json.len());
    body.push_str(r#"{"token":""#);
    body.push_str(&token);
    body.push_str(r#"","channel":"#);
    body.push_str(&channel_json);
    body.push('}');
    Reply::json(StatusCode::OK, body)
}

fn ping(state: &State, query: Option<&str>) -> Reply {
    let issued = query_value(query, "token")
        .and_then(|t| tokens::parse_token(&t))
        .is_some_and(|t| state.tokens.contains(t));
    if issued {
        Reply::constant(StatusCode::OK, &PING_OK)
    } else {
        Reply::constant(StatusCode::UNAUTHORIZED, &PING_DENIED)
    }
}

async fn delay(ms: &str) -> Reply {
    match params::parse_ms("/delay/<ms>", ms) {
        Ok(duration) => {
            tokio::time::sleep(duration).await;
            Reply::json(
                StatusCode::OK,
                format!(r#"{{"delay_ms":{}}}"#, duration.as_millis()),
            )
        }
        Err(err) => Reply::bad_param(&err),
    }
}

fn status(code: &str) -> Reply {
    match params::parse_status("/status/<code>", code) {
        Ok(status) => Reply::json(status, format!(r#"{{"status":{}}}"#, status.as_u16())),
        Err(err) => Reply::bad_param(&err),
    }
}

fn bytes(n: &str) -> Reply {
    match params::parse_size("/bytes/<n>", n) {
        Ok(n) => Reply {
            status: StatusCode::OK,
            content_type: respond::OCTETS,
            body: respond::pattern_bytes(n),
            gzipped: None,
        },
        Err(err) => Reply::bad_param(&err),
    }
}

fn not_found(path: &str) -> Reply {
    let body = serde_json::json!({ "error": "not found", "path": path });
    Reply::json(StatusCode::NOT_FOUND, Bytes::from(body.to_string()))
}
