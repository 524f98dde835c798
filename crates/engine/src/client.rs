//! A client (a VU, or an arriving session): owns its connection and its session state, and
//! runs compiled session programs with a program counter. Requests go through `exchange.rs`.

use crate::cookies::Jar;
use crate::session::binds::WaitSpec;
use crate::session::custom::{sample_number, SampleSource};
use crate::session::program::Instr;
use crate::session::request::CompiledRequest;
use crate::session::state::SessionState;
use crate::session::values::{CValue, Eval};
use crate::session::CompiledSession;
use crate::worker::Worker;
use barrage_http::AnyConnection;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::cell::Cell;
use std::time::Instant;

/// Instructions a client runs before it yields to its worker's other clients and to the
/// worker's deadline. Requests count too: one that fails at once (a name that does not
/// resolve) completes without awaiting, and a `for_ever` loop of them would never yield.
const YIELD_EVERY: u32 = 1024;

/// One simulated user. Its connection persists across iterations when keep-alive is on.
pub(crate) struct Client {
    /// Its own random stream (session pick, think times, generated values, row picks),
    /// seeded from the worker's in the order clients are created: with `--seed`, a client's
    /// draws do not depend on when other clients' responses happened to arrive.
    pub(crate) rng: SmallRng,
    /// Its own connection (`per-client` and `new-per-request` models; `shared` clients
    /// lease one from the worker's pool per request).
    pub(crate) connection: Option<AnyConnection>,
    pub(crate) state: SessionState,
    /// Instructions run since the client last yielded (kept across iterations).
    since_yield: u32,
    /// Closed models: the VU's pacing, for the coordinated-omission correction (`None`: the
    /// model counts from planned starts and needs none).
    pub(crate) expected_interval: Option<std::time::Duration>,
    /// `shared` model: the pool slot of its last request, asked for again (see
    /// `SharedPool::checkout`).
    pub(crate) pool_slot: Option<usize>,
    /// Its cookie jar, when the plan keeps cookies (boxed: most plans do not).
    pub(crate) jar: Option<Box<Jar>>,
    /// Connects that failed in a row: the next attempt waits longer (see `exchange.rs`).
    pub(crate) connect_failures: u32,
    /// Scripted VUs: the origin its connection goes to (boxed: only k6 scripts set it, and
    /// every waiting client of the other front ends would carry its bytes).
    pub(crate) script_origin: Option<Box<crate::scripted_client::ScriptOrigin>>,
    /// Its way to the last origin other than the target it went to (a cross-origin
    /// redirect), with that origin's connection; boxed: most clients never go elsewhere.
    pub(crate) other_origin: Option<Box<crate::origins::OtherOrigin>>,
}

/// How a client's program holds a request in flight. Two types, not a flag: a future's size
/// is that of its largest state, so a program that could hold the request inline would be as
/// large as one that always does.
pub(crate) trait RequestMode {
    fn send<'a>(
        client: &'a mut Client,
        worker: &'a Worker,
        request: &'a CompiledRequest,
        start: Instant,
    ) -> impl std::future::Future<Output = bool> + 'a;
}

/// The request's future inline in the client's: no allocation per request, for clients that
/// are busy anyway (sessions without waits, VUs looping).
pub(crate) struct Inline;

/// The request's future boxed while in flight: the request's state (the exchange, its
/// timeout, the parse) is most of a client's future, and a client waiting between requests
/// (think times, heartbeats) then holds only the small rest, for one allocation per request
/// (~1.5 KiB, which glibc serves outside its thread cache: ~500 instructions).
pub(crate) struct Boxed;

impl RequestMode for Inline {
    fn send<'a>(
        client: &'a mut Client,
        worker: &'a Worker,
        request: &'a CompiledRequest,
        start: Instant,
    ) -> impl std::future::Future<Output = bool> + 'a {
        client.request(worker, request, start)
    }
}

impl RequestMode for Boxed {
    fn send<'a>(
        client: &'a mut Client,
        worker: &'a Worker,
        request: &'a CompiledRequest,
        start: Instant,
    ) -> impl std::future::Future<Output = bool> + 'a {
        Box::pin(client.request(worker, request, start))
    }
}

/// How a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// Ran to its last instruction.
    Completed,
    /// Stopped by a failed assert or a failed `abort_on_error` request.
    Failed,
    /// A `for_ever` loop cut off at the end of the test: neither completed nor failed, it
    /// counts as interrupted.
    Interrupted,
}

/// A run-time number: the value itself, or its text parsed (NaN when it is not a number).
fn number_of(value: &CValue, cx: Eval<'_>, text: &mut String) -> f64 {
    match value {
        CValue::Number { value, .. } => *value,
        other => {
            text.clear();
            other.write(cx, text);
            text.trim().parse::<f64>().unwrap_or(f64::NAN)
        }
    }
}

/// A think time (none when zero).
async fn think(pause: std::time::Duration) {
    if !pause.is_zero() {
        tokio::time::sleep(pause).await;
    }
}

/// A `times` count: the value as a number, whole iterations; anything that is not a
/// non-negative number gives 0 iterations.
fn loop_count(value: &CValue, cx: Eval<'_>, text: &mut String) -> u64 {
    let number = number_of(value, cx, text);
    if number.is_nan() || number < 1.0 {
        0
    } else {
        number.floor().min(u64::MAX as f64) as u64
    }
}

impl Client {
    /// A new client whose random stream is the next one of `worker`'s.
    pub(crate) fn new(worker: &Worker) -> Client {
        Client {
            rng: SmallRng::seed_from_u64(worker.rng.borrow_mut().gen()),
            connection: None,
            state: SessionState::default(),
            since_yield: 0,
            expected_interval: None,
            pool_slot: None,
            jar: worker.run.plan.cookies.then(Box::default),
            connect_failures: 0,
            script_origin: None,
            other_origin: None,
        }
    }

    /// Runs one iteration of `session`. `intended_start` is when the schedule wanted it to
    /// begin: the first request's latency counts from there, so time spent queued behind a
    /// slow target is measured, not hidden (no coordinated omission). Later requests count
    /// from their actual start.
    /// The caller counts the session as started when it admits it (see `Worker::session_started`).
    /// Returns when the iteration ended.
    ///
    /// `M`: whether each request's future is boxed while in flight ([`Boxed`], for sessions
    /// that wait between requests, whose clients spend most of their life idle) or inline.
    pub(crate) async fn run_iteration<M: RequestMode>(
        &mut self,
        worker: &Worker,
        session: &CompiledSession,
        intended_start: Instant,
    ) -> Instant {
        let ending = if session.endless {
            self.run_endless::<M>(worker, session, intended_start).await
        } else {
            self.run_program::<M>(worker, session, intended_start, &Cell::new(false))
                .await
        };
        let ended = Instant::now();
        match ending {
            Ending::Completed => worker.session_completed(),
            Ending::Failed => worker.session_failed(),
            // Counted as interrupted (started, never ended), like one cut off by the hard stop.
            Ending::Interrupted => return ended,
        }
        // From the intended start, like the first request's latency: time queued behind an
        // overloaded worker belongs to the iteration.
        worker.record_iteration(ended.saturating_duration_since(intended_start));
        ended
    }

    /// Runs a session with a `for_ever` loop: once the test's iterations are over (or the run
    /// is stopped), a client inside the loop is cut off at once — mid-request or mid-wait —
    /// instead of holding the run through the grace period for a session that cannot end.
    async fn run_endless<M: RequestMode>(
        &mut self,
        worker: &Worker,
        session: &CompiledSession,
        intended_start: Instant,
    ) -> Ending {
        let inside = Cell::new(false);
        let (ending, cut) = {
            let program = self.run_program::<M>(worker, session, intended_start, &inside);
            tokio::pin!(program);
            tokio::select! {
                ending = &mut program => (ending, false),
                _ = worker.iterations_over() => {
                    if inside.get() {
                        (Ending::Interrupted, true)
                    } else {
                        // Not in the loop yet: it ends when it reaches it.
                        (program.await, false)
                    }
                }
            }
        };
        if cut {
            // Cut off mid-exchange, perhaps: the connection's state is unknown.
            self.connection = None;
        }
        ending
    }

    fn eval<'a>(&'a self, worker: &'a Worker) -> Eval<'a> {
        Eval {
            state: &self.state,
            data: &worker.run.plan.data,
        }
    }

    fn holds(&self, worker: &Worker, session: &CompiledSession, condition: u32) -> bool {
        session.conditions[condition as usize]
            .holds(self.eval(worker), &mut worker.scratch.borrow_mut().check)
    }

    async fn run_program<M: RequestMode>(
        &mut self,
        worker: &Worker,
        session: &CompiledSession,
        intended_start: Instant,
        inside_endless: &Cell<bool>,
    ) -> Ending {
        self.state.reset(session.var_count);
        if let Some(jar) = &mut self.jar {
            jar.clear();
        }
        let mut intended = Some(intended_start);
        let mut pc = 0usize;
        while let Some(&instr) = session.program.get(pc) {
            pc += 1;
            self.since_yield += 1;
            match instr {
                Instr::Request(index) => {
                    let request = &session.requests[index as usize];
                    let start = intended.take().unwrap_or_else(Instant::now);
                    // Inline or boxed while in flight, as the caller chose (see `Boxed`).
                    let ok = M::send(self, worker, request, start).await;
                    if !ok && request.abort_on_error {
                        return Ending::Failed;
                    }
                }
                Instr::Wait(spec) => {
                    intended = None;
                    think(spec.sample(&mut self.rng)).await;
                }
                Instr::WaitFor(index) => {
                    intended = None;
                    let seconds = number_of(
                        &session.numbers[index as usize],
                        self.eval(worker),
                        &mut worker.scratch.borrow_mut().text,
                    );
                    think(WaitSpec::Fixed(seconds).sample(&mut self.rng)).await;
                }
                Instr::Check(index) => {
                    let check = session.checks[index as usize];
                    let holds = self.holds(worker, session, check.condition);
                    worker.record_check(check.metric, holds);
                    if !holds && check.keep_failed_values {
                        let scratch = &mut worker.scratch.borrow_mut().check;
                        let (expected, actual) = session.conditions[check.condition as usize]
                            .failed_sides(self.eval(worker), scratch);
                        worker.metrics.borrow_mut().record_failed_value(
                            check.metric,
                            expected,
                            actual,
                        );
                    }
                    if !holds && check.fatal {
                        return Ending::Failed;
                    }
                }
                Instr::Bind(index) => session.binds[index as usize].apply(
                    &mut self.rng,
                    &worker.rows,
                    &worker.run.plan.data,
                    &mut self.state,
                ),
                Instr::LoopStart { count, end } => {
                    let count = loop_count(
                        &session.numbers[count as usize],
                        self.eval(worker),
                        &mut worker.scratch.borrow_mut().text,
                    );
                    if count == 0 {
                        pc = end as usize;
                    } else {
                        self.state.loops.push(count);
                    }
                }
                Instr::LoopNext { body } => {
                    if let Some(left) = self.state.loops.last_mut() {
                        *left -= 1;
                        if *left > 0 {
                            pc = body as usize;
                        } else {
                            self.state.loops.pop();
                        }
                    }
                }
                Instr::IfNot { condition, target } => {
                    if !self.holds(worker, session, condition) {
                        pc = target as usize;
                    }
                }
                Instr::Jump(target) => pc = target as usize,
                Instr::ForEver => {
                    inside_endless.set(true);
                    if !worker.may_start_at(Instant::now()) {
                        return Ending::Interrupted;
                    }
                }
                Instr::Add(index) => {
                    let sample = &session.samples[index as usize];
                    let value = match &sample.source {
                        SampleSource::Value(value) => sample_number(
                            value,
                            self.eval(worker),
                            &mut worker.scratch.borrow_mut().text,
                        ),
                        SampleSource::Condition(condition) => {
                            f64::from(u8::from(self.holds(worker, session, *condition)))
                        }
                        SampleSource::Timing(timing) => self.state.last_response.millis(*timing),
                    };
                    worker.record_custom(sample.metric, value);
                }
            }
            if self.since_yield >= YIELD_EVERY {
                tokio::task::yield_now().await;
                self.since_yield = 0;
            }
        }
        Ending::Completed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loop_counts_are_whole_non_negative_numbers() {
        let state = SessionState::default();
        let cx = Eval {
            state: &state,
            data: &[],
        };
        let mut text = String::new();
        let count = |v: CValue, text: &mut String| loop_count(&v, cx, text);
        assert_eq!(count(CValue::Text(" 4 ".into()), &mut text), 4);
        assert_eq!(count(CValue::Text("2.9".into()), &mut text), 2);
        assert_eq!(count(CValue::Text("many".into()), &mut text), 0);
        assert_eq!(count(CValue::Text("-3".into()), &mut text), 0);
        let n = |value: f64| CValue::Number {
            value,
            text: "".into(),
        };
        assert_eq!(count(n(f64::NAN), &mut text), 0);
        assert_eq!(count(n(0.5), &mut text), 0);
        assert_eq!(count(n(3.0), &mut text), 3);
    }
}

#[cfg(test)]
mod size {
    use super::*;
    use crate::session::CompiledSession;

    fn future_size<'a, F, Fut>(_: F) -> usize
    where
        F: FnOnce(&'a mut Client, &'a Worker, &'a CompiledSession, Instant) -> Fut,
    {
        std::mem::size_of::<Fut>()
    }

    /// A waiting client (think time, a heartbeat's pause) is its task: the `Client` and its
    /// iteration's future. With the request boxed while in flight (sessions that wait), that
    /// future is the small rest (2,248 bytes with the request inline); this fails when either
    /// regrows.
    #[test]
    fn a_waiting_client_stays_small() {
        let client = std::mem::size_of::<Client>();
        let iteration = future_size(Client::run_iteration::<Boxed>);
        assert!(client <= 336, "Client is {client} bytes");
        assert!(
            iteration <= 768,
            "the iteration's future is {iteration} bytes"
        );
        // Sessions that never wait keep the request inline (no allocation per request).
        let inline = future_size(Client::run_iteration::<Inline>);
        assert!(
            inline > 1500,
            "the inline iteration's future is {inline} bytes"
        );
    }
}
