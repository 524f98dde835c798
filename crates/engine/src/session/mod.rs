//! Compiled sessions: what a client executes. A session's nested steps become one flat
//! program ([`program`]) whose operands index tables of compiled requests ([`request`]),
//! conditions ([`checks`]), bindings ([`binds`]) and loop counts; values are compiled once
//! ([`values`]), extractions too ([`extract`]). The client (`crate::client`) runs the
//! program with a program counter over its own [`state::SessionState`].

pub(crate) mod binds;
pub(crate) mod checks;
pub(crate) mod compress;
pub(crate) mod custom;
pub(crate) mod extract;
pub(crate) mod jwt;
pub(crate) mod program;
pub(crate) mod request;
pub(crate) mod state;
pub(crate) mod values;

use barrage_http::RequestError;
use binds::CompiledBind;
use checks::{CheckScratch, CompiledCheck, CompiledCondition};
use program::Instr;
use request::{BuildScratch, CompiledRequest};
use values::CValue;

/// One session, compiled.
#[derive(Debug, Default)]
pub(crate) struct CompiledSession {
    pub program: Vec<Instr>,
    pub requests: Vec<CompiledRequest>,
    pub conditions: Vec<CompiledCondition>,
    pub checks: Vec<CompiledCheck>,
    pub binds: Vec<CompiledBind>,
    /// Numbers read at run time: `times` counts (when their loop starts) and per-client
    /// think times (when the wait starts).
    pub numbers: Vec<CValue>,
    /// `session.add` samples for custom metrics.
    pub samples: Vec<custom::CompiledSample>,
    /// Variables the session uses (ids `0..var_count`).
    pub var_count: usize,
    /// Whether it has a `for_ever` loop (and so may run until the test ends).
    pub endless: bool,
}

/// Why a session cannot be compiled (the plan-level error names the session).
#[derive(Debug, thiserror::Error)]
pub enum SessionProblem {
    #[error(transparent)]
    Request(#[from] RequestError),
    #[error("{0}")]
    Header(String),
    #[error("request origin {0}")]
    Origin(String),
    #[error("invalid JSONPath `{path}`: {reason}")]
    JsonPath { path: String, reason: String },
    #[error("invalid regular expression `{pattern}`: {reason}")]
    Regex { pattern: String, reason: String },
    #[error("invalid XPath `{expression}`: {reason}")]
    XPath { expression: String, reason: String },
    #[error("invalid JSON in a body template: `{json}`: {reason}")]
    BadJson { json: String, reason: String },
    #[error("`{var}` is not bound by a pick_row binding, so it has no column `{column}`")]
    NotARow { var: String, column: String },
    #[error("data source `{data_source}` has no column `{column}` (its columns: {columns})")]
    UnknownColumn {
        data_source: String,
        column: String,
        columns: String,
    },
    #[error("`{var}` picks from data source #{index}, which the plan does not have")]
    UnknownDataSource { var: String, index: usize },
    #[error(
        "`{var}` picks rows from data sources #{first} and #{second}; a variable holds rows of one source"
    )]
    MixedSources {
        var: String,
        first: usize,
        second: usize,
    },
    #[error("a for_ever block without any request or wait would spin without end")]
    SpinningForEver,
    #[error("adds to `{0}`, which the plan does not declare as a custom metric")]
    UnknownMetric(String),
    #[error("jwt: {0}")]
    Jwt(String),
}

/// A worker's scratch buffers for the synchronous parts of running sessions (building
/// bodies, decoding responses, evaluating conditions); borrowed only between awaits.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    pub build: BuildScratch,
    pub check: CheckScratch,
    /// Text of a value being evaluated (e.g. a loop count).
    pub text: String,
}

#[cfg(test)]
mod tests;
