//! Behaviour-changing query parameters understood on every endpoint, and their validation.
//!
//! | parameter      | value                      | effect                                                  |
//! |----------------|----------------------------|---------------------------------------------------------|
//! | `delay`        | ms, 0..=600000             | sleep (asynchronously) before answering                 |
//! | `status`       | 100..=599                  | override the endpoint's status code                     |
//! | `size`         | bytes, 0..=100 MB          | pad the body with trailing spaces to at least that size |
//! | `fail`         | ratio 0..=1                | answer 500 with that probability                        |
//! | `close`        | `1`/`true` or `0`/`false`  | drop the connection without answering                   |
//! | `stall`        | ms, 0..=600000             | pause on every `stall_every`-th stalled request         |
//! | `stall_every`  | n >= 1 (default 1)         | period of `stall`, counted server-wide                  |
//! | `capacity`     | req/s, 1..=1000000         | serve at most that many per second, server-wide, FIFO;  |
//! |                |                            | requests beyond it queue (a known capacity, issue 16)   |
//!
//! `stall_every` counts, server-wide, only the requests that carry `stall`. A 1xx
//! `status` has the limits described in [`crate::routes`].
//!
//! Other parameters are ignored here (endpoints read their own, e.g. `channel`, `token`).
//! Repeated parameters: the last one wins.

use std::time::Duration;

use hyper::StatusCode;

/// Longest accepted `delay` / `stall` / `/delay/<ms>`, in milliseconds.
pub(crate) const MAX_DELAY_MS: u64 = 600_000;
/// Largest accepted `size` / `/bytes/<n>`, in bytes.
pub(crate) const MAX_SIZE: usize = 100 * 1024 * 1024;

/// The parsed behaviour parameters of one request.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Params {
    pub delay: Option<Duration>,
    pub status: Option<StatusCode>,
    pub size: Option<usize>,
    /// Probability of answering 500; 0 means never.
    pub fail: f64,
    pub close: bool,
    pub stall: Option<Stall>,
    /// `capacity=R`: at most R requests per second pass, in arrival order; the rest wait.
    pub capacity: Option<u64>,
}

/// `stall=<ms>&stall_every=<n>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stall {
    pub pause: Duration,
    pub every: u64,
}

/// A rejected parameter: its name and what was wrong with its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParamError {
    pub parameter: &'static str,
    pub value: String,
    pub expected: &'static str,
}

impl std::fmt::Display for ParamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "invalid query parameter '{}': expected {}, got {:?}",
            self.parameter, self.expected, self.value
        )
    }
}

impl Params {
    /// Parses a raw query string (without the `?`).
    pub(crate) fn parse(query: &str) -> Result<Params, ParamError> {
        let mut params = Params::default();
        let mut stall_ms: Option<Duration> = None;
        let mut stall_every: Option<u64> = None;
        for pair in query.split('&') {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match key {
                "delay" => params.delay = Some(parse_ms("delay", value)?),
                "status" => params.status = Some(parse_status("status", value)?),
                "size" => params.size = Some(parse_size("size", value)?),
                "fail" => params.fail = parse_ratio("fail", value)?,
                "close" => params.close = parse_flag("close", value)?,
                "stall" => stall_ms = Some(parse_ms("stall", value)?),
                "stall_every" => stall_every = Some(parse_every("stall_every", value)?),
                "capacity" => params.capacity = Some(parse_capacity(value)?),
                _ => {}
            }
        }
        params.stall = stall_ms.map(|pause| Stall {
            pause,
            every: stall_every.unwrap_or(1),
        });
        Ok(params)
    }
}

fn error(parameter: &'static str, value: &str, expected: &'static str) -> ParamError {
    ParamError {
        parameter,
        value: value.to_owned(),
        expected,
    }
}

fn parse_u64(value: &str) -> Option<u64> {
    // `u64::from_str` accepts a leading '+'; plain digits only here.
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse().ok()
}

/// Milliseconds in 0..=MAX_DELAY_MS.
pub(crate) fn parse_ms(parameter: &'static str, value: &str) -> Result<Duration, ParamError> {
    match parse_u64(value) {
        Some(ms) if ms <= MAX_DELAY_MS => Ok(Duration::from_millis(ms)),
        _ => Err(error(parameter, value, "milliseconds in 0..=600000")),
    }
}

/// A status code in 100..=599.
pub(crate) fn parse_status(parameter: &'static str, value: &str) -> Result<StatusCode, ParamError> {
    parse_u64(value)
        .filter(|code| (100..=599).contains(code))
        .and_then(|code| StatusCode::from_u16(code as u16).ok())
        .ok_or_else(|| error(parameter, value, "a status code in 100..=599"))
}

/// A byte count in 0..=MAX_SIZE.
pub(crate) fn parse_size(parameter: &'static str, value: &str) -> Result<usize, ParamError> {
    match parse_u64(value) {
        Some(n) if n <= MAX_SIZE as u64 => Ok(n as usize),
        _ => Err(error(parameter, value, "a byte count in 0..=104857600")),
    }
}

fn parse_ratio(parameter: &'static str, value: &str) -> Result<f64, ParamError> {
    match value.parse::<f64>() {
        Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
        _ => Err(error(parameter, value, "a ratio in 0..=1")),
    }
}

fn parse_flag(parameter: &'static str, value: &str) -> Result<bool, ParamError> {
    match value {
        "1" | "true" | "" => Ok(true),
        "0" | "false" => Ok(false),
        _ => Err(error(parameter, value, "1, true, 0 or false")),
    }
}

/// Largest accepted `capacity`, requests per second.
pub(crate) const MAX_CAPACITY: u64 = 1_000_000;

fn parse_capacity(value: &str) -> Result<u64, ParamError> {
    parse_u64(value)
        .filter(|n| (1..=MAX_CAPACITY).contains(n))
        .ok_or_else(|| error("capacity", value, "requests per second in 1..=1000000"))
}

fn parse_every(parameter: &'static str, value: &str) -> Result<u64, ParamError> {
    parse_u64(value)
        .filter(|&n| n >= 1)
        .ok_or_else(|| error(parameter, value, "a whole number >= 1"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_unrelated_queries_change_nothing() {
        assert_eq!(Params::parse("").unwrap(), Params::default());
        assert_eq!(
            Params::parse("channel=7&token=abc&x").unwrap(),
            Params::default()
        );
    }

    #[test]
    fn parses_every_parameter() {
        let p =
            Params::parse("delay=15&status=418&size=100&fail=0.25&close=1&stall=300&stall_every=3")
                .unwrap();
        assert_eq!(p.delay, Some(Duration::from_millis(15)));
        assert_eq!(p.status, Some(StatusCode::IM_A_TEAPOT));
        assert_eq!(p.size, Some(100));
        assert_eq!(p.fail, 0.25);
        assert!(p.close);
        assert_eq!(
            p.stall,
            Some(Stall {
                pause: Duration::from_millis(300),
                every: 3
            })
        );
    }

    #[test]
    fn defaults_and_last_wins() {
        let p = Params::parse("stall=5&close=0&delay=1&delay=2").unwrap();
        assert_eq!(p.stall.unwrap().every, 1);
        assert!(!p.close);
        assert_eq!(p.delay, Some(Duration::from_millis(2)));
        assert!(Params::parse("close").unwrap().close);
        assert_eq!(Params::parse("stall_every=4").unwrap().stall, None);
    }

    #[test]
    fn rejects_bad_values_naming_the_parameter() {
        for (query, name) in [
            ("delay=abc", "delay"),
            ("delay=-1", "delay"),
            ("delay=+5", "delay"),
            ("delay=600001", "delay"),
            ("delay=", "delay"),
            ("status=99", "status"),
            ("status=600", "status"),
            ("status=2x0", "status"),
            ("size=104857601", "size"),
            ("size=1k", "size"),
            ("fail=1.5", "fail"),
            ("fail=-0.1", "fail"),
            ("fail=NaN", "fail"),
            ("fail=x", "fail"),
            ("close=2", "close"),
            ("stall=x", "stall"),
            ("stall=10&stall_every=0", "stall_every"),
            ("capacity=0", "capacity"),
            ("capacity=1000001", "capacity"),
            ("capacity=1.5", "capacity"),
        ] {
            let err = Params::parse(query).unwrap_err();
            assert_eq!(err.parameter, name, "{query}");
            assert!(err.to_string().contains(name), "{err}");
        }
    }

    #[test]
    fn accepts_boundaries() {
        assert!(Params::parse("delay=0&delay=600000").is_ok());
        assert!(Params::parse("status=100&status=599").is_ok());
        assert!(Params::parse("size=0&size=104857600").is_ok());
        assert!(Params::parse("fail=0&fail=1&fail=0.5").is_ok());
        assert_eq!(
            Params::parse("capacity=1&capacity=1000000")
                .unwrap()
                .capacity,
            Some(1_000_000)
        );
    }
}
