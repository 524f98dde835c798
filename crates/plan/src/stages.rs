//! Piecewise-linear schedules over time: arrival phases, VU stages and rate stages are all
//! one [`Stages`] when something needs their value at a time, their integral, a cut at a time
//! limit or a scale — one implementation instead of one per stage type.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One linear piece: the value goes from `from` to `to` over `duration` (a jump between
/// pieces is allowed: arrival phases may start at a rate the previous one did not end at).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Piece {
    #[serde(with = "crate::duration_ms")]
    pub duration: Duration,
    pub from: f64,
    pub to: f64,
}

impl Piece {
    /// The value `offset` into the piece (linear; clamped to the piece).
    pub fn value_at(&self, offset: Duration) -> f64 {
        if self.duration.is_zero() {
            return self.to;
        }
        let progress = (offset.as_secs_f64() / self.duration.as_secs_f64()).clamp(0.0, 1.0);
        self.from + (self.to - self.from) * progress
    }

    /// The area under the piece from its start to `offset` into it.
    fn area_to(&self, offset: Duration) -> f64 {
        let offset = offset.min(self.duration);
        (self.from + self.value_at(offset)) / 2.0 * offset.as_secs_f64()
    }
}

/// A schedule of values over time (per second, per VU ...), piece after piece from time 0.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Stages {
    pub pieces: Vec<Piece>,
}

impl Stages {
    pub fn new(pieces: Vec<Piece>) -> Self {
        Self { pieces }
    }

    /// Stages given as k6 writes them: a start value, then (duration, target) pairs, each
    /// ramping linearly from where the previous one ended.
    pub fn from_targets(start: f64, targets: impl IntoIterator<Item = (Duration, f64)>) -> Self {
        let mut from = start;
        let pieces = targets
            .into_iter()
            .map(|(duration, to)| {
                let piece = Piece { duration, from, to };
                from = to;
                piece
            })
            .collect();
        Self { pieces }
    }

    /// One value that holds for ever (a schedule of zero length: [`Stages::value_at`] holds
    /// the last value past the end). The schedule of a count-bounded workload.
    pub fn constant(value: f64) -> Self {
        Self::new(vec![Piece {
            duration: Duration::ZERO,
            from: value,
            to: value,
        }])
    }

    /// Whether the value never changes.
    pub fn is_constant(&self) -> bool {
        self.pieces.windows(2).all(|w| w[0].to == w[1].from)
            && self.pieces.iter().all(|p| p.from == p.to)
    }

    /// When the schedule ends.
    pub fn end(&self) -> Duration {
        self.pieces.iter().map(|p| p.duration).sum()
    }

    /// The value at `at` from the start; after the end, the last piece's end value (a VU
    /// target holds; callers of rates stop at [`Stages::end`]).
    pub fn value_at(&self, at: Duration) -> f64 {
        let mut start = Duration::ZERO;
        for piece in &self.pieces {
            let end = start + piece.duration;
            if at < end {
                return piece.value_at(at - start);
            }
            start = end;
        }
        self.pieces.last().map_or(0.0, |p| p.to)
    }

    /// The area under the schedule between `from` and `to` (seconds × value): the expected
    /// arrivals of a rate in that window.
    pub fn integral(&self, from: Duration, to: Duration) -> f64 {
        self.area_to(to) - self.area_to(from.min(to))
    }

    /// The area under the whole schedule.
    pub fn total(&self) -> f64 {
        self.area_to(self.end())
    }

    fn area_to(&self, at: Duration) -> f64 {
        let mut start = Duration::ZERO;
        let mut area = 0.0;
        for piece in &self.pieces {
            if at <= start {
                break;
            }
            area += piece.area_to(at - start);
            start += piece.duration;
        }
        area
    }

    /// When the area under the schedule reaches `k` (iteration `k` of a rate, from 0, is due
    /// then: evenly spaced at a constant rate, like k6). Past the end the last value holds, so
    /// a count-bounded constant rate is `k / rate`; `None` when the rate never gets there.
    pub fn time_of(&self, k: f64) -> Option<Duration> {
        let mut left = k;
        let mut start = 0.0;
        for piece in &self.pieces {
            let length = piece.duration.as_secs_f64();
            let in_piece = (piece.from + piece.to) / 2.0 * length;
            if left < in_piece {
                // Solve from * t + slope / 2 * t^2 = left for t in [0, length).
                let slope = (piece.to - piece.from) / length;
                let t = if slope.abs() < 1e-12 {
                    left / piece.from
                } else {
                    let disc = (piece.from * piece.from + 2.0 * slope * left).max(0.0);
                    (disc.sqrt() - piece.from) / slope
                };
                return Some(Duration::from_secs_f64(start + t.clamp(0.0, length)));
            }
            left -= in_piece;
            start += length;
        }
        let held = self.pieces.last()?.to;
        (held > 0.0 && (start + left / held).is_finite())
            .then(|| Duration::from_secs_f64(start + left / held))
    }

    /// The largest value the schedule reaches.
    pub fn peak(&self) -> f64 {
        self.pieces
            .iter()
            .flat_map(|p| [p.from, p.to])
            .fold(0.0, f64::max)
    }

    /// The one way to cap the stages at a time limit, for every workload model: the schedule
    /// cut to end at `limit`, a piece cut short ending at the value it had reached,
    /// so everything before the cut is unchanged.
    pub fn cap_at(&self, limit: Duration) -> Stages {
        let mut kept = Vec::new();
        let mut start = Duration::ZERO;
        for piece in &self.pieces {
            if start >= limit {
                break;
            }
            let room = limit - start;
            kept.push(if piece.duration <= room {
                *piece
            } else {
                Piece {
                    duration: room,
                    from: piece.from,
                    to: piece.value_at(room),
                }
            });
            start += piece.duration;
        }
        Stages { pieces: kept }
    }

    /// Every value multiplied by `factor` (durations unchanged).
    pub fn scale(&self, factor: f64) -> Stages {
        Stages {
            pieces: self
                .pieces
                .iter()
                .map(|p| Piece {
                    duration: p.duration,
                    from: p.from * factor,
                    to: p.to * factor,
                })
                .collect(),
        }
    }

    /// The planned value per whole second `0..=last` (the HTML timeline's planned line):
    /// the value at each second while the schedule runs, 0 after it.
    pub fn per_second(&self, last: usize, step: usize) -> Vec<(f64, f64)> {
        let end = self.end();
        (0..=last)
            .step_by(step.max(1))
            .map(|s| {
                let at = Duration::from_secs(s as u64);
                (s as f64, if at < end { self.value_at(at) } else { 0.0 })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    fn ramp() -> Stages {
        // 10 s from 10 to 20, then a jump to 5 held for 10 s.
        Stages::new(vec![
            Piece {
                duration: secs(10),
                from: 10.0,
                to: 20.0,
            },
            Piece {
                duration: secs(10),
                from: 5.0,
                to: 5.0,
            },
        ])
    }

    #[test]
    fn values_interpolate_jump_and_hold() {
        let s = ramp();
        assert_eq!(s.value_at(secs(5)), 15.0);
        assert_eq!(s.value_at(secs(10)), 5.0);
        assert_eq!(s.value_at(secs(99)), 5.0);
        assert_eq!(s.end(), secs(20));
        assert_eq!(s.peak(), 20.0);
    }

    #[test]
    fn integrals_are_areas() {
        let s = ramp();
        assert_eq!(s.total(), 150.0 + 50.0);
        assert_eq!(s.integral(secs(0), secs(5)), 62.5);
        assert_eq!(s.integral(secs(5), secs(15)), 87.5 + 25.0);
        assert_eq!(s.integral(secs(15), secs(99)), 25.0);
        assert_eq!(s.integral(secs(9), secs(3)), 0.0);
    }

    #[test]
    fn caps_cut_where_the_value_stands_and_scales_keep_durations() {
        let s = ramp();
        assert_eq!(
            s.cap_at(secs(5)).pieces,
            vec![Piece {
                duration: secs(5),
                from: 10.0,
                to: 15.0
            }]
        );
        assert_eq!(s.cap_at(secs(15)).end(), secs(15));
        assert_eq!(s.cap_at(secs(60)), s);
        assert_eq!(s.scale(0.5).total(), 100.0);
        assert_eq!(s.scale(0.5).end(), secs(20));
    }

    #[test]
    fn iteration_times_invert_the_area() {
        // A constant 10/s for 4 s: evenly spaced, none at the end; a held rate goes on.
        let constant = Stages::from_targets(10.0, [(secs(4), 10.0)]);
        assert_eq!(constant.time_of(0.0), Some(Duration::ZERO));
        assert_eq!(constant.time_of(3.0), Some(Duration::from_millis(300)));
        assert_eq!(constant.time_of(40.0), Some(secs(4)));
        assert_eq!(
            Stages::constant(100.0).time_of(50.0),
            Some(Duration::from_millis(500))
        );
        // 0 to 100/s over 10 s: N(t) = 5 t², so iteration 125 is due at 5 s.
        let ramp = Stages::from_targets(0.0, [(secs(10), 100.0)]);
        let at = ramp.time_of(125.0).unwrap().as_secs_f64();
        assert!((at - 5.0).abs() < 1e-9, "{at}");
        // A rate that ends at zero never reaches the next one.
        let down = Stages::from_targets(10.0, [(secs(2), 0.0)]);
        assert_eq!(down.time_of(10.0), None);
        assert!(down.time_of(9.0).is_some());
        assert!(!ramp.is_constant() && constant.is_constant());
    }

    #[test]
    fn targets_ramp_from_the_previous_one() {
        let s = Stages::from_targets(0.0, [(secs(10), 50.0), (secs(10), 0.0)]);
        assert_eq!(s.value_at(secs(5)), 25.0);
        assert_eq!(s.value_at(secs(15)), 25.0);
        assert_eq!(
            s.per_second(20, 10),
            vec![(0.0, 0.0), (10.0, 50.0), (20.0, 0.0)]
        );
    }
}
