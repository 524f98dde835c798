//! OTLP/HTTP metrics: the same points as remote write, as an `ExportMetricsServiceRequest`
//! (the official opentelemetry-proto types), counters as cumulative monotonic sums and
//! percentiles as gauges.

use crate::model::{CommonLabels, Point, PointKind};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::{
    metric::Data, number_data_point, AggregationTemporality, Gauge, Metric, NumberDataPoint,
    ResourceMetrics, ScopeMetrics, Sum,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use std::collections::BTreeMap;

/// Headers of an OTLP/HTTP protobuf request.
pub const HEADERS: &[(&str, &str)] = &[("content-type", "application/x-protobuf")];

fn attribute(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.to_string())),
        }),
        ..Default::default()
    }
}

/// The export request of one flush: one metric per name, one data point per label set;
/// the test id and segment are resource attributes, since they describe the whole run.
pub fn export_request(
    points: &[Point],
    common: &CommonLabels,
    start_unix_ns: u64,
    now_unix_ns: u64,
) -> ExportMetricsServiceRequest {
    let mut by_name: BTreeMap<&str, (PointKind, Vec<NumberDataPoint>)> = BTreeMap::new();
    for point in points {
        let data_point = NumberDataPoint {
            attributes: point.labels.iter().map(|(k, v)| attribute(k, v)).collect(),
            start_time_unix_nano: start_unix_ns,
            time_unix_nano: now_unix_ns,
            value: Some(number_data_point::Value::AsDouble(point.value)),
            ..Default::default()
        };
        by_name
            .entry(&point.name)
            .or_insert_with(|| (point.kind, Vec::new()))
            .1
            .push(data_point);
    }
    let metrics = by_name
        .into_iter()
        .map(|(name, (kind, data_points))| Metric {
            name: name.to_string(),
            unit: if name.contains("_duration_") { "s" } else { "" }.to_string(),
            data: Some(match kind {
                PointKind::Counter => Data::Sum(Sum {
                    data_points,
                    aggregation_temporality: AggregationTemporality::Cumulative as i32,
                    is_monotonic: true,
                }),
                PointKind::Gauge => Data::Gauge(Gauge { data_points }),
            }),
            ..Default::default()
        })
        .collect();
    let resource_attributes = std::iter::once(attribute("service.name", "barrage"))
        .chain(common.pairs().iter().map(|(k, v)| attribute(k, v)))
        .collect();
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource {
                attributes: resource_attributes,
                ..Default::default()
            }),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(InstrumentationScope {
                    name: "barrage".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    ..Default::default()
                }),
                metrics,
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    }
}

/// The request body: plain protobuf.
pub fn encode(request: &ExportMetricsServiceRequest) -> Vec<u8> {
    prost::Message::encode_to_vec(request)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_points_by_name_with_counters_as_monotonic_sums() {
        let point = |name: &str, kind, tag: &str, value| Point {
            name: name.into(),
            kind,
            labels: vec![("name".into(), tag.into())],
            value,
        };
        let points = vec![
            point("k6_http_reqs_total", PointKind::Counter, "a", 3.0),
            point("k6_http_reqs_total", PointKind::Counter, "b", 4.0),
            point("k6_http_req_duration_p99", PointKind::Gauge, "a", 0.25),
        ];
        let common = CommonLabels {
            testid: "t".into(),
            segment: None,
        };
        let body = encode(&export_request(&points, &common, 1, 2));
        let decoded: ExportMetricsServiceRequest = prost::Message::decode(body.as_slice()).unwrap();
        let metrics = &decoded.resource_metrics[0].scope_metrics[0].metrics;
        assert_eq!(metrics.len(), 2);
        let reqs = metrics
            .iter()
            .find(|m| m.name == "k6_http_reqs_total")
            .unwrap();
        let Some(Data::Sum(sum)) = &reqs.data else {
            panic!("a counter is a sum")
        };
        assert!(sum.is_monotonic);
        assert_eq!(sum.data_points.len(), 2);
        let p99 = metrics.iter().find(|m| m.unit == "s").unwrap();
        assert!(matches!(p99.data, Some(Data::Gauge(_))));
    }
}
