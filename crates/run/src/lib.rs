//! Runs a test: a validated run specification ([`RunSpec`]: the plan and every output it
//! asks for, opened before any load) and the one function that runs it and returns its
//! results ([`RunSpec::run`]). `run`, `quick`, `demo` and `report` all go through here.

pub mod dashboard_frame;
pub mod fd_limit;
mod live;
pub mod outputs;
pub mod progress;
pub mod runner;
pub mod segment_run;
pub mod usage;

pub use outputs::{Format, OutputFiles, OutputList, Streams, Wanted};
pub use runner::{progress_wanted, Finished, RunContext, RunOptions, RunSpec};
