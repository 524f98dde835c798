//! Live metric exports while a run goes on — Prometheus remote write and OTLP/HTTP — fed
//! from the engine's merged snapshots (never from the hot path), pushed by a thread of their
//! own through a bounded queue so a slow or dead endpoint never slows the load.

pub mod dashboard;
mod exports;
pub mod model;
pub mod native_histogram;
pub mod otlp;
pub mod push;
pub mod remote_write;

pub use dashboard::Dashboard;
pub use exports::{default_testid, ExportKind, ExportSpec, LiveExports, SpecError, KINDS};
