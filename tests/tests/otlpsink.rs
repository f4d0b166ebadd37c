//! `otlpsink`, the benchmark's collector, counts what the engine's own exporter sends it: spans from the
//! process-wide tracer go over OTLP/gRPC, or OTLP/HTTP, to the binary cargo built, which reports them at SIGTERM.
//!
//! Its own test binary: it installs the process-wide tracer, once a process, so each protocol's run is this binary
//! run again for the one test that exports, the protocol named in `OTEL_EXPORTER_OTLP_PROTOCOL` (which the
//! exporter reads when the config names none).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

use std::io::{BufRead as _, BufReader, Read as _};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use crawl_observability::{Format, OtlpSettings, TelemetryConfig, trace};

/// Runs [`exports_to_the_sink`] in a process of its own with `protocol` in the environment.
fn in_a_process_of_its_own(protocol: &str) {
    let out = Command::new(std::env::current_exe().expect("this test binary"))
        .args(["exports_to_the_sink", "--exact", "--ignored", "--nocapture"])
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
        .output()
        .expect("the test binary runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("1 passed"), "{text}");
}

#[test]
fn the_sink_counts_every_span_the_engine_exports_over_grpc() {
    in_a_process_of_its_own("grpc");
}

#[test]
fn the_sink_counts_every_span_the_engine_exports_over_http() {
    in_a_process_of_its_own("http/protobuf");
}

#[test]
#[ignore = "run by the two tests above, each in a process of its own"]
fn exports_to_the_sink() {
    let mut sink = Command::new(env!("CARGO_BIN_EXE_otlpsink"))
        .stdout(Stdio::piped())
        .spawn()
        .expect("otlpsink starts");
    let mut out = BufReader::new(sink.stdout.take().expect("stdout"));
    let mut ready = String::new();
    out.read_line(&mut ready).expect("ready line");
    let endpoint = ready
        .trim()
        .strip_prefix("otlpsink ready endpoint=")
        .unwrap_or_else(|| panic!("unexpected first line {ready:?}"))
        .to_owned();
    let mut guard = crawl_observability::init(&TelemetryConfig {
        log_level: "warn".into(),
        format: Format::Text,
        otlp: Some(OtlpSettings {
            endpoint: Some(endpoint.clone()),
            protocol: None,
            compression: None,
            service_name: "otlpsink-test".into(),
            service_version: "0".into(),
            resource: Vec::new(),
            sample_ratio: 1.0,
        }),
    })
    .expect("telemetry");
    let named = std::env::var("OTEL_EXPORTER_OTLP_PROTOCOL").expect("run with a protocol");
    let target = guard.export_target().expect("exporting");
    assert_eq!(
        (target.endpoint.as_str(), target.protocol.as_str()),
        (endpoint.as_str(), named.as_str())
    );
    for i in 0..40_i64 {
        let t0 = SystemTime::now();
        let root = trace::root("crawl.url", t0, &[]);
        let host = format!("h{i}");
        root.ctx().span(
            "frontier.wait",
            t0,
            t0 + Duration::from_millis(1),
            &[crawl_observability::Attr::new("crawl.host", &host)],
        );
        root.ctx().start("parse", &[]).end();
        root.end(SystemTime::now());
    }
    guard.shutdown();
    let status = Command::new("kill")
        .args(["-TERM", &sink.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let mut rest = String::new();
    out.read_to_string(&mut rest).expect("final line");
    assert!(sink.wait().expect("sink exits").success(), "{rest}");
    let field = |name: &str| -> u64 {
        rest.split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{name}=")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {rest:?}"))
    };
    assert_eq!(field("spans"), 120, "{rest}");
    assert_eq!(field("rejected"), 0, "{rest}");
    assert!(field("requests") >= 1, "{rest}");
    assert!(field("bytes") > 120 * 40, "{rest}");
}
