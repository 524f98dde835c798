//! The XMET section: measurements added after the first format (corrected latency and TLS
//! handshakes per tag, decoded body bytes, TLS/HTTP/2 connection counts, iteration durations,
//! the VU series, the generator self-check and custom metrics). Optional, so older files (without
//! it) still read; floats are stored as their IEEE-754 bits, so they round-trip exactly.

use crate::codec::{DecodeResult, Decoder, Encoder};
use crate::metrics_codec::{histogram, read_histogram};
use barrage_metrics::{
    CustomKind, CustomMetric, CustomMetrics, CustomValues, RunMetrics, Trend, VuSecond, VuSeries,
};

fn float(e: &mut Encoder, value: f64) {
    e.varint(value.to_bits());
}

fn read_float(d: &mut Decoder<'_>) -> DecodeResult<f64> {
    Ok(f64::from_bits(d.varint()?))
}

fn kind_code(kind: CustomKind) -> u64 {
    match kind {
        CustomKind::Counter => 0,
        CustomKind::Gauge => 1,
        CustomKind::Rate => 2,
        CustomKind::Trend => 3,
    }
}

pub fn encode_extra(metrics: &RunMetrics) -> Vec<u8> {
    let mut e = Encoder::default();
    let mut scratch = Vec::new();
    e.varint(metrics.tags.len() as u64);
    for tag in &metrics.tags {
        histogram(&mut e, &tag.latency_corrected, &mut scratch);
        histogram(&mut e, &tag.tls, &mut scratch);
        e.varint(tag.decoded_body_bytes);
    }
    e.varint(metrics.connections_tls);
    e.varint(metrics.connections_h2);
    histogram(&mut e, &metrics.iteration_duration, &mut scratch);
    e.varint(metrics.vus.seconds.len() as u64);
    for second in &metrics.vus.seconds {
        e.varint(second.vus);
        e.varint(second.vus_max);
    }
    let check = &metrics.self_check;
    for n in [
        check.workers,
        check.cpu_ns,
        check.cpu_wait_ns,
        check.wall_ns,
    ] {
        e.varint(n);
    }
    float(&mut e, check.max_worker_cpu);
    histogram(&mut e, &check.lag, &mut scratch);
    histogram(&mut e, &check.tick_overshoot, &mut scratch);
    e.varint(check.stalls);
    e.varint(metrics.custom.metrics.len() as u64);
    for metric in &metrics.custom.metrics {
        e.string(&metric.name);
        e.varint(kind_code(metric.kind));
        match &metric.values {
            CustomValues::Counter { sum, samples } => {
                float(&mut e, *sum);
                e.varint(*samples);
            }
            CustomValues::Gauge { last, min, max } => {
                match last {
                    Some((at, value)) => {
                        e.varint(1);
                        e.varint(*at);
                        float(&mut e, *value);
                    }
                    None => e.varint(0),
                }
                float(&mut e, *min);
                float(&mut e, *max);
            }
            CustomValues::Rate { trues, samples } => {
                e.varint(*trues);
                e.varint(*samples);
            }
            CustomValues::Trend(trend) => {
                histogram(&mut e, &trend.histogram, &mut scratch);
                float(&mut e, trend.sum);
                float(&mut e, trend.min);
                float(&mut e, trend.max);
            }
        }
    }
    e.bytes
}

/// Reads XMET into `metrics`, whose tags come from TOTL.
pub fn decode_extra(payload: &[u8], metrics: &mut RunMetrics) -> DecodeResult<()> {
    let mut d = Decoder::new(payload);
    let tags = d.count()?;
    if tags != metrics.tags.len() {
        return Err(format!(
            "{tags} tags, the totals have {}",
            metrics.tags.len()
        ));
    }
    for tag in &mut metrics.tags {
        tag.latency_corrected = read_histogram(&mut d)?;
        tag.tls = read_histogram(&mut d)?;
        tag.decoded_body_bytes = d.varint()?;
    }
    metrics.connections_tls = d.varint()?;
    metrics.connections_h2 = d.varint()?;
    metrics.iteration_duration = read_histogram(&mut d)?;
    let mut vus = VuSeries::default();
    for _ in 0..d.count()? {
        vus.seconds.push(VuSecond {
            vus: d.varint()?,
            vus_max: d.varint()?,
        });
    }
    metrics.vus = vus;
    let check = &mut metrics.self_check;
    check.workers = d.varint()?;
    check.cpu_ns = d.varint()?;
    check.cpu_wait_ns = d.varint()?;
    check.wall_ns = d.varint()?;
    check.max_worker_cpu = read_float(&mut d)?;
    check.lag = read_histogram(&mut d)?;
    check.tick_overshoot = read_histogram(&mut d)?;
    check.stalls = d.varint()?;
    let mut custom = Vec::new();
    for _ in 0..d.count()? {
        let name = d.string()?;
        let kind = match d.varint()? {
            0 => CustomKind::Counter,
            1 => CustomKind::Gauge,
            2 => CustomKind::Rate,
            3 => CustomKind::Trend,
            other => return Err(format!("unknown custom metric kind {other}")),
        };
        let values = match kind {
            CustomKind::Counter => CustomValues::Counter {
                sum: read_float(&mut d)?,
                samples: d.varint()?,
            },
            CustomKind::Gauge => {
                let last = match d.varint()? {
                    0 => None,
                    _ => Some((d.varint()?, read_float(&mut d)?)),
                };
                CustomValues::Gauge {
                    last,
                    min: read_float(&mut d)?,
                    max: read_float(&mut d)?,
                }
            }
            CustomKind::Rate => CustomValues::Rate {
                trues: d.varint()?,
                samples: d.varint()?,
            },
            CustomKind::Trend => CustomValues::Trend(Trend {
                histogram: read_histogram(&mut d)?,
                sum: read_float(&mut d)?,
                min: read_float(&mut d)?,
                max: read_float(&mut d)?,
            }),
        };
        custom.push(CustomMetric { name, kind, values });
    }
    metrics.custom = CustomMetrics { metrics: custom };
    Ok(())
}

/// The STLT section: response latency per status code per tag, kept when a threshold filters
/// latency by status (NFR `where.status`). Optional: absent when nothing was kept.
pub fn encode_status_latency(metrics: &RunMetrics) -> Option<Vec<u8>> {
    if metrics.tags.iter().all(|t| t.latency_by_status.is_empty()) {
        return None;
    }
    let mut e = Encoder::default();
    let mut scratch = Vec::new();
    e.varint(metrics.tags.len() as u64);
    for tag in &metrics.tags {
        e.varint(tag.latency_by_status.len() as u64);
        for (status, latency) in &tag.latency_by_status {
            e.varint(u64::from(*status));
            histogram(&mut e, latency, &mut scratch);
        }
    }
    Some(e.bytes)
}

/// Reads STLT into `metrics`, whose tags come from TOTL.
pub fn decode_status_latency(payload: &[u8], metrics: &mut RunMetrics) -> DecodeResult<()> {
    let mut d = Decoder::new(payload);
    if d.count()? != metrics.tags.len() {
        return Err("tag count differs from TOTL".into());
    }
    metrics.latency_by_status = true;
    for tag in &mut metrics.tags {
        for _ in 0..d.count()? {
            let status = u16::try_from(d.varint()?)
                .ok()
                .filter(|s| (100..600).contains(s))
                .ok_or("status out of range")?;
            let latency = read_histogram(&mut d)?;
            tag.status_latency_mut(status).merge(&latency);
        }
    }
    d.finish()
}

/// The VERD section: per tag, the responses a k6 script's response callback judged otherwise
/// than the default rule (see [`barrage_metrics::VerdictOverrides`]), so `http_req_failed`
/// reads back as the run counted it. Optional: absent when no callback changed a verdict.
pub fn encode_verdicts(metrics: &RunMetrics) -> Option<Vec<u8>> {
    let none = barrage_metrics::VerdictOverrides::default();
    if metrics.tags.iter().all(|t| t.verdicts == none) {
        return None;
    }
    let mut e = Encoder::default();
    e.varint(metrics.tags.len() as u64);
    for tag in &metrics.tags {
        let v = &tag.verdicts;
        for n in [v.failed, v.passed, v.unjudged] {
            e.varint(n);
        }
    }
    Some(e.bytes)
}

/// Reads VERD into `metrics`, whose tags come from TOTL.
pub fn decode_verdicts(payload: &[u8], metrics: &mut RunMetrics) -> DecodeResult<()> {
    let mut d = Decoder::new(payload);
    if d.count()? != metrics.tags.len() {
        return Err("tag count differs from TOTL".into());
    }
    for tag in &mut metrics.tags {
        let v = &mut tag.verdicts;
        for field in [&mut v.failed, &mut v.passed, &mut v.unjudged] {
            *field = d.varint()?;
        }
    }
    d.finish()
}
