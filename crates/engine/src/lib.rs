//! The engine: runs a [`barrage_plan::Plan`] natively and returns its merged metrics.
//!
//! Layout: [`run`] (in `scheduler.rs`) is the scheduling core — one thread per CPU, each with
//! its own single-threaded tokio runtime and its own metrics, so the hot path takes no locks
//! and sends no messages. Executors (`executor/`, one file per workload model) decide when
//! clients start iterations; a [`client`](crate::client) runs one compiled session.

mod client;
mod compile;
mod control;
mod executor;
mod scheduler;
mod worker;

pub use control::{LiveCounters, LiveSnapshot, RunControl, StopSignal};
pub use scheduler::{run, EngineError, RunOutcome};
