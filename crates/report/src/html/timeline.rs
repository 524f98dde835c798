//! Figures over time for the HTML charts, from the per-second counters and histograms: rates,
//! exact latency percentiles per time window (histograms merged, never percentiles averaged),
//! requests in flight, and planned arrivals.

use barrage_metrics::{LatencyHistogram, RunMetrics, SecondBucket};
use barrage_plan::Plan;

/// Most points a line gets; longer runs are drawn in windows of several seconds.
const MAX_POINTS: usize = 1_200;

/// Seconds per drawn point.
pub fn window(seconds: usize) -> usize {
    seconds.div_ceil(MAX_POINTS).max(1)
}

/// `(window start s, per-second average)` of a counter.
pub fn rate(buckets: &[SecondBucket], field: impl Fn(&SecondBucket) -> u64) -> Vec<(f64, f64)> {
    let w = window(buckets.len());
    buckets
        .chunks(w)
        .enumerate()
        .map(|(i, chunk)| {
            let sum: u64 = chunk.iter().map(&field).sum();
            ((i * w) as f64, sum as f64 / chunk.len() as f64)
        })
        .collect()
}

/// Requests in flight on average, by Little's law: latency-seconds accumulated per second.
pub fn in_flight(buckets: &[SecondBucket]) -> Vec<(f64, f64)> {
    let w = window(buckets.len());
    buckets
        .chunks(w)
        .enumerate()
        .map(|(i, chunk)| {
            let sum: u64 = chunk.iter().map(|b| b.latency_sum_us).sum();
            ((i * w) as f64, sum as f64 / 1e6 / chunk.len() as f64)
        })
        .collect()
}

/// Latency percentiles (ms) per window for a set of tags: p50, p90, p99, max.
#[derive(Debug, Default)]
pub struct LatencyLines {
    pub p50: Vec<(f64, f64)>,
    pub p90: Vec<(f64, f64)>,
    pub p99: Vec<(f64, f64)>,
    pub max: Vec<(f64, f64)>,
}

impl LatencyLines {
    fn push(&mut self, x: f64, h: &LatencyHistogram) {
        if h.is_empty() {
            return;
        }
        let ms = |us: u64| us as f64 / 1e3;
        self.p50.push((x, ms(h.percentile_micros(50.0))));
        self.p90.push((x, ms(h.percentile_micros(90.0))));
        self.p99.push((x, ms(h.percentile_micros(99.0))));
        self.max.push((x, ms(h.max_micros())));
    }
}

/// Percentile lines of all tags together and of each tag (only when there are several),
/// decoding each tag-second once.
pub fn latency_lines(metrics: &RunMetrics) -> (LatencyLines, Vec<LatencyLines>) {
    let tags = metrics.tags.len();
    let per_tag_wanted = tags > 1;
    let seconds = metrics
        .tags
        .iter()
        .map(|t| t.latency_by_second.len())
        .max()
        .unwrap_or(0);
    let w = window(seconds);
    let mut all_lines = LatencyLines::default();
    let mut tag_lines: Vec<LatencyLines> = (0..tags)
        .filter(|_| per_tag_wanted)
        .map(|_| LatencyLines::default())
        .collect();
    let mut all = LatencyHistogram::new();
    let mut tag_window = LatencyHistogram::new();
    for start in (0..seconds).step_by(w) {
        all.reset();
        let x = start as f64;
        for (t, tag) in metrics.tags.iter().enumerate() {
            tag_window.reset();
            let end = (start + w).min(tag.latency_by_second.len());
            for second in start..end {
                if let Some(h) = tag.latency_by_second.decoded_if_any(second as u64) {
                    all.merge(&h);
                    if per_tag_wanted {
                        if w == 1 {
                            tag_lines[t].push(x, &h);
                        } else {
                            tag_window.merge(&h);
                        }
                    }
                }
            }
            if per_tag_wanted && w > 1 {
                tag_lines[t].push(x, &tag_window);
            }
        }
        all_lines.push(x, &all);
    }
    (all_lines, tag_lines)
}

/// The planned arrival rate per second, from the plan's planned arrivals (open arrivals and
/// arrival rates served by a pool, a segment's share of them: [`Plan::planned_arrivals`],
/// the runner's source too).
pub fn planned_arrivals(plan: &Plan, seconds: usize) -> Option<Vec<(f64, f64)>> {
    let schedule = plan.planned_arrivals()?;
    let last = (schedule.end().as_secs_f64().ceil() as usize)
        .max(seconds)
        .min(86_400);
    Some(schedule.per_second(last, window(last)))
}

/// `(low ms, high ms, count)` bins spaced evenly on a log scale between the fastest and the
/// slowest response (the HdrHistogram plot's bar form).
pub fn log_bins(histogram: &LatencyHistogram, bins: usize) -> Vec<(f64, f64, u64)> {
    if histogram.is_empty() {
        return Vec::new();
    }
    let low = (histogram.min_micros().max(1) as f64).log10();
    let high = (histogram.max_micros().max(1) as f64)
        .log10()
        .max(low + 0.01);
    let step = (high - low) / bins as f64;
    let mut out: Vec<(f64, f64, u64)> = (0..bins)
        .map(|i| {
            let a = 10f64.powf(low + step * i as f64) / 1e3;
            let b = 10f64.powf(low + step * (i + 1) as f64) / 1e3;
            (a, b, 0)
        })
        .collect();
    for (value, count) in histogram.recorded() {
        let position = ((value.max(1) as f64).log10() - low) / step;
        let index = (position.max(0.0) as usize).min(bins - 1);
        out[index].2 += count;
    }
    out
}

/// The percentile curve: `(log10(1 / (1 - q)), latency ms)` for every distinct value, the
/// last point (q = 1) placed one decade past the second-to-last.
pub fn percentile_curve(histogram: &LatencyHistogram) -> Vec<(f64, f64)> {
    let total = histogram.count();
    if total == 0 {
        return Vec::new();
    }
    let cap = (total as f64).log10().max(1.0);
    let mut seen = 0u64;
    let mut points = vec![(0.0, histogram.min_micros() as f64 / 1e3)];
    for (value, count) in histogram.recorded() {
        seen += count;
        let q = seen as f64 / total as f64;
        let x = if seen == total {
            cap
        } else {
            (1.0 / (1.0 - q)).log10().min(cap)
        };
        points.push((x, value as f64 / 1e3));
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn percentile_curve_rises_to_the_maximum() {
        let mut h = LatencyHistogram::new();
        for v in 1..=1000u64 {
            h.record_micros(v * 10);
        }
        let curve = percentile_curve(&h);
        assert!(curve
            .windows(2)
            .all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
        let last = curve.last().unwrap();
        assert!((last.1 - 10.0).abs() < 0.02, "{last:?}");
        assert!((last.0 - 3.0).abs() < 1e-9);
        let bins = log_bins(&h, 20);
        assert_eq!(bins.iter().map(|b| b.2).sum::<u64>(), 1000);
    }

    #[test]
    fn window_percentiles_come_from_merged_histograms() {
        let mut metrics = RunMetrics::new(2);
        let mut by_hand = [LatencyHistogram::new(), LatencyHistogram::new()];
        for i in 0..4_000u64 {
            let micros = if i % 2 == 0 { 100 + i % 50 } else { 5_000 + i };
            metrics.record_response(&barrage_metrics::ResponseRecord {
                tag: (i % 2) as usize,
                second: i / 2_000,
                latency: Duration::from_micros(micros),
                phases: Default::default(),
                status: 200,
                bytes_sent: 1,
                bytes_received: 1,
                body_bytes: 0,
                decoded_body_bytes: 0,
                expected_interval: None,
            });
            by_hand[(i / 2_000) as usize].record_micros(micros);
        }
        let (all, tags) = latency_lines(&metrics);
        assert_eq!(all.p50.len(), 2);
        for (second, h) in by_hand.iter().enumerate() {
            assert_eq!(all.p90[second].1, h.percentile_micros(90.0) as f64 / 1e3);
            assert_eq!(all.max[second].1, h.max_micros() as f64 / 1e3);
        }
        // Tag 0 alone is fast: its p99 is far below the merged one's.
        assert!(
            tags[0].p99[0].1 < 1.0 && all.p99[0].1 > 5.0,
            "{:?} {:?}",
            tags[0].p99,
            all.p99
        );
    }

    #[test]
    fn long_runs_are_windowed() {
        assert_eq!(window(60), 1);
        assert_eq!(window(3_600), 3);
        let buckets = vec![
            SecondBucket {
                responses: 10,
                ..SecondBucket::default()
            };
            2_400
        ];
        let r = rate(&buckets, |b| b.responses);
        assert_eq!(r.len(), 1_200);
        assert_eq!(r[1], (2.0, 10.0));
    }
}
