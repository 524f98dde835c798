//! End-to-end tests of the protocol flags: `barrage target --tls` and `--h2c`, quick mode over
//! HTTPS (verified with the printed certificate), HTTP/2 and the connection models, and the
//! usage errors of bad protocol input.

use crate::support::*;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

fn quick_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["quick", "-o", "json"];
    all.extend_from_slice(args);
    let out = barrage(&all, LIMIT);
    out.expect_success();
    out.json()
}

fn count(summary: &serde_json::Value, key: &str) -> u64 {
    summary[key]
        .as_u64()
        .unwrap_or_else(|| panic!("no {key} in {summary}"))
}

#[test]
fn tls_target_prints_its_certificate_and_quick_trusts_it() {
    let target = Target::start_with(&["--threads", "1", "--tls"]);
    let cert = target.cert_path.clone().expect("the certificate line");
    let pem = std::fs::read_to_string(&cert).expect("the printed certificate file");
    assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");
    let url = target.https_url("/health");

    // ALPN picks h2 when the target offers it.
    let h2 = quick_json(&["-n", "60", "-c", "3", "--cacert", &cert, &url]);
    assert_eq!(h2["status_codes"]["200"], 60, "{h2}");
    assert_eq!(count(&h2, "connections_opened"), 3);
    assert_eq!(count(&h2, "connections_tls"), 3);
    assert_eq!(count(&h2, "connections_h2"), 3);
    assert_eq!(h2["details"]["tls"]["count"], 3, "{}", h2["details"]);

    let h1 = quick_json(&["-n", "60", "-c", "3", "--cacert", &cert, "--http1.1", &url]);
    assert_eq!(h1["status_codes"]["200"], 60, "{h1}");
    assert_eq!(count(&h1, "connections_h2"), 0);

    // Unverified: every request fails as an unknown CA, counted, not a crash.
    let untrusted = quick_json_unanswered(&["-n", "10", "-c", "2", &url], LIMIT);
    assert_eq!(
        untrusted["errors_by_kind"]["tls_unknown_ca"], 10,
        "{untrusted}"
    );
    let insecure = quick_json(&["-n", "10", "-c", "2", "--insecure", &url]);
    assert_eq!(insecure["status_codes"]["200"], 10, "{insecure}");
}

#[test]
fn h2c_and_connection_models_from_quick_flags() {
    let target = Target::start_with(&["--threads", "1", "--h2c"]);
    let url = target.url("/health");
    let shared = quick_json(&[
        "-n",
        "400",
        "-c",
        "100",
        "--threads",
        "1",
        "--h2",
        "--connection-model",
        "shared",
        "--pool-size",
        "4",
        &url,
    ]);
    assert_eq!(shared["status_codes"]["200"], 400, "{shared}");
    assert_eq!(count(&shared, "connections_opened"), 4);
    assert_eq!(count(&shared, "connections_h2"), 4);
    let churn = quick_json(&[
        "-n",
        "40",
        "-c",
        "4",
        "--h2",
        "--connection-model",
        "new-per-request",
        &url,
    ]);
    assert_eq!(count(&churn, "connections_opened"), 40, "{churn}");
    // An HTTP/2-only target does not speak HTTP/1.1: counted failures, not a hang.
    let refused =
        quick_json_unanswered(&["-n", "4", "-c", "1", "-t", "5", "--http1.1", &url], LIMIT);
    assert_eq!(
        refused["status_codes"].as_object().map_or(0, |m| m.len()),
        0,
        "{refused}"
    );
    assert_eq!(count(&refused, "errors"), 4, "{refused}");
}

#[test]
fn bad_protocol_input_is_a_usage_error_naming_it() {
    for (args, needle) in [
        (
            vec![
                "quick",
                "--cacert",
                "/nonexistent/ca.pem",
                "https://127.0.0.1:9/",
            ],
            "/nonexistent/ca.pem",
        ),
        (
            vec![
                "quick",
                "--connection-model",
                "pooled",
                "http://127.0.0.1:9/",
            ],
            "--connection-model",
        ),
        (
            vec!["quick", "--tls-min", "1.0", "http://127.0.0.1:9/"],
            "--tls-min",
        ),
        (
            vec![
                "quick",
                "--local-addrs",
                "10.0.0.9-10.0.0.1",
                "http://127.0.0.1:9/",
            ],
            "--local-addrs",
        ),
        (vec!["quick", "ftp://127.0.0.1:9/"], "unsupported scheme"),
    ] {
        let out = barrage(&args, LIMIT);
        assert_eq!(out.code(), Some(2), "{args:?}: {out:?}");
        let line = out.stderr.trim();
        assert_eq!(line.lines().count(), 1, "{args:?}: {line}");
        assert!(line.contains(needle), "{args:?}: {line}");
    }
}
