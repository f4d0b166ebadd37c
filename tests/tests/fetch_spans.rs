//! The fetcher's connection spans, exported for real: an HTTPS GET through `HttpClient` (hyper-rustls over the
//! connector wrappers) inside a connection probe records `net.connect`, `tls.handshake` (with the negotiated ALPN)
//! and `http.first_byte` as children of the URL's root span; a second GET reuses the pooled connection and records
//! only `http.first_byte` with `net.connection.reused = true`. The spans go through the engine's own telemetry
//! setup (OTLP/gRPC) to the in-process receiver.
//!
//! Its own test binary: it installs the process-wide tracer.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crawl_actors::fetcher::connector::{ConnProbe, with_probe};
use crawl_actors::fetcher::dial::NameLookup;
use crawl_actors::fetcher::http::{HttpClient, HttpSettings};
use crawl_observability::{Format, OtlpSettings, TelemetryConfig, trace};
use crawl_tests::dns::{DOH_HOST, FakeDoh, Zone};
use crawl_tests::otlp::{OtlpReceiver, traces};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_fetch_records_connect_tls_and_first_byte_spans() {
    let rx = OtlpReceiver::start().await;
    let mut guard = crawl_observability::init(&TelemetryConfig {
        log_level: "warn".into(),
        format: Format::Text,
        otlp: Some(OtlpSettings {
            endpoint: Some(rx.http_endpoint()),
            protocol: None,
            compression: None,
            service_name: "fetch-spans-test".into(),
            service_version: "0".into(),
            resource: Vec::new(),
            sample_ratio: 1.0,
        }),
    })
    .expect("telemetry");
    let server = FakeDoh::start(Zone::new()).await.expect("tls server");
    let ip = server.bootstrap();
    let settings = HttpSettings {
        allow_private_networks: true,
        extra_roots: vec![server.ca_der()],
        lookup: Some(NameLookup(Arc::new(move |_name: String| {
            Box::pin(async move { Ok(vec![ip]) })
        }))),
        ..HttpSettings::default()
    };
    let client = HttpClient::new(settings).expect("client");
    let url = url::Url::parse(&server.url()).expect("url");
    assert!(url.as_str().contains(DOH_HOST));

    let mut ids = Vec::new();
    for _ in 0..2 {
        let root = trace::root("crawl.url", SystemTime::now(), &[]);
        let probe = ConnProbe::new(root.ctx());
        // any answer will do (the DoH server answers 400 to a GET without a query): only the connection matters
        let resp = with_probe(probe, client.get(&url, None))
            .await
            .expect("https get");
        assert!(resp.status > 0);
        ids.push(root.trace_id().expect("trace id"));
        root.end(SystemTime::now());
    }
    drop(client);
    tokio::task::spawn_blocking(move || guard.shutdown())
        .await
        .expect("flush");
    assert!(
        rx.wait_for_async(|s| s.len() >= 6, Duration::from_secs(10))
            .await,
        "{:?}",
        rx.spans()
    );
    let by_trace = traces(&rx.spans());
    let first = &by_trace[&ids[0]];
    let root = first.iter().find(|s| s.name == "crawl.url").expect("root");
    for name in ["net.connect", "tls.handshake", "http.first_byte"] {
        let s = first
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("{name} missing: {first:?}"));
        assert_eq!(
            s.parent_span_id.as_deref(),
            Some(root.span_id.as_str()),
            "{name}"
        );
    }
    let connect = first
        .iter()
        .find(|s| s.name == "net.connect")
        .expect("connect");
    let tls = first
        .iter()
        .find(|s| s.name == "tls.handshake")
        .expect("tls");
    let first_byte = first
        .iter()
        .find(|s| s.name == "http.first_byte")
        .expect("first byte");
    assert_eq!(connect.attr_str("network.peer.address"), Some("127.0.0.1"));
    assert_eq!(connect.attr_str("server.address"), Some(DOH_HOST));
    assert!(
        tls.start_unix_nanos >= connect.end_unix_nanos,
        "tls starts after tcp"
    );
    assert!(
        first_byte.start_unix_nanos >= tls.end_unix_nanos,
        "request after the handshake"
    );
    assert!(matches!(tls.attr_str("tls.alpn"), Some("h2" | "http/1.1")));
    assert_eq!(first_byte.attr_bool("net.connection.reused"), Some(false));
    assert_eq!(root.resource_str("service.name"), Some("fetch-spans-test"));

    let second = &by_trace[&ids[1]];
    let names: Vec<&str> = second.iter().map(|s| s.name.as_str()).collect();
    assert!(
        !names.contains(&"net.connect") && !names.contains(&"tls.handshake"),
        "{names:?}"
    );
    let fb = second
        .iter()
        .find(|s| s.name == "http.first_byte")
        .expect("first byte");
    assert_eq!(fb.attr_bool("net.connection.reused"), Some(true));
}
