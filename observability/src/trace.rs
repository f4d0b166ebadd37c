//! One OpenTelemetry trace per URL: the root span lives in a [`TraceCtx`] that travels inside the actor messages,
//! and every actor adds its child spans to it with measured start and end times.
//!
//! Spans are built with the OpenTelemetry API rather than `tracing` spans because their start times are measured
//! before the span can exist (the wait span starts when the URL was queued, the connect span inside hyper's
//! connector), and `tracing` spans cannot be back-dated. Log events stay on `tracing` and carry `trace_id` fields.

use opentelemetry::trace::{
    Link, Span as _, SpanBuilder, SpanKind, Status, TraceContextExt, TraceId, TraceState,
    Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue, global};
use opentelemetry_sdk::trace::{
    SamplingDecision, SamplingResult, SdkTracer, SdkTracerProvider, ShouldSample,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, RwLock};
use std::time::{Duration, Instant, SystemTime};

mod loss;

/// The instrumentation scope of every span.
pub const SCOPE: &str = "crawl-engine";

/// The share of new traces that are recorded and exported; changed live by a config reload.
static RATIO_BITS: AtomicU64 = AtomicU64::new(0);

/// Whether spans go anywhere; without an exporter nothing is sampled (trace ids are still made).
static EXPORTING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub(crate) fn set_exporting(on: bool) {
    EXPORTING.store(on, Ordering::Relaxed);
}

/// Sets the sampling ratio of new traces (clamped to 0..=1).
pub fn set_sample_ratio(ratio: f64) {
    let r = if ratio.is_nan() {
        0.0
    } else {
        ratio.clamp(0.0, 1.0)
    };
    RATIO_BITS.store(r.to_bits(), Ordering::Relaxed);
}

/// The current sampling ratio.
pub fn sample_ratio() -> f64 {
    f64::from_bits(RATIO_BITS.load(Ordering::Relaxed))
}

/// Parent-based, trace-id-ratio sampler whose ratio is read on every root decision, so a reload applies at once.
/// Children follow their parent, so a trace is exported whole or not at all.
#[derive(Debug, Clone)]
pub(crate) struct LiveRatioSampler;

/// Whether a trace id falls under `ratio` (the same rule as the SDK's `TraceIdRatioBased`).
pub fn ratio_admits(trace_id: TraceId, ratio: f64) -> bool {
    if ratio >= 1.0 {
        return true;
    }
    if ratio <= 0.0 {
        return false;
    }
    let bytes = trace_id.to_bytes();
    let mut low = [0u8; 8];
    low.copy_from_slice(&bytes[8..16]);
    let rnd = u64::from_be_bytes(low) >> 1;
    let bound = (ratio * (1u64 << 63) as f64) as u64;
    rnd < bound
}

impl ShouldSample for LiveRatioSampler {
    fn should_sample(
        &self,
        parent_context: Option<&Context>,
        trace_id: TraceId,
        _name: &str,
        _span_kind: &SpanKind,
        _attributes: &[KeyValue],
        _links: &[Link],
    ) -> SamplingResult {
        let parent = parent_context.filter(|cx| cx.span().span_context().is_valid());
        let (sampled, trace_state) = match parent {
            Some(cx) => {
                let span = cx.span();
                let sc = span.span_context();
                (sc.is_sampled(), sc.trace_state().clone())
            }
            None => (
                EXPORTING.load(Ordering::Relaxed) && ratio_admits(trace_id, sample_ratio()),
                TraceState::default(),
            ),
        };
        SamplingResult {
            decision: if sampled {
                SamplingDecision::RecordAndSample
            } else {
                SamplingDecision::Drop
            },
            attributes: Vec::new(),
            trace_state,
        }
    }
}

/// Spans waiting for the collector at most; past that a span is dropped (and counted). The SDK's queue is a bounded
/// channel that allocates all its slots (one `SpanData` each, a few hundred bytes) when the exporter starts, so this
/// bound is resident memory from the first span on (65,536 made the peak about 25 MiB higher than 8,192). 8,192 holds
/// eight full batches, enough while the collector keeps up.
const QUEUE_SPANS: usize = 8_192;
/// Spans per export request. The batch is held two or three times during an export (the exporter copies it to
/// retry, then builds the protobuf request); smaller batches cost more requests and, with one export in flight, lose
/// more spans when the crawl outpaces the collector.
const BATCH_SPANS: usize = 1_024;
/// Time between exports.
const EXPORT_EVERY: Duration = Duration::from_millis(500);

/// The batch processor around `exporter`, counting the spans it loses (see [`loss`]).
pub(crate) fn batch_processor<E: opentelemetry_sdk::trace::SpanExporter + 'static>(
    exporter: E,
    queue: usize,
    every: Duration,
) -> (
    loss::GuardedProcessor<opentelemetry_sdk::trace::BatchSpanProcessor>,
    std::sync::Arc<loss::Loss>,
) {
    let loss = loss::Loss::new();
    let config = opentelemetry_sdk::trace::BatchConfigBuilder::default()
        .with_max_queue_size(queue)
        .with_max_export_batch_size(BATCH_SPANS.min(queue))
        .with_scheduled_delay(every)
        .build();
    let processor = opentelemetry_sdk::trace::BatchSpanProcessor::builder(
        loss::CountingExporter::new(exporter, loss.clone()),
    )
    .with_batch_config(config)
    .build();
    let guarded = loss::GuardedProcessor::new(processor, loss.clone(), queue as u64);
    (guarded, loss)
}

/// Builds the provider: with an exporter when one is given, otherwise ids only (every record still gets a trace id).
pub(crate) fn provider(
    exporter: Option<opentelemetry_otlp::SpanExporter>,
    resource: opentelemetry_sdk::Resource,
) -> SdkTracerProvider {
    set_exporting(exporter.is_some());
    let mut b = SdkTracerProvider::builder()
        .with_sampler(LiveRatioSampler)
        .with_resource(resource);
    if let Some(exporter) = exporter {
        let (processor, _) = batch_processor(exporter, QUEUE_SPANS, EXPORT_EVERY);
        b = b.with_span_processor(processor);
    }
    b.build()
}

/// The tracer of the installed provider. Spans are built on it directly rather than through `global::tracer`, which
/// would look the provider up, allocate a boxed tracer and box every span.
static TRACER: RwLock<Option<SdkTracer>> = RwLock::new(None);

/// Runs `f` with the installed tracer (`None` before [`install`]).
fn with_tracer<R>(f: impl FnOnce(Option<&SdkTracer>) -> R) -> R {
    let guard = TRACER.read().unwrap_or_else(|e| e.into_inner());
    f(guard.as_ref())
}

/// Installs `p` as the global provider and as the provider of [`root`] and the child spans.
pub(crate) fn install(p: &SdkTracerProvider) {
    global::set_tracer_provider(p.clone());
    let tracer = p.tracer(SCOPE);
    *TRACER.write().unwrap_or_else(|e| e.into_inner()) = Some(tracer);
}

static ANCHOR: LazyLock<(Instant, SystemTime)> =
    LazyLock::new(|| (Instant::now(), SystemTime::now()));

/// The wall-clock time of a monotonic instant (spans need wall-clock times; the engine measures with `Instant`).
pub fn wall(at: Instant) -> SystemTime {
    let (i0, s0) = *ANCHOR;
    if at >= i0 {
        s0 + (at - i0)
    } else {
        s0.checked_sub(i0 - at).unwrap_or(s0)
    }
}

/// The trace of one URL job. Cheap to clone; an empty one (no tracer installed) makes every call a no-op.
#[derive(Clone, Debug, Default)]
pub struct TraceCtx {
    cx: Option<Context>,
}

/// Starts the root span of a URL's trace at `start`.
pub fn root(name: &'static str, start: SystemTime, attributes: Vec<KeyValue>) -> TraceCtx {
    let builder = SpanBuilder::from_name(name)
        .with_kind(SpanKind::Internal)
        .with_start_time(start)
        .with_attributes(attributes);
    let Some(span) = with_tracer(|t| t.map(|t| t.build_with_context(builder, &Context::new())))
    else {
        return TraceCtx::default();
    };
    if !span.span_context().is_valid() {
        return TraceCtx::default();
    }
    TraceCtx {
        cx: Some(Context::new().with_span(span)),
    }
}

impl TraceCtx {
    /// The trace id as 32 lowercase hex digits (None without a tracer).
    pub fn trace_id(&self) -> Option<String> {
        let cx = self.cx.as_ref()?;
        let span = cx.span();
        let sc = span.span_context();
        sc.is_valid().then(|| sc.trace_id().to_string())
    }

    /// Whether this trace is exported.
    pub fn is_sampled(&self) -> bool {
        self.cx
            .as_ref()
            .is_some_and(|cx| cx.span().span_context().is_sampled())
    }

    /// Records a finished child span.
    pub fn span(
        &self,
        name: &'static str,
        start: SystemTime,
        end: SystemTime,
        attributes: Vec<KeyValue>,
    ) {
        if let Some(mut s) = self.start_span_at(name, start, attributes) {
            s.end_with_timestamp(end.max(start));
        }
    }

    /// Records a finished child span that failed.
    pub fn failed_span(
        &self,
        name: &'static str,
        start: SystemTime,
        end: SystemTime,
        attributes: Vec<KeyValue>,
        error: &str,
    ) {
        if let Some(mut s) = self.start_span_at(name, start, attributes) {
            s.set_status(Status::error(error.to_owned()));
            s.end_with_timestamp(end.max(start));
        }
    }

    /// Starts a child span now; it ends when [`ChildSpan::end`] is called or it is dropped.
    pub fn start(&self, name: &'static str, attributes: Vec<KeyValue>) -> ChildSpan {
        ChildSpan(self.start_span_at(name, SystemTime::now(), attributes))
    }

    /// [`TraceCtx::start`] with attributes built only when the trace is exported (`attributes` is not called
    /// otherwise), for attributes that allocate.
    pub fn start_with(
        &self,
        name: &'static str,
        attributes: impl FnOnce() -> Vec<KeyValue>,
    ) -> ChildSpan {
        if !self.is_sampled() {
            return ChildSpan::none();
        }
        self.start(name, attributes())
    }

    fn start_span_at(
        &self,
        name: &'static str,
        start: SystemTime,
        attributes: Vec<KeyValue>,
    ) -> Option<opentelemetry_sdk::trace::Span> {
        let cx = self.cx.as_ref()?;
        if !cx.span().span_context().is_sampled() {
            return None;
        }
        let builder = SpanBuilder::from_name(name)
            .with_start_time(start)
            .with_attributes(attributes);
        with_tracer(|t| t.map(|t| t.build_with_context(builder, cx)))
    }

    /// Adds attributes to the root span.
    pub fn set_attributes(&self, attributes: Vec<KeyValue>) {
        if let Some(cx) = &self.cx {
            let span = cx.span();
            if span.is_recording() {
                span.set_attributes(attributes);
            }
        }
    }

    /// Marks the root span failed.
    pub fn set_error(&self, message: &str) {
        if let Some(cx) = &self.cx {
            cx.span().set_status(Status::error(message.to_owned()));
        }
    }

    /// Ends the root span at `at`.
    pub fn end(&self, at: SystemTime) {
        if let Some(cx) = &self.cx {
            cx.span().end_with_timestamp(at);
        }
    }
}

/// A child span in progress.
pub struct ChildSpan(Option<opentelemetry_sdk::trace::Span>);

impl ChildSpan {
    /// A span that records nothing.
    pub fn none() -> ChildSpan {
        ChildSpan(None)
    }

    /// Whether the span is exported (false for [`ChildSpan::none`] and spans of traces not sampled): attributes
    /// that cost something to build are worth building only then.
    pub fn is_recording(&self) -> bool {
        self.0.is_some()
    }

    pub fn set(&mut self, kv: KeyValue) {
        if let Some(s) = &mut self.0 {
            s.set_attribute(kv);
        }
    }

    pub fn set_error(&mut self, message: &str) {
        if let Some(s) = &mut self.0 {
            s.set_status(Status::error(message.to_owned()));
        }
    }

    pub fn end(mut self) {
        if let Some(mut s) = self.0.take() {
            s.end();
        }
    }
}

impl std::fmt::Debug for ChildSpan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ChildSpan").field(&self.0.is_some()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_rule_matches_edges_and_is_monotonic() {
        let low = TraceId::from_bytes([0; 16]);
        let high = TraceId::from_bytes([0xff; 16]);
        assert!(ratio_admits(low, 0.000_001));
        assert!(!ratio_admits(high, 0.999));
        assert!(ratio_admits(high, 1.0));
        assert!(!ratio_admits(low, 0.0));
        let mut admitted = 0;
        for i in 0..10_000u64 {
            let mut b = [0u8; 16];
            b[8..16].copy_from_slice(&i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes());
            if ratio_admits(TraceId::from_bytes(b), 0.25) {
                admitted += 1;
            }
        }
        assert!((2_200..2_800).contains(&admitted), "{admitted}");
    }

    #[test]
    fn wall_clock_keeps_order() {
        let a = Instant::now();
        let b = a + Duration::from_millis(1500);
        let d = wall(b).duration_since(wall(a)).expect("ordered");
        assert_eq!(d, Duration::from_millis(1500));
    }

    #[test]
    fn without_tracer_everything_is_a_no_op() {
        let t = TraceCtx::default();
        assert_eq!(t.trace_id(), None);
        t.span("x", SystemTime::now(), SystemTime::now(), vec![]);
        t.start("y", vec![]).end();
        let span = t.start_with("z", || {
            panic!("attributes built for a trace that is not exported")
        });
        assert!(!span.is_recording());
        span.end();
        t.end(SystemTime::now());
    }
}
