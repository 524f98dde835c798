//! A client (a VU, or an arriving session): owns its connection and runs compiled sessions.

use crate::compile::{CompiledRequest, CompiledSession, CompiledStep};
use crate::worker::Worker;
use barrage_http::{connect, Connection, Exchange};
use barrage_metrics::{ErrorKind, PhaseTimings, ResponseRecord};
use std::time::{Duration, Instant};

/// One simulated user. Its connection persists across iterations when keep-alive is on.
#[derive(Default)]
pub(crate) struct Client {
    connection: Option<Connection>,
}

/// A completed exchange and the timings around it that the connection cannot know.
struct Attempt {
    exchange: Exchange,
    connect: Option<Duration>,
    write_started: Instant,
}

impl Client {
    /// Runs one iteration of `session`. `intended_start` is when the schedule wanted it to
    /// begin: the first request's latency counts from there, so time spent queued behind a
    /// slow target is measured, not hidden (no coordinated omission).
    pub(crate) async fn run_iteration(
        &mut self,
        worker: &Worker,
        session: &CompiledSession,
        intended_start: Instant,
    ) {
        worker.session_started();
        let mut intended = intended_start;
        for step in &session.steps {
            match step {
                CompiledStep::Request(request) => self.request(worker, request, intended).await,
            }
            intended = Instant::now();
        }
        worker.session_completed();
    }

    async fn request(&mut self, worker: &Worker, request: &CompiledRequest, intended: Instant) {
        let sent = request.bytes.len() as u64;
        let outcome = tokio::time::timeout(worker.timeout, self.attempt(worker, request)).await;
        let kind = match outcome {
            Ok(Ok(attempt)) => {
                let exchange = attempt.exchange;
                if !(exchange.keep_alive && worker.keep_alive) {
                    self.connection = None;
                }
                worker.record_response(&ResponseRecord {
                    tag: request.tag,
                    second: worker.second_of(exchange.done_at),
                    latency: exchange.done_at.saturating_duration_since(intended),
                    phases: PhaseTimings {
                        connect: attempt.connect,
                        write: exchange
                            .written_at
                            .saturating_duration_since(attempt.write_started),
                        wait: exchange
                            .first_byte_at
                            .saturating_duration_since(exchange.written_at),
                        read: exchange
                            .done_at
                            .saturating_duration_since(exchange.first_byte_at),
                    },
                    status: exchange.status,
                    bytes_sent: sent,
                    bytes_received: exchange.bytes_received,
                    body_bytes: exchange.body_bytes,
                });
                return;
            }
            Ok(Err(kind)) => kind,
            Err(_elapsed) => ErrorKind::Timeout,
        };
        self.connection = None;
        worker.record_error(request.tag, Instant::now(), kind, sent);
    }

    async fn attempt(
        &mut self,
        worker: &Worker,
        request: &CompiledRequest,
    ) -> Result<Attempt, ErrorKind> {
        let mut connect_time = None;
        let mut retried = false;
        loop {
            let reused = self.connection.is_some();
            if !reused {
                let addrs = worker.addrs.as_ref().as_ref().map_err(|kind| *kind)?;
                let started = Instant::now();
                let stream = connect(addrs).await?;
                connect_time = Some(started.elapsed());
                worker.connection_opened();
                self.connection = Some(Connection::new(stream));
            }
            let connection = self.connection.as_mut().expect("connected above");
            let write_started = Instant::now();
            match connection.exchange(&request.bytes, None).await {
                Ok(exchange) => {
                    return Ok(Attempt {
                        exchange,
                        connect: connect_time,
                        write_started,
                    })
                }
                // A keep-alive connection the server closed while idle fails before any
                // response byte; retry such a request once on a fresh connection.
                Err(ErrorKind::Closed | ErrorKind::Reset)
                    if reused && !retried && !connection.response_started() =>
                {
                    self.connection = None;
                    retried = true;
                }
                Err(kind) => return Err(kind),
            }
        }
    }
}
