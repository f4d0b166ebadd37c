use super::*;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider, SpanData, SpanExporter};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// An exporter that keeps what the SDK hands it.
#[derive(Debug, Clone, Default)]
struct Kept(Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for Kept {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0.lock().unwrap().extend(batch);
        Ok(())
    }
}

impl Kept {
    fn spans(&self) -> Vec<SpanData> {
        self.0.lock().unwrap().clone()
    }
}

/// A tracer of a provider of its own, sampling with `sampler`, whose spans go to the returned exporter as they
/// end.
fn tracer(sampler: Sampler) -> (Tracer, Kept) {
    let kept = Kept::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(kept.clone())
        .with_sampler(sampler.clone())
        .with_id_generator(sampler::DecidedIds)
        .build();
    let tracer: &'static SdkTracer = Box::leak(Box::new(provider.tracer(SCOPE)));
    (Tracer::Export(tracer, Box::leak(Box::new(sampler))), kept)
}

fn attr(span: &SpanData, key: &str) -> Option<opentelemetry::Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
}

#[test]
fn a_sampled_trace_exports_its_root_and_children_with_their_times() {
    let (t, kept) = tracer(Sampler::AlwaysOn);
    let t0 = Instant::now();
    let mut root = root_with(Some(t), "crawl.url", Stamp::from(t0), &[]);
    assert!(root.is_sampled());
    root.set_attributes(&[crate::keyed_i64!("crawl.depth", 2)]);
    let ctx = root.ctx();
    ctx.span(
        "frontier.wait",
        t0,
        t0 + Duration::from_millis(5),
        &[crate::preset_str!("robots.verdict", "allowed")],
    );
    ctx.failed_span("http.connect", t0, t0, &[], "refused");
    let mut open = ctx.start("dns.resolve", &[Attr::new("dns.name", "a.test")]);
    assert!(open.is_recording());
    open.set(Attr::new("dns.source", "cache"));
    open.end();
    Alike::new("frontier.commit", t0, t0 + Duration::from_millis(1)).add(&ctx);
    root.set_error("http_status");
    let id = root.trace_id().unwrap_or_default();
    root.end(t0 + Duration::from_millis(9));

    let spans = kept.spans();
    let names: Vec<_> = spans.iter().map(|s| s.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "frontier.wait",
            "http.connect",
            "dns.resolve",
            "frontier.commit",
            "crawl.url"
        ]
    );
    let root = &spans[4];
    assert_eq!(root.parent_span_id, opentelemetry::trace::SpanId::INVALID);
    assert_eq!(root.span_context.trace_id().to_string(), id);
    assert_eq!(
        attr(root, "crawl.depth"),
        Some(opentelemetry::Value::I64(2))
    );
    assert_eq!(root.status, Status::error("http_status"));
    assert_eq!(root.start_time, wall(t0));
    assert_eq!(root.end_time, wall(t0 + Duration::from_millis(9)));
    for child in &spans[..4] {
        assert_eq!(
            child.parent_span_id,
            root.span_context.span_id(),
            "{}",
            child.name
        );
        assert_eq!(child.span_context.trace_id(), root.span_context.trace_id());
    }
    assert_eq!(
        attr(&spans[0], "robots.verdict"),
        Some(opentelemetry::Value::from("allowed"))
    );
    assert_eq!(spans[0].end_time, wall(t0 + Duration::from_millis(5)));
    assert_eq!(spans[1].status, Status::error("refused"));
    assert_eq!(
        attr(&spans[2], "dns.source"),
        Some(opentelemetry::Value::from("cache"))
    );
}

#[test]
fn a_trace_not_sampled_keeps_its_id_and_records_nothing() {
    let (t, kept) = tracer(Sampler::ParentBased(Box::new(Sampler::AlwaysOff)));
    let mut root = root_with(Some(t), "crawl.url", Stamp::now(), &[]);
    assert!(!root.is_sampled());
    assert_eq!(root.exported_id(), None);
    let id = root.trace_id().unwrap_or_default();
    assert!(id.len() == 32 && id != "0".repeat(32), "{id}");
    let ctx = root.ctx();
    assert_eq!(ctx.trace_id().as_deref(), Some(id.as_str()));
    ctx.span("frontier.wait", Stamp::now(), Stamp::now(), &[]);
    assert!(!ctx.start("dns.resolve", &[]).is_recording());
    root.set_attributes(&[crate::keyed_i64!("crawl.attempt", 1)]);
    root.end(Stamp::now());
    assert!(kept.spans().is_empty());
}

#[test]
fn a_trace_dropped_before_its_end_exports_its_root_then() {
    let (t, kept) = tracer(Sampler::AlwaysOn);
    let before = SystemTime::now();
    drop(root_with(Some(t), "crawl.url", Stamp::now(), &[]));
    let spans = kept.spans();
    assert_eq!(spans.len(), 1);
    assert!(spans[0].end_time >= before);
}

/// Roots are decided before the SDK builds them, and a sampled one is exported under the id it was decided on.
#[test]
fn a_root_is_exported_under_the_id_it_was_sampled_by() {
    let (t, kept) = tracer(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
        0.5,
    ))));
    let mut exported = Vec::new();
    for _ in 0..400 {
        let root = root_with(Some(t), "crawl.url", Stamp::now(), &[]);
        if root.is_sampled() {
            exported.push(root.trace_id().unwrap_or_default());
        }
        root.end(Stamp::now());
    }
    let got: Vec<String> = kept
        .spans()
        .iter()
        .map(|s| s.span_context.trace_id().to_string())
        .collect();
    assert_eq!(got, exported, "one root a sampled trace, under its own id");
    assert!(
        (100..300).contains(&got.len()),
        "{} of 400 at 0.5",
        got.len()
    );
}

#[test]
fn ids_only_and_no_tracer() {
    let ids = root_with(Some(Tracer::Ids), "crawl.url", Stamp::now(), &[]);
    assert!(!ids.is_sampled());
    assert_eq!(ids.trace_id().map(|s| s.len()), Some(32));
    let off = root_with(None, "crawl.url", Stamp::now(), &[]);
    assert_eq!(off.trace_id(), None);
    assert!(!off.ctx().start("x", &[]).is_recording());
}

#[test]
fn hex_ids_match_display() {
    let id = TraceId::from(0x0123_4567_89ab_cdef_fedc_ba98_7654_3210_u128);
    assert_eq!(hex_bytes(id.to_bytes()), id.to_string());
}
