//! Prometheus remote write 1.0: the `prometheus.WriteRequest` protobuf (the few messages it
//! needs, declared with prost's derive, native histograms included) compressed with
//! snappy's block format.

use crate::model::{CommonLabels, Point};
use crate::native_histogram::{NativeHistogram, SCHEMA};
use barrage_metrics::RunMetrics;

#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteRequest {
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
    #[prost(message, repeated, tag = "4")]
    pub histograms: Vec<Histogram>,
}

/// `prometheus.Histogram`: a native histogram sample (integer counts; the `oneof`s of the
/// schema are plain fields on the wire).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Histogram {
    #[prost(uint64, tag = "1")]
    pub count_int: u64,
    #[prost(double, tag = "3")]
    pub sum: f64,
    #[prost(sint32, tag = "4")]
    pub schema: i32,
    #[prost(double, tag = "5")]
    pub zero_threshold: f64,
    #[prost(uint64, tag = "6")]
    pub zero_count_int: u64,
    #[prost(message, repeated, tag = "11")]
    pub positive_spans: Vec<BucketSpan>,
    #[prost(sint64, repeated, tag = "12")]
    pub positive_deltas: Vec<i64>,
    /// 0 unknown, 1 yes, 2 no, 3 gauge: cumulative since the run start, never reset.
    #[prost(int32, tag = "14")]
    pub reset_hint: i32,
    #[prost(int64, tag = "15")]
    pub timestamp: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct BucketSpan {
    #[prost(sint32, tag = "1")]
    pub offset: i32,
    #[prost(uint32, tag = "2")]
    pub length: u32,
}

/// The series name of latency as a native histogram (k6's, in seconds).
pub const DURATION_HISTOGRAM: &str = "k6_http_req_duration_seconds";

/// Adds one native-histogram series of response latency per tag that has responses.
pub fn add_native_histograms(
    request: &mut WriteRequest,
    metrics: &RunMetrics,
    tags: &[String],
    common: &CommonLabels,
    timestamp_ms: i64,
) {
    for (index, tag) in metrics.tags.iter().enumerate() {
        if tag.latency.count() == 0 {
            continue;
        }
        let name = tags
            .get(index)
            .cloned()
            .unwrap_or_else(|| format!("tag{index}"));
        let native = NativeHistogram::from_latency(&tag.latency);
        request.timeseries.push(TimeSeries {
            labels: sorted_labels(common, &[("name".to_string(), name)], DURATION_HISTOGRAM),
            samples: Vec::new(),
            histograms: vec![Histogram {
                count_int: native.count,
                sum: native.sum,
                schema: SCHEMA,
                zero_threshold: 0.0,
                zero_count_int: native.zero_count,
                positive_spans: native
                    .spans
                    .iter()
                    .map(|&(offset, length)| BucketSpan { offset, length })
                    .collect(),
                positive_deltas: native.deltas,
                reset_hint: 2,
                timestamp: timestamp_ms,
            }],
        });
    }
}

/// The labels of a series, sorted by name as the spec requires, `__name__` first.
fn sorted_labels(common: &CommonLabels, own: &[(String, String)], name: &str) -> Vec<Label> {
    let mut labels: Vec<Label> = common
        .pairs()
        .iter()
        .chain(own.iter())
        .map(|(name, value)| Label {
            name: name.clone(),
            value: value.clone(),
        })
        .collect();
    labels.push(Label {
        name: "__name__".into(),
        value: name.to_string(),
    });
    labels.sort_by(|a, b| a.name.cmp(&b.name));
    labels
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Label {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    #[prost(double, tag = "1")]
    pub value: f64,
    /// Milliseconds since the Unix epoch.
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

/// Headers of a remote-write request, as the 1.0 spec asks.
pub const HEADERS: &[(&str, &str)] = &[
    ("content-type", "application/x-protobuf"),
    ("content-encoding", "snappy"),
    ("x-prometheus-remote-write-version", "0.1.0"),
];

/// The write request of one flush: one series per point, labels sorted by name as the
/// spec requires, `__name__` first.
pub fn write_request(points: &[Point], common: &CommonLabels, timestamp_ms: i64) -> WriteRequest {
    let timeseries = points
        .iter()
        .map(|point| TimeSeries {
            labels: sorted_labels(common, &point.labels, &point.name),
            samples: vec![Sample {
                value: point.value,
                timestamp: timestamp_ms,
            }],
            histograms: Vec::new(),
        })
        .collect();
    WriteRequest { timeseries }
}

/// The request body: protobuf, snappy-compressed (block format).
pub fn encode(request: &WriteRequest) -> Vec<u8> {
    let raw = prost::Message::encode_to_vec(request);
    // Compressing a buffer we own cannot fail short of a > 4 GiB flush.
    snap::raw::Encoder::new()
        .compress_vec(&raw)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::PointKind;

    #[test]
    fn encodes_sorted_labels_and_round_trips_through_snappy() {
        let points = vec![Point {
            name: "k6_http_reqs_total".into(),
            kind: PointKind::Counter,
            labels: vec![("name".into(), "home".into())],
            value: 42.0,
        }];
        let common = CommonLabels {
            testid: "t".into(),
            segment: Some("1".into()),
        };
        let body = encode(&write_request(&points, &common, 1_000));
        let raw = snap::raw::Decoder::new().decompress_vec(&body).unwrap();
        let decoded: WriteRequest = prost::Message::decode(raw.as_slice()).unwrap();
        let names: Vec<&str> = decoded.timeseries[0]
            .labels
            .iter()
            .map(|l| l.name.as_str())
            .collect();
        assert_eq!(names, ["__name__", "name", "segment", "testid"]);
        assert_eq!(decoded.timeseries[0].samples[0].value, 42.0);
        assert_eq!(decoded.timeseries[0].samples[0].timestamp, 1_000);
    }
}
