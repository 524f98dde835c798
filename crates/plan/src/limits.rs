//! The ranges of every number a plan takes from its user — flags, DSL options, k6 options —
//! in one place, with the checks the front ends share. A value out of range is refused when
//! it is read (never clamped, never a panic later), and no range lets a value allocate more
//! than the machine could give.

use std::time::Duration;

/// Clients, connections and virtual users: each costs memory and usually a socket.
pub const MAX_CLIENTS: u64 = 1_000_000;
/// Requests or iterations in total.
pub const MAX_COUNT: u64 = 1_000_000_000_000;
/// Requests (or arrivals) per second.
pub const MAX_RATE: f64 = 1e9;
/// The lowest rate other than 0: one per 11.6 days. Below it the gaps between arrivals
/// would outgrow what a clock can add.
pub const MIN_RATE: f64 = 1e-6;
/// Worker threads of the generator or the bundled target.
pub const MAX_THREADS: usize = 1024;
/// Connections per worker in the shared model.
pub const MAX_POOL_SIZE: u32 = 1 << 24;
/// HTTP/2 windows and stream counts (RFC 9113 §6.5.2, §6.9.1: 2^31 - 1).
pub const MAX_H2_WINDOW: u32 = (1 << 31) - 1;
/// The longest run, stage, limit, wait or TTL.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);
/// The longest per-request timeout.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 3600);
/// The shortest per-request timeout.
pub const MIN_TIMEOUT: Duration = Duration::from_millis(1);

/// A duration of at most [`MAX_DURATION`].
pub fn check_duration(duration: Duration) -> Result<Duration, String> {
    if duration > MAX_DURATION {
        return Err(format!(
            "{} is longer than the limit, 365d",
            humantime_ish(duration)
        ));
    }
    Ok(duration)
}

/// A per-request timeout, from [`MIN_TIMEOUT`] to [`MAX_TIMEOUT`].
pub fn check_timeout(timeout: Duration) -> Result<Duration, String> {
    if timeout < MIN_TIMEOUT {
        return Err(format!(
            "{} is shorter than the shortest timeout, 1ms",
            humantime_ish(timeout)
        ));
    }
    if timeout > MAX_TIMEOUT {
        return Err(format!(
            "{} is longer than the longest timeout, 24h",
            humantime_ish(timeout)
        ));
    }
    Ok(timeout)
}

/// A rate (per second, or per time unit): 0, or from [`MIN_RATE`] to [`MAX_RATE`].
pub fn check_rate(rate: f64) -> Result<f64, String> {
    if !(rate == 0.0 || (MIN_RATE..=MAX_RATE).contains(&rate)) {
        return Err(format!(
            "{rate} is not a rate: 0, or from {MIN_RATE:e} to {MAX_RATE:e}"
        ));
    }
    Ok(rate)
}

/// A number of seconds (a wait) from 0 to [`MAX_DURATION`].
pub fn check_seconds(seconds: f64) -> Result<f64, String> {
    duration_from_secs(seconds).map(|_| seconds)
}

/// A number of clients or virtual users, at most [`MAX_CLIENTS`].
pub fn check_clients(clients: u64) -> Result<u64, String> {
    if clients > MAX_CLIENTS {
        return Err(format!(
            "{clients} is more than the most clients, {MAX_CLIENTS}"
        ));
    }
    Ok(clients)
}

/// A duration from a number of seconds (or milliseconds, divided first): finite,
/// non-negative and within [`MAX_DURATION`].
pub fn duration_from_secs(seconds: f64) -> Result<Duration, String> {
    if !(seconds.is_finite() && seconds >= 0.0) {
        return Err(format!("{seconds} is not a non-negative number of seconds"));
    }
    match Duration::try_from_secs_f64(seconds) {
        Ok(duration) => check_duration(duration),
        Err(_) => Err(format!("{seconds:e} s is longer than the limit, 365d")),
    }
}

/// A duration as a short text for messages (`1.5s`, `400d`).
fn humantime_ish(duration: Duration) -> String {
    let seconds = duration.as_secs_f64();
    if seconds >= 86_400.0 {
        format!("{}d", (seconds / 86_400.0 * 100.0).round() / 100.0)
    } else {
        format!("{duration:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_check_takes_its_range_and_refuses_what_lies_outside() {
        assert!(check_duration(MAX_DURATION).is_ok());
        let e = check_duration(MAX_DURATION + Duration::from_secs(1)).unwrap_err();
        assert!(e.contains("365d"), "{e}");
        assert!(check_timeout(MIN_TIMEOUT).is_ok() && check_timeout(MAX_TIMEOUT).is_ok());
        assert!(check_timeout(Duration::from_micros(999)).is_err());
        assert!(check_timeout(MAX_TIMEOUT + Duration::from_millis(1)).is_err());
        assert_eq!(check_rate(0.0), Ok(0.0));
        assert!(check_rate(MAX_RATE).is_ok());
        for bad in [-1.0, 1e-300, 1e10, f64::NAN, f64::INFINITY] {
            assert!(check_rate(bad).is_err(), "{bad}");
        }
        assert!(check_seconds(0.5).is_ok() && check_seconds(1e300).is_err());
        assert_eq!(check_clients(MAX_CLIENTS), Ok(MAX_CLIENTS));
        assert!(check_clients(MAX_CLIENTS + 1).is_err());
        assert_eq!(duration_from_secs(1.5), Ok(Duration::from_millis(1500)));
        for bad in [-1.0, 1e20, 1e300, f64::NAN, f64::INFINITY] {
            assert!(duration_from_secs(bad).is_err(), "{bad}");
        }
    }
}
