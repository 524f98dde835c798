//! Prometheus remote write 1.0: the `prometheus.WriteRequest` protobuf (the few messages it
//! needs, declared with prost's derive) compressed with snappy's block format.

use crate::model::{CommonLabels, Point};

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
    let common = common.pairs();
    let timeseries = points
        .iter()
        .map(|point| {
            let mut labels: Vec<Label> = common
                .iter()
                .chain(point.labels.iter())
                .map(|(name, value)| Label {
                    name: name.clone(),
                    value: value.clone(),
                })
                .collect();
            labels.push(Label {
                name: "__name__".into(),
                value: point.name.clone(),
            });
            labels.sort_by(|a, b| a.name.cmp(&b.name));
            TimeSeries {
                labels,
                samples: vec![Sample {
                    value: point.value,
                    timestamp: timestamp_ms,
                }],
            }
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
