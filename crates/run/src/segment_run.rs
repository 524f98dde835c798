//! A segment's run (`--segment i/N`, `--start-at TIME`): waiting for the agreed wall-clock
//! start, and what the results file records about the segment and its clock.

use crate::usage::usage;
use barrage_plan::Plan;
use barrage_results::SegmentRun;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The latest `--start-at` accepted: a typo far in the future would otherwise wait for ever.
const LONGEST_WAIT: Duration = Duration::from_secs(24 * 3600);

/// Parses `--start-at`: RFC 3339 (`2026-11-23T22:00:00Z`) or Unix seconds (`1795471200.5`).
pub fn parse_start_at(text: &str) -> anyhow::Result<SystemTime> {
    let bad = || {
        usage(format!(
            "--start-at: `{text}` is not a time (RFC 3339 such as 2026-11-23T22:00:00Z, or Unix seconds)"
        ))
    };
    let at = if let Ok(seconds) = text.trim().parse::<f64>() {
        if !(0.0..1e11).contains(&seconds) {
            return Err(bad());
        }
        UNIX_EPOCH + Duration::from_secs_f64(seconds)
    } else {
        let parsed = time::OffsetDateTime::parse(
            text.trim(),
            &time::format_description::well_known::Rfc3339,
        )
        .map_err(|_| bad())?;
        let nanos = u64::try_from(parsed.unix_timestamp_nanos()).map_err(|_| bad())?;
        UNIX_EPOCH + Duration::from_nanos(nanos)
    };
    if at
        .duration_since(SystemTime::now())
        .is_ok_and(|wait| wait > LONGEST_WAIT)
    {
        return Err(usage(format!(
            "--start-at: `{text}` is more than 24 hours away"
        )));
    }
    Ok(at)
}

/// Sleeps until `start_at` (at once when it has passed: the offset is recorded).
pub fn wait_for_start(start_at: Option<SystemTime>) {
    if let Some(wait) = start_at.and_then(|at| at.duration_since(SystemTime::now()).ok()) {
        std::thread::sleep(wait);
    }
}

/// What the results file records about a segment's run (none for a whole test started
/// without `--start-at`).
pub fn segment_meta(
    plan: &Plan,
    start_at: Option<SystemTime>,
    started_at: SystemTime,
) -> Option<SegmentRun> {
    if plan.options.segment.is_none() && start_at.is_none() {
        return None;
    }
    let segment = plan
        .options
        .segment
        .clone()
        .unwrap_or(barrage_plan::Segment::WHOLE);
    let offset_ns = start_at.map(|at| match started_at.duration_since(at) {
        Ok(late) => i64::try_from(late.as_nanos()).unwrap_or(i64::MAX),
        Err(early) => -i64::try_from(early.duration().as_nanos()).unwrap_or(i64::MAX),
    });
    Some(SegmentRun {
        index: segment.index,
        count: segment.count,
        start_at_unix_ns: start_at.map(barrage_results::unix_ns),
        start_offset_ns: offset_ns,
        clock_source: std::fs::read_to_string(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        )
        .ok()
        .map(|s| s.trim().to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_times_parse_from_rfc3339_and_unix_seconds() {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let at = parse_start_at(&format!("{}.5", now + 60)).unwrap();
        assert_eq!(
            at.duration_since(UNIX_EPOCH).unwrap(),
            Duration::from_millis((now + 60) * 1000 + 500)
        );
        let at = parse_start_at("2020-01-02T03:04:05.25Z").unwrap();
        assert_eq!(
            at.duration_since(UNIX_EPOCH).unwrap(),
            Duration::from_millis(1_577_934_245_250)
        );
        for bad in ["tomorrow", "-5", "2020-13-01T00:00:00Z", "NaN"] {
            let e = parse_start_at(bad).unwrap_err().to_string();
            assert!(e.starts_with("--start-at: "), "{bad}: {e}");
        }
        assert!(parse_start_at(&format!("{}", now + 90_000))
            .unwrap_err()
            .to_string()
            .contains("24 hours"));
    }
}
