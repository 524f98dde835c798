//! The engine's side of scripted virtual users (the k6 front end): the trait a VU's iteration
//! body implements, the requests it asks for and the responses it gets back. The engine never
//! sees the script's interpreter: a VU is resumed with an input and yields what it wants
//! next, so a VU suspended in `http.get` costs the worker nothing until its response arrives.

use std::sync::Arc;
use std::time::Duration;

/// A request a scripted VU asks the engine to send.
#[derive(Debug, Clone, Default)]
pub struct ScriptRequest {
    pub method: String,
    /// Absolute `http://` or `https://` URL.
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Overrides the plan's request timeout.
    pub timeout: Option<Duration>,
    /// Redirects to follow (each hop is a request of its own, as in k6); a response that
    /// still redirects after them is the answer.
    pub redirects: u32,
    /// The plan's request tag it is recorded under (0 unless the front end tags it).
    pub tag: usize,
    /// What decides whether each of its responses (redirect hops included) failed.
    pub verdict: ResponseVerdict,
}

/// What judges a scripted request's responses failed or not (k6's response callback).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ResponseVerdict {
    /// [`barrage_metrics::failed_by_default`] (k6's default callback).
    #[default]
    Default,
    /// Only a status in one of these inclusive ranges passes (k6's `http.expectedStatuses`).
    Expected(Arc<[(u16, u16)]>),
    /// No callback: nothing judges its responses, which are then no samples of
    /// `http_req_failed` (k6's `setResponseCallback(null)`).
    Off,
}

impl ResponseVerdict {
    /// Whether a response with `status` (0: the request failed) failed; `None` when
    /// nothing judges it.
    #[inline]
    pub fn failed(&self, status: u16) -> Option<bool> {
        match self {
            ResponseVerdict::Default => {
                Some(status == 0 || barrage_metrics::failed_by_default(status))
            }
            ResponseVerdict::Expected(ranges) => Some(
                !ranges
                    .iter()
                    .any(|&(min, max)| (min..=max).contains(&status)),
            ),
            ResponseVerdict::Off => None,
        }
    }
}

/// Phase timings of a response, k6's `timings` object.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScriptTimings {
    pub connecting: Duration,
    pub tls_handshaking: Duration,
    pub sending: Duration,
    pub waiting: Duration,
    pub receiving: Duration,
    pub duration: Duration,
}

/// What the engine answers a [`ScriptRequest`] with.
#[derive(Debug, Clone, Default)]
pub struct ScriptResponse {
    /// 0 when the request failed (see `error`).
    pub status: u16,
    /// The response headers barrage captures (see [`CAPTURED_HEADERS`]), as received.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub timings: ScriptTimings,
    /// Why the request failed (a timeout, a refused connection, ...), empty when it did not.
    pub error: String,
    /// The URL that answered, when redirects led away from the one asked for.
    pub url: Option<String>,
}

/// The response headers a scripted response carries (k6's `res.headers`): the ones scripts
/// read. Capturing every header would cost every request an allocation per header.
pub const CAPTURED_HEADERS: &[&str] = &[
    "Content-Type",
    "Content-Length",
    "Content-Encoding",
    "Location",
    "Set-Cookie",
    "Server",
    "Date",
    "Cache-Control",
    "ETag",
    "WWW-Authenticate",
    "X-Request-Id",
];

/// What a VU asks of its cookie jar (k6's `http.cookieJar()`); URLs are absolute.
#[derive(Debug, Clone)]
pub enum JarRequest {
    /// Set a cookie as `Set-Cookie: name=value<attributes>` from `url` would.
    Set {
        url: String,
        name: String,
        value: String,
        attributes: String,
    },
    /// The cookies a request to `url` would carry.
    ForUrl { url: String },
}

/// How a VU is resumed.
#[derive(Debug)]
pub enum VuInput {
    /// Start iteration `iteration` (0-based, of this VU).
    Start {
        iteration: u64,
    },
    Response(ScriptResponse),
    /// A sleep it asked for is over.
    Slept,
    /// Its jar request is done: the cookies `JarRequest::ForUrl` asked for, `(name, value)`.
    Cookies(Vec<(String, String)>),
}

/// What a VU wants next.
#[derive(Debug)]
pub enum VuStep {
    Request(ScriptRequest),
    Sleep(Duration),
    /// Use the VU's cookie jar (answered at once, without waiting).
    Jar(JarRequest),
    /// The iteration ended; `false` when it ended by an exception.
    Done {
        ok: bool,
    },
}

/// What a VU recorded while it ran (drained by the engine after each resume).
#[derive(Debug, Clone, PartialEq)]
pub enum VuEvent {
    /// A check named `name` (its group path included) passed or failed.
    Check { name: String, passed: bool },
    /// A sample of the plan's custom metric with this index.
    Metric { index: usize, value: f64 },
}

/// One scripted virtual user: an iteration body the engine drives. It lives on the worker
/// thread that created it and is never shared.
pub trait ScriptedVu {
    /// Resumes the VU; returns what it wants next.
    fn resume(&mut self, input: VuInput) -> VuStep;
    /// Hands over (and forgets) the events recorded since the last call.
    fn drain_events(&mut self, into: &mut dyn FnMut(VuEvent));
}

/// Creates scripted VUs on worker threads (shared by the run's workers).
pub trait VuFactory: Send + Sync + std::fmt::Debug {
    /// A new VU, created on the calling worker thread (the factory numbers its VUs, k6's
    /// `__VU`). A VU may be dropped in the middle of an iteration (the run's hard stop): it
    /// must then wind its iteration down itself.
    fn create(&self) -> Result<Box<dyn ScriptedVu>, String>;
    /// Called once as the run starts with its stop signal (a script may stop the test
    /// itself, k6's `test.abort()`).
    fn attach(&self, _stop: &Arc<crate::control::StopSignal>) {}
    /// A factory whose VU runs the script's `phase` as its one iteration, when the script
    /// has that stage (k6's `setup()` and `teardown()`).
    fn phase(&self, _phase: Phase) -> Option<SharedVuFactory> {
        None
    }
}

/// The stages a scripted test may run once around its load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Setup,
    Teardown,
}

/// A run's scripted body, when its iterations are scripts rather than plan sessions.
pub type SharedVuFactory = Arc<dyn VuFactory>;
