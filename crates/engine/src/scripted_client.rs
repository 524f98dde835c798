//! Drives a scripted VU (see `scripted.rs`) through one iteration on its client: resumes it,
//! sends the requests it yields through the exchange code every plan request uses (same
//! connection models, TLS, HTTP/2, timings, error kinds and metrics), sleeps its sleeps, and
//! records the checks and metric samples it reports.

use crate::client::Client;
use crate::exchange::{attempt, OpenRequest, Wanted};
use crate::redirect;
use crate::scripted::{
    JarRequest, ResponseVerdict, ScriptRequest, ScriptResponse, ScriptTimings, ScriptedVu, VuEvent,
    VuInput, VuStep, CAPTURED_HEADERS,
};
use crate::worker::Worker;
use barrage_metrics::{ErrorKind, ResponseRecord};
use std::cell::Cell;
use std::net::SocketAddr;
use std::time::Instant;

/// Scripted requests are recorded under the plan's first tag unless they name another.
const SCRIPT_TAG: usize = 0;
/// Where `Set-Cookie` is among [`CAPTURED_HEADERS`].
const SET_COOKIE: usize = 4;

/// Where a client's connection goes when its requests are scripted: the origin (scheme and
/// authority) and, for an origin other than the plan target, its resolved addresses.
#[derive(Debug, Default)]
pub(crate) struct ScriptOrigin {
    origin: String,
    addrs: Option<Vec<SocketAddr>>,
}

/// A scripted request's URL split for the wire.
struct Split<'a> {
    origin: &'a str,
    host: &'a str,
    port: u16,
    authority: &'a str,
    path: &'a str,
    https: bool,
    /// Whether the URL carries `user:pass@` (sent as basic auth, as k6 does).
    userinfo: bool,
}

fn split(url: &str) -> Option<Split<'_>> {
    let (https, rest) = if let Some(rest) = url.strip_prefix("http://") {
        (false, rest)
    } else {
        (true, url.strip_prefix("https://")?)
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let with_userinfo = &rest[..end];
    let authority = with_userinfo.rsplit('@').next().unwrap_or(with_userinfo);
    let path = match &rest[end..] {
        "" => "/",
        p if p.starts_with('?') => p,
        p => p.split('#').next().unwrap_or(p),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || authority.starts_with('[') => {
            match port.parse::<u16>() {
                Ok(port) if !host.is_empty() => (host, port),
                _ => (authority, if https { 443 } else { 80 }),
            }
        }
        _ => (authority, if https { 443 } else { 80 }),
    };
    if host.is_empty() {
        return None;
    }
    let origin_len = url.len() - rest.len() + end;
    Some(Split {
        origin: &url[..origin_len],
        host: host.trim_start_matches('[').trim_end_matches(']'),
        port,
        authority,
        path,
        https,
        userinfo: authority.len() != with_userinfo.len(),
    })
}

fn failed(error: impl Into<String>) -> ScriptResponse {
    ScriptResponse {
        error: error.into(),
        ..ScriptResponse::default()
    }
}

impl Client {
    /// Runs one iteration of the scripted `vu` (its `iteration`-th); like
    /// [`Client::run_iteration`], the first request's latency counts from `intended_start`.
    /// Returns when the iteration ended.
    pub(crate) async fn run_scripted(
        &mut self,
        worker: &Worker,
        vu: &mut dyn ScriptedVu,
        iteration: u64,
        intended_start: Instant,
    ) -> Instant {
        // k6 gives a VU a fresh cookie jar each iteration.
        if let Some(jar) = &mut self.jar {
            jar.clear();
        }
        let mut input = VuInput::Start { iteration };
        let mut intended = Some(intended_start);
        let ok = loop {
            let step = vu.resume(input);
            vu.drain_events(&mut |event| match event {
                VuEvent::Check { name, passed } => worker.record_script_check(&name, passed),
                VuEvent::Metric { index, value } => worker.record_custom(index, value),
            });
            match step {
                VuStep::Request(request) => {
                    let start = intended.take().unwrap_or_else(Instant::now);
                    input = VuInput::Response(self.scripted_request(worker, &request, start).await);
                }
                VuStep::Sleep(pause) => {
                    intended = None;
                    if !pause.is_zero() {
                        tokio::time::sleep(pause).await;
                    }
                    input = VuInput::Slept;
                }
                VuStep::Jar(request) => input = VuInput::Cookies(self.use_jar(request)),
                VuStep::Done { ok } => break ok,
            }
        };
        let ended = Instant::now();
        worker.record_iteration(ended.saturating_duration_since(intended_start));
        if ok {
            worker.session_completed();
        } else {
            worker.session_failed();
        }
        ended
    }

    /// Sends one scripted request, following its redirects (each hop recorded as a request
    /// of its own, cookies kept in the client's jar when it has one), and answers with the
    /// last response.
    async fn scripted_request(
        &mut self,
        worker: &Worker,
        request: &ScriptRequest,
        intended: Instant,
    ) -> ScriptResponse {
        let Some(url) = split(&request.url) else {
            return failed(format!("invalid URL `{}`", request.url));
        };
        let mut bytes = worker.request_buffers.take();
        bytes.clear();
        write_request(worker, request, &url, &mut bytes);
        let mut hops_left = request.redirects;
        // Set once a redirect leads elsewhere than `request.url`.
        let mut current: Option<String> = None;
        let mut start = intended;
        let response = loop {
            let here = current.as_deref().unwrap_or(&request.url);
            let Some(url) = split(here) else {
                break failed(format!("invalid URL `{here}`"));
            };
            // Parsed only for what needs it: the jar, and a redirect to follow.
            let parsed = (self.jar.is_some() || hops_left > 0)
                .then(|| url::Url::parse(here).ok())
                .flatten();
            let mut response = self
                .scripted_hop(worker, request, &url, &bytes, parsed.as_ref(), start)
                .await;
            let next = parsed
                .as_ref()
                .filter(|_| hops_left > 0 && redirect::is_redirect(response.status))
                .and_then(|from| {
                    let (_, location) = response
                        .headers
                        .iter()
                        .find(|(name, _)| name == "Location")?;
                    Some((from, redirect::resolve(from, location.as_bytes())?))
                });
            let Some((from, next)) = next else {
                response.url = current;
                break response;
            };
            hops_left -= 1;
            start = Instant::now();
            let target = crate::origins::path_and_query(&next.url);
            let host = redirect::authority(&next.url);
            let referer = redirect::referer_of(from);
            let hop = redirect::Hop::between(from, &next, &target, Some(&host), &referer, None);
            let mut next_bytes = worker.request_buffers.take();
            redirect::next_request(&bytes, response.status, &hop, &mut next_bytes);
            let capacity = bytes.capacity();
            worker
                .request_buffers
                .give(std::mem::replace(&mut bytes, next_bytes), capacity);
            current = Some(next.url.to_string());
        };
        let capacity = bytes.capacity();
        worker.request_buffers.give(bytes, capacity);
        response
    }

    /// One exchange of a scripted request's `bytes` with `url`, recorded under the script
    /// tag; the jar (for `jar_url`) gets the response's cookies and adds its own.
    async fn scripted_hop(
        &mut self,
        worker: &Worker,
        request: &ScriptRequest,
        url: &Split<'_>,
        bytes: &[u8],
        jar_url: Option<&url::Url>,
        intended: Instant,
    ) -> ScriptResponse {
        if let Err(problem) = self.route(worker, url).await {
            return failed(problem);
        }
        let tag = if request.tag < worker.run.plan.tag_count {
            request.tag
        } else {
            SCRIPT_TAG
        };
        let mut with_cookies = None;
        if let (Some(jar), Some(here)) = (&mut self.jar, jar_url) {
            let mut buffer = worker.request_buffers.take();
            if jar.add_to(here, bytes, &mut buffer) {
                with_cookies = Some(buffer);
            } else {
                let capacity = buffer.capacity();
                worker.request_buffers.give(buffer, capacity);
            }
        }
        let sending = with_cookies.as_deref().unwrap_or(bytes);
        let mut captured = worker.captures.take();
        let headers: &[String] = &worker.scripted_headers;
        let addrs = self.script_origin.as_ref().and_then(|o| o.addrs.as_deref());
        let timeout = request.timeout.unwrap_or(worker.run.timeout);
        let received = Cell::new(0);
        let wanted = Wanted {
            expects_body: request.method != "HEAD",
            headers,
            body: true,
            addrs,
            connector: None,
            received: &received,
        };
        // Dropped with the iteration (the run's end) while it waits: counted as interrupted.
        let open = OpenRequest {
            worker,
            tag,
            intended,
        };
        let outcome = tokio::time::timeout(
            timeout,
            attempt(
                &mut self.connection,
                worker,
                sending,
                &wanted,
                Some(&mut captured),
            ),
        )
        .await;
        std::mem::forget(open);
        let prepared = sending.len() as u64;
        if let Some(buffer) = with_cookies {
            let capacity = buffer.capacity();
            worker.request_buffers.give(buffer, capacity);
        }
        let kind = match outcome {
            Ok(Ok(done)) => {
                let phases = done.phases();
                let exchange = done.exchange;
                if !(exchange.keep_alive && worker.run.keep_alive) {
                    self.connection = None;
                }
                if let (Some(jar), Some(here)) = (&mut self.jar, jar_url) {
                    jar.store(here, captured.header_values(SET_COOKIE));
                }
                let latency = exchange.done_at.saturating_duration_since(intended);
                // k6 hands scripts the decoded body (decoded as it streamed in, up to
                // `--max-body`; empty when it did not decode).
                let body = captured.body().unwrap_or_default().to_vec();
                let record = ResponseRecord {
                    tag,
                    second: worker.second_of(exchange.done_at),
                    latency,
                    expected_interval: self.expected_interval,
                    phases,
                    status: exchange.status,
                    bytes_sent: exchange.bytes_sent,
                    bytes_received: exchange.bytes_received,
                    body_bytes: exchange.body_bytes,
                    decoded_body_bytes: captured.decoded_len().unwrap_or(exchange.body_bytes),
                };
                worker.record_response(&record, Some(&record), None, Some(&record));
                if request.verdict != ResponseVerdict::Default {
                    worker.metrics.borrow_mut().record_verdict(
                        tag,
                        barrage_metrics::failed_by_default(exchange.status),
                        request.verdict.failed(exchange.status),
                    );
                }
                let response = ScriptResponse {
                    status: exchange.status,
                    headers: CAPTURED_HEADERS
                        .iter()
                        .enumerate()
                        .filter_map(|(i, name)| {
                            let value = captured.header(i)?;
                            Some((
                                (*name).to_string(),
                                String::from_utf8_lossy(value).into_owned(),
                            ))
                        })
                        .collect(),
                    body,
                    timings: ScriptTimings {
                        connecting: phases.connect.unwrap_or_default(),
                        tls_handshaking: phases.tls.unwrap_or_default(),
                        sending: phases.write,
                        waiting: phases.wait,
                        receiving: phases.read,
                        duration: phases.write + phases.wait + phases.read,
                    },
                    error: String::new(),
                    url: None,
                };
                let held = captured.retained_bytes();
                worker.captures.give(captured, held);
                return response;
            }
            Ok(Err(kind)) => kind,
            Err(_elapsed) => ErrorKind::Timeout,
        };
        self.connection = None;
        let held = captured.retained_bytes();
        worker.captures.give(captured, held);
        let received = received.get();
        worker.record_error(tag, Instant::now(), kind, prepared, received, None);
        if request.verdict != ResponseVerdict::Default && kind != ErrorKind::Interrupted {
            let verdict = request.verdict.failed(0);
            worker
                .metrics
                .borrow_mut()
                .record_verdict(tag, true, verdict);
        }
        failed(kind.description())
    }

    /// Does what a VU asks of its cookie jar (nothing without a jar or with a bad URL).
    fn use_jar(&mut self, request: JarRequest) -> Vec<(String, String)> {
        let Some(jar) = &mut self.jar else {
            return Vec::new();
        };
        let parse = |url: &str| url::Url::parse(url).ok();
        match request {
            JarRequest::Set {
                url,
                name,
                value,
                attributes,
            } => {
                if let Some(url) = parse(&url) {
                    jar.set(&url, &name, &value, &attributes);
                }
                Vec::new()
            }
            JarRequest::ForUrl { url } => parse(&url).map(|u| jar.for_url(&u)).unwrap_or_default(),
        }
    }

    /// Points the client's connection at `url`'s origin: the plan target's addresses, or
    /// (plain HTTP only: TLS settings are the target's) another host's, resolved once per
    /// new origin. A different origin than the last request's closes the connection.
    async fn route(&mut self, worker: &Worker, url: &Split<'_>) -> Result<(), String> {
        if self
            .script_origin
            .as_ref()
            .is_some_and(|o| o.origin == url.origin)
        {
            return Ok(());
        }
        self.connection = None;
        let target = &worker.run.plan.target;
        let on_target = url.host.eq_ignore_ascii_case(&target.host)
            && url.port == target.port
            && url.https == target.is_https();
        let addrs = if on_target {
            None
        } else if url.https || target.is_https() {
            return Err(format!(
                "{}: requests to an origin other than the test's first ({}) are plain HTTP only for now",
                url.origin,
                target.authority()
            ));
        } else {
            Some(
                barrage_http::resolve(url.host, url.port)
                    .await
                    .map_err(|kind| format!("{}: {}", url.host, kind.description()))?,
            )
        };
        self.script_origin = Some(Box::new(ScriptOrigin {
            origin: url.origin.to_string(),
            addrs,
        }));
        Ok(())
    }
}

/// The request's HTTP/1.1 bytes (the HTTP/2 connection re-frames them).
fn write_request(worker: &Worker, request: &ScriptRequest, url: &Split<'_>, out: &mut Vec<u8>) {
    out.extend_from_slice(request.method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(url.path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let mut line = |name: &str, value: &str| {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    };
    let has = |name: &str| {
        request
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    let defaults = barrage_http::default_headers(
        url.authority,
        worker.run.keep_alive,
        worker.run.plan.accept_gzip,
    );
    for (name, value) in defaults {
        if let Some(value) = value.filter(|_| !has(name)) {
            line(name, value);
        }
    }
    for (name, value) in &request.headers {
        line(name, value);
    }
    if url.userinfo && !has("authorization") {
        if let Some(credentials) = barrage_plan::Credentials::from_url(&request.url) {
            line("Authorization", &credentials.basic_header_value());
        }
    }
    let sends_length =
        !request.body.is_empty() || barrage_http::method_sends_length(&request.method);
    if sends_length && !has("content-length") {
        line("Content-Length", &request.body.len().to_string());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&request.body);
}

#[cfg(test)]
mod tests {
    use super::{split, CAPTURED_HEADERS, SET_COOKIE};

    #[test]
    fn set_cookie_is_where_the_jar_reads_it() {
        assert_eq!(CAPTURED_HEADERS[SET_COOKIE], "Set-Cookie");
    }

    #[test]
    fn urls_split_into_origin_authority_and_path() {
        let u = split("http://127.0.0.1:8080/get?a=1#frag").unwrap();
        assert_eq!(
            (u.origin, u.host, u.port, u.authority, u.path, u.https),
            (
                "http://127.0.0.1:8080",
                "127.0.0.1",
                8080,
                "127.0.0.1:8080",
                "/get?a=1",
                false
            )
        );
        let u = split("https://user:pw@example.test").unwrap();
        assert_eq!(
            (u.host, u.port, u.path, u.userinfo),
            ("example.test", 443, "/", true)
        );
        assert!(!split("http://h.test/a@b").unwrap().userinfo);
        let u = split("http://[::1]:9/x").unwrap();
        assert_eq!((u.host, u.port), ("::1", 9));
        assert!(split("ftp://x/").is_none());
        assert!(split("http:///x").is_none());
    }
}
