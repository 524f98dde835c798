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
use std::cell::Cell;
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
    /// A redirect to follow.
    Redirect(redirect::Next),
}

/// A redirect chain so far: when it was meant to start, the setup time of the last
/// connection it opened (what hey's per-request CSV row reports for the whole chain), and
/// the bytes its earlier hops moved (counted with its end when the plan counts chains).
struct Chain {
    intended: Instant,
    connect: Option<Duration>,
    tls: Option<Duration>,
    bytes_sent: u64,
    bytes_received: u64,
}

impl Chain {
    /// What an error ending the chain counts as sent and received besides its own hop: the
    /// earlier hops' bytes when the chain is one request (they were not recorded), else
    /// nothing.
    fn unrecorded(&self, worker: &Worker) -> (u64, u64) {
        if worker.run.plan.count_redirect_chains {
            (self.bytes_sent, self.bytes_received)
        } else {
            (0, 0)
        }
    }
}

impl Client {
    /// Sends `request`, records it, and extracts from its response. Returns false when the
    /// request failed: a transport error, or a status of 400 or more. Redirects are
    /// followed up to the request's limit, each hop a request of its own (timed from its own
    /// start, recorded under the same tag), to any origin (another one's through the
    /// client's other-origin connection, see `origins.rs`); extractions read the final
    /// response.
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
        // The hop's URL when it goes to an origin other than the plan target: from the first
        // hop for a request to another origin.
        let mut elsewhere: Option<url::Url> = None;
        if let Some(origin) = &request.origin {
            let url = origin.join(redirect::request_path(&bytes)).ok();
            let routed = match &url {
                Some(url) => self.route_to_other(worker, url).await.map(|_| ()),
                None => Err(barrage_metrics::ErrorKind::Connect),
            };
            if let Err(kind) = routed {
                let prepared = bytes.len() as u64;
                worker.record_error(request.tag, intended, kind, prepared, 0, request_id);
                let capacity = bytes.capacity();
                worker.request_buffers.give(bytes, capacity);
                return false;
            }
            elsewhere = url;
        }
        let mut chain = Chain {
            intended,
            connect: None,
            tls: None,
            bytes_sent: 0,
            bytes_received: 0,
        };
        let ok = loop {
            let sending = match (&mut self.jar, &mut with_cookies) {
                (Some(jar), Some(buffer)) => match hop_url(worker, elsewhere.as_ref(), &bytes) {
                    Some(url) if jar.add_to(&url, &bytes, buffer) => &buffer[..],
                    _ => &bytes[..],
                },
                _ => &bytes[..],
            };
            let hop = self
                .hop(
                    worker,
                    request,
                    sending,
                    start,
                    request_id,
                    hops_left,
                    elsewhere.as_ref(),
                    &mut chain,
                )
                .await;
            let Hop::Redirect(next) = hop else {
                let Hop::Done(ok) = hop else { unreachable!() };
                break ok;
            };
            hops_left -= 1;
            start = Instant::now();
            let Some(from) = hop_url(worker, elsewhere.as_ref(), &bytes) else {
                break false;
            };
            let plan = &worker.run.plan;
            let settings = &worker.run.connection;
            let on_target = plan.origin.as_ref().is_some_and(|o| o.holds(&next.url));
            let target = if on_target {
                redirect::target_path(&next.url, plan.target_prefix.as_deref())
            } else {
                match self.route_to_other(worker, &next.url).await {
                    Ok(other) => other.request_target(&next.url),
                    Err(kind) => {
                        let (sent, received) = chain.unrecorded(worker);
                        let prepared = bytes.len() as u64 + sent;
                        let tag = request.tag;
                        worker.record_error(tag, start, kind, prepared, received, request_id);
                        break false;
                    }
                }
            };
            let host = redirect::authority(&next.url);
            let referer = redirect::referer_of(&from);
            let proxy_authorization = settings
                .proxy_authorization
                .as_deref()
                .filter(|_| next.url.scheme() == "http");
            let facts = redirect::Hop::between(
                &from,
                &next,
                &target,
                Some(&host),
                &referer,
                proxy_authorization,
            );
            let mut next_bytes = worker.request_buffers.take();
            redirect::next_request(&bytes, self.state.last_status, &facts, &mut next_bytes);
            let capacity = bytes.capacity();
            worker
                .request_buffers
                .give(std::mem::replace(&mut bytes, next_bytes), capacity);
            elsewhere = (!on_target).then_some(next.url);
        };
        let capacity = bytes.capacity();
        worker.request_buffers.give(bytes, capacity);
        if let Some(buffer) = with_cookies {
            let capacity = buffer.capacity();
            worker.request_buffers.give(buffer, capacity);
        }
        ok
    }

    /// One exchange of `bytes` (to the plan target, or `elsewhere`, through the client's
    /// other-origin connection): sends, records, and either extracts (the final response)
    /// or returns the redirect to follow while `hops_left`.
    #[allow(clippy::too_many_arguments)]
    async fn hop(
        &mut self,
        worker: &Worker,
        request: &CompiledRequest,
        bytes: &[u8],
        intended: Instant,
        request_id: Option<u64>,
        hops_left: u32,
        elsewhere: Option<&url::Url>,
        chain: &mut Chain,
    ) -> Hop {
        let decode = worker.run.connection.decode_responses;
        let debug = worker.run.plan.http_debug.as_ref().and_then(|p| p.claim());
        let debug_headers = debug.map(|_| http_debug::capture_list(&request.extraction.headers));
        // Outside the timeout, so that a request cut off by it still counts what arrived.
        let received = Cell::new(0);
        let wanted = Wanted {
            headers: debug_headers
                .as_deref()
                .unwrap_or(&request.extraction.headers),
            body: request.extraction.body || debug == Some(HttpDebug::Full),
            expects_body: request.expects_body,
            addrs: None,
            connector: None,
            received: &received,
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
            if let (Some(_), Some(other)) = (elsewhere, self.other_origin.as_deref_mut()) {
                let wanted = Wanted {
                    addrs: Some(&other.addrs),
                    connector: Some(&other.connector),
                    ..wanted
                };
                return attempt(
                    &mut other.connection,
                    worker,
                    bytes,
                    &wanted,
                    captured.as_deref_mut(),
                )
                .await;
            }
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
                    self.drop_connection(elsewhere.is_some());
                }
                if phases.connect.is_some() {
                    (chain.connect, chain.tls) = (phases.connect, phases.tls);
                }
                // The hop's URL (parsed, allocated) only when a jar stores cookies by it or a
                // redirect resolves against it: not for every response of a test that could
                // redirect (quick follows redirects, as hey does).
                let follows =
                    request.location_header.is_some() && redirect::is_redirect(exchange.status);
                let stores_cookies = request.cookie_header.is_some() && self.jar.is_some();
                let here = (follows || stores_cookies)
                    .then(|| hop_url(worker, elsewhere, bytes))
                    .flatten();
                if let (Some(index), Some(jar), Some(captured), Some(url)) = (
                    request.cookie_header,
                    &mut self.jar,
                    captured.as_deref(),
                    here.as_ref(),
                ) {
                    jar.store(url, captured.header_values(index));
                }
                let next = match (request.location_header, captured.as_deref(), &here) {
                    (Some(index), Some(captured), Some(here))
                        if redirect::is_redirect(exchange.status) =>
                    {
                        captured
                            .header(index)
                            .and_then(|location| redirect::resolve(here, location))
                    }
                    _ => None,
                };
                if next.is_some() && hops_left == 0 && request.too_many_redirects_is_error {
                    // Go's client (hey): "stopped after 10 redirects", an error for the
                    // whole chain, the last response unread by the caller.
                    self.forget_response(worker, request, captured);
                    let kind = ErrorKind::TooManyRedirects;
                    let (earlier_sent, earlier_received) = chain.unrecorded(worker);
                    let sent = exchange.bytes_sent + earlier_sent;
                    let received = exchange.bytes_received + earlier_received;
                    let done_at = exchange.done_at;
                    worker.record_error(request.tag, done_at, kind, sent, received, request_id);
                    return Hop::Done(false);
                }
                let next = next.filter(|_| hops_left > 0);
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
                let chain_record = next.is_none().then(|| ResponseRecord {
                    latency: exchange.done_at.saturating_duration_since(chain.intended),
                    phases: PhaseTimings {
                        connect: chain.connect,
                        tls: chain.tls,
                        ..record.phases
                    },
                    bytes_sent: chain.bytes_sent + record.bytes_sent,
                    bytes_received: chain.bytes_received + record.bytes_received,
                    ..record
                });
                // hey counts a chain once (its end); k6 and StormForger count every hop.
                let counted = if worker.run.plan.count_redirect_chains {
                    chain_record.as_ref()
                } else {
                    Some(&record)
                };
                if next.is_some() {
                    chain.bytes_sent += record.bytes_sent;
                    chain.bytes_received += record.bytes_received;
                }
                worker.record_response(&record, counted, request_id, chain_record.as_ref());
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
                    match next {
                        Some(next) => hop = Hop::Redirect(next),
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
        self.drop_connection(elsewhere.is_some());
        self.forget_response(worker, request, captured);
        let received = received.get();
        worker.record_error(
            request.tag,
            Instant::now(),
            kind,
            prepared,
            received,
            request_id,
        );
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

impl Client {
    /// A request that ends as an error leaves no response: no status, no timings, its
    /// extractions unset; its capture buffer goes back to the pool.
    fn forget_response(
        &mut self,
        worker: &Worker,
        request: &CompiledRequest,
        captured: Option<Box<Captured>>,
    ) {
        self.state.last_status = 0;
        self.state.last_response = LastResponse::default();
        request.extraction.unset(&mut self.state);
        if let Some(captured) = captured {
            let held = captured.retained_bytes();
            worker.captures.give(captured, held);
        }
    }

    /// Closes the connection a hop used: the other-origin one, or the target's.
    fn drop_connection(&mut self, elsewhere: bool) {
        match (elsewhere, self.other_origin.as_deref_mut()) {
            (true, Some(other)) => other.connection = None,
            _ => self.connection = None,
        }
    }
}

/// The URL of a hop: `elsewhere`, or the request line's path on the plan target.
fn hop_url(worker: &Worker, elsewhere: Option<&url::Url>, bytes: &[u8]) -> Option<url::Url> {
    match elsewhere {
        Some(url) => Some(url.clone()),
        None => worker
            .run
            .plan
            .origin
            .as_ref()
            .and_then(|origin| origin.url(redirect::request_path(bytes))),
    }
}

/// A request on its way. When the client's future is dropped while it waits (the run's end,
/// a second stop signal, a grace period that ran out, a VU ramped down), dropping this counts
/// the request as interrupted, so a target that never answers shows as unanswered requests
/// instead of nothing. A finished request forgets it. It counts in the second of its
/// intended start, so the per-second series gains no second past the run's own.
pub(crate) struct OpenRequest<'a> {
    pub worker: &'a Worker,
    pub tag: usize,
    pub intended: Instant,
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
    /// How to connect instead of the run's connector (another origin: its TLS name,
    /// tunnel).
    pub connector: Option<&'a barrage_http::Connector>,
    /// Where the response bytes read so far are added as they arrive.
    pub received: &'a Cell<u64>,
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
            let connector = wanted.connector.unwrap_or(&settings.connector);
            let opened = match (wanted.addrs, settings.dns_ttl) {
                (Some(addrs), _) => Box::pin(connector.open(addrs, local)).await?,
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
                wanted.received,
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
