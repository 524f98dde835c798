//! The binary sections that hold measurements: TOTL (per-tag histograms and counters, session
//! counters) and SERI (per-tag, per-second counters and latency histograms).

use crate::codec::{DecodeResult, Decoder, Encoder};
use barrage_metrics::{
    ErrorKind, LatencyHistogram, RunMetrics, SecondBucket, SecondLatency, SessionSecond, TagMetrics,
};

pub(crate) fn histogram(e: &mut Encoder, h: &LatencyHistogram, scratch: &mut Vec<u8>) {
    scratch.clear();
    h.encode_into(scratch);
    e.bytes(scratch);
}

pub(crate) fn read_histogram(d: &mut Decoder<'_>) -> DecodeResult<LatencyHistogram> {
    LatencyHistogram::decode(d.bytes()?).map_err(|e| e.to_string())
}

/// Error counts as `(name, count)` pairs for the kinds seen: names, not indexes, so a later
/// barrage with more kinds still reads old files.
fn error_counts(e: &mut Encoder, counts: &[u64; ErrorKind::COUNT]) {
    let seen: Vec<&ErrorKind> = ErrorKind::ALL
        .iter()
        .filter(|k| counts[k.index()] > 0)
        .collect();
    e.varint(seen.len() as u64);
    for kind in seen {
        e.string(kind.name());
        e.varint(counts[kind.index()]);
    }
}

fn read_error_counts(d: &mut Decoder<'_>) -> DecodeResult<[u64; ErrorKind::COUNT]> {
    let mut counts = [0; ErrorKind::COUNT];
    for _ in 0..d.count()? {
        let name = d.string()?;
        let kind = ErrorKind::ALL
            .iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| format!("unknown error kind `{name}`"))?;
        counts[kind.index()] = d.varint()?;
    }
    Ok(counts)
}

pub fn encode_totals(metrics: &RunMetrics) -> Vec<u8> {
    let mut e = Encoder::default();
    let mut scratch = Vec::new();
    let s = &metrics.sessions;
    for n in [s.started, s.completed, s.failed, s.interrupted, s.dropped] {
        e.varint(n);
    }
    e.varint(metrics.connections_opened);
    e.varint(metrics.tags.len() as u64);
    for tag in &metrics.tags {
        for h in [&tag.latency, &tag.connect, &tag.write, &tag.wait, &tag.read] {
            histogram(&mut e, h, &mut scratch);
        }
        let statuses: Vec<(u16, u64)> = tag.status.iter().collect();
        e.varint(statuses.len() as u64);
        for (status, n) in statuses {
            e.varint(u64::from(status));
            e.varint(n);
        }
        error_counts(&mut e, &tag.errors);
        for n in [
            tag.bytes_sent,
            tag.bytes_received,
            tag.body_bytes,
            tag.extraction_failures,
        ] {
            e.varint(n);
        }
    }
    e.bytes
}

/// Reads TOTL into `metrics` (whose checks come from their own section).
pub fn decode_totals(payload: &[u8], metrics: &mut RunMetrics) -> DecodeResult<()> {
    let mut d = Decoder::new(payload);
    let s = &mut metrics.sessions;
    for field in [
        &mut s.started,
        &mut s.completed,
        &mut s.failed,
        &mut s.interrupted,
        &mut s.dropped,
    ] {
        *field = d.varint()?;
    }
    metrics.connections_opened = d.varint()?;
    let tags = d.count()?;
    metrics.tags = Vec::with_capacity(tags);
    for _ in 0..tags {
        let mut tag = TagMetrics {
            latency: read_histogram(&mut d)?,
            connect: read_histogram(&mut d)?,
            write: read_histogram(&mut d)?,
            wait: read_histogram(&mut d)?,
            read: read_histogram(&mut d)?,
            ..TagMetrics::default()
        };
        for _ in 0..d.count()? {
            let status = d.varint()?;
            let status = u16::try_from(status)
                .ok()
                .filter(|s| (100..600).contains(s))
                .ok_or_else(|| format!("status {status} out of range"))?;
            tag.status.add(status, d.varint()?);
        }
        tag.errors = read_error_counts(&mut d)?;
        tag.bytes_sent = d.varint()?;
        tag.bytes_received = d.varint()?;
        tag.body_bytes = d.varint()?;
        tag.extraction_failures = d.varint()?;
        metrics.tags.push(tag);
    }
    d.finish()
}

pub fn encode_series(metrics: &RunMetrics) -> Vec<u8> {
    let mut e = Encoder::default();
    e.varint(metrics.tags.len() as u64);
    for tag in &metrics.tags {
        let mut latency = tag.latency_by_second.clone();
        latency.seal();
        let encoded = latency.encoded();
        let seconds = tag.series.seconds.len().max(encoded.len());
        e.varint(seconds as u64);
        for second in 0..seconds {
            let b = tag.series.seconds.get(second).copied().unwrap_or_default();
            for n in [
                b.responses,
                b.errors,
                b.bytes_sent,
                b.bytes_received,
                b.latency_sum_us,
                b.latency_max_us,
            ] {
                e.varint(n);
            }
            for n in b.status_classes {
                e.varint(n);
            }
            error_counts(&mut e, &b.errors_by_kind);
            e.bytes(encoded.get(second).copied().unwrap_or_default());
        }
    }
    e.bytes
}

/// INTR: per tag, the seconds up to the last with a request the run's end cut off (by its
/// intended start), and each second's count.
pub fn encode_interrupted(metrics: &RunMetrics) -> Vec<u8> {
    let mut e = Encoder::default();
    e.varint(metrics.tags.len() as u64);
    for tag in &metrics.tags {
        let seconds = &tag.series.seconds;
        let used = seconds
            .iter()
            .rposition(|b| b.interrupted > 0)
            .map_or(0, |last| last + 1);
        e.varint(used as u64);
        for b in &seconds[..used] {
            e.varint(b.interrupted);
        }
    }
    e.bytes
}

/// Reads a per-tag section's tag count, which must be the one TOTL gave.
fn expect_tags(d: &mut Decoder<'_>, metrics: &RunMetrics) -> DecodeResult<()> {
    let tags = d.count()?;
    if tags != metrics.tags.len() {
        return Err(format!(
            "{tags} tags, but the totals have {}",
            metrics.tags.len()
        ));
    }
    Ok(())
}

/// Reads INTR into the series SERI filled.
pub fn decode_interrupted(payload: &[u8], metrics: &mut RunMetrics) -> DecodeResult<()> {
    let mut d = Decoder::new(payload);
    expect_tags(&mut d, metrics)?;
    for tag in &mut metrics.tags {
        let seconds = d.count()?;
        let series = &mut tag.series.seconds;
        if series.len() < seconds {
            series.resize(seconds, SecondBucket::default());
        }
        for bucket in &mut series[..seconds] {
            bucket.interrupted = d.varint()?;
        }
    }
    d.finish()
}

/// Reads SERI into the tags TOTL created.
pub fn decode_series(payload: &[u8], metrics: &mut RunMetrics) -> DecodeResult<()> {
    let mut d = Decoder::new(payload);
    expect_tags(&mut d, metrics)?;
    for tag in &mut metrics.tags {
        let seconds = d.count()?;
        let mut buckets = Vec::with_capacity(seconds);
        let mut histograms = Vec::with_capacity(seconds);
        for _ in 0..seconds {
            let mut b = SecondBucket {
                responses: d.varint()?,
                errors: d.varint()?,
                bytes_sent: d.varint()?,
                bytes_received: d.varint()?,
                latency_sum_us: d.varint()?,
                latency_max_us: d.varint()?,
                ..SecondBucket::default()
            };
            for class in &mut b.status_classes {
                *class = d.varint()?;
            }
            b.errors_by_kind = read_error_counts(&mut d)?;
            buckets.push(b);
            histograms.push(d.bytes()?.to_vec());
        }
        // Seconds past the last response carry no histogram; the live form never stores them.
        while histograms.last().is_some_and(Vec::is_empty) {
            histograms.pop();
        }
        // Seconds past the last event are never stored by the recorder either.
        while buckets
            .last()
            .is_some_and(|b| *b == SecondBucket::default())
        {
            buckets.pop();
        }
        tag.series.seconds = buckets;
        tag.latency_by_second =
            SecondLatency::from_encoded(histograms).map_err(|e| e.to_string())?;
    }
    d.finish()
}

pub fn encode_sessions(metrics: &RunMetrics) -> Vec<u8> {
    let mut e = Encoder::default();
    e.varint(metrics.sessions_per_second.len() as u64);
    for s in &metrics.sessions_per_second {
        e.varint(s.started);
        e.varint(s.dropped);
    }
    e.bytes
}

/// Reads SESS (optional: files without it have no per-second session counts).
pub fn decode_sessions(payload: &[u8], metrics: &mut RunMetrics) -> DecodeResult<()> {
    let mut d = Decoder::new(payload);
    let seconds = d.count()?;
    metrics.sessions_per_second = (0..seconds)
        .map(|_| {
            Ok(SessionSecond {
                started: d.varint()?,
                dropped: d.varint()?,
            })
        })
        .collect::<DecodeResult<_>>()?;
    d.finish()
}

/// A list of counts (ACTV): n, then n varints.
pub fn encode_counts(counts: &[u64]) -> Vec<u8> {
    let mut e = Encoder::default();
    e.varint(counts.len() as u64);
    for &n in counts {
        e.varint(n);
    }
    e.bytes
}

pub fn decode_counts(payload: &[u8]) -> DecodeResult<Vec<u64>> {
    let mut d = Decoder::new(payload);
    let n = d.count()?;
    let counts = (0..n).map(|_| d.varint()).collect::<DecodeResult<_>>()?;
    d.finish()?;
    Ok(counts)
}
