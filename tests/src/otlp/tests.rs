use super::*;
use opentelemetry::trace::{
    Span as _, Status, TraceContextExt as _, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::time::SystemTime;

/// Must be called inside a tokio runtime (the tonic channel is built there).
fn provider(endpoint: &str) -> SdkTracerProvider {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .with_endpoint(endpoint)
        .with_timeout(Duration::from_secs(3))
        .build()
        .expect("build the OTLP exporter");
    SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            Resource::builder_empty()
                .with_service_name("otlp-receiver-test")
                .build(),
        )
        .build()
}

/// A root and two children with explicit times; returns the start time (the root's).
fn emit(provider: &SdkTracerProvider) -> SystemTime {
    let tracer = provider.tracer("crawl-tests");
    let t0 = SystemTime::now();
    let ms = Duration::from_millis;
    let root = tracer
        .span_builder("crawl.url")
        .with_start_time(t0)
        .with_attributes([
            KeyValue::new("url.full", "http://127.0.0.1/a"),
            KeyValue::new("crawl.depth", 2_i64),
        ])
        .start_with_context(&tracer, &Context::new());
    let cx = Context::new().with_span(root);
    let mut wait = tracer
        .span_builder("frontier.wait")
        .with_start_time(t0 + ms(1))
        .with_attributes([KeyValue::new("crawl.host", "127.0.0.1")])
        .start_with_context(&tracer, &cx);
    wait.end_with_timestamp(t0 + ms(5));
    let mut dns = tracer
        .span_builder("dns.resolve")
        .with_start_time(t0 + ms(5))
        .with_attributes([
            KeyValue::new("dns.polluted", true),
            KeyValue::new("dns.rules", ""),
        ])
        .start_with_context(&tracer, &cx);
    dns.set_status(Status::error("nxdomain"));
    dns.end_with_timestamp(t0 + ms(9));
    cx.span().end_with_timestamp(t0 + ms(10));
    t0
}

fn nanos(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .expect("after 1970")
        .as_nanos() as u64
}

fn check(spans: &[SpanRecord], t0: SystemTime) {
    assert_eq!(spans.len(), 3, "{spans:#?}");
    let by_trace = traces(spans);
    assert_eq!(by_trace.len(), 1, "one trace: {by_trace:#?}");
    let (trace_id, trace) = by_trace.iter().next().expect("one trace");
    assert_eq!(trace_id.len(), 32);
    assert!(
        trace_id
            .chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
    );
    let root = trace
        .iter()
        .find(|s| s.name == "crawl.url")
        .expect("root span");
    assert!(root.is_root(), "{root:#?}");
    assert_eq!(root.span_id.len(), 16);
    assert_eq!(root.attr_str("url.full"), Some("http://127.0.0.1/a"));
    assert_eq!(root.attr_int("crawl.depth"), Some(2));
    assert_eq!(
        root.resource_str("service.name"),
        Some("otlp-receiver-test")
    );
    assert_eq!(root.scope_name, "crawl-tests");
    assert!(!root.status_error);
    assert_eq!(root.start_unix_nanos, nanos(t0));
    assert_eq!(root.duration(), Duration::from_millis(10));

    let wait = trace
        .iter()
        .find(|s| s.name == "frontier.wait")
        .expect("wait span");
    assert_eq!(wait.parent_span_id.as_deref(), Some(root.span_id.as_str()));
    assert_eq!(wait.attr_str("crawl.host"), Some("127.0.0.1"));
    assert_eq!(wait.start_unix_nanos, nanos(t0) + 1_000_000);
    assert_eq!(wait.end_unix_nanos, nanos(t0) + 5_000_000);

    let dns = trace
        .iter()
        .find(|s| s.name == "dns.resolve")
        .expect("dns span");
    assert_eq!(dns.parent_span_id.as_deref(), Some(root.span_id.as_str()));
    assert_eq!(dns.attr_bool("dns.polluted"), Some(true));
    assert_eq!(dns.attr_str("dns.rules"), Some(""));
    assert_eq!(dns.attr_int("dns.polluted"), None, "wrong type gives None");
    assert!(dns.status_error);
    assert_eq!(dns.status_message, "nxdomain");
    assert_eq!(dns.resource_str("service.name"), Some("otlp-receiver-test"));
    assert_ne!(wait.span_id, dns.span_id);
}

#[tokio::test]
async fn receives_spans_from_the_otlp_exporter() {
    let rx = OtlpReceiver::start().await;
    assert!(rx.endpoint().starts_with("http://127.0.0.1:"));
    let provider = provider(&rx.endpoint());
    let t0 = emit(&provider);
    // shutdown() blocks until the batch is exported: never on this (current-thread) runtime's thread.
    let p = provider.clone();
    tokio::task::spawn_blocking(move || p.shutdown())
        .await
        .expect("join the shutdown")
        .expect("provider shutdown");
    assert!(
        rx.wait_for_async(|s| s.len() >= 3, Duration::from_secs(5))
            .await,
        "got {:#?}",
        rx.spans()
    );
    check(&rx.spans(), t0);
    rx.clear();
    assert!(rx.spans().is_empty());
}

#[test]
fn background_receiver_serves_synchronous_tests() {
    let rx = OtlpReceiver::start_background();
    let endpoint = rx.endpoint();
    // The exporter lives in a runtime of its own, as in the engine binary.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("exporter runtime");
    let provider = rt.block_on(async { provider(&endpoint) });
    let t0 = emit(&provider);
    provider.shutdown().expect("provider shutdown");
    assert!(
        rx.wait_for(|s| s.len() >= 3, Duration::from_secs(5)),
        "got {:#?}",
        rx.spans()
    );
    check(&rx.spans(), t0);
    assert!(!rx.wait_for(|s| s.len() > 3, Duration::from_millis(50)));
    drop(rt);
    let addr = rx.addr();
    drop(rx);
    // The server is gone: the port no longer accepts.
    assert!(std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_err());
}

/// A provider whose gRPC exports carry `authorization: <value>` when `value` is given.
fn provider_with(endpoint: &str, authorization: Option<&str>) -> SdkTracerProvider {
    use opentelemetry_otlp::WithTonicConfig as _;
    let mut metadata = tonic::metadata::MetadataMap::new();
    if let Some(v) = authorization {
        metadata.insert("authorization", v.parse().expect("metadata value"));
    }
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .with_endpoint(endpoint)
        .with_metadata(metadata)
        .build()
        .expect("build the OTLP exporter");
    SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_without_the_required_authorization_is_refused() {
    let rx = OtlpReceiver::start().await;
    rx.require_authorization("Bearer t0ken");
    for (given, kept) in [
        (None, 0),
        (Some("Bearer other"), 0),
        (Some("Bearer t0ken"), 3),
    ] {
        rx.clear();
        let provider = provider_with(&rx.endpoint(), given);
        emit(&provider);
        tokio::task::spawn_blocking(move || provider.shutdown())
            .await
            .expect("join the shutdown")
            .ok();
        assert_eq!(rx.spans().len(), kept, "{given:?}");
    }
    assert_eq!(rx.unauthorized(), 2);
}
