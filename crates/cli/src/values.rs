//! Every numeric flag's parser and range, in one place: clap `value_parser`s (clap puts the
//! flag's name in front of the message) and the parsers of flags read as text first (which
//! name their flag themselves). A value out of range is a usage error at parse time; nothing
//! here allocates in proportion to a value.

use crate::usage::usage;
use barrage_plan::parse_duration;
use std::fmt::Display;
use std::str::FromStr;
use std::time::Duration;

pub use barrage_plan::limits::{
    MAX_CLIENTS, MAX_COUNT, MAX_DURATION, MAX_H2_WINDOW, MAX_POOL_SIZE, MAX_RATE, MAX_THREADS,
    MAX_TIMEOUT, MIN_RATE, MIN_TIMEOUT,
};
/// A factor on every arrival rate.
pub const MAX_RATE_FACTOR: f64 = 1e6;
/// Rows of `barrage history`.
pub const MAX_HISTORY_ROWS: usize = 1_000_000;

/// A whole number in `min..=max`.
pub fn integer<T>(text: &str, min: T, max: T) -> Result<T, String>
where
    T: FromStr + PartialOrd + Display + Copy,
{
    match text.trim().parse::<T>() {
        Ok(n) if n >= min && n <= max => Ok(n),
        _ => Err(format!(
            "`{text}` must be a whole number from {min} to {max}"
        )),
    }
}

/// A number in `(0, max]`.
pub fn positive_number(text: &str, max: f64) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if x > 0.0 && x <= max => Ok(x),
        _ => Err(format!(
            "`{text}` must be a number above 0 and at most {max}"
        )),
    }
}

/// `barrage replay --speed`: how many times faster than recorded.
pub const MAX_SPEED: f64 = 1e4;
/// `barrage replay --loop`.
pub const MAX_LOOPS: u32 = 1_000_000;

/// `replay --speed`.
pub fn speed(text: &str) -> Result<f64, String> {
    positive_number(text, MAX_SPEED)
}

/// `replay --loop`.
pub fn loops(text: &str) -> Result<u32, String> {
    integer(text, 1, MAX_LOOPS)
}

/// `-c`, `--vus`, demo's `-c`.
pub fn clients(text: &str) -> Result<u64, String> {
    integer(text, 1, MAX_CLIENTS)
}

/// `-n`, `--iterations`.
pub fn count(text: &str) -> Result<u64, String> {
    integer(text, 1, MAX_COUNT)
}

/// `-q`.
pub fn rate(text: &str) -> Result<f64, String> {
    let rate = positive_number(text, MAX_RATE)?;
    match barrage_plan::limits::check_rate(rate) {
        Ok(rate) => Ok(rate),
        Err(_) => Err(format!(
            "`{text}` must be a number from {MIN_RATE:e} to {MAX_RATE}"
        )),
    }
}

/// `--rate-factor`.
pub fn rate_factor(text: &str) -> Result<f64, String> {
    positive_number(text, MAX_RATE_FACTOR)
}

/// `--threads`.
pub fn threads(text: &str) -> Result<usize, String> {
    integer(text, 1, MAX_THREADS)
}

/// `--pool-size`.
pub fn pool_size(text: &str) -> Result<u32, String> {
    integer(text, 1, MAX_POOL_SIZE)
}

/// `--max-streams`, `--h2-window`, `--h2-connection-window`.
pub fn h2_size(text: &str) -> Result<u32, String> {
    integer(text, 1, MAX_H2_WINDOW)
}

/// `--seed`: any 64-bit number.
pub fn seed(text: &str) -> Result<u64, String> {
    integer(text, 0, u64::MAX)
}

/// `history --last`.
pub fn history_rows(text: &str) -> Result<usize, String> {
    integer(text, 1, MAX_HISTORY_ROWS)
}

/// A duration with a unit (`10s`, `1m30s`), or with `bare_is_seconds` a plain number of
/// seconds, up to [`MAX_DURATION`]. Zero is allowed here; callers that need more say so.
pub fn duration_value(text: &str, bare_is_seconds: bool) -> Result<Duration, String> {
    let duration = match text.trim().parse::<f64>() {
        Ok(seconds) if bare_is_seconds => {
            if !(seconds.is_finite() && seconds >= 0.0) {
                return Err(format!("`{text}` must be a non-negative number of seconds"));
            }
            Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX)
        }
        _ => parse_duration(text).map_err(|e| e.to_string())?,
    };
    if duration > MAX_DURATION {
        return Err(format!("`{text}` is longer than the limit, 365d"));
    }
    Ok(duration)
}

/// A duration that must be greater than zero (`-z`, `--duration`).
pub fn run_duration(text: &str, bare_is_seconds: bool) -> Result<Duration, String> {
    match duration_value(text, bare_is_seconds)? {
        d if d.is_zero() => Err(format!("`{text}`: the duration must be greater than zero")),
        d => Ok(d),
    }
}

/// `-z` (a unit is required, as in hey).
pub fn run_duration_flag(text: &str) -> Result<Duration, String> {
    run_duration(text, false)
}

/// `-t`: seconds or a duration, from 1ms to 24h; 0 means none (`Duration::ZERO`).
pub fn timeout(text: &str) -> Result<Duration, String> {
    let duration = duration_value(text, true)?;
    // "0", "0s": none. A tiny number that rounds to nothing is not "none".
    if duration.is_zero() && !text.chars().any(|c| matches!(c, '1'..='9')) {
        return Ok(Duration::ZERO);
    }
    if duration < MIN_TIMEOUT {
        return Err(format!(
            "`{text}` is shorter than the shortest timeout, 1ms (0 means none)"
        ));
    }
    if duration > MAX_TIMEOUT {
        return Err(format!(
            "`{text}` is longer than the longest timeout, 24h (0 means none)"
        ));
    }
    Ok(duration)
}

/// A text-read duration flag, its error naming `flag`.
pub fn duration_flag(flag: &str, text: &str, bare_is_seconds: bool) -> anyhow::Result<Duration> {
    duration_value(text, bare_is_seconds).map_err(|e| usage(format!("{flag}: {e}")))
}

/// A text-read duration flag that must be greater than zero, its error naming `flag`.
pub fn positive_duration_flag(
    flag: &str,
    text: &str,
    bare_is_seconds: bool,
) -> anyhow::Result<Duration> {
    run_duration(text, bare_is_seconds).map_err(|e| usage(format!("{flag}: {e}")))
}

/// A text-read count flag (`--vus`, `--iterations`), its error naming `flag`.
pub fn count_flag(
    flag: &str,
    text: &str,
    parse: fn(&str) -> Result<u64, String>,
) -> anyhow::Result<u64> {
    parse(text).map_err(|e| usage(format!("{flag}: {e}")))
}

#[cfg(test)]
mod tests;
