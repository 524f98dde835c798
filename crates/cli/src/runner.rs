//! Runs a plan for any command: the engine on its own thread, with live progress on a TTY and
//! Ctrl-C handling (first: stop and report what was done; second: exit at once).

use crate::usage::{exit, usage};
use barrage_engine::{LiveSnapshot, RunControl};
use barrage_plan::{Plan, Workload};
use barrage_report::{PlannedArrivals, RunInfo, Summary};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

const PROGRESS_TICK: Duration = Duration::from_millis(250);

/// A finished run, summarised.
pub struct Finished {
    pub summary: Summary,
}

/// Whether live progress should be drawn: only for a person watching a terminal.
pub fn progress_wanted() -> bool {
    std::io::stdout().is_terminal() && std::io::stderr().is_terminal()
}

/// Runs `plan` to its end (or to Ctrl-C) and summarises it.
pub fn execute(plan: &Plan, show_progress: bool) -> anyhow::Result<Finished> {
    // Bad TLS input (an unreadable --cacert, a key that does not match) is a usage error,
    // found before any load starts.
    barrage_engine::connector(plan).map_err(|e| usage(format!("TLS: {e}")))?;
    let control = RunControl::default();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    let engine = {
        let (plan, control) = (plan.clone(), control.clone());
        std::thread::Builder::new()
            .name("barrage-engine".into())
            .spawn(move || {
                let result = barrage_engine::run(&plan, &control);
                let _ = done_tx.send(());
                result
            })?
    };
    let progress = show_progress.then(|| Progress::new(plan.workload.duration()));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut done = done_rx;
        let mut ticker = tokio::time::interval(PROGRESS_TICK);
        let mut interrupts = 0;
        loop {
            tokio::select! {
                _ = &mut done => break,
                _ = ticker.tick() => {
                    if let Some(p) = &progress {
                        p.update(control.live.snapshot());
                    }
                }
                signal = tokio::signal::ctrl_c() => {
                    if signal.is_err() {
                        continue;
                    }
                    interrupts += 1;
                    if interrupts >= 2 {
                        eprintln!("\ninterrupted twice: exiting without a summary");
                        std::process::exit(exit::INTERRUPTED_TWICE);
                    }
                    eprintln!("\ninterrupted: stopping, the summary covers what was done (Ctrl-C again to quit at once)");
                    control.stop.stop();
                }
            }
        }
    });
    if let Some(p) = progress {
        p.finish();
    }
    let outcome = engine
        .join()
        .map_err(|_| anyhow::anyhow!("the engine thread panicked"))??;
    let info = RunInfo {
        name: plan.name.clone(),
        target: plan.target.to_string(),
        started_at: outcome.started_at,
        elapsed: outcome.elapsed,
        interrupted: outcome.interrupted,
        threads: outcome.threads,
        tags: plan.tags.clone(),
        planned_arrivals: match &plan.workload {
            Workload::OpenArrivals(open) => Some(PlannedArrivals {
                expected: open.phases.iter().map(|p| p.expected_arrivals()).sum(),
                seconds: open.arrivals_end().as_secs_f64(),
            }),
            _ => None,
        },
    };
    let summary = Summary::new(&info, &outcome.metrics);
    Ok(Finished { summary })
}

/// The live progress line: elapsed (of planned), requests, current rate, errors, clients.
struct Progress {
    bar: ProgressBar,
    planned: Option<Duration>,
    started: Instant,
    last: std::cell::Cell<(Instant, u64)>,
}

impl Progress {
    fn new(planned: Option<Duration>) -> Self {
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        let now = Instant::now();
        Self {
            bar,
            planned,
            started: now,
            last: std::cell::Cell::new((now, 0)),
        }
    }

    fn update(&self, live: LiveSnapshot) {
        let now = Instant::now();
        let (last_at, last_count) = self.last.get();
        let done = live.responses + live.errors;
        let window = now.duration_since(last_at).as_secs_f64();
        let rate = if window > 0.0 {
            (done - last_count.min(done)) as f64 / window
        } else {
            0.0
        };
        self.last.set((now, done));
        let elapsed = now.duration_since(self.started).as_secs_f64();
        let of = self
            .planned
            .map_or(String::new(), |p| format!("/{:.0}s", p.as_secs_f64()));
        self.bar.set_message(format!(
            "{elapsed:.1}s{of}  requests {done}  rate {rate:.0}/s  errors {}  clients {}",
            live.errors, live.active_clients
        ));
        self.bar.tick();
    }

    fn finish(self) {
        self.bar.finish_and_clear();
    }
}
