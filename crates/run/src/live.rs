//! Live work on merged snapshots while a run goes on: the `--out ndjson` stream (each second
//! once it is complete), the live metric exports (`--out prometheus-rw`/`otlp`, see
//! barrage-stream) and `abortOnFail` thresholds (a failure stops the run gracefully).

use crate::progress::SnapshotStatus;
use anyhow::Context;
use barrage_engine::RunControl;
use barrage_metrics::RunMetrics;
use barrage_plan::Plan;
use barrage_report::{abort_reason, ndjson_line};
use barrage_stream::LiveExports;
use std::fs::File;
use std::io::{BufWriter, Write};

/// Live work on merged snapshots: the NDJSON stream and `abortOnFail` thresholds.
pub struct Live<'a> {
    pub plan: &'a Plan,
    pub ndjson: Option<BufWriter<File>>,
    pub exports: Option<LiveExports>,
    pub dashboard: Option<barrage_stream::Dashboard>,
    /// What the progress line shows from the snapshots; `Some` when it is drawn.
    pub status: Option<SnapshotStatus>,
    /// The next second to stream.
    pub next_second: usize,
    pub aborted: Option<String>,
}

impl Live<'_> {
    pub fn wanted(&self) -> bool {
        self.ndjson.is_some()
            || self.exports.is_some()
            || self.status.is_some()
            || self.dashboard.is_some()
            || self
                .plan
                .metrics
                .thresholds
                .iter()
                .any(|t| t.rules.iter().any(|r| r.abort_on_fail))
    }

    /// Streams the seconds before `complete` (exclusive).
    pub fn stream(&mut self, metrics: &RunMetrics, complete: usize) -> anyhow::Result<()> {
        if let Some(out) = &mut self.ndjson {
            while self.next_second < complete {
                out.write_all(ndjson_line(metrics, &self.plan.tags, self.next_second).as_bytes())
                    .context("writing the --out ndjson stream")?;
                self.next_second += 1;
            }
            out.flush().context("writing the --out ndjson stream")?;
        }
        Ok(())
    }

    /// Sends the run's final metrics to the exports and prints one warning line per export
    /// that lost batches.
    pub fn finish_exports(&mut self, metrics: &RunMetrics) {
        if let Some(exports) = self.exports.take() {
            for warning in exports.finish(metrics) {
                eprintln!("{warning}");
            }
        }
    }

    pub fn tick(&mut self, control: &RunControl) -> anyhow::Result<()> {
        let Some(live) = control.snapshots.merged() else {
            return Ok(());
        };
        self.stream(&live.metrics, live.as_of.as_secs() as usize)?;
        if let Some(exports) = &mut self.exports {
            exports.offer(&live.metrics);
        }
        if let Some(dashboard) = &self.dashboard {
            let active = control.live.snapshot().active_clients;
            dashboard.publish(crate::dashboard_frame::frame(
                self.plan,
                &live.metrics,
                live.as_of,
                active,
                false,
            ));
        }
        if let Some(status) = &mut self.status {
            *status =
                SnapshotStatus::of(self.plan, &live.metrics, live.as_of.as_secs(), live.as_of);
        }
        if self.aborted.is_none() && !control.stop.is_stopped() {
            let thresholds = &self.plan.metrics.thresholds;
            if let Some(reason) =
                abort_reason(thresholds, &live.metrics, &self.plan.tags, live.as_of)
            {
                eprintln!("\nstopping: {reason}");
                control.stop.stop();
                self.aborted = Some(reason);
            }
        }
        Ok(())
    }
}
