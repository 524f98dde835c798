//! The machine a run was made on (hostname, CPUs, kernel), for the report's configuration table.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    pub hostname: String,
    /// CPUs this process could run on.
    pub cpus: usize,
    pub os: String,
    /// Kernel release (Linux: /proc/sys/kernel/osrelease); empty where unknown.
    pub kernel: String,
}

fn proc_text(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

impl Machine {
    /// Describes this machine; unknown facts are left empty rather than failing the run.
    pub fn current() -> Self {
        Self {
            hostname: proc_text("/proc/sys/kernel/hostname")
                .or_else(|| std::env::var("HOSTNAME").ok())
                .unwrap_or_default(),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            os: std::env::consts::OS.to_string(),
            kernel: proc_text("/proc/sys/kernel/osrelease").unwrap_or_default(),
        }
    }
}
