//! Script errors and their locations: `FILE:LINE:COLUMN: message`, or `FILE: message`.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// Where in the script something went wrong. Line and column are 1-based, as QuickJS reports
/// them; they are absent when the problem belongs to the script as a whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub file: String,
    pub line: Option<u32>,
    pub column: Option<u32>,
}

impl Location {
    /// The whole file, no position.
    pub fn file(file: &str) -> Self {
        Self {
            file: file.to_string(),
            line: None,
            column: None,
        }
    }

    /// The position of the innermost frame of `stack` (a QuickJS `Error.prototype.stack`)
    /// that lies in one of the test case's `files` (the main script first, then the modules it
    /// imports); the main script as a whole when no frame does.
    pub fn from_stack(files: &[&str], stack: &str) -> Self {
        let found = stack.lines().find_map(|line| {
            files
                .iter()
                .find_map(|file| Some((*file, frame_position(line.trim(), file)?)))
        });
        match found {
            Some((file, (line, column))) => Self {
                file: file.to_string(),
                line: Some(line),
                column: Some(column),
            },
            None => Self::file(files.first().copied().unwrap_or("")),
        }
    }
}

/// Parses `at name (FILE:L:C)` or `at FILE:L:C` when FILE is `file`.
fn frame_position(frame: &str, file: &str) -> Option<(u32, u32)> {
    let frame = frame.strip_prefix("at ")?;
    let frame = frame.strip_suffix(')').unwrap_or(frame);
    let (rest, column) = frame.rsplit_once(':')?;
    let (rest, line) = rest.rsplit_once(':')?;
    let named =
        rest.strip_prefix(file).is_some_and(str::is_empty) || rest.ends_with(&format!(" ({file}"));
    if !named {
        return None;
    }
    Some((line.parse().ok()?, column.parse().ok()?))
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (Some(line), Some(column)) => write!(f, "{}:{line}:{column}", self.file),
            (Some(line), None) => write!(f, "{}:{line}", self.file),
            _ => write!(f, "{}", self.file),
        }
    }
}

/// Why a script could not be compiled into a plan. `Display` is always one line.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The script file could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A JavaScript syntax or runtime error, with QuickJS's message (`ReferenceError: ...`).
    #[error("{location}: {message}")]
    Js { location: Location, message: String },
    /// The DSL was misused: an unknown verb or option, a bad value, an unresolvable variable,
    /// a broken data file ...
    #[error("{location}: {message}")]
    Dsl { location: Location, message: String },
    /// Evaluation was stopped because it ran too long (an endless loop?).
    #[error(
        "{location}: the script was stopped after {} s (an endless loop?); it runs once, at compile time, and must finish quickly",
        limit.as_secs_f64()
    )]
    Timeout { location: Location, limit: Duration },
    /// QuickJS itself failed (could not create a runtime, ran out of memory ...).
    #[error("{location}: JavaScript engine error: {message}")]
    Engine { location: Location, message: String },
}

impl ScriptError {
    pub(crate) fn dsl(location: &Location, message: impl Into<String>) -> Self {
        ScriptError::Dsl {
            location: location.clone(),
            message: one_line(&message.into()),
        }
    }

    pub(crate) fn js(location: Location, message: &str) -> Self {
        ScriptError::Js {
            location,
            message: one_line(message),
        }
    }

    /// Where the problem is, when it is in the script.
    pub fn location(&self) -> Option<&Location> {
        match self {
            ScriptError::Read { .. } => None,
            ScriptError::Js { location, .. }
            | ScriptError::Dsl { location, .. }
            | ScriptError::Timeout { location, .. }
            | ScriptError::Engine { location, .. } => Some(location),
        }
    }
}

/// Collapses line breaks so that every error prints as one line.
pub(crate) fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_first_frame_in_the_file() {
        let stack = "    at here (<barrage>:1:29)\n    at a (dir/my script.js:2:24)\n    at <eval> (dir/my script.js:3:2)\n";
        let loc = Location::from_stack(&["dir/my script.js"], stack);
        assert_eq!(loc.to_string(), "dir/my script.js:2:24");
        let syntax = "    at t.js:2:6\n";
        assert_eq!(
            Location::from_stack(&["t.js"], syntax).to_string(),
            "t.js:2:6"
        );
        assert_eq!(
            Location::from_stack(&["t.js"], "    at map (native)\n").to_string(),
            "t.js"
        );
        // A file whose name ends another's is not confused with it.
        assert_eq!(
            Location::from_stack(&["t.js"], "    at f (at.js:1:1)\n").to_string(),
            "t.js"
        );
        // A frame in an imported module names that module.
        let imported = "    at here (<barrage-dsl>:1:2)\n    at f (dir/modules/m.js:4:9)\n    at <eval> (dir/t.mjs:2:1)\n";
        assert_eq!(
            Location::from_stack(&["dir/t.mjs", "dir/modules/m.js"], imported).to_string(),
            "dir/modules/m.js:4:9"
        );
    }

    #[test]
    fn messages_are_one_line() {
        assert_eq!(one_line("a\n  b\n\nc"), "a b c");
    }
}
