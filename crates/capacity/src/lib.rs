//! Capacity search (`barrage capacity`): step the load of a plan until its SLO breaks,
//! confirm the breach, bisect to a stated precision and report the knee — with repeat-run
//! bands, each step's own exact percentiles, and whether the target or the generator was the
//! limit. Pure logic: the CLI runs each step through the one execution path (`RunSpec`) and
//! hands this crate the step's metrics.
//!
//! - `slo.rs`: the SLO expression and its verdict on a window;
//! - `growth.rs`: the growth rule between steps;
//! - `measure.rs`: a step's measurement window from its per-second metrics, and the
//!   generator's limits;
//! - `search.rs`: the search, bands, knee and verdict;
//! - `render.rs`: text table and JSON document; `html.rs`: the HTML page with the curve;
//! - `file.rs`: the search inside a results file (the `CAPY` section), merging segments;
//! - `compare.rs`: two searches side by side, `--fail-on` rules on capacity.

pub mod compare;
pub mod file;
pub mod growth;
pub mod html;
pub mod measure;
pub mod render;
pub mod search;
pub mod slo;

pub use growth::Growth;
pub use measure::{Counts, GeneratorCheck, Measure, Window};
pub use search::{
    search, Band, Config, ConfigError, Level, LoadKind, Outcome, Role, Search, StepRunner, Verdict,
};
pub use slo::Slo;

#[cfg(test)]
mod tests;
