//! `bind` steps (picked rows, random numbers and strings, UUIDs) and think-time waits, drawn
//! from the worker's seeded random number generator.
//!
//! Sequential row picks stay lock-free: worker `i` of `W` takes rows `i, i+W, i+2W, ...`
//! (modulo the row count) from its own cursor, so together the workers go round-robin over
//! the rows without sharing a counter; within one worker the order is exact.

use super::state::SessionState;
use super::values::VarId;
use barrage_plan::{Binding, DataSource, Stripe, Value, Wait};
use rand::distributions::Alphanumeric;
use rand::Rng;
use std::cell::Cell;
use std::fmt::Write as _;
use std::time::Duration;

/// A compiled `bind` step.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CompiledBind {
    pub var: VarId,
    pub binding: Binding,
    /// The compiled form of a `jwt` binding (its key parsed, its token a value).
    pub jwt: Option<Box<super::jwt::CompiledJwt>>,
}

/// One worker's sequential-pick cursors, one per data source.
#[derive(Debug)]
pub(crate) struct RowCursors {
    /// Per source, this worker's next pick (its `m`-th).
    next: Vec<Cell<u64>>,
    rows: Stripe,
}

impl RowCursors {
    /// Cursors that pick the rows of `rows` (this worker's stripe of the run-wide sequence).
    pub(crate) fn new(sources: usize, rows: Stripe) -> Self {
        Self {
            next: (0..sources).map(|_| Cell::new(0)).collect(),
            rows,
        }
    }

    /// The next row of `source` (which has `rows` rows) for this worker.
    fn next(&self, source: usize, rows: usize) -> u32 {
        let cursor = &self.next[source];
        let mine = cursor.get();
        cursor.set(mine + 1);
        (self.rows.nth(mine) % rows as u64) as u32
    }
}

impl CompiledBind {
    pub(crate) fn new(var: VarId, binding: &Binding) -> Self {
        let binding = match *binding {
            // An empty range is taken the other way round rather than refused.
            Binding::RandomNumber { min, max } if min > max => {
                Binding::RandomNumber { min: max, max: min }
            }
            ref other => other.clone(),
        };
        Self {
            var,
            binding,
            jwt: None,
        }
    }

    /// A `jwt` binding, compiled.
    pub(crate) fn jwt(var: VarId, binding: &Binding, jwt: super::jwt::CompiledJwt) -> Self {
        Self {
            var,
            binding: binding.clone(),
            jwt: Some(Box::new(jwt)),
        }
    }

    /// Binds the variable for one client. A pick from an empty source leaves it unset.
    pub(crate) fn apply(
        &self,
        rng: &mut impl Rng,
        cursors: &RowCursors,
        data: &[DataSource],
        state: &mut SessionState,
    ) {
        match self.binding {
            Binding::PickRow { source, sequential } => {
                let rows = data[source].rows.len();
                if rows == 0 {
                    state.unset(self.var);
                } else if sequential {
                    state.set_row(self.var, cursors.next(source, rows));
                } else {
                    state.set_row(self.var, rng.gen_range(0..rows) as u32);
                }
            }
            Binding::RandomNumber { min, max } => {
                let n = rng.gen_range(min..=max);
                let _ = write!(state.set_text(self.var), "{n}");
            }
            Binding::RandomString { length } => {
                let text = state.set_text(self.var);
                text.extend((0..length).map(|_| char::from(rng.sample(Alphanumeric))));
            }
            Binding::Uuid => write_uuid_v4(rng.gen(), state.set_text(self.var)),
            Binding::ShiftedTime {
                offset_ms,
                fraction_digits,
            } => {
                let now_ms = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as i64);
                write_utc(
                    now_ms + offset_ms,
                    fraction_digits,
                    state.set_text(self.var),
                );
            }
            Binding::Jwt(_) => {
                let Some(jwt) = &self.jwt else {
                    return;
                };
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                let token = jwt.token_for(super::values::Eval { state, data }, now);
                state.set_text(self.var).push_str(&token);
            }
        }
    }
}

/// Writes `unix_ms` as an ISO 8601 UTC timestamp (`2026-11-24T00:49:34.123Z`) with 0, 3 or 6
/// digits of a second (civil date from days: Howard Hinnant's algorithm).
pub(crate) fn write_utc(unix_ms: i64, fraction_digits: u8, out: &mut String) {
    let days = unix_ms.div_euclid(86_400_000);
    let ms_of_day = unix_ms.rem_euclid(86_400_000);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let seconds = ms_of_day / 1000;
    let _ = write!(
        out,
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    );
    match fraction_digits {
        0 => {}
        6 => {
            let _ = write!(out, ".{:03}000", ms_of_day % 1000);
        }
        _ => {
            let _ = write!(out, ".{:03}", ms_of_day % 1000);
        }
    }
    out.push('Z');
}

/// Formats 16 random bytes as a version 4 (random) UUID, `8-4-4-4-12` lowercase hex.
pub(crate) fn write_uuid_v4(mut bytes: [u8; 16], out: &mut String) {
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    for (i, b) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push('-');
        }
        let _ = write!(out, "{b:02x}");
    }
}

/// A compiled think time (seconds; negative or invalid values wait nothing).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum WaitSpec {
    Fixed(f64),
    /// Uniform in `[lo, hi)`.
    Uniform(f64, f64),
    Exponential(f64),
}

impl WaitSpec {
    /// The spec of a think time the plan fixes, or — a per-client wait — the value its
    /// seconds are read from when the wait starts.
    pub(crate) fn planned(wait: &Wait) -> Result<WaitSpec, &Value> {
        Ok(match *wait {
            Wait::Fixed { seconds } => WaitSpec::Fixed(seconds),
            Wait::Random { seconds } => WaitSpec::Uniform(seconds * 0.5, seconds * 1.5),
            Wait::Uniform { min, max } => WaitSpec::Uniform(min.min(max), min.max(max)),
            Wait::Exponential { mean } => WaitSpec::Exponential(mean),
            Wait::PerClient { ref seconds } => return Err(seconds),
        })
    }
}

impl WaitSpec {
    /// Draws one wait.
    pub(crate) fn sample(self, rng: &mut impl Rng) -> Duration {
        let seconds = match self {
            WaitSpec::Fixed(s) => s,
            WaitSpec::Uniform(lo, hi) if hi > lo => rng.gen_range(lo..hi),
            WaitSpec::Uniform(lo, _) => lo,
            WaitSpec::Exponential(mean) => {
                // 1 - U lies in (0, 1], so the logarithm is finite.
                -mean * (1.0 - rng.gen::<f64>()).ln()
            }
        };
        if seconds.is_finite() && seconds > 0.0 {
            Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX)
        } else {
            Duration::ZERO
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn utc_timestamps_are_written_like_iso_8601() {
        let cases = [
            (0, 0, "1970-01-01T00:00:00Z"),
            (951_782_400_123, 3, "2000-02-29T00:00:00.123Z"),
            (1_795_480_174_005, 6, "2026-11-24T00:29:34.005000Z"),
            (-1, 3, "1969-12-31T23:59:59.999Z"),
        ];
        for (ms, digits, text) in cases {
            let mut out = String::new();
            write_utc(ms, digits, &mut out);
            assert_eq!(out, text);
        }
    }

    fn rng() -> rand::rngs::SmallRng {
        rand::rngs::SmallRng::seed_from_u64(3)
    }

    #[test]
    fn waits_follow_their_distributions() {
        let mut rng = rng();
        assert_eq!(
            WaitSpec::Fixed(0.25).sample(&mut rng),
            Duration::from_millis(250)
        );
        assert_eq!(WaitSpec::Fixed(-1.0).sample(&mut rng), Duration::ZERO);
        let random = WaitSpec::planned(&Wait::Random { seconds: 2.0 }).unwrap();
        let mut sum = 0.0;
        for _ in 0..10_000 {
            let s = random.sample(&mut rng).as_secs_f64();
            assert!((1.0..3.0).contains(&s), "{s}");
            sum += s;
        }
        assert!((sum / 10_000.0 - 2.0).abs() < 0.05);
        let exp = WaitSpec::Exponential(0.5);
        let mean: f64 = (0..20_000)
            .map(|_| exp.sample(&mut rng).as_secs_f64())
            .sum::<f64>()
            / 20_000.0;
        assert!((mean - 0.5).abs() < 0.03, "{mean}");
    }

    fn data(rows: usize) -> Vec<DataSource> {
        vec![DataSource {
            name: "d".into(),
            columns: vec!["id".into()],
            rows: (0..rows).map(|i| vec![i.to_string()]).collect(),
        }]
    }

    #[test]
    fn sequential_picks_interleave_across_workers() {
        let data = data(5);
        let bind = CompiledBind::new(
            0,
            &Binding::PickRow {
                source: 0,
                sequential: true,
            },
        );
        let mut state = SessionState::default();
        state.reset(1);
        let mut picked = Vec::new();
        let whole = barrage_plan::Segment::WHOLE.striping();
        let cursors = [
            RowCursors::new(1, whole.stripe(0, 2)),
            RowCursors::new(1, whole.stripe(1, 2)),
        ];
        for _ in 0..5 {
            for cursors in &cursors {
                bind.apply(&mut rng(), cursors, &data, &mut state);
                picked.push(match state.slot(0) {
                    super::super::state::Slot::Row(r) => r,
                    other => panic!("{other:?}"),
                });
            }
        }
        assert_eq!(picked, vec![0, 1, 2, 3, 4, 0, 1, 2, 3, 4]);
        let empty = data_empty();
        bind.apply(&mut rng(), &cursors[0], &empty, &mut state);
        assert_eq!(state.slot(0), super::super::state::Slot::Unset);
    }

    fn data_empty() -> Vec<DataSource> {
        data(0)
    }

    #[test]
    fn numbers_strings_and_uuids_have_their_shape() {
        let mut rng = rng();
        let cursors = RowCursors::new(0, barrage_plan::Segment::WHOLE.stripe(0, 1));
        let mut state = SessionState::default();
        state.reset(1);
        let number = CompiledBind::new(0, &Binding::RandomNumber { min: 6, max: 3 });
        let mut seen = [false; 4];
        for _ in 0..200 {
            number.apply(&mut rng, &cursors, &[], &mut state);
            let n: usize = state.text(0).parse().unwrap();
            seen[n - 3] = true;
        }
        assert_eq!(seen, [true; 4], "3..=6 inclusive");
        CompiledBind::new(0, &Binding::RandomString { length: 12 }).apply(
            &mut rng,
            &cursors,
            &[],
            &mut state,
        );
        assert_eq!(state.text(0).len(), 12);
        assert!(state.text(0).bytes().all(|b| b.is_ascii_alphanumeric()));
        CompiledBind::new(0, &Binding::Uuid).apply(&mut rng, &cursors, &[], &mut state);
        let uuid = state.text(0);
        assert_eq!(uuid.len(), 36);
        assert_eq!(uuid.as_bytes()[14], b'4');
        assert!(matches!(uuid.as_bytes()[19], b'8' | b'9' | b'a' | b'b'));
        assert_eq!(uuid.matches('-').count(), 4);
    }
}
