//! The search: step the load by the growth rule until the SLO breaks, confirm the breach,
//! bisect between the last good and the first bad step to the stated precision, and say
//! whose limit it was — the target's, or the generator's own.

use crate::growth::Growth;
use crate::measure::{generator_limit, Counts, Measure, Window};
use crate::slo::{Observed, Slo};
use barrage_metrics::LatencyHistogram;
use serde::{Deserialize, Serialize};

/// What the search steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadKind {
    /// Arrivals (iterations started) per second: open models.
    Rate,
    /// Virtual users: closed models (whole numbers).
    Vus,
}

impl LoadKind {
    pub fn unit(self) -> &'static str {
        match self {
            LoadKind::Rate => "/s",
            LoadKind::Vus => " VUs",
        }
    }

    pub fn text(self, load: f64) -> String {
        match self {
            LoadKind::Rate if load.fract().abs() > 1e-9 => format!("{load:.1}/s"),
            LoadKind::Rate => format!("{load:.0}/s"),
            LoadKind::Vus => format!("{load:.0} VUs"),
        }
    }
}

/// The search's settings, as the flags gave them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    pub slo: Slo,
    pub kind: LoadKind,
    pub start: f64,
    pub growth: Growth,
    pub max: f64,
    pub window: Window,
    /// Bisection stops when the gap between the last good and first bad load is at most this
    /// share of the bad one (0.05 = 5 %).
    pub precision: f64,
    /// Runs per measured step.
    pub repeat: u32,
}

/// Why a configuration cannot run; each names its flag.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ConfigError {
    #[error("--max ({max}) is below --start ({start})")]
    MaxBelowStart { start: f64, max: f64 },
    #[error("--start must be greater than 0, got {0}")]
    Start(f64),
    #[error("--precision must be a percentage above 0 and below 100, got {0}")]
    Precision(f64),
    #[error("--repeat must be 1 to 100, got {0}")]
    Repeat(u32),
    #[error("--measure must be at least one second")]
    Measure,
}

impl Config {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(self.start.is_finite() && self.start > 0.0) {
            return Err(ConfigError::Start(self.start));
        }
        if self.max.is_nan() || self.max < self.start {
            return Err(ConfigError::MaxBelowStart {
                start: self.start,
                max: self.max,
            });
        }
        if !(self.precision > 0.0 && self.precision < 1.0) {
            return Err(ConfigError::Precision(self.precision * 100.0));
        }
        if !(1..=100).contains(&self.repeat) {
            return Err(ConfigError::Repeat(self.repeat));
        }
        if self.window.measure_s == 0 {
            return Err(ConfigError::Measure);
        }
        Ok(())
    }

    fn whole(&self) -> bool {
        self.kind == LoadKind::Vus
    }
}

/// Why a step was run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A step of the growth rule.
    Ladder,
    /// The first breach, run again to rule out a fluke.
    Confirm,
    /// Between the last good and the first bad step.
    Bisect,
}

/// min–median–max of one figure over a step's repeats, and the spread, (max − min) / median.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Band {
    pub min: f64,
    pub median: f64,
    pub max: f64,
    pub spread_percent: f64,
}

impl Band {
    pub fn of(values: impl IntoIterator<Item = f64>) -> Band {
        let mut v: Vec<f64> = values.into_iter().collect();
        v.sort_by(f64::total_cmp);
        if v.is_empty() {
            return Band {
                min: 0.0,
                median: 0.0,
                max: 0.0,
                spread_percent: 0.0,
            };
        }
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        let (min, max) = (v[0], v[n - 1]);
        Band {
            min,
            median,
            max,
            spread_percent: if median == 0.0 {
                0.0
            } else {
                (max - min) / median * 100.0
            },
        }
    }
}

/// The bands of a step's repeats.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bands {
    /// Responses per second.
    pub throughput: Band,
    pub p99_ms: Band,
    pub error_percent: Band,
}

/// The generator, not the target, limited this step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GeneratorLimit {
    pub reason: String,
    pub fix: String,
}

/// One step: its repeats, the figures of their merged windows, and the SLO's verdict on them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Level {
    pub load: f64,
    pub role: Role,
    pub runs: Vec<Measure>,
    /// Every repeat's window merged (histograms exactly): what the SLO is judged on.
    pub merged: Measure,
    pub bands: Bands,
    pub met: bool,
    pub breaches: Vec<String>,
    pub generator_limit: Option<GeneratorLimit>,
}

impl Level {
    /// Judges the repeats of one step.
    pub fn judge(load: f64, role: Role, runs: Vec<Measure>, config: &Config) -> Level {
        let mut histogram = LatencyHistogram::new();
        let mut counts = Counts::default();
        for run in &runs {
            histogram.merge(&run.histogram());
            counts.requests += run.requests;
            counts.responses += run.responses;
            counts.failed += run.failed;
            counts.interrupted += run.interrupted;
        }
        let seconds = config.window.measure_s as f64 * runs.len().max(1) as f64;
        // The generator's worst repeat speaks for the step.
        let worst = runs
            .iter()
            .max_by(|a, b| {
                (a.generator.max_worker_cpu_percent + a.generator.tick_p99_us as f64 / 1e3)
                    .total_cmp(
                        &(b.generator.max_worker_cpu_percent
                            + b.generator.tick_p99_us as f64 / 1e3),
                    )
            })
            .map(|m| m.generator.clone())
            .unwrap_or_else(|| crate::measure::GeneratorCheck {
                max_worker_cpu_percent: 0.0,
                cpu_wait_percent: 0.0,
                lag_p99_us: 0,
                tick_p99_us: 0,
                stalls: 0,
                ticks: 0,
                fd_errors: 0,
                dropped: 0,
                untrusted: Vec::new(),
            });
        let started = runs.first().map_or(0, |r| r.started_at_unix_ns);
        let mut merged = Measure::from_histogram(load, started, &histogram, counts, seconds, worst);
        merged.overrun_ms = runs.iter().map(|r| r.overrun_ms).max().unwrap_or(0);
        let breaches = config.slo.breaches(&Observed {
            latency: &histogram,
            requests: counts.requests,
            failed: counts.failed,
        });
        let generator_limit = runs
            .iter()
            .find_map(|r| generator_limit(&r.generator, &config.slo))
            .map(|(reason, fix)| GeneratorLimit { reason, fix });
        Level {
            load,
            role,
            bands: Bands {
                throughput: Band::of(runs.iter().map(|r| r.throughput)),
                p99_ms: Band::of(runs.iter().map(|r| r.p99_us as f64 / 1e3)),
                error_percent: Band::of(runs.iter().map(Measure::error_percent)),
            },
            runs,
            merged,
            met: breaches.is_empty(),
            breaches,
            generator_limit,
        }
    }
}

/// What the search concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The target broke the SLO above the knee: its capacity.
    TargetCapacity,
    /// The generator's own limit (CPU, timer lag, file descriptors) broke the SLO: the knee
    /// is a lower bound of the target's capacity.
    GeneratorBound,
    /// The SLO held up to `--max`.
    HeldToMax,
    /// The SLO broke at `--start` already.
    BrokenAtStart,
}

/// How a search ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// It ran to its verdict.
    #[default]
    Finished,
    /// A stop signal ended it: the steps done so far, no verdict to go green on.
    Stopped,
}

/// A finished search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Search {
    pub config: Config,
    /// Every step run, in order.
    pub levels: Vec<Level>,
    pub verdict: Verdict,
    /// The highest load that met the SLO (an index into `levels`).
    pub knee: Option<usize>,
    /// The lowest load that broke it, confirmed.
    pub first_bad: Option<usize>,
    /// One line: what was found.
    pub conclusion: String,
    /// What to change when the generator was the limit.
    pub fix: Option<String>,
    /// Finished, or stopped by a signal (files written before this field read as finished).
    #[serde(default)]
    pub outcome: Outcome,
}

impl Search {
    pub fn knee_level(&self) -> Option<&Level> {
        self.knee.map(|i| &self.levels[i])
    }

    /// The knee's load (0 when nothing met the SLO).
    pub fn capacity(&self) -> f64 {
        self.knee_level().map_or(0.0, |l| l.load)
    }

    /// A stop signal ended the search: said in its outcome and its conclusion.
    pub fn mark_stopped(&mut self) {
        if self.outcome != Outcome::Stopped {
            self.outcome = Outcome::Stopped;
            self.conclusion = format!("stopped before the end: {}", self.conclusion);
        }
    }
}

/// Runs one step once: the plan at `load` for warm-up plus measurement, measured over the
/// window. The CLI runs the real engine; tests run a model.
pub trait StepRunner {
    type Error;
    fn run_step(&mut self, load: f64) -> Result<Measure, Self::Error>;
    /// A stop signal ended a step: the search ends with what it has.
    fn stopped(&self) -> bool {
        false
    }
}

/// Runs `config.repeat` runs of `load` and judges them; `None` when a stop signal came.
fn measure_level<R: StepRunner>(
    config: &Config,
    runner: &mut R,
    load: f64,
    role: Role,
) -> Result<Option<Level>, R::Error> {
    let mut runs = Vec::new();
    for _ in 0..config.repeat {
        runs.push(runner.run_step(load)?);
        if runner.stopped() {
            return Ok(None);
        }
    }
    Ok(Some(Level::judge(load, role, runs, config)))
}

/// The whole ladder from `--start` to `--max`, no decision on the way: what segments run,
/// so that every segment runs the same steps at the same times whatever its share shows.
/// The knee is found on the merged steps (`file::merge`), to the ladder's granularity.
pub fn ladder<R: StepRunner>(
    config: Config,
    runner: &mut R,
    mut on_level: impl FnMut(&Level),
) -> Result<Search, R::Error> {
    let whole = config.whole();
    let round = |x: f64| if whole { x.round().max(1.0) } else { x };
    let (mut load, max) = (round(config.start), round(config.max));
    let mut levels = Vec::new();
    loop {
        let Some(level) = measure_level(&config, runner, load, Role::Ladder)? else {
            break;
        };
        on_level(&level);
        levels.push(level);
        if load >= max {
            break;
        }
        load = config.growth.next(load, whole).min(max);
    }
    let mut found = conclude_levels(config, levels);
    if runner.stopped() {
        found.mark_stopped();
    }
    Ok(found)
}

/// Searches for the knee. `on_level` sees every step as it is judged (progress lines).
pub fn search<R: StepRunner>(
    config: Config,
    runner: &mut R,
    mut on_level: impl FnMut(&Level),
) -> Result<Search, R::Error> {
    let mut levels: Vec<Level> = Vec::new();
    let mut stopped = false;
    // Ok(None): a stop signal ended the step.
    let mut measure =
        |load: f64, role: Role, levels: &mut Vec<Level>| -> Result<Option<bool>, R::Error> {
            let Some(level) = measure_level(&config, runner, load, role)? else {
                return Ok(None);
            };
            on_level(&level);
            let met = level.met;
            levels.push(level);
            Ok(Some(met))
        };
    let whole = config.whole();
    let round = |x: f64| if whole { x.round().max(1.0) } else { x };
    let mut load = round(config.start);
    let max = round(config.max);
    let (mut good, mut bad): (Option<f64>, Option<f64>) = (None, None);
    'ladder: loop {
        let Some(mut met) = measure(load, Role::Ladder, &mut levels)? else {
            stopped = true;
            break;
        };
        if !met {
            // A breach is confirmed before it counts.
            let Some(confirmed) = measure(load, Role::Confirm, &mut levels)? else {
                stopped = true;
                break 'ladder;
            };
            met = confirmed;
            if !met {
                bad = Some(load);
                break;
            }
        }
        good = Some(load);
        if load >= max {
            break;
        }
        load = config.growth.next(load, whole).min(max);
    }
    if let (Some(mut g), Some(mut b), false) = (good, bad, stopped) {
        while (b - g) / b > config.precision && !(whole && b - g <= 1.0) {
            let mid = round((g + b) / 2.0);
            if mid <= g || mid >= b {
                break;
            }
            match measure(mid, Role::Bisect, &mut levels)? {
                Some(true) => g = mid,
                Some(false) => b = mid,
                None => {
                    stopped = true;
                    break;
                }
            }
        }
        (good, bad) = (Some(g), Some(b));
    }
    let mut found = conclude(config, levels, good, bad);
    if stopped {
        found.mark_stopped();
    }
    Ok(found)
}

/// Concludes from judged steps alone (a merge of segments re-judges every step): a load is
/// bad when every run of it broke the SLO, the knee the highest good load below the lowest
/// bad one.
pub fn conclude_levels(config: Config, levels: Vec<Level>) -> Search {
    let bad = levels
        .iter()
        .filter(|l| !l.met && !levels.iter().any(|o| o.load == l.load && o.met))
        .map(|l| l.load)
        .reduce(f64::min);
    let good = levels
        .iter()
        .filter(|l| l.met && bad.is_none_or(|b| l.load < b))
        .map(|l| l.load)
        .reduce(f64::max);
    conclude(config, levels, good, bad)
}

fn conclude(config: Config, levels: Vec<Level>, good: Option<f64>, bad: Option<f64>) -> Search {
    let find = |load: f64, met: bool| levels.iter().rposition(|l| l.load == load && l.met == met);
    let knee = good.and_then(|g| find(g, true));
    let first_bad = bad.and_then(|b| find(b, false));
    let kind = config.kind;
    let generator_at = |load: f64| {
        // A breach and its confirmation: either one held back by the generator.
        levels
            .iter()
            .filter(|l| l.load == load && !l.met)
            .find_map(|l| l.generator_limit.clone())
    };
    let mut generator = first_bad.and_then(|i| generator_at(levels[i].load));
    let mut first_bad = first_bad;
    let mut undecided = None;
    if let (Some(limit), Some(b)) = (&generator, first_bad) {
        // A higher load broke the SLO with the generator keeping up: that breach is the
        // target's, and the generator-limited step between is undecided.
        let clean = levels
            .iter()
            .enumerate()
            .filter(|(_, l)| !l.met && l.load > levels[b].load && l.generator_limit.is_none())
            .filter(|(_, l)| generator_at(l.load).is_none())
            .min_by(|(_, x), (_, y)| x.load.total_cmp(&y.load))
            .map(|(i, _)| i);
        if let Some(clean) = clean {
            undecided = Some((levels[b].load, limit.reason.clone()));
            first_bad = Some(clean);
            generator = None;
        }
    }
    let knee_text = |i: usize| {
        let l = &levels[i];
        format!(
            "{} ({:.1} req/s, p99 {:.2} ms, {:.2}% failed)",
            kind.text(l.load),
            l.merged.throughput,
            l.merged.p99_us as f64 / 1e3,
            l.merged.error_percent()
        )
    };
    let (verdict, conclusion, fix) = match (knee, first_bad, generator) {
        (_, Some(b), Some(limit)) => (
            Verdict::GeneratorBound,
            format!(
                "generator-bound at {}: {} — not the target's capacity{}",
                kind.text(levels[b].load),
                limit.reason,
                knee.map_or(String::new(), |k| format!(
                    "; the target met the SLO up to {} at least",
                    knee_text(k)
                ))
            ),
            Some(limit.fix),
        ),
        (Some(k), Some(b), None) => (
            Verdict::TargetCapacity,
            format!(
                "target capacity {} — the SLO broke at {}: {}{}",
                knee_text(k),
                kind.text(levels[b].load),
                levels[b].breaches.join(", "),
                undecided
                    .as_ref()
                    .map_or(String::new(), |(load, reason)| format!(
                        " (undecided at {}, where the generator was the limit: {reason})",
                        kind.text(*load)
                    ))
            ),
            None,
        ),
        (None, Some(b), None) => (
            Verdict::BrokenAtStart,
            format!(
                "the SLO broke at the first step, {}: {} (start lower)",
                kind.text(levels[b].load),
                levels[b].breaches.join(", ")
            ),
            None,
        ),
        (Some(k), None, _) => (
            Verdict::HeldToMax,
            format!(
                "the SLO held up to --max, {}: the capacity is higher",
                knee_text(k)
            ),
            None,
        ),
        (None, None, _) => (Verdict::HeldToMax, "no step was run".to_string(), None),
    };
    let conclusion = match levels.iter().find(|l| l.merged.overrun_ms > 0) {
        Some(l) => format!(
            "{conclusion}. WARNING: the step at {} ran {:.1} s past its wall-clock slot: the segments' steps drift apart from there on, and merged steps mix loads (give every step more time, or look at the slowest segment)",
            kind.text(l.load),
            l.merged.overrun_ms as f64 / 1e3
        ),
        None => conclusion,
    };
    Search {
        config,
        levels,
        verdict,
        knee,
        first_bad,
        conclusion,
        fix,
        outcome: Outcome::Finished,
    }
}
