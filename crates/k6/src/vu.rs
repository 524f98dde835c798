//! A k6 VU: its own QuickJS runtime and context on a stackful coroutine (corosensei) on the
//! worker thread. `http.*` and `sleep` suspend the coroutine with a [`VuStep`]; the engine
//! performs it and resumes the VU with the result. Nothing here blocks a thread or crosses
//! one.

use crate::context::{evaluate, thrown, Script};
use crate::host::Host;
use crate::shared::RunShared;
use barrage_engine::{
    Phase, ScriptResponse, ScriptedVu, SharedVuFactory, StopSignal, VuEvent, VuFactory, VuInput,
    VuStep,
};
use barrage_plan::MetricKind;
use barrage_script::runtime::{bounded_runtime, Deadline};
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use rquickjs::{Function, Value};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The coroutine stack of a VU (only the pages it touches take memory).
pub const VU_STACK: usize = 256 << 10;
/// What QuickJS may use of that stack; deeper recursion throws a `RangeError` in the
/// iteration instead of overflowing the coroutine stack.
const JS_STACK: usize = 192 << 10;
/// QuickJS heap limit per VU; an iteration that needs more fails with an out-of-memory
/// exception, not the process.
pub const VU_MEMORY: usize = 64 << 20;
/// Exceptions in iterations printed on stderr before further ones are only counted.
const PRINTED_EXCEPTIONS: u64 = 20;
/// Resumes with "cut off" an interrupted iteration gets before it is abandoned (a script
/// that catches the interruption and keeps sending requests).
const CANCEL_ATTEMPTS: u32 = 64;

/// What a VU coroutine is resumed with.
enum CoIn {
    Engine(VuInput),
    /// The iteration is being cut off: requests and sleeps throw.
    Cancel,
    /// The VU is dropped between iterations: return.
    Exit,
}

/// What a VU coroutine yields.
enum CoOut {
    Step(VuStep),
    /// The init context ran; ready for the first iteration.
    Ready,
}

type VuCoroutine = Coroutine<CoIn, CoOut, Result<(), String>, DefaultStack>;

/// What all VUs of a run share.
#[derive(Debug)]
struct Shared {
    script: Script,
    /// The plan's custom metrics, by index.
    metrics: Vec<(String, MetricKind)>,
    next_vu: AtomicU64,
    exceptions: AtomicU64,
    /// The functions the script exports.
    functions: Vec<String>,
    /// The function iterations call (the scenario's `exec`, `default` unless named).
    exec: String,
}

/// What a VU's iterations call: the default function (with `setup()`'s data), or one of
/// the stages k6 runs once around the test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Default,
    Setup,
    Teardown,
}

impl Role {
    fn function(self) -> &'static str {
        match self {
            Role::Default => "default",
            Role::Setup => "setup",
            Role::Teardown => "teardown",
        }
    }
}

/// Creates the run's VUs (see [`VuFactory`]).
#[derive(Debug, Clone)]
pub struct K6Factory {
    shared: Arc<Shared>,
    role: Role,
}

impl K6Factory {
    pub(crate) fn new(
        script: Script,
        metrics: Vec<(String, MetricKind)>,
        functions: Vec<String>,
        exec: String,
    ) -> Self {
        Self {
            shared: Arc::new(Shared {
                script,
                metrics,
                next_vu: AtomicU64::new(1),
                exceptions: AtomicU64::new(0),
                functions,
                exec,
            }),
            role: Role::Default,
        }
    }

    /// Whether the script exports function `name`.
    pub fn exports(&self, name: &str) -> bool {
        self.shared.functions.iter().any(|f| f == name)
    }

    /// Why `setup()` or `teardown()` threw, if one did (k6 exits 107).
    pub fn stage_error(&self) -> Option<String> {
        self.shared.script.run.stage_error()
    }

    /// Calls the script's `handleSummary(data)` (`data`: k6's summary object as JSON), when
    /// it exports one: the outputs it returned, by name (`stdout`, `stderr`, a file path).
    pub fn handle_summary(&self, data: &str) -> Option<Result<crate::SummaryOutputs, String>> {
        self.exports("handleSummary")
            .then(|| crate::summary::handle_summary(&self.shared.script, data))
    }

    /// What `setup()` returned, as JSON.
    pub fn setup_data(&self) -> Option<String> {
        self.shared.script.run.setup_data().map(str::to_string)
    }

    /// Exceptions thrown by iterations so far.
    pub fn exceptions(&self) -> u64 {
        self.shared.exceptions.load(Ordering::Relaxed)
    }

    /// Why `test.abort()` stopped the test, if it did (k6 then exits 108).
    pub fn aborted(&self) -> Option<String> {
        self.shared.script.run.aborted()
    }
}

impl VuFactory for K6Factory {
    fn attach(&self, stop: &Arc<StopSignal>) {
        self.shared.script.run.attach(Arc::clone(stop));
    }

    fn phase(&self, phase: Phase) -> Option<SharedVuFactory> {
        let role = match phase {
            Phase::Setup => Role::Setup,
            Phase::Teardown => Role::Teardown,
        };
        self.exports(role.function()).then(|| {
            Arc::new(K6Factory {
                shared: Arc::clone(&self.shared),
                role,
            }) as SharedVuFactory
        })
    }

    fn create(&self) -> Result<Box<dyn ScriptedVu>, String> {
        // k6's setup and teardown run as VU 0.
        let id = match self.role {
            Role::Default => self.shared.next_vu.fetch_add(1, Ordering::Relaxed),
            Role::Setup | Role::Teardown => 0,
        };
        let role = self.role;
        let shared = Arc::clone(&self.shared);
        let events = Rc::new(RefCell::new(Vec::new()));
        let recorded = Rc::clone(&events);
        let stack = DefaultStack::new(VU_STACK).map_err(|e| format!("VU {id}: stack: {e}"))?;
        let mut coroutine: VuCoroutine =
            Coroutine::with_stack(stack, move |yielder: &Yielder<CoIn, CoOut>, _first| {
                vu_body(yielder, &shared, (id, role), recorded)
            });
        let made = match coroutine.resume(CoIn::Exit) {
            CoroutineResult::Yield(CoOut::Ready) => Ok(Box::new(K6Vu {
                coroutine: Some(coroutine),
                mid_iteration: false,
                events,
            }) as Box<dyn ScriptedVu>),
            CoroutineResult::Yield(CoOut::Step(_)) => Err(format!("VU {id}: did not start")),
            CoroutineResult::Return(result) => {
                Err(result.err().unwrap_or_else(|| format!("VU {id}: ended")))
            }
        };
        // As in k6, a VU whose init context fails ends the test (exit 107).
        if let Err(problem) = &made {
            self.shared
                .script
                .run
                .fail_stage(format!("a VU could not be initialised: {problem}"));
        }
        made
    }
}

/// The host of a running VU: suspends its coroutine, buffers its events.
struct VuHost {
    /// The running coroutine's yielder (set once the coroutine runs; see [`VuHost::suspend`]).
    yielder: Cell<*const Yielder<CoIn, CoOut>>,
    events: Rc<RefCell<Vec<VuEvent>>>,
    shared: Arc<Shared>,
    id: u64,
    /// Whether the init context is running (until the first iteration).
    in_init: Cell<bool>,
    /// The test-wide number of the running iteration.
    iteration_in_test: Cell<u64>,
}

impl Host for VuHost {
    #[allow(unsafe_code)]
    fn suspend(&self, step: VuStep) -> Option<ScriptResponse> {
        // SAFETY: the pointer is set by `vu_body` to its own yielder before any script runs,
        // and natives only run inside `vu_body`, on the coroutine, while that yielder lives.
        // (A closure registered in QuickJS cannot borrow it: its lifetime must outlive the
        // context's.)
        let yielder = unsafe { &*self.yielder.get() };
        match yielder.suspend(CoOut::Step(step)) {
            CoIn::Engine(VuInput::Response(response)) => Some(response),
            CoIn::Engine(VuInput::Slept) => Some(ScriptResponse::default()),
            // A jar's cookies travel as `(name, value)` headers.
            CoIn::Engine(VuInput::Cookies(cookies)) => Some(ScriptResponse {
                headers: cookies,
                ..ScriptResponse::default()
            }),
            CoIn::Engine(VuInput::Start { .. }) | CoIn::Cancel | CoIn::Exit => None,
        }
    }
    fn may_suspend(&self) -> bool {
        true
    }
    fn record(&self, event: VuEvent) {
        self.events.borrow_mut().push(event);
    }
    fn metric(&self, name: &str, kind: MetricKind) -> Result<usize, String> {
        match self.shared.metrics.iter().position(|(n, _)| n == name) {
            Some(i) if self.shared.metrics[i].1 == kind => Ok(i),
            Some(i) => Err(format!(
                "metric `{name}` was already declared as a {}",
                self.shared.metrics[i].1.name()
            )),
            None => Err(format!(
                "metric `{name}` must be created in the init context (at the top of the script), as k6 requires"
            )),
        }
    }
    fn vu(&self) -> u64 {
        self.id
    }
    fn run(&self) -> &RunShared {
        &self.shared.script.run
    }
    fn in_init(&self) -> bool {
        self.in_init.get()
    }
    fn iteration_in_test(&self) -> u64 {
        self.iteration_in_test.get()
    }
}

/// The coroutine: sets up the VU's runtime and init context, then runs an iteration per
/// `Start` until told to exit.
fn vu_body(
    yielder: &Yielder<CoIn, CoOut>,
    shared: &Arc<Shared>,
    (id, role): (u64, Role),
    events: Rc<RefCell<Vec<VuEvent>>>,
) -> Result<(), String> {
    let file = &shared.script.file;
    let deadline = Deadline::default();
    deadline.set(Some(Instant::now() + crate::init::INIT_LIMIT));
    let runtime = bounded_runtime(VU_MEMORY, &deadline).map_err(|e| format!("{file}: {e}"))?;
    // Created on the coroutine stack, so QuickJS measures its stack from here.
    runtime.set_max_stack_size(JS_STACK);
    let context =
        crate::context::vu_context(&runtime, &shared.script).map_err(|e| format!("{file}: {e}"))?;
    let host = Rc::new(VuHost {
        yielder: Cell::new(yielder),
        events,
        shared: Arc::clone(shared),
        id,
        in_init: Cell::new(true),
        iteration_in_test: Cell::new(0),
    });
    context.with(|ctx| {
        let exports = evaluate(&ctx, &shared.script, Rc::clone(&host), id)
            .map_err(|e| format!("VU {id}: {e}"))?;
        let called = match role {
            Role::Default => shared.exec.as_str(),
            Role::Setup | Role::Teardown => role.function(),
        };
        let default: Function = exports
            .get(called)
            .map_err(|e| thrown(&ctx, file, e).to_string())?;
        // `setup()`'s data, parsed once per VU (as k6 does).
        let mut data: Option<Value> = None;
        if role != Role::Default {
            // k6 runs the stages in groups of their names (their checks are `::setup::...`).
            let natives: rquickjs::Object = ctx
                .globals()
                .get("__k6")
                .map_err(|e| thrown(&ctx, file, e).to_string())?;
            natives
                .set("groupPath", format!("{}::", role.function()))
                .map_err(|e| thrown(&ctx, file, e).to_string())?;
        }
        deadline.set(None);
        host.in_init.set(false);
        // What the init context left behind (cycles refcounting cannot free) goes now, not
        // with the first collection in some iteration.
        ctx.run_gc();
        let mut input = yielder.suspend(CoOut::Ready);
        loop {
            let iteration = match input {
                CoIn::Exit => return Ok(()),
                CoIn::Engine(VuInput::Start { iteration }) => iteration,
                // Nothing to cut off between iterations.
                CoIn::Cancel | CoIn::Engine(_) => {
                    input = yielder.suspend(CoOut::Step(VuStep::Done { ok: false }));
                    continue;
                }
            };
            let _ = ctx.globals().set("__ITER", iteration as f64);
            host.iteration_in_test
                .set(shared.script.run.next_iteration());
            let argument = match (&data, shared.script.run.setup_data()) {
                (Some(value), _) => value.clone(),
                (None, Some(json)) if role != Role::Setup => {
                    let value = ctx
                        .json_parse(json)
                        .unwrap_or_else(|_| Value::new_undefined(ctx.clone()));
                    data = Some(value.clone());
                    value
                }
                _ => Value::new_undefined(ctx.clone()),
            };
            let ok = match default.call::<_, Value>((argument,)) {
                Ok(returned) => {
                    if role == Role::Setup {
                        keep_setup_data(&ctx, file, &shared.script.run, returned);
                    }
                    true
                }
                // `test.abort()`: the CLI reports the reason once.
                Err(_) if shared.script.run.is_aborted() => {
                    let _ = ctx.catch();
                    false
                }
                // A failed setup or teardown ends the test; the CLI reports it once.
                Err(error) if role != Role::Default => {
                    let problem = thrown(&ctx, file, error);
                    shared
                        .script
                        .run
                        .fail_stage(format!("{}() failed: {problem}", role.function()));
                    false
                }
                Err(error) => {
                    let problem = thrown(&ctx, file, error);
                    let n = shared.exceptions.fetch_add(1, Ordering::Relaxed);
                    if n < PRINTED_EXCEPTIONS {
                        eprintln!("ERRO[VU {id}] {problem} (iteration {iteration})");
                    } else if n == PRINTED_EXCEPTIONS {
                        eprintln!("ERRO further exceptions in iterations are counted, not printed");
                    }
                    false
                }
            };
            input = yielder.suspend(CoOut::Step(VuStep::Done { ok }));
        }
    })
}

/// Keeps what `setup()` returned as JSON for the VUs and `teardown` (k6 serialises it the
/// same way; a value JSON cannot hold fails the setup).
fn keep_setup_data<'js>(ctx: &rquickjs::Ctx<'js>, file: &str, run: &RunShared, value: Value<'js>) {
    if value.is_undefined() {
        return;
    }
    match ctx.json_stringify(value) {
        Ok(Some(text)) => match text.to_string() {
            Ok(text) => run.keep_setup_data(text),
            Err(e) => run.fail_stage(format!("setup() returned data that is not JSON: {e}")),
        },
        Ok(None) => {}
        Err(e) => {
            let problem = thrown(ctx, file, e);
            run.fail_stage(format!("setup() returned data that is not JSON: {problem}"));
        }
    }
}

/// A VU as the engine drives it.
struct K6Vu {
    coroutine: Option<VuCoroutine>,
    /// Whether the coroutine is suspended inside an iteration (in JavaScript).
    mid_iteration: bool,
    /// Checks and samples the script recorded since the engine last drained them.
    events: Rc<RefCell<Vec<VuEvent>>>,
}

impl K6Vu {
    fn step(&mut self, input: CoIn) -> VuStep {
        let Some(coroutine) = self.coroutine.as_mut() else {
            return VuStep::Done { ok: false };
        };
        let step = match coroutine.resume(input) {
            CoroutineResult::Yield(CoOut::Step(step)) => step,
            CoroutineResult::Yield(CoOut::Ready) | CoroutineResult::Return(_) => {
                self.coroutine = None;
                VuStep::Done { ok: false }
            }
        };
        self.mid_iteration = !matches!(step, VuStep::Done { .. });
        step
    }

    /// Winds an iteration the engine abandoned down: its requests and sleeps throw until
    /// the default function returns. A script that swallows that forever is abandoned with
    /// its coroutine (never unwound through QuickJS's frames).
    fn cancel(&mut self) {
        for _ in 0..CANCEL_ATTEMPTS {
            if !self.mid_iteration {
                return;
            }
            self.step(CoIn::Cancel);
        }
        if self.mid_iteration {
            std::mem::forget(self.coroutine.take());
        }
    }
}

impl ScriptedVu for K6Vu {
    fn resume(&mut self, input: VuInput) -> VuStep {
        if matches!(input, VuInput::Start { .. }) {
            self.cancel();
        }
        self.step(CoIn::Engine(input))
    }

    fn drain_events(&mut self, into: &mut dyn FnMut(VuEvent)) {
        for event in self.events.borrow_mut().drain(..) {
            into(event);
        }
    }
}

impl Drop for K6Vu {
    fn drop(&mut self) {
        self.cancel();
        if let Some(mut coroutine) = self.coroutine.take() {
            if coroutine.started() && !coroutine.done() {
                let _ = coroutine.resume(CoIn::Exit);
            }
        }
    }
}
