//! Reports: turns merged run metrics into what people and machines read.
//!
//! [`Summary`] is the one model every renderer reads (`summary.rs`); `hey.rs` prints it in
//! hey's layout, and `-o json` serialises it as is.

pub mod compare;
mod from_results;
mod hey;
mod html;
mod run;
mod summary;

pub use from_results::{render_text, run_info, summary_of};
pub use hey::render_hey;
pub use html::{passed, render_compare_html, render_html, ComparedRun};
pub use run::render_run;
pub use summary::{ArrivalSummary, PhaseSummary, PlannedArrivals, RunInfo, Summary, TagSummary};
