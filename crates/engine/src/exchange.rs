//! One request of a client: build its bytes into a pooled buffer, get a connection by the
//! connection model (the client's own, or a lease from the worker's shared pool), connect if
//! needed (TCP, TLS, HTTP/2), time each phase, apply the timeout, retry once a keep-alive
//! connection the server closed while idle, record the outcome, and run the extractions.

use crate::client::Client;
use crate::http_debug;
use crate::redirect;
use crate::session::custom::LastResponse;
use crate::session::request::CompiledRequest;
use crate::session::values::Eval;
use crate::worker::Worker;
use barrage_http::{AnyConnection, Capture, Captured, Exchange};
use barrage_metrics::{ErrorKind, PhaseTimings, ResponseRecord};
use barrage_plan::HttpDebug;
use std::time::{Duration, Instant};

/// A completed exchange and the timings around it that the connection cannot know.
pub(crate) struct Attempt {
    pub exchange: Exchange,
    pub connect: Option<Duration>,
    pub tls: Option<Duration>,
    pub write_started: Instant,
}

impl Attempt {
    /// Where the attempt's time went: connect, TLS, writing, waiting, reading.
    pub(crate) fn phases(&self) -> PhaseTimings {
        let exchange = &self.exchange;
        PhaseTimings {
            connect: self.connect,
            tls: self.tls,
            write: exchange
                .written_at
                .saturating_duration_since(self.write_started),
            wait: exchange
                .first_byte_at
                .saturating_duration_since(exchange.written_at),
            read: exchange
                .done_at
                .saturating_duration_since(exchange.first_byte_at),
        }
    }
}

/// What one hop of a request ended with.
enum Hop {
    /// The request's final response or failure: whether it succeeded.
    Done(bool),
    /// A redirect to follow, to this path on the same origin.
    Redirect(String),
}

impl Client {
    /// Sends `request`, records it, and extracts from its response. Returns false when the
    /// request failed: a transport error, or a status of 400 or more. Redirects are
    /// followed up to the request's limit, each hop a request of its own (timed from its own
    /// start, recorded under the same tag); extractions read the final response.
    pub(crate) async fn request(
        &mut self,
        worker: &Worker,
        request: &CompiledRequest,
        intended: Instant,
    ) -> bool {
        let mut bytes = worker.request_buffers.take();
        bytes.clear();
        let id_number = worker.request_ids.with_next(|id| {
            let cx = Eval {
                state: &self.state,
                data: &worker.run.plan.data,
            };
            request.build(cx, id, &mut worker.scratch.borrow_mut().build, &mut bytes)
        });
        // The sample log writes the id from its counter; the plan's own header is not ours.
        let request_id = request.sends_request_id().then_some(id_number);
        let mut start = intended;
        let mut hops_left = request.max_redirects;
        let mut with_cookies = self.jar.is_some().then(|| worker.request_buffers.take());
        let ok = loop {
            let sending = match (&mut self.jar, &mut with_cookies) {
                (Some(jar), Some(buffer)) => {
                    let url = worker
                        .run
                        .plan
                        .origin
                        .as_ref()
                        .and_then(|origin| origin.url(redirect::request_path(&bytes)));
                    match url {
                        Some(url) if jar.add_to(&url, &bytes, buffer) => &buffer[..],
                        _ => &bytes[..],
                    }
                }
                _ => &bytes[..],
            };
            match self
                .hop(worker, request, sending, start, request_id, hops_left > 0)
                .await
            {
                Hop::Done(ok) => break ok,
                Hop::Redirect(path) => {
                    hops_left -= 1;
                    let mut next = worker.request_buffers.take();
                    let referer = worker
                        .run
                        .plan
                        .origin
                        .as_ref()
                        .map_or_else(String::new, |o| o.url_of(redirect::request_path(&bytes)));
                    let status = self.state.last_status;
                    let path = match &worker.run.plan.target_prefix {
                        Some(prefix) => format!("{prefix}{path}"),
                        None => path,
                    };
                    redirect::next_request(&bytes, status, &path, &referer, &mut next);
                    let capacity = bytes.capacity();
                    worker
                        .request_buffers
                        .give(std::mem::replace(&mut bytes, next), capacity);
                    start = Instant::now();
                }
            }
        };
        let capacity = bytes.capacity();
        worker.request_buffers.give(bytes, capacity);
        if let Some(buffer) = with_cookies {
            let capacity = buffer.capacity();
            worker.request_buffers.give(buffer, capacity);
        }
        ok
    }

    /// One exchange of `bytes`: sends, records, and either extracts (the final response) or
    /// returns the redirect to follow, when `may_redirect`.
    async fn hop(
        &mut self,
        worker: &Worker,
        request: &CompiledRequest,
        bytes: &[u8],
        intended: Instant,
        request_id: Option<u64>,
        may_redirect: bool,
    ) -> Hop {
        let decode = worker.run.connection.decode_responses;
        let debug = worker.run.plan.http_debug.as_ref().and_then(|p| p.claim());
        let debug_headers = debug.map(|_| http_debug::capture_list(&request.extraction.headers));
        let wanted = Wanted {
            headers: debug_headers
                .as_deref()
                .unwrap_or(&request.extraction.headers),
            body: request.extraction.body || debug == Some(HttpDebug::Full),
            expects_body: request.expects_body,
            addrs: None,
        };
        let mut captured = (decode
            || !request.extraction.is_empty()
            || request.location_header.is_some()
            || request.cookie_header.is_some()
            || debug.is_some())
        .then(|| worker.captures.take());
        // What a failed request counts as sent (how much of it left is unknown); a response
        // brings the exact wire count (HTTP/2 sends HPACK-compressed frames, not these bytes).
        let prepared = bytes.len() as u64;
        let open = OpenRequest {
            worker,
            tag: request.tag,
            intended,
        };
        let outcome = tokio::time::timeout(worker.run.timeout, async {
            match &worker.connections.pool {
                None => {
                    attempt(
                        &mut self.connection,
                        worker,
                        bytes,
                        &wanted,
                        captured.as_deref_mut(),
                    )
                    .await
                }
                Some(pool) => {
                    let mut lease = pool.checkout(self.pool_slot).await;
                    self.pool_slot = Some(lease.slot());
                    let result = attempt(
                        &mut lease.connection,
                        worker,
                        bytes,
                        &wanted,
                        captured.as_deref_mut(),
                    )
                    .await;
                    let reusable =
                        matches!(&result, Ok(a) if a.exchange.keep_alive) && worker.run.keep_alive;
                    lease.finish(reusable);
                    result
                }
            }
        })
        .await;
        std::mem::forget(open);
        let kind = match outcome {
            Ok(Ok(attempt)) => {
                self.connect_failures = 0;
                let phases = attempt.phases();
                let exchange = attempt.exchange;
                if !(exchange.keep_alive && worker.run.keep_alive) {
                    self.connection = None;
                }
                let record = ResponseRecord {
                    tag: request.tag,
                    second: worker.second_of(exchange.done_at),
                    latency: exchange.done_at.saturating_duration_since(intended),
                    expected_interval: self.expected_interval,
                    phases,
                    status: exchange.status,
                    bytes_sent: exchange.bytes_sent,
                    bytes_received: exchange.bytes_received,
                    body_bytes: exchange.body_bytes,
                    decoded_body_bytes: captured
                        .as_deref()
                        .and_then(Captured::decoded_len)
                        .unwrap_or(exchange.body_bytes),
                };
                worker.record_response(&record, request_id);
                self.state.last_status = exchange.status;
                self.state.last_response = LastResponse {
                    duration: record.latency,
                    phases: record.phases,
                };
                let mut hop = Hop::Done(exchange.status < 400);
                if let (Some(level), Some(captured), Some(headers)) =
                    (debug, captured.as_deref(), debug_headers.as_ref())
                {
                    // The body decoded as it streamed in; empty when it was not kept or did
                    // not decode.
                    let shown = http_debug::Shown {
                        status: exchange.status,
                        captured,
                        headers: headers.len() - 1,
                        body: captured.body().unwrap_or_default(),
                    };
                    http_debug::print(&http_debug::render(level, bytes, Ok(shown)));
                }
                if let Some(captured) = captured {
                    if let (Some(index), Some(jar)) = (request.cookie_header, &mut self.jar) {
                        let url = worker
                            .run
                            .plan
                            .origin
                            .as_ref()
                            .and_then(|origin| origin.url(redirect::request_path(bytes)));
                        if let Some(url) = url {
                            jar.store(&url, captured.header_values(index));
                        }
                    }
                    let redirect = may_redirect && redirect::is_redirect(exchange.status);
                    let location = request
                        .location_header
                        .filter(|_| redirect)
                        .and_then(|index| captured.header(index))
                        .and_then(|location| {
                            let origin = worker.run.plan.origin.as_ref()?;
                            origin.resolve(redirect::request_path(bytes), location)
                        });
                    match location {
                        Some(path) => hop = Hop::Redirect(path),
                        None => {
                            let failures = request.extraction.apply(&captured, &mut self.state);
                            if failures > 0 {
                                worker.record_extraction_failures(request.tag, failures);
                            }
                        }
                    }
                    let held = captured.retained_bytes();
                    worker.captures.give(captured, held);
                }
                return hop;
            }
            Ok(Err(kind)) => kind,
            Err(_elapsed) => ErrorKind::Timeout,
        };
        if let Some(level) = debug {
            http_debug::print(&http_debug::render(level, bytes, Err(kind)));
        }
        self.connection = None;
        self.state.last_status = 0;
        self.state.last_response = LastResponse::default();
        request.extraction.unset(&mut self.state);
        if let Some(captured) = captured {
            let held = captured.retained_bytes();
            worker.captures.give(captured, held);
        }
        worker.record_error(request.tag, Instant::now(), kind, prepared, request_id);
        if matches!(
            kind,
            ErrorKind::Refused | ErrorKind::Connect | ErrorKind::LocalFdLimit
        ) {
            // A connect that fails at once would otherwise be retried in a tight loop
            // (hundreds of thousands a second, starving the event loop): back off.
            self.connect_failures = self.connect_failures.saturating_add(1);
            let wait = connect_backoff(self.connect_failures);
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
        }
        Hop::Done(false)
    }
}

/// A request on its way. When the client's future is dropped while it waits (the run's end,
/// a second stop signal, a grace period that ran out, a VU ramped down), dropping this counts
/// the request as interrupted, so a target that never answers shows as unanswered requests
/// instead of nothing. A finished request forgets it. It counts in the second of its
/// intended start, so the per-second series gains no second past the run's own.
struct OpenRequest<'a> {
    worker: &'a Worker,
    tag: usize,
    intended: Instant,
}

impl Drop for OpenRequest<'_> {
    fn drop(&mut self) {
        let second = self.worker.second_of(self.intended);
        self.worker
            .metrics
            .borrow_mut()
            .record_interrupted(self.tag, second);
    }
}

/// The wait after `failures` failed connects in a row: none after the first (a client that
/// fails once, as an open-model arrival does, goes on at once), then 1 ms, doubling, at most
/// 250 ms.
fn connect_backoff(failures: u32) -> Duration {
    if failures < 2 {
        return Duration::ZERO;
    }
    Duration::from_millis(1u64 << (failures - 2).min(8)).min(Duration::from_millis(250))
}

/// What an exchange wants of the response, and where it connects.
pub(crate) struct Wanted<'a> {
    pub expects_body: bool,
    /// Headers to capture (by name) and whether to keep the body.
    pub headers: &'a [String],
    pub body: bool,
    /// Addresses to connect to instead of the plan target's (a scripted request to another
    /// host).
    pub addrs: Option<&'a [std::net::SocketAddr]>,
}

pub(crate) async fn attempt(
    connection: &mut Option<AnyConnection>,
    worker: &Worker,
    bytes: &[u8],
    wanted: &Wanted<'_>,
    mut captured: Option<&mut Captured>,
) -> Result<Attempt, ErrorKind> {
    let mut connect_time = None;
    let mut tls_time = None;
    let mut retried = false;
    loop {
        let reused = connection.is_some();
        if !reused {
            let settings = &worker.run.connection;
            let local = worker.connections.next_local(settings);
            let opened = match (wanted.addrs, settings.dns_ttl) {
                (Some(addrs), _) => Box::pin(settings.connector.open(addrs, local)).await?,
                (None, None) => {
                    let addrs = worker.run.addrs.as_ref().as_ref().map_err(|kind| *kind)?;
                    // Boxed: connecting (TCP, TLS, HTTP/2 handshakes) happens once per
                    // connection, and inline its large state would sit in every client's
                    // future, also while the client waits in a think time.
                    Box::pin(settings.connector.open(addrs, local)).await?
                }
                (None, Some(ttl)) => {
                    let addrs = Box::pin(worker.connections.resolve_with_ttl(
                        ttl,
                        &settings.host,
                        settings.port,
                    ))
                    .await?;
                    Box::pin(settings.connector.open(&addrs, local)).await?
                }
            };
            connect_time = Some(opened.connect);
            tls_time = opened.tls;
            worker.connection_opened();
            {
                let mut metrics = worker.metrics.borrow_mut();
                metrics.connections_tls += u64::from(opened.tls.is_some());
                metrics.connections_h2 += u64::from(opened.connection.is_h2());
            }
            *connection = Some(opened.connection);
        }
        let open = connection.as_mut().expect("connected above");
        let mut capture = captured.as_deref_mut().map(|into| Capture {
            headers: wanted.headers,
            body: wanted.body,
            encoded_body: worker.run.connection.decode_responses,
            max_body: worker.run.connection.max_body,
            into,
        });
        let write_started = Instant::now();
        match open
            .exchange(
                &worker.read_buffers,
                bytes,
                wanted.expects_body,
                capture.as_mut(),
            )
            .await
        {
            Ok(exchange) => {
                return Ok(Attempt {
                    exchange,
                    connect: connect_time,
                    tls: tls_time,
                    write_started,
                })
            }
            // A keep-alive connection the server closed (or sent GOAWAY on) while idle fails
            // before any response byte; retry such a request once on a fresh connection.
            Err(ErrorKind::Closed | ErrorKind::Reset | ErrorKind::H2GoAway)
                if reused && !retried && !open.response_started() =>
            {
                *connection = None;
                retried = true;
            }
            Err(kind) => return Err(kind),
        }
    }
}

#[cfg(test)]
mod backoff_tests {
    use super::*;

    #[test]
    fn connect_backoff_doubles_up_to_a_cap() {
        let waits: Vec<u128> = (1..=12).map(|n| connect_backoff(n).as_millis()).collect();
        assert_eq!(waits, [0, 1, 2, 4, 8, 16, 32, 64, 128, 250, 250, 250]);
    }
}
