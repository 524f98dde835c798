//! The opt-in per-request sample log (`--out samples=FILE:RATE`): each worker keeps a
//! random share `rate` of its requests as NDJSON lines in its own buffer and hands a full
//! buffer to the shared sink (one lock per 64 KiB of lines, never per request). Without a
//! sink nothing per request is kept. Each line names its request's `X-Request-Id`, written
//! from the id's counter (only for the requests kept), so lines join a target's logs.
//! The same machinery streams hey's `-o csv` rows ([`SampleSink::hey_csv`]): every response,
//! one CSV row each, in hey's columns.

use barrage_metrics::{ErrorKind, ResponseRecord};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::io::Write;
use std::sync::Mutex;

/// Buffered lines are handed to the sink beyond this size.
const FLUSH_BYTES: usize = 64 << 10;

/// How a kept request is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineFormat {
    /// One JSON object a line (`--out samples`).
    Ndjson,
    /// hey's `-o csv` row: response-time, DNS+dialup, DNS, Request-write, Response-delay,
    /// Response-read (seconds, 4 decimals), status-code, offset (seconds since the run
    /// started, at the request's start). hey leaves failed requests out.
    HeyCsv,
}

/// hey's CSV header, written before the first row.
const HEY_CSV_HEADER: &str =
    "response-time,DNS+dialup,DNS,Request-write,Response-delay,Response-read,status-code,offset\n";

/// Where sampled requests go.
pub struct SampleSink {
    rate: f64,
    format: LineFormat,
    tags: Vec<String>,
    out: Mutex<Box<dyn Write + Send>>,
    /// The first write error, reported at the end of the run.
    failed: Mutex<Option<std::io::Error>>,
}

impl std::fmt::Debug for SampleSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SampleSink")
            .field("rate", &self.rate)
            .finish()
    }
}

impl SampleSink {
    /// Keeps a share `rate` (0–1] of requests; `tags` names the plan's tags.
    pub fn new(rate: f64, tags: Vec<String>, out: Box<dyn Write + Send>) -> Self {
        Self {
            rate,
            format: LineFormat::Ndjson,
            tags,
            out: Mutex::new(out),
            failed: Mutex::new(None),
        }
    }

    /// hey's `-o csv`: every response as a CSV row, after hey's header (written now).
    pub fn hey_csv(out: Box<dyn Write + Send>) -> Self {
        let sink = Self {
            format: LineFormat::HeyCsv,
            ..Self::new(1.0, Vec::new(), out)
        };
        sink.write(HEY_CSV_HEADER.as_bytes());
        sink
    }

    fn write(&self, bytes: &[u8]) {
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = out.write_all(bytes) {
            self.failed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get_or_insert(e);
        }
    }

    /// Flushes the sink; the first write error of the run, if any.
    pub fn finish(&self) -> std::io::Result<()> {
        if let Some(e) = self.failed.lock().unwrap_or_else(|p| p.into_inner()).take() {
            return Err(e);
        }
        self.out.lock().unwrap_or_else(|p| p.into_inner()).flush()
    }
}

/// One worker's sampler: its own random stream (so sampling never shifts the schedule) and
/// line buffer.
pub(crate) struct Sampler {
    sink: std::sync::Arc<SampleSink>,
    rng: SmallRng,
    buffer: Vec<u8>,
    /// The worker's request-id prefix (`<run>-<worker>-`); an id's counter follows in hex.
    id_prefix: String,
}

impl Sampler {
    pub(crate) fn new(sink: std::sync::Arc<SampleSink>, worker: usize, id_prefix: String) -> Self {
        Self {
            sink,
            rng: SmallRng::seed_from_u64(0x5a4d_504c_4553 ^ worker as u64),
            buffer: Vec::new(),
            id_prefix,
        }
    }

    #[inline]
    fn take(&mut self) -> bool {
        self.rng.gen::<f64>() < self.sink.rate
    }

    fn tag(&self, tag: usize) -> String {
        let name = self.sink.tags.get(tag).map_or("?", String::as_str);
        serde_json::to_string(name).unwrap_or_else(|_| "\"?\"".into())
    }

    /// Starts a line: time, tag and request id (`null` when the plan sent its own header).
    fn start_line(&mut self, at_ms: f64, tag: usize, request_id: Option<u64>) {
        let tag = self.tag(tag);
        let _ = write!(
            self.buffer,
            "{{\"t_ms\":{at_ms:.3},\"tag\":{tag},\"request_id\":"
        );
        match request_id {
            Some(n) => {
                let _ = write!(self.buffer, "\"{}{n:x}\"", self.id_prefix);
            }
            None => self.buffer.extend_from_slice(b"null"),
        }
    }

    /// Maybe keeps `record` of the request with id counter `request_id`, `at_ms` into the run.
    /// hey's CSV keeps one row per redirect chain, `chain`, when this response ends one.
    pub(crate) fn response(
        &mut self,
        record: &ResponseRecord,
        chain: Option<&ResponseRecord>,
        request_id: Option<u64>,
        at_ms: f64,
    ) {
        if self.sink.format == LineFormat::HeyCsv {
            if let Some(chain) = chain.filter(|_| self.take()) {
                self.hey_csv_row(chain, at_ms);
            }
            return;
        }
        if !self.take() {
            return;
        }
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
        self.start_line(at_ms, record.tag, request_id);
        let _ = writeln!(
            self.buffer,
            ",\"status\":{},\"duration_ms\":{:.3},\"connecting_ms\":{:.3},\"sending_ms\":{:.3},\"waiting_ms\":{:.3},\"receiving_ms\":{:.3},\"bytes_received\":{}}}",
            record.status,
            ms(record.latency),
            ms(record.phases.connect.unwrap_or_default()),
            ms(record.phases.write),
            ms(record.phases.wait),
            ms(record.phases.read),
            record.bytes_received
        );
        self.flush_if_full();
    }

    /// hey's CSV row of `record`, completed `at_ms` into the run. Loopback runs resolve no
    /// names, so the DNS column is 0 as in hey for an IP address; DNS+dialup is the connect
    /// time of a request that opened its connection, else 0.
    fn hey_csv_row(&mut self, record: &ResponseRecord, at_ms: f64) {
        let s = |d: std::time::Duration| d.as_secs_f64();
        let latency = s(record.latency);
        let offset = (at_ms / 1000.0 - latency).max(0.0);
        let _ = writeln!(
            self.buffer,
            "{latency:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{},{offset:.4}",
            s(record.phases.connect.unwrap_or_default()),
            0.0,
            s(record.phases.write),
            s(record.phases.wait),
            s(record.phases.read),
            record.status,
        );
        self.flush_if_full();
    }

    /// Maybe keeps a failed request.
    pub(crate) fn error(
        &mut self,
        tag: usize,
        kind: ErrorKind,
        request_id: Option<u64>,
        at_ms: f64,
    ) {
        if self.sink.format == LineFormat::HeyCsv || !self.take() {
            return;
        }
        self.start_line(at_ms, tag, request_id);
        let _ = writeln!(self.buffer, ",\"error\":\"{}\"}}", kind.name());
        self.flush_if_full();
    }

    fn flush_if_full(&mut self) {
        if self.buffer.len() >= FLUSH_BYTES {
            self.flush();
        }
    }

    pub(crate) fn flush(&mut self) {
        if !self.buffer.is_empty() {
            self.sink.write(&self.buffer);
            self.buffer.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_metrics::PhaseTimings;
    use std::sync::Arc;
    use std::time::Duration;

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn lines(shared: &Shared) -> Vec<serde_json::Value> {
        let text = String::from_utf8(shared.0.lock().unwrap().clone()).unwrap();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn record() -> ResponseRecord {
        ResponseRecord {
            tag: 0,
            second: 0,
            latency: Duration::from_micros(1500),
            phases: PhaseTimings::default(),
            status: 200,
            bytes_sent: 1,
            bytes_received: 2,
            body_bytes: 0,
            decoded_body_bytes: 0,
            expected_interval: None,
        }
    }

    #[test]
    fn keeps_about_the_rate_and_writes_json_lines() {
        let shared = Shared::default();
        let sink = Arc::new(SampleSink::new(
            0.1,
            vec!["a\"b".into()],
            Box::new(shared.clone()),
        ));
        let mut sampler = Sampler::new(Arc::clone(&sink), 0, "0000abcd-0-".into());
        for i in 0..10_000u32 {
            sampler.response(&record(), None, Some(u64::from(i)), f64::from(i));
        }
        sampler.flush();
        sink.finish().unwrap();
        let lines = lines(&shared);
        assert!((800..1200).contains(&lines.len()), "{}", lines.len());
        assert_eq!(lines[0]["tag"], "a\"b");
        assert_eq!(lines[0]["duration_ms"], 1.5);
        // Each line names its request: the worker's prefix, then the counter in hex.
        for line in &lines {
            let counter = line["t_ms"].as_f64().unwrap() as u64;
            assert_eq!(
                line["request_id"],
                format!("0000abcd-0-{counter:x}"),
                "{line}"
            );
        }
    }

    #[test]
    fn failed_requests_carry_their_id_and_a_plan_set_id_is_null() {
        let shared = Shared::default();
        let sink = Arc::new(SampleSink::new(
            1.0,
            vec!["t".into()],
            Box::new(shared.clone()),
        ));
        let mut sampler = Sampler::new(Arc::clone(&sink), 2, "0000abcd-2-".into());
        sampler.error(0, ErrorKind::Timeout, Some(0x2710), 1.0);
        // The plan set its own X-Request-Id: not barrage's id to report.
        sampler.response(&record(), None, None, 2.0);
        sampler.flush();
        sink.finish().unwrap();
        let lines = lines(&shared);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["error"], "timeout");
        assert_eq!(lines[0]["request_id"], "0000abcd-2-2710");
        assert_eq!(lines[1]["status"], 200);
        assert!(lines[1]["request_id"].is_null(), "{}", lines[1]);
    }

    #[test]
    fn hey_csv_has_heys_header_and_one_row_per_redirect_chain_without_errors() {
        let shared = Shared::default();
        let sink = Arc::new(SampleSink::hey_csv(Box::new(shared.clone())));
        let mut sampler = Sampler::new(Arc::clone(&sink), 0, "x-".into());
        let mut first = record();
        first.phases = PhaseTimings {
            connect: Some(Duration::from_micros(250)),
            tls: None,
            write: Duration::from_micros(50),
            wait: Duration::from_micros(1000),
            read: Duration::from_micros(200),
        };
        sampler.response(&first, Some(&first), Some(0), 2001.5);
        sampler.error(0, ErrorKind::Timeout, Some(1), 2002.0);
        // A redirect hop that does not end its chain writes no row; the chain's end writes
        // the chain's record.
        let mut hop = record();
        hop.status = 302;
        sampler.response(&hop, None, Some(2), 2999.0);
        let mut second = record();
        second.status = 404;
        sampler.response(&record(), Some(&second), Some(3), 3000.0);
        sampler.flush();
        sink.finish().unwrap();
        let text = String::from_utf8(shared.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            text,
            "response-time,DNS+dialup,DNS,Request-write,Response-delay,Response-read,status-code,offset\n\
             0.0015,0.0003,0.0000,0.0001,0.0010,0.0002,200,2.0000\n\
             0.0015,0.0000,0.0000,0.0000,0.0000,0.0000,404,2.9985\n"
        );
    }
}
