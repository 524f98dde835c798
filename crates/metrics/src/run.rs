//! Per-tag and per-run metrics: what one worker records, and the exact merge of many workers.

use crate::{
    CustomMetrics, ErrorKind, LatencyHistogram, SecondLatency, SelfCheckMetrics, Series, VuSeries,
};
use std::time::Duration;

/// Counts of responses by HTTP status code (100–599).
#[derive(Debug, Clone)]
pub struct StatusCounts {
    counts: Box<[u64; 500]>,
}

impl Default for StatusCounts {
    fn default() -> Self {
        Self {
            counts: Box::new([0; 500]),
        }
    }
}

impl StatusCounts {
    #[inline]
    pub fn record(&mut self, status: u16) {
        // The HTTP layer rejects status codes outside 100–599 as malformed.
        if let Some(slot) = self.counts.get_mut(usize::from(status).wrapping_sub(100)) {
            *slot += 1;
        }
    }

    /// Adds `count` responses with `status` (ignored outside 100–599), e.g. when reading
    /// stored counts back.
    pub fn add(&mut self, status: u16, count: u64) {
        if let Some(slot) = self.counts.get_mut(usize::from(status).wrapping_sub(100)) {
            *slot += count;
        }
    }

    pub fn get(&self, status: u16) -> u64 {
        self.counts
            .get(usize::from(status).wrapping_sub(100))
            .copied()
            .unwrap_or(0)
    }

    /// `(status, count)` for every status seen, in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = (u16, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(i, &n)| (i as u16 + 100, n))
    }

    pub fn merge(&mut self, other: &StatusCounts) {
        for (mine, theirs) in self.counts.iter_mut().zip(other.counts.iter()) {
            *mine += theirs;
        }
    }
}

/// How long each phase of one request took (hey's "Details").
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PhaseTimings {
    /// Time to resolve and connect, when this request opened a new connection.
    pub connect: Option<Duration>,
    /// TLS handshake time, when this request opened a new TLS connection.
    pub tls: Option<Duration>,
    /// From starting to write the request to having written all of it.
    pub write: Duration,
    /// From the request written to the first response byte.
    pub wait: Duration,
    /// From the first response byte to the complete response.
    pub read: Duration,
}

/// Everything measured for one tag.
#[derive(Debug, Clone, Default)]
pub struct TagMetrics {
    /// Response latency from the request's intended start to its last byte.
    pub latency: LatencyHistogram,
    /// Closed models only: the latency corrected for coordinated omission (HdrHistogram's
    /// `record_correct` with the VU's mean iteration time as the expected interval).
    pub latency_corrected: LatencyHistogram,
    pub connect: LatencyHistogram,
    /// TLS handshakes (`http_req_tls_handshaking`).
    pub tls: LatencyHistogram,
    pub write: LatencyHistogram,
    pub wait: LatencyHistogram,
    pub read: LatencyHistogram,
    pub status: StatusCounts,
    pub errors: [u64; ErrorKind::COUNT],
    pub bytes_sent: u64,
    /// Response bytes on the wire: head and body.
    pub bytes_received: u64,
    /// Response body bytes as received.
    pub body_bytes: u64,
    /// Response body bytes after content decoding (gzip, deflate, br).
    pub decoded_body_bytes: u64,
    /// Extractions (JSONPath, regexp, header) of this tag's responses that found nothing; the
    /// variable stays unset.
    pub extraction_failures: u64,
    /// The same, second by second.
    pub series: Series,
    /// Response latency second by second (finished seconds kept compressed).
    pub latency_by_second: SecondLatency,
    /// Response latency per status code, by status, when the run keeps it
    /// ([`RunMetrics::latency_by_status`]: a threshold filters latency by status).
    pub latency_by_status: Vec<(u16, LatencyHistogram)>,
    /// Responses a script's response callback judged otherwise than [`failed_by_default`].
    pub verdicts: VerdictOverrides,
}

/// Whether a response with `status` failed by default: k6's default response callback,
/// `http.expectedStatuses({min: 200, max: 399})`, as barrage counts it (interim 1xx
/// responses never end a request). The one definition of a failed response.
#[inline]
pub fn failed_by_default(status: u16) -> bool {
    status >= 400
}

/// Responses whose verdict a script's response callback (k6's `http.setResponseCallback`,
/// `params.responseCallback`) turned around; the rest are judged by [`failed_by_default`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VerdictOverrides {
    /// Failed although their status passes by default (e.g. a 200 not in `expectedStatuses`).
    pub failed: u64,
    /// Passed although they fail by default (e.g. a 404 in `expectedStatuses`), or not
    /// judged though they would fail by default.
    pub passed: u64,
    /// Judged by no callback (k6's `setResponseCallback(null)`, `responseCallback: null`):
    /// neither failed nor passed, not among `http_req_failed`'s samples.
    pub unjudged: u64,
}

impl VerdictOverrides {
    pub fn merge(&mut self, other: &VerdictOverrides) {
        self.failed += other.failed;
        self.passed += other.passed;
        self.unjudged += other.unjudged;
    }
}

impl TagMetrics {
    /// Responses received (any status).
    pub fn responses(&self) -> u64 {
        self.latency.count()
    }

    /// Failed requests (those the run's end interrupted are not failures, see
    /// [`TagMetrics::interrupted`]).
    pub fn error_count(&self) -> u64 {
        self.errors.iter().sum::<u64>() - self.interrupted()
    }

    /// Requests that failed as k6's `http_req_failed` counts them: an error, or a response
    /// [`failed_by_default`], as a script's response callback judged otherwise (see
    /// [`TagMetrics::verdicts`]).
    pub fn failed_requests(&self) -> u64 {
        let by_default: u64 = self
            .status
            .iter()
            .filter(|(s, _)| failed_by_default(*s))
            .map(|(_, n)| n)
            .sum();
        (self.error_count() + by_default + self.verdicts.failed)
            .saturating_sub(self.verdicts.passed)
    }

    /// Requests that ended, with a response or an error.
    pub fn requests(&self) -> u64 {
        self.responses() + self.error_count()
    }

    /// `http_req_failed`'s rate: failed requests among those judged (0 when none were).
    pub fn failed_rate(&self) -> f64 {
        match self.judged_requests() {
            0 => 0.0,
            judged => self.failed_requests() as f64 / judged as f64,
        }
    }

    /// Requests judged failed or not: `http_req_failed`'s samples (all requests but those a
    /// script's null response callback left unjudged).
    pub fn judged_requests(&self) -> u64 {
        self.requests().saturating_sub(self.verdicts.unjudged)
    }

    /// Requests cut off by the run's end, never answered.
    pub fn interrupted(&self) -> u64 {
        self.errors[ErrorKind::Interrupted.index()]
    }

    /// `(kind, count)` for every error kind seen.
    pub fn errors_by_kind(&self) -> impl Iterator<Item = (ErrorKind, u64)> + '_ {
        ErrorKind::ALL
            .iter()
            .filter(|&&k| k != ErrorKind::Interrupted)
            .map(|&k| (k, self.errors[k.index()]))
            .filter(|&(_, n)| n > 0)
    }

    pub fn merge(&mut self, other: &TagMetrics) {
        self.merge_totals(other);
        self.latency_by_second.merge(&other.latency_by_second);
    }

    /// Merges everything but the per-second latency histograms (whose merge decodes and
    /// re-encodes every second): what reports of all tags together need.
    /// The latency histogram of responses with `status`, added when first needed.
    pub fn status_latency_mut(&mut self, status: u16) -> &mut LatencyHistogram {
        let at = match self
            .latency_by_status
            .binary_search_by_key(&status, |(s, _)| *s)
        {
            Ok(at) => at,
            Err(at) => {
                self.latency_by_status
                    .insert(at, (status, LatencyHistogram::default()));
                at
            }
        };
        &mut self.latency_by_status[at].1
    }

    /// The latency of responses whose status `matches`, merged (exact).
    pub fn latency_where(&self, matches: impl Fn(u16) -> bool) -> LatencyHistogram {
        let mut merged = LatencyHistogram::default();
        for (_, histogram) in self.latency_by_status.iter().filter(|(s, _)| matches(*s)) {
            merged.merge(histogram);
        }
        merged
    }

    pub fn merge_totals(&mut self, other: &TagMetrics) {
        for (status, histogram) in &other.latency_by_status {
            self.status_latency_mut(*status).merge(histogram);
        }
        self.latency.merge(&other.latency);
        self.latency_corrected.merge(&other.latency_corrected);
        self.connect.merge(&other.connect);
        self.tls.merge(&other.tls);
        self.write.merge(&other.write);
        self.wait.merge(&other.wait);
        self.read.merge(&other.read);
        self.status.merge(&other.status);
        for (mine, theirs) in self.errors.iter_mut().zip(other.errors.iter()) {
            *mine += theirs;
        }
        self.bytes_sent += other.bytes_sent;
        self.bytes_received += other.bytes_received;
        self.body_bytes += other.body_bytes;
        self.decoded_body_bytes += other.decoded_body_bytes;
        self.extraction_failures += other.extraction_failures;
        self.verdicts.merge(&other.verdicts);
        self.series.merge(&other.series);
    }
}

/// One completed response, as the engine hands it to [`RunMetrics::record_response`].
#[derive(Debug, Clone, Copy)]
pub struct ResponseRecord {
    pub tag: usize,
    /// Whole seconds since the run started, for the per-second series.
    pub second: u64,
    pub latency: Duration,
    /// Closed models: the sender's expected interval between iterations (zero before it is
    /// known); the corrected histogram also gets the requests a stall kept from being sent.
    /// `None` for models that count from a planned start and need no correction.
    pub expected_interval: Option<Duration>,
    pub phases: PhaseTimings,
    pub status: u16,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub body_bytes: u64,
    /// Body bytes after content decoding (equal to `body_bytes` for identity bodies).
    pub decoded_body_bytes: u64,
}

/// What became of sessions (open model) or iterations (closed models).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SessionCounters {
    pub started: u64,
    /// Ran to their end.
    pub completed: u64,
    /// Ended early by a failed assert or a failed `abort_on_error` request.
    #[serde(default)]
    pub failed: u64,
    /// Still running when the run (or its grace period) ended, and stopped.
    pub interrupted: u64,
    /// Arrivals that could not start because the client limit was reached.
    pub dropped: u64,
}

impl SessionCounters {
    pub fn merge(&mut self, other: &SessionCounters) {
        self.started += other.started;
        self.completed += other.completed;
        self.failed += other.failed;
        self.interrupted += other.interrupted;
        self.dropped += other.dropped;
    }
}

/// Sessions (iterations) started, and arrivals dropped, during one second of the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SessionSecond {
    pub started: u64,
    pub dropped: u64,
}

/// Bounds the per-second session counts to a day, like the other series.
const MAX_SESSION_SECONDS: u64 = 86_400;

/// Pass/fail counts of one check (or assert) of the plan.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CheckCounts {
    pub name: String,
    /// An assert: its failure ended the session.
    pub fatal: bool,
    pub passed: u64,
    pub failed: u64,
    /// For checks that keep them (replay's comparisons with the recording): the first
    /// [`MAX_FAILED_VALUES`] distinct values they failed on, with how often; failures past
    /// those are in `failed` only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_values: Vec<FailedValue>,
}

/// Distinct failing values a check keeps.
pub const MAX_FAILED_VALUES: usize = 8;

/// Bytes of a failing value kept (longer ones are cut at a character boundary).
pub const MAX_FAILED_VALUE_LEN: usize = 1024;

/// A value a check failed on, what it expected then, and how many failures it was.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FailedValue {
    pub expected: String,
    pub actual: String,
    pub count: u64,
}

fn cut(text: &str) -> &str {
    if text.len() <= MAX_FAILED_VALUE_LEN {
        return text;
    }
    let mut end = MAX_FAILED_VALUE_LEN;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

impl CheckCounts {
    pub fn new(name: impl Into<String>, fatal: bool) -> Self {
        Self {
            name: name.into(),
            fatal,
            passed: 0,
            failed: 0,
            failed_values: Vec::new(),
        }
    }

    /// Keeps `count` failures on `actual` where `expected` was wanted (the failures
    /// themselves are counted by [`RunMetrics::record_check`]).
    pub fn add_failed_value(&mut self, expected: &str, actual: &str, count: u64) {
        let (expected, actual) = (cut(expected), cut(actual));
        let same = |v: &&mut FailedValue| v.expected == expected && v.actual == actual;
        if let Some(value) = self.failed_values.iter_mut().find(same) {
            value.count += count;
        } else if self.failed_values.len() < MAX_FAILED_VALUES {
            self.failed_values.push(FailedValue {
                expected: expected.to_string(),
                actual: actual.to_string(),
                count,
            });
        }
    }

    fn merge(&mut self, other: &CheckCounts) {
        self.passed += other.passed;
        self.failed += other.failed;
        for value in &other.failed_values {
            self.add_failed_value(&value.expected, &value.actual, value.count);
        }
    }
}

/// All metrics of a run (or of one worker's share of it).
#[derive(Debug, Clone, Default)]
pub struct RunMetrics {
    pub tags: Vec<TagMetrics>,
    /// Keep latency per status code too ([`TagMetrics::latency_by_status`]).
    pub latency_by_status: bool,
    pub sessions: SessionCounters,
    pub connections_opened: u64,
    /// Of `connections_opened`: those over TLS, and those speaking HTTP/2.
    pub connections_tls: u64,
    pub connections_h2: u64,
    /// One entry per check of the plan, in plan order (sessions in order, steps depth-first);
    /// the engine refers to them by index.
    pub checks: Vec<CheckCounts>,
    /// How long each session (iteration) took, start to end, whatever its ending.
    pub iteration_duration: LatencyHistogram,
    /// The plan's custom metrics, in declaration order.
    pub custom: CustomMetrics,
    /// Active and allocated VUs, second by second.
    pub vus: VuSeries,
    pub self_check: SelfCheckMetrics,
    /// Sessions started and arrivals dropped, second by second (the achieved arrival rate).
    pub sessions_per_second: Vec<SessionSecond>,
}

impl RunMetrics {
    pub fn new(tag_count: usize) -> Self {
        Self {
            tags: (0..tag_count).map(|_| TagMetrics::default()).collect(),
            ..Self::default()
        }
    }

    /// Adds the plan's checks, `(name, fatal)` in plan order, with zero counts.
    pub fn with_checks<N: Into<String>>(
        mut self,
        checks: impl IntoIterator<Item = (N, bool)>,
    ) -> Self {
        self.checks = checks
            .into_iter()
            .map(|(name, fatal)| CheckCounts::new(name, fatal))
            .collect();
        self
    }

    fn session_second(&mut self, second: u64) -> &mut SessionSecond {
        let index = second.min(MAX_SESSION_SECONDS) as usize;
        if self.sessions_per_second.len() <= index {
            self.sessions_per_second
                .resize(index + 1, SessionSecond::default());
        }
        &mut self.sessions_per_second[index]
    }

    /// Counts a session (or iteration) that started in `second`.
    #[inline]
    pub fn record_session_start(&mut self, second: u64) {
        self.sessions.started += 1;
        self.session_second(second).started += 1;
    }

    /// Counts an arrival dropped in `second` (the client limit was reached).
    #[inline]
    pub fn record_session_dropped(&mut self, second: u64) {
        self.sessions.dropped += 1;
        self.session_second(second).dropped += 1;
    }

    /// Keeps the value check `index` just failed on (see [`CheckCounts::failed_values`]).
    pub fn record_failed_value(&mut self, index: usize, expected: &str, actual: &str) {
        self.checks[index].add_failed_value(expected, actual, 1);
    }

    /// Counts one evaluation of check `index`.
    #[inline]
    pub fn record_check(&mut self, index: usize, passed: bool) {
        let check = &mut self.checks[index];
        if passed {
            check.passed += 1;
        } else {
            check.failed += 1;
        }
    }

    /// Records a response callback's verdict on a `tag` request already recorded (a
    /// response or an error) that fails by default when `failed_by_default`: `Some(failed)`,
    /// or `None` when no callback judged it (k6's `setResponseCallback(null)`: it is not
    /// one of `http_req_failed`'s samples). Counted only where it differs from the default.
    #[inline]
    pub fn record_verdict(&mut self, tag: usize, failed_by_default: bool, verdict: Option<bool>) {
        let verdicts = &mut self.tags[tag].verdicts;
        match (verdict, failed_by_default) {
            (Some(true), false) => verdicts.failed += 1,
            (Some(false) | None, true) => verdicts.passed += 1,
            _ => {}
        }
        if verdict.is_none() {
            verdicts.unjudged += 1;
        }
    }

    /// Counts an extraction of a `tag` response that found nothing.
    #[inline]
    pub fn record_extraction_failure(&mut self, tag: usize) {
        self.tags[tag].extraction_failures += 1;
    }

    #[inline]
    pub fn record_response(&mut self, r: &ResponseRecord) {
        let tag = &mut self.tags[r.tag];
        tag.latency.record(r.latency);
        if self.latency_by_status {
            tag.status_latency_mut(r.status).record(r.latency);
        }
        if let Some(interval) = r.expected_interval {
            tag.latency_corrected.record_corrected(r.latency, interval);
        }
        tag.latency_by_second.record_micros(
            r.second,
            r.latency
                .as_micros()
                .min(u128::from(crate::MAX_TRACKABLE_MICROS)) as u64,
        );
        if let Some(connect) = r.phases.connect {
            tag.connect.record(connect);
        }
        if let Some(tls) = r.phases.tls {
            tag.tls.record(tls);
        }
        tag.write.record(r.phases.write);
        tag.wait.record(r.phases.wait);
        tag.read.record(r.phases.read);
        tag.status.record(r.status);
        tag.bytes_sent += r.bytes_sent;
        tag.bytes_received += r.bytes_received;
        tag.body_bytes += r.body_bytes;
        tag.decoded_body_bytes += r.decoded_body_bytes;
        tag.series.record_response(
            r.second,
            r.latency,
            r.status,
            r.bytes_sent,
            r.bytes_received,
        );
    }

    /// A request still open when the run ended (due to start in `second`): sent, never
    /// answered, not an error.
    pub fn record_interrupted(&mut self, tag: usize, second: u64) {
        let tag = &mut self.tags[tag];
        tag.errors[ErrorKind::Interrupted.index()] += 1;
        tag.series.record_interrupted(second);
    }

    #[inline]
    pub fn record_error(&mut self, tag: usize, second: u64, kind: ErrorKind, bytes_sent: u64) {
        let tag = &mut self.tags[tag];
        tag.errors[kind.index()] += 1;
        tag.bytes_sent += bytes_sent;
        tag.series.record_error(second, kind, bytes_sent);
    }

    /// Response bytes of a failed request that arrived before it failed (a timeout, a
    /// reset mid-body): counted as received like any other.
    #[inline]
    pub fn record_error_received(&mut self, tag: usize, second: u64, bytes_received: u64) {
        let tag = &mut self.tags[tag];
        tag.bytes_received += bytes_received;
        tag.series.record_received(second, bytes_received);
    }

    /// Adds `other` into `self` exactly. Tag lists are aligned by index (both come from the
    /// same plan); a longer `other` extends `self`.
    pub fn merge(&mut self, other: &RunMetrics) {
        self.latency_by_status |= other.latency_by_status;
        if self.tags.len() < other.tags.len() {
            self.tags.resize_with(other.tags.len(), TagMetrics::default);
        }
        for (mine, theirs) in self.tags.iter_mut().zip(other.tags.iter()) {
            mine.merge(theirs);
        }
        self.sessions.merge(&other.sessions);
        if self.sessions_per_second.len() < other.sessions_per_second.len() {
            self.sessions_per_second
                .resize(other.sessions_per_second.len(), SessionSecond::default());
        }
        for (mine, theirs) in self
            .sessions_per_second
            .iter_mut()
            .zip(&other.sessions_per_second)
        {
            mine.started += theirs.started;
            mine.dropped += theirs.dropped;
        }
        self.connections_opened += other.connections_opened;
        self.iteration_duration.merge(&other.iteration_duration);
        self.custom.merge(&other.custom);
        self.vus.merge(&other.vus);
        self.self_check.merge(&other.self_check);
        self.connections_tls += other.connections_tls;
        self.connections_h2 += other.connections_h2;
        // Plan checks are aligned by index like tags (names may repeat); checks a script
        // named while it ran can sit at different indices per worker, so an index whose name
        // differs is matched by name; a check `self` lacks is added.
        for (i, theirs) in other.checks.iter().enumerate() {
            let mine = match self.checks.get(i) {
                Some(mine) if mine.name == theirs.name => Some(i),
                _ => self.checks.iter().position(|c| c.name == theirs.name),
            };
            match mine {
                Some(index) => self.checks[index].merge(theirs),
                None => self.checks.push(theirs.clone()),
            }
        }
    }

    /// Moves every per-second figure (requests, latency, sessions, VUs) `seconds` later:
    /// the metrics of a run that started that much after another, on the other's clock, so
    /// merging them adds up what happened in the same wall-clock second. Totals are
    /// unchanged. The caller keeps the series within a day.
    pub fn delay_seconds(&mut self, seconds: usize) {
        if seconds == 0 {
            return;
        }
        for tag in &mut self.tags {
            tag.series.delay(seconds);
            tag.latency_by_second.delay(seconds);
        }
        self.vus.delay(seconds);
        if !self.sessions_per_second.is_empty() {
            let none = std::iter::repeat_n(SessionSecond::default(), seconds);
            self.sessions_per_second.splice(0..0, none);
        }
    }

    /// The per-second series of all tags together.
    pub fn series(&self) -> Series {
        let mut total = Series::default();
        for tag in &self.tags {
            total.merge(&tag.series);
        }
        total
    }

    /// All tags merged into one, without per-second latency histograms (left empty: merge
    /// the tags' seconds where an all-tags figure per second is needed).
    pub fn total(&self) -> TagMetrics {
        let mut total = TagMetrics::default();
        for tag in &self.tags {
            total.merge_totals(tag);
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(tag: usize, second: u64, micros: u64, status: u16) -> ResponseRecord {
        ResponseRecord {
            tag,
            second,
            latency: Duration::from_micros(micros),
            expected_interval: None,
            phases: PhaseTimings {
                connect: micros
                    .is_multiple_of(3)
                    .then(|| Duration::from_micros(micros / 3)),
                tls: None,
                write: Duration::from_micros(1),
                wait: Duration::from_micros(micros / 2),
                read: Duration::from_micros(2),
            },
            status,
            bytes_sent: 40,
            bytes_received: 100,
            body_bytes: 60,
            decoded_body_bytes: 60,
        }
    }

    #[test]
    fn response_callback_verdicts_turn_failed_requests_around_and_merge_exactly() {
        let mut halves = [RunMetrics::new(1), RunMetrics::new(1)];
        for (i, status) in [200, 404, 404, 500, 302, 200].into_iter().enumerate() {
            let half = &mut halves[i % 2];
            half.record_response(&response(0, 0, 10, status));
            // expectedStatuses(404): only 404 passes; a verdict equal to the default
            // rule is not counted.
            half.record_verdict(0, failed_by_default(status), Some(status != 404));
        }
        halves[1].record_error(0, 0, ErrorKind::Timeout, 0);
        // A null callback: a 503 and a reset judged by nobody.
        halves[0].record_response(&response(0, 0, 10, 503));
        halves[0].record_verdict(0, true, None);
        halves[1].record_error(0, 0, ErrorKind::Reset, 0);
        halves[1].record_verdict(0, true, None);
        let [mut all, other] = halves;
        let expected = VerdictOverrides {
            failed: 2,
            passed: 2,
            unjudged: 1,
        };
        assert_eq!(all.tags[0].verdicts, expected);
        all.merge(&other);
        let tag = &all.tags[0];
        let expected = VerdictOverrides {
            failed: 3,
            passed: 4,
            unjudged: 2,
        };
        assert_eq!(tag.verdicts, expected);
        // Failed: 200, 500, 302, 200 and the timeout; the two 404s passed; the 503 and the
        // reset are no samples.
        assert_eq!(tag.failed_requests(), 5);
        assert_eq!(tag.requests(), 9);
        assert_eq!(tag.judged_requests(), 7);
        assert_eq!(tag.failed_rate(), 5.0 / 7.0);
        assert_eq!(TagMetrics::default().failed_rate(), 0.0);
        let mut default = RunMetrics::new(1);
        for status in [200, 404, 404, 500, 302, 200] {
            default.record_response(&response(0, 0, 10, status));
        }
        assert_eq!(default.tags[0].failed_requests(), 3);
    }

    #[test]
    fn latency_per_status_is_kept_when_asked_and_merges_exactly() {
        let mut halves = [RunMetrics::new(1), RunMetrics::new(1)];
        let mut whole = RunMetrics::new(1);
        for m in halves.iter_mut().chain([&mut whole]) {
            m.latency_by_status = true;
        }
        let mut plain = RunMetrics::new(1);
        for i in 0..3000u64 {
            let status = [200, 404, 500][(i % 3) as usize];
            let r = response(0, 0, 100 + i * 7 % 5000, status);
            halves[usize::from(i.is_multiple_of(4))].record_response(&r);
            whole.record_response(&r);
            plain.record_response(&r);
        }
        let mut merged = RunMetrics::new(1);
        for half in &halves {
            merged.merge(half);
        }
        let tag = &merged.tags[0];
        let statuses: Vec<u16> = tag.latency_by_status.iter().map(|(s, _)| *s).collect();
        assert_eq!(statuses, [200, 404, 500]);
        for (mine, theirs) in tag
            .latency_by_status
            .iter()
            .zip(&whole.tags[0].latency_by_status)
        {
            let recorded = |h: &LatencyHistogram| h.recorded().collect::<Vec<_>>();
            assert_eq!(recorded(&mine.1), recorded(&theirs.1));
        }
        let below_500 = tag.latency_where(|s| s < 500);
        assert_eq!(below_500.count(), 2000);
        let all: Vec<_> = tag.latency_where(|_| true).recorded().collect();
        assert_eq!(all, tag.latency.recorded().collect::<Vec<_>>());
        // Not asked for: nothing per status.
        assert!(plain.tags[0].latency_by_status.is_empty());
    }

    #[test]
    fn merging_two_halves_equals_one_recorder() {
        let mut halves = [RunMetrics::new(2), RunMetrics::new(2)];
        let mut whole = RunMetrics::new(2);
        for i in 0..2000u64 {
            let status = if i.is_multiple_of(10) { 500 } else { 200 };
            let r = response((i % 2) as usize, i / 500, 100 + i * 13 % 9000, status);
            halves[usize::from(i.is_multiple_of(3))].record_response(&r);
            whole.record_response(&r);
            if i.is_multiple_of(97) {
                halves[(i % 2) as usize].record_error(0, i / 500, ErrorKind::Timeout, 40);
                whole.record_error(0, i / 500, ErrorKind::Timeout, 40);
            }
        }
        let [mut merged, other] = halves;
        merged.merge(&other);
        for (m, w) in merged.tags.iter().zip(whole.tags.iter()) {
            assert_eq!(m.latency.stats(), w.latency.stats());
            assert_eq!(m.connect.stats(), w.connect.stats());
            assert_eq!(m.errors, w.errors);
            assert_eq!(
                m.status.iter().collect::<Vec<_>>(),
                w.status.iter().collect::<Vec<_>>()
            );
            assert_eq!(
                (m.bytes_sent, m.bytes_received),
                (w.bytes_sent, w.bytes_received)
            );
        }
        assert_eq!(merged.series(), whole.series());
        for (m, w) in merged.tags.iter().zip(whole.tags.iter()) {
            assert_eq!(m.series, w.series);
            assert_eq!(m.latency_by_second.len(), w.latency_by_second.len());
            for second in 0..w.latency_by_second.len() as u64 {
                assert_eq!(
                    m.latency_by_second.decoded(second),
                    w.latency_by_second.decoded(second)
                );
            }
        }
        assert_eq!(merged.total().requests(), 2000 + 21);
    }

    #[test]
    fn checks_sessions_and_extraction_failures_merge_exactly() {
        let checks = [("a", false), ("b", true)];
        let mut one = RunMetrics::new(1).with_checks(checks);
        let mut two = RunMetrics::new(1).with_checks(checks);
        one.record_check(0, true);
        one.record_check(1, false);
        two.record_check(0, false);
        two.record_check(1, false);
        one.record_failed_value(1, "application/json", "text/html");
        two.record_failed_value(1, "application/json", "text/html");
        two.record_extraction_failure(0);
        one.sessions.failed = 2;
        two.sessions.failed = 3;
        one.record_session_start(0);
        two.record_session_start(2);
        two.record_session_dropped(2);
        one.merge(&two);
        assert_eq!(one.sessions.started, 2);
        assert_eq!(one.sessions.dropped, 1);
        assert_eq!(
            one.sessions_per_second,
            vec![
                SessionSecond {
                    started: 1,
                    dropped: 0
                },
                SessionSecond::default(),
                SessionSecond {
                    started: 1,
                    dropped: 1
                }
            ]
        );
        assert_eq!(
            one.checks,
            vec![
                CheckCounts {
                    name: "a".into(),
                    fatal: false,
                    passed: 1,
                    failed: 1,
                    failed_values: vec![],
                },
                CheckCounts {
                    name: "b".into(),
                    fatal: true,
                    passed: 0,
                    failed: 2,
                    failed_values: vec![FailedValue {
                        expected: "application/json".into(),
                        actual: "text/html".into(),
                        count: 2
                    }],
                },
            ]
        );
        assert_eq!(one.sessions.failed, 5);
        assert_eq!(one.tags[0].extraction_failures, 1);
        let mut empty = RunMetrics::new(1);
        empty.merge(&one);
        assert_eq!(empty.checks, one.checks);
    }

    #[test]
    fn failed_values_are_bounded_in_number_and_length() {
        let mut check = CheckCounts::new("c", false);
        for i in 0..20 {
            check.add_failed_value("x", &i.to_string(), 1);
        }
        check.add_failed_value("x", "0", 1);
        assert_eq!(check.failed_values.len(), MAX_FAILED_VALUES);
        assert_eq!(check.failed_values[0].count, 2);
        check.failed_values.clear();
        check.add_failed_value("x", &"é".repeat(MAX_FAILED_VALUE_LEN), 1);
        let kept = &check.failed_values[0].actual;
        assert!(kept.len() <= MAX_FAILED_VALUE_LEN && kept.len() > MAX_FAILED_VALUE_LEN - 2);
    }

    #[test]
    fn delaying_moves_every_per_second_figure_and_keeps_totals() {
        let mut late = RunMetrics::new(1);
        late.record_response(&response(0, 0, 300, 200));
        late.record_response(&response(0, 1, 900, 200));
        late.record_error(0, 1, ErrorKind::Refused, 0);
        late.record_session_start(0);
        late.vus.set(0, 4, 5);
        let totals = late.total().requests();
        late.delay_seconds(2);
        assert_eq!(late.total().requests(), totals);
        let tag = &late.tags[0];
        let responses: Vec<u64> = tag.series.seconds.iter().map(|s| s.responses).collect();
        assert_eq!(responses, vec![0, 0, 1, 1]);
        assert_eq!(tag.series.seconds[3].errors, 1);
        assert!(tag.latency_by_second.decoded(1).is_empty());
        assert_eq!(tag.latency_by_second.decoded(2).max_micros(), 300);
        assert_eq!(tag.latency_by_second.decoded(3).count(), 1);
        let started: Vec<u64> = late.sessions_per_second.iter().map(|s| s.started).collect();
        assert_eq!(started, vec![0, 0, 1]);
        let vus: Vec<u64> = late.vus.seconds.iter().map(|s| s.vus).collect();
        assert_eq!(vus, vec![0, 0, 4]);
    }

    #[test]
    fn status_counts_ignore_out_of_range_codes() {
        let mut s = StatusCounts::default();
        s.record(200);
        s.record(200);
        s.record(599);
        s.record(99);
        s.record(600);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![(200, 2), (599, 1)]);
    }
}
