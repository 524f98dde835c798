//! Usage errors: bad flags, URLs or files. They exit with code 2; runtime failures with 1;
//! failed thresholds with 99; a run cut off by a second Ctrl-C with 130.

use std::fmt;

/// An error in what the user asked for (as opposed to a failure while running).
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Builds an `anyhow::Error` carrying a [`UsageError`].
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(message.into()))
}

/// Exit codes, as documented in README.md.
pub mod exit {
    pub const OK: i32 = 0;
    pub const RUNTIME: i32 = 1;
    pub const USAGE: i32 = 2;
    pub const THRESHOLDS_FAILED: i32 = 99;
    /// A k6 script's init context, `setup()` or `teardown()` threw (k6's code).
    pub const SCRIPT_ERROR: i32 = 107;
    /// A k6 script called `test.abort()` (k6's code).
    pub const SCRIPT_ABORTED: i32 = 108;
    /// `barrage compare --fail-on`: a figure regressed past a rule.
    pub const REGRESSION: i32 = 3;
    pub const INTERRUPTED_TWICE: i32 = 130;
}
