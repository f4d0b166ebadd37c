//! One OpenTelemetry trace per URL: the root span is a [`Trace`], which the actor that starts it keeps and ends;
//! its [`TraceCtx`] (the ids, a plain value) travels inside the actor messages, and every actor adds its child
//! spans with it, with measured start and end times.
//!
//! Spans are the OpenTelemetry SDK's, made with explicit start and end times (`SpanBuilder::with_start_time`,
//! `end_with_timestamp`) rather than as `tracing` spans: their start is measured before the span can exist (the
//! wait span starts when the URL was queued, the connect span inside hyper's connector). They go through the SDK's
//! batch span processor to `opentelemetry-otlp`'s exporter ([`export`]). A root is sampled by its trace id with
//! the ratio in force ([`set_sample_ratio`]), decided before the SDK builds a span ([`sampler::decide_root`]), and
//! its children follow it; a trace that is not sampled keeps its trace id (records carry it) and costs nothing
//! more: no SDK span, no attributes and no child span are made. Log events stay on `tracing` and carry
//! `trace_id` fields.

use opentelemetry::Context;
use opentelemetry::trace::{
    Span as _, SpanBuilder, SpanContext, SpanId, Status, TraceContextExt as _, TraceFlags, TraceId,
    TraceState, Tracer as _,
};
use opentelemetry_sdk::trace::{IdGenerator as _, RandomIdGenerator, Sampler, SdkTracer, Span};
use std::cell::Cell;
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};

mod alike;
mod attr;
mod counting;
mod export;
mod loss;
mod protocol;
mod sampler;
mod time;

pub use alike::Alike;
pub use attr::{Attr, AttrValue};
pub use export::ExportQueue;
pub(crate) use export::{Exporter, Target};
pub use protocol::{Compression, Protocol};
pub use sampler::{LiveRatio, sample_ratio, set_sample_ratio};
pub use time::{Stamp, wall};

/// The instrumentation scope of every span.
pub const SCOPE: &str = "crawl-engine";

/// The tracer in force: trace ids only (no exporter), or the SDK's tracer whose spans are exported, with the
/// sampler of its provider (which roots are decided by before the SDK builds them).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Tracer {
    Ids,
    Export(&'static SdkTracer, &'static Sampler),
}

/// The installed tracer (`None` before [`install`]: no trace ids at all).
static TRACER: RwLock<Option<Tracer>> = RwLock::new(None);

/// Bumped by every [`install`]: a thread reads [`TRACER`] again only when this changed, and otherwise uses its own
/// copy (a read lock taken at every root wrote a cache line shared by every thread that starts traces).
static TRACER_GENERATION: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread's copy of the tracer, with the generation it was read at.
    static TRACER_SEEN: Cell<(u64, Option<Tracer>)> = const { Cell::new((0, None)) };
}

/// Installs `t` as the tracer of [`root`].
pub(crate) fn install(t: Tracer) {
    *TRACER.write().unwrap_or_else(|e| e.into_inner()) = Some(t);
    TRACER_GENERATION.fetch_add(1, Ordering::Release);
}

/// The tracer in force.
fn tracer() -> Option<Tracer> {
    let read = || *TRACER.read().unwrap_or_else(|e| e.into_inner());
    let generation = TRACER_GENERATION.load(Ordering::Acquire);
    TRACER_SEEN
        .try_with(|seen| {
            let (at, t) = seen.get();
            if at == generation {
                return t;
            }
            let t = read();
            seen.set((generation, t));
            t
        })
        .unwrap_or_else(|_| read())
}

/// 16 bytes (a trace id) as 32 lowercase hex digits (what `TraceId`'s `Display` writes, without the formatter's
/// generic path: every record takes one).
pub(crate) fn hex_bytes(id: [u8; 16]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(32);
    for b in id {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

/// What a span of a URL's trace needs: the trace's id, and for an exported trace its root span's id and the
/// tracer of its spans. A plain value (`Copy`), carried in the actor messages. An empty one (no tracer installed)
/// makes every call a no-op, and so does one that is not sampled (it only has its trace id).
#[derive(Clone, Copy, Debug, Default)]
pub struct TraceCtx(Inner);

#[derive(Clone, Copy, Debug, Default)]
enum Inner {
    #[default]
    Off,
    Ids(TraceId),
    Sampled(Sampled),
}

/// The ids of an exported trace and the tracer of its spans.
#[derive(Clone, Copy, Debug)]
struct Sampled {
    trace_id: TraceId,
    /// The root span's id: every child's parent.
    root: SpanId,
    tracer: &'static SdkTracer,
}

impl Sampled {
    /// A child span of the root from `start`, with `attributes`.
    fn child(&self, name: &'static str, start: Stamp, attributes: &[Attr<'_>]) -> Span {
        let parent = SpanContext::new(
            self.trace_id,
            self.root,
            TraceFlags::SAMPLED,
            false,
            TraceState::NONE,
        );
        let cx = Context::new().with_remote_span_context(parent);
        let mut builder = SpanBuilder::from_name(name).with_start_time(start.system_time());
        if !attributes.is_empty() {
            builder.attributes = Some(attributes.iter().map(Attr::key_value).collect());
        }
        self.tracer.build_with_context(builder, &cx)
    }
}

/// The trace of one URL, with its root span: kept by the actor that starts it and ends it (the scheduler), while
/// the other actors get its [`TraceCtx`]. The root span is exported when it ends ([`Trace::end`]) or when the
/// `Trace` is dropped (then it ends at that moment); its children may end before or after it.
#[derive(Debug, Default)]
pub struct Trace {
    ctx: TraceCtx,
    /// The root span, until it ends (only in a sampled trace).
    root: Option<Span>,
}

/// Starts the root span of a URL's trace at `start`.
pub fn root(name: &'static str, start: impl Into<Stamp>, attributes: &[Attr<'_>]) -> Trace {
    root_with(tracer(), name, start.into(), attributes)
}

fn root_with(
    tracer: Option<Tracer>,
    name: &'static str,
    start: Stamp,
    attributes: &[Attr<'_>],
) -> Trace {
    match tracer {
        None => Trace::default(),
        Some(Tracer::Ids) => Trace {
            ctx: TraceCtx(Inner::Ids(RandomIdGenerator::default().new_trace_id())),
            root: None,
        },
        Some(Tracer::Export(tracer, sampler)) => {
            // The sampler decides before any span or attribute is made: a trace not sampled keeps only its id.
            let (trace_id, sampled) = sampler::decide_root(sampler, name);
            if !sampled {
                return Trace {
                    ctx: TraceCtx(Inner::Ids(trace_id)),
                    root: None,
                };
            }
            let builder = SpanBuilder::from_name(name).with_start_time(start.system_time());
            let mut span = tracer.build_with_context(builder, &Context::new());
            sampler::forget_decided();
            let sc = span.span_context();
            let (trace_id, root) = (sc.trace_id(), sc.span_id());
            if !sc.is_sampled() {
                return Trace {
                    ctx: TraceCtx(Inner::Ids(trace_id)),
                    root: None,
                };
            }
            if !attributes.is_empty() {
                span.set_attributes(attributes.iter().map(Attr::key_value));
            }
            Trace {
                ctx: TraceCtx(Inner::Sampled(Sampled {
                    trace_id,
                    root,
                    tracer,
                })),
                root: Some(span),
            }
        }
    }
}

impl Trace {
    /// What the other actors need to add spans to this trace.
    pub fn ctx(&self) -> TraceCtx {
        self.ctx
    }

    /// The trace id as 32 lowercase hex digits (None without a tracer).
    pub fn trace_id(&self) -> Option<String> {
        self.ctx.trace_id()
    }

    /// The trace id of an exported trace, as its 16 bytes (None when it is not exported).
    pub fn exported_id(&self) -> Option<[u8; 16]> {
        self.ctx.exported_id()
    }

    /// Whether this trace is exported.
    pub fn is_sampled(&self) -> bool {
        self.ctx.is_sampled()
    }

    /// Adds attributes to the root span (nothing once it ended, or when the trace is not exported).
    pub fn set_attributes(&mut self, attributes: &[Attr<'_>]) {
        if let Some(root) = &mut self.root {
            root.set_attributes(attributes.iter().map(Attr::key_value));
        }
    }

    /// Marks the root span failed.
    pub fn set_error(&mut self, message: &str) {
        if let Some(root) = &mut self.root {
            root.set_status(Status::error(message.to_owned()));
        }
    }

    /// Ends the root span at `at` and exports it.
    pub fn end(mut self, at: impl Into<Stamp>) {
        self.finish(at.into());
    }

    fn finish(&mut self, at: Stamp) {
        if let Some(mut root) = self.root.take() {
            root.end_with_timestamp(at.system_time());
        }
    }
}

impl Drop for Trace {
    fn drop(&mut self) {
        self.finish(Stamp::now());
    }
}

impl TraceCtx {
    /// The trace id as 32 lowercase hex digits (None without a tracer).
    pub fn trace_id(&self) -> Option<String> {
        match &self.0 {
            Inner::Off => None,
            Inner::Ids(id) => Some(hex_bytes(id.to_bytes())),
            Inner::Sampled(s) => Some(hex_bytes(s.trace_id.to_bytes())),
        }
    }

    /// The trace id of an exported trace, as its 16 bytes (None when it is not exported).
    pub fn exported_id(&self) -> Option<[u8; 16]> {
        self.sampled().map(|s| s.trace_id.to_bytes())
    }

    /// Whether this trace is exported.
    pub fn is_sampled(&self) -> bool {
        matches!(self.0, Inner::Sampled(_))
    }

    fn sampled(&self) -> Option<&Sampled> {
        match &self.0 {
            Inner::Sampled(s) => Some(s),
            _ => None,
        }
    }

    /// Records a finished child span.
    pub fn span(
        &self,
        name: &'static str,
        start: impl Into<Stamp>,
        end: impl Into<Stamp>,
        attributes: &[Attr<'_>],
    ) {
        self.finished(name, (start.into(), end.into()), attributes, None);
    }

    /// Records a finished child span that failed.
    pub fn failed_span(
        &self,
        name: &'static str,
        start: impl Into<Stamp>,
        end: impl Into<Stamp>,
        attributes: &[Attr<'_>],
        error: &str,
    ) {
        self.finished(name, (start.into(), end.into()), attributes, Some(error));
    }

    fn finished(
        &self,
        name: &'static str,
        (start, end): (Stamp, Stamp),
        attributes: &[Attr<'_>],
        error: Option<&str>,
    ) {
        if let Some(s) = self.sampled() {
            let mut span = s.child(name, start, attributes);
            if let Some(e) = error {
                span.set_status(Status::error(e.to_owned()));
            }
            span.end_with_timestamp(end.max(start).system_time());
        }
    }

    /// Starts a child span now; it ends when [`ChildSpan::end`] is called or it is dropped.
    pub fn start(&self, name: &'static str, attributes: &[Attr<'_>]) -> ChildSpan {
        match self.sampled() {
            Some(s) => {
                let start = Stamp::now();
                ChildSpan(Some((s.child(name, start, attributes), start)))
            }
            None => ChildSpan::none(),
        }
    }
}

/// A child span in progress; exported when it ends or is dropped.
pub struct ChildSpan(Option<(Span, Stamp)>);

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

    pub fn set(&mut self, a: Attr<'_>) {
        if let Some((s, _)) = &mut self.0 {
            s.set_attribute(a.key_value());
        }
    }

    pub fn set_error(&mut self, message: &str) {
        if let Some((s, _)) = &mut self.0 {
            s.set_status(Status::error(message.to_owned()));
        }
    }

    pub fn end(mut self) {
        self.finish();
    }

    fn finish(&mut self) {
        if let Some((mut s, start)) = self.0.take() {
            s.end_with_timestamp(Stamp::now().max(start).system_time());
        }
    }
}

impl Drop for ChildSpan {
    fn drop(&mut self) {
        self.finish();
    }
}

impl std::fmt::Debug for ChildSpan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ChildSpan").field(&self.0.is_some()).finish()
    }
}

#[cfg(test)]
mod tests;
