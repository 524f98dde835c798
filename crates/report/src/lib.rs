//! Reports: turns merged run metrics into what people and machines read.
//!
//! [`Summary`] is the one model every renderer reads (`summary.rs`); `hey.rs` prints it in
//! hey's layout, and `-o json` serialises it as is.

mod hey;
mod run;
mod self_check;
mod summary;

pub use hey::render_hey;
pub use run::render_run;
pub use self_check::{
    LagPercentiles, SelfCheckSummary, BUSY_MACHINE_WAIT_PERCENT, CPU_LIMIT, LAG_P99_LIMIT_US,
    STALL_SHARE_LIMIT,
};
pub use summary::{ArrivalSummary, PhaseSummary, PlannedArrivals, RunInfo, Summary, TagSummary};
