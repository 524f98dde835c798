//! The engine: runs a [`barrage_plan::Plan`] natively and returns its merged metrics.
//!
//! Layout: [`run`] (in `scheduler.rs`) is the scheduling core — one thread per CPU, each with
//! its own single-threaded tokio runtime and its own metrics, so the hot path takes no locks
//! and sends no messages. `compile.rs` compiles the plan once: every session becomes a flat
//! program of instructions with jumps (`session/`: `program.rs` compiles steps, `values.rs`
//! evaluates values and templates, `request.rs` builds request bytes, `extract.rs`,
//! `checks.rs`, `binds.rs`, `state.rs` is a client's variables and loop stack). Executors
//! (`executor/`, one file per workload model) decide when clients start iterations; a
//! [`client`](crate::client) runs a session program by program counter and sends its
//! requests through `exchange.rs`. `worker.rs` holds what a thread's clients share: metrics,
//! random numbers, buffer pools, scratch space. `protocol.rs` maps the plan's protocol options
//! (TLS, HTTP version, connection model) to the HTTP layer; `pool.rs` is the `shared` model's
//! per-worker connection pool.

mod client;
mod compile;
mod control;
mod cookies;
mod exchange;
mod executor;
mod http_debug;
mod lifecycle;
mod origins;
mod pool;
mod protocol;
mod redirect;
mod samples;
mod scheduler;
mod scripted;
mod scripted_client;
mod self_check;
mod session;
mod snapshots;
mod worker;

pub use barrage_http::USER_AGENT;
pub use compile::CompileError;
pub use control::{LiveCounters, LiveSnapshot, RunControl, StopSignal};
pub use protocol::connector;
pub use samples::SampleSink;
pub use scheduler::{run, EngineError, RunOutcome};
pub use scripted::{
    JarRequest, Phase, ResponseVerdict, ScriptRequest, ScriptResponse, ScriptTimings, ScriptedVu,
    SharedVuFactory, VuEvent, VuFactory, VuInput, VuStep, CAPTURED_HEADERS,
};
pub use session::SessionProblem;
pub use snapshots::{LiveMetrics, Snapshots};
