//! k6's defaults and stage words for the workload model (`gracefulStop`, `maxDuration`,
//! `--stages`).

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// k6's default `gracefulStop` and `gracefulRampDown`.
pub const DEFAULT_GRACEFUL_STOP: Duration = Duration::from_secs(30);
/// k6's default `maxDuration` of the iteration-count models.
pub const DEFAULT_MAX_DURATION: Duration = Duration::from_secs(600);

/// One stage of a ramping-VUs workload as k6 writes it (`--stages`): go linearly to
/// `target` VUs over `duration`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VuStage {
    #[serde(with = "crate::duration_ms")]
    pub duration: Duration,
    pub target: u64,
}
