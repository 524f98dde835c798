//! HAR recordings as a front end: reading HAR 1.2 files (`model`), reading them as flows to
//! replay (`recording`), automatic correlation (`correlate`), and compiling them into a DSL
//! test case (`convert`) or directly into a plan (`replay`); writing them (`writer`) for
//! `barrage record`; `timestamps` finds recorded times to shift.

pub mod convert;
pub mod correlate;
pub mod model;
pub mod recording;
pub mod replay;
pub mod timestamps;
pub mod writer;

pub use convert::{convert, ConvertOptions, Converted};
pub use correlate::{Correlation, FlowCorrelation};
pub use model::{parse_har, read_har, Har, HarError};
pub use recording::{Flow, HostMap, RecordedRequest, RecordedResponse, Recording};
pub use replay::{replay_plan, JwtOptions, ReplayOptions, Transforms, REPLAY_GRACE};
pub use writer::{CapturedBody, Exchange, HarWriter};
