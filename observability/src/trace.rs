//! One OpenTelemetry trace per URL: the root span is a [`Trace`], which the actor that starts it keeps and ends;
//! its [`TraceCtx`] (the ids, a plain value) travels inside the actor messages, and every actor adds its child
//! spans with it, with measured start and end times.
//!
//! Spans are the engine's own records rather than `tracing` spans or the OpenTelemetry SDK's, because their start
//! times are measured before the span can exist (the wait span starts when the URL was queued, the connect span
//! inside hyper's connector), and because at one trace per URL the SDK's path (a `SpanData` per span, a bounded
//! channel, a copy of every batch, protobuf messages built from it) cost the crawl about a quarter of its CPU. A
//! child span is encoded into OTLP protobuf when it ends ([`wire`]) and the encoded batches go to the collector
//! over OTLP/gRPC or OTLP/HTTP ([`export`]). Log events stay on `tracing` and carry `trace_id` fields.

use opentelemetry::trace::TraceId;
use opentelemetry_sdk::trace::{IdGenerator as _, RandomIdGenerator};
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

mod alike;
mod attr;
mod export;
mod loss;
mod time;
mod wire;

pub use alike::Alike;
pub use attr::{Attr, AttrValue, Const, KEY_HEAD_MAX, KeyHead, preset, preset_len};
pub use export::{Compression, Protocol};
pub use time::{Stamp, wall};

use export::Batches;
use wire::{ATTRIBUTES_FIELD, SpanRef, put_attr};

/// Encodes `attributes` as `Span.attributes` fields, appended to `out` (from a slice: an array given by value was
/// moved into its iterator and each attribute out of it again).
fn encode_attributes(out: &mut Vec<u8>, attributes: &[Attr<'_>]) {
    for a in attributes {
        put_attr(out, ATTRIBUTES_FIELD, a);
    }
}

/// The instrumentation scope of every span.
pub const SCOPE: &str = "crawl-engine";

/// The share of new traces that are recorded and exported; changed live by a config reload.
static RATIO_BITS: AtomicU64 = AtomicU64::new(0);

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

/// Whether a trace id falls under `ratio` (the same rule as the SDK's `TraceIdRatioBased`). A root is sampled by
/// this rule with the ratio in force when it starts, so a reload applies at once; its children follow it, so a
/// trace is exported whole or not at all.
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

/// The tracer in force: trace ids only (no exporter), or ids and spans exported to `Batches`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Tracer {
    Ids,
    Export(&'static Batches),
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

/// The running span exporter: its batches, the task that sends them and the runtime of that task and of the gRPC
/// connection.
pub(crate) struct Exporter {
    batches: &'static Batches,
    stop: Arc<tokio::sync::Notify>,
    task: tokio::task::JoinHandle<()>,
    runtime: tokio::runtime::Runtime,
}

impl std::fmt::Debug for Exporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exporter").finish_non_exhaustive()
    }
}

/// How long shutdown waits for the last export.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

impl Exporter {
    /// Starts exporting to the OTLP collector at `endpoint` over `protocol`, requests compressed as `compression`,
    /// on a runtime thread of its own (`otlp`), spans carrying `resource`.
    pub(crate) fn start(
        endpoint: &str,
        (protocol, compression): (Protocol, Compression),
        resource: &[Attr<'_>],
    ) -> Result<Exporter, String> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("otlp")
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        // Built inside the runtime whose tasks carry its connection.
        let transport = {
            let _enter = runtime.enter();
            export::Otlp::new(endpoint, protocol, compression, export::EXPORT_TIMEOUT)?
        };
        Ok(Exporter::launch(
            runtime,
            transport,
            (export::QUEUE_SPANS, export::BATCH_SPANS),
            export::EXPORT_EVERY,
            resource,
        ))
    }

    /// Starts the export task on `runtime`: at most `limit` spans pending, `batch` spans a request.
    fn launch<T: export::Transport>(
        runtime: tokio::runtime::Runtime,
        transport: T,
        (limit, batch): (u64, usize),
        every: Duration,
        resource: &[Attr<'_>],
    ) -> Exporter {
        let batches = Batches::new(limit, batch);
        let stop = Arc::new(tokio::sync::Notify::new());
        let task = runtime.spawn(export::run(
            batches,
            wire::Header::new(resource, SCOPE),
            transport,
            every,
            stop.clone(),
        ));
        Exporter {
            batches,
            stop,
            task,
            runtime,
        }
    }

    /// The tracer that exports here.
    pub(crate) fn tracer(&self) -> Tracer {
        Tracer::Export(self.batches)
    }

    /// Takes no more spans, sends what is pending (waiting at most [`SHUTDOWN_WAIT`]) and counts what was not
    /// sent. Blocks: call it off any tokio runtime thread.
    pub(crate) fn shutdown(self) {
        self.shutdown_within(SHUTDOWN_WAIT);
    }

    fn shutdown_within(self, wait: Duration) {
        self.batches.close();
        self.stop.notify_one();
        let task = self.task;
        let finished = self
            .runtime
            .block_on(async { tokio::time::timeout(wait, task).await.is_ok() });
        if !finished {
            tracing::warn!(
                wait_ms = wait.as_millis() as u64,
                "trace export did not finish at shutdown"
            );
        }
        self.batches.loss().close();
        self.runtime.shutdown_timeout(Duration::from_secs(2));
    }
}

/// A trace id as 32 lowercase hex digits (what its `Display` writes, without the formatter's generic path: every
/// record takes one).
fn hex_id(id: TraceId) -> String {
    hex_bytes(id.to_bytes())
}

/// 16 bytes (a trace id) as 32 lowercase hex digits.
pub(crate) fn hex_bytes(id: [u8; 16]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 32];
    for (pair, b) in out.chunks_exact_mut(2).zip(id) {
        pair[0] = DIGITS[usize::from(b >> 4)];
        pair[1] = DIGITS[usize::from(b & 0xf)];
    }
    // Hex digits are ASCII: the check cannot fail.
    std::str::from_utf8(&out).unwrap_or_default().to_owned()
}

thread_local! {
    /// The state of this thread's span id sequence, seeded from the SDK's random generator.
    static SPAN_IDS: Cell<u64> = Cell::new(u64::from_be_bytes(
        RandomIdGenerator::default().new_span_id().to_bytes(),
    ));
}

/// A new span id: the next value of this thread's SplitMix64 sequence (a bijection of a counter with a random
/// start, so ids of one thread never repeat and those of threads seeded apart almost never meet), never zero. The
/// SDK's generator draws from the thread's cryptographic generator, several times the cost for a value that only
/// has to be unique within its trace.
fn new_span_id() -> [u8; 8] {
    let state = SPAN_IDS
        .try_with(|s| {
            let next = s.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
            s.set(next);
            next
        })
        .unwrap_or_else(|_| {
            u64::from_be_bytes(RandomIdGenerator::default().new_span_id().to_bytes())
        });
    let mut z = state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    z.max(1).to_be_bytes()
}

/// What a span of a URL's trace needs: the trace's id, and for an exported trace its root span's id and where
/// its spans go. A plain value (`Copy`), carried in the actor messages: adding a child span reads nothing shared
/// with the other actors and writes no count of references (the root span is the [`Trace`], which one actor
/// owns). An empty one (no tracer installed) makes every call a no-op, and so does one that is not sampled (it
/// only has its trace id).
#[derive(Clone, Copy, Debug, Default)]
pub struct TraceCtx(Inner);

#[derive(Clone, Copy, Debug, Default)]
enum Inner {
    #[default]
    Off,
    Ids(TraceId),
    Sampled(Sampled),
}

/// The ids of an exported trace and its exporter's batches.
#[derive(Clone, Copy)]
struct Sampled {
    trace_id: [u8; 16],
    /// The root span's id: every child's parent.
    root: [u8; 8],
    out: &'static Batches,
}

impl std::fmt::Debug for Sampled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sampled")
            .field("trace_id", &hex_bytes(self.trace_id))
            .finish_non_exhaustive()
    }
}

impl Sampled {
    /// Exports a child span that ended.
    fn child(
        &self,
        name: &str,
        (start, end): (Stamp, Stamp),
        attributes: Attributes<'_>,
        error: Option<&str>,
    ) {
        self.out.push(&SpanRef {
            trace_id: self.trace_id,
            span_id: new_span_id(),
            parent: Some(self.root),
            name,
            start_ns: start.0,
            end_ns: end.max(start).0,
            encoded: attributes.encoded,
            attributes: attributes.list,
            error,
        });
    }
}

/// A child span's attributes: already encoded, then still to encode.
#[derive(Clone, Copy)]
struct Attributes<'a> {
    encoded: &'a [u8],
    list: &'a [Attr<'a>],
}

/// Bytes a root span's encoded attributes typically take (URL, kind, depth, outcome, status, JSONL line).
const ROOT_ATTRIBUTE_BYTES: usize = 256;

/// Buffers of roots' attributes a thread keeps for its next roots at most: the scheduler starts and ends every
/// root, and a group commit ends as many at once as it holds records.
const POOLED_ROOT_BUFFERS: usize = 256;

thread_local! {
    /// Buffers of the roots that ended on this thread, empty, for the next roots: a root's buffer goes round
    /// without the allocator (whose per-thread cache, handed hundreds of frees at once when a commit's traces
    /// end, flushed them to its arena at every commit and filled itself again from it).
    static ROOT_BUFFERS: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// A buffer for a new root's attributes: one a root that ended left on this thread, else a new one.
fn root_buffer() -> Vec<u8> {
    ROOT_BUFFERS
        .try_with(|pool| pool.try_borrow_mut().ok()?.pop())
        .ok()
        .flatten()
        .unwrap_or_else(|| Vec::with_capacity(ROOT_ATTRIBUTE_BYTES))
}

/// Keeps an ended root's buffer for the next root on this thread (not one grown past a few roots' worth, for a
/// long URL: it is freed).
fn give_back(mut buffer: Vec<u8>) {
    if buffer.capacity() > 4 * ROOT_ATTRIBUTE_BYTES {
        return;
    }
    buffer.clear();
    let _ = ROOT_BUFFERS.try_with(|pool| {
        if let Ok(mut pool) = pool.try_borrow_mut()
            && pool.len() < POOLED_ROOT_BUFFERS
        {
            pool.push(buffer);
        }
    });
}

/// Bytes of encoded attributes an open child span ([`TraceCtx::start`]) has room for when it starts: a DNS
/// answer's five (name, source, outcome, verdict, addresses) fit.
const CHILD_ATTRIBUTE_BYTES: usize = 160;

/// The trace of one URL, with its root span: kept by the actor that starts it and ends it (the scheduler), while
/// the other actors get its [`TraceCtx`]. The root span is exported when it ends ([`Trace::end`]) or when the
/// `Trace` is dropped (then it ends at that moment); its children may end before or after it.
#[derive(Debug, Default)]
pub struct Trace {
    ctx: TraceCtx,
    /// The root span, until it is exported (only in a sampled trace).
    root: Option<RootSpan>,
}

/// The root span of a sampled trace, still open.
#[derive(Debug)]
struct RootSpan {
    name: &'static str,
    start: Stamp,
    /// Its attributes, encoded as they are set.
    attributes: Vec<u8>,
    error: Option<String>,
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
    let Some(tracer) = tracer else {
        return Trace::default();
    };
    let trace_id = RandomIdGenerator::default().new_trace_id();
    match tracer {
        Tracer::Export(out) if ratio_admits(trace_id, sample_ratio()) => {
            // A root collects a dozen attributes: room for them at once, not by regrowing.
            let mut encoded = root_buffer();
            encode_attributes(&mut encoded, attributes);
            Trace {
                ctx: TraceCtx(Inner::Sampled(Sampled {
                    trace_id: trace_id.to_bytes(),
                    root: new_span_id(),
                    out,
                })),
                root: Some(RootSpan {
                    name,
                    start,
                    attributes: encoded,
                    error: None,
                }),
            }
        }
        _ => Trace {
            ctx: TraceCtx(Inner::Ids(trace_id)),
            root: None,
        },
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

    /// Adds attributes to the root span (nothing once it ended).
    pub fn set_attributes(&mut self, attributes: &[Attr<'_>]) {
        if let Some(root) = &mut self.root {
            encode_attributes(&mut root.attributes, attributes);
        }
    }

    /// Marks the root span failed.
    pub fn set_error(&mut self, message: &str) {
        if let Some(root) = &mut self.root {
            root.error = Some(message.to_owned());
        }
    }

    /// Ends the root span at `at` and exports it.
    pub fn end(mut self, at: impl Into<Stamp>) {
        self.finish(at.into());
    }

    fn finish(&mut self, at: Stamp) {
        let (Some(root), Inner::Sampled(ids)) = (self.root.take(), &self.ctx.0) else {
            return;
        };
        ids.out.push(&SpanRef {
            trace_id: ids.trace_id,
            span_id: ids.root,
            parent: None,
            name: root.name,
            start_ns: root.start.0,
            end_ns: at.0,
            encoded: &root.attributes,
            attributes: &[],
            error: root.error.as_deref(),
        });
        give_back(root.attributes);
    }
}

impl Drop for Trace {
    fn drop(&mut self) {
        if self.root.is_some() {
            self.finish(Stamp::now());
        }
    }
}

impl TraceCtx {
    /// The trace id as 32 lowercase hex digits (None without a tracer).
    pub fn trace_id(&self) -> Option<String> {
        match &self.0 {
            Inner::Off => None,
            Inner::Ids(id) => Some(hex_id(*id)),
            Inner::Sampled(s) => Some(hex_bytes(s.trace_id)),
        }
    }

    /// The trace id of an exported trace, as its 16 bytes (None when it is not exported).
    pub fn exported_id(&self) -> Option<[u8; 16]> {
        self.sampled().map(|s| s.trace_id)
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
        times: (Stamp, Stamp),
        attributes: &[Attr<'_>],
        error: Option<&str>,
    ) {
        if let Some(s) = self.sampled() {
            let attributes = Attributes {
                encoded: &[],
                list: attributes,
            };
            s.child(name, times, attributes, error);
        }
    }

    /// Starts a child span now; it ends when [`ChildSpan::end`] is called or it is dropped.
    pub fn start(&self, name: &'static str, attributes: &[Attr<'_>]) -> ChildSpan {
        match self.sampled() {
            Some(s) => {
                // Room for the attributes an open span usually collects, not regrown as they are set.
                let mut encoded = Vec::with_capacity(CHILD_ATTRIBUTE_BYTES);
                encode_attributes(&mut encoded, attributes);
                ChildSpan(Some(Open {
                    ctx: *s,
                    name,
                    start: Stamp::now(),
                    attributes: encoded,
                    error: None,
                }))
            }
            None => ChildSpan::none(),
        }
    }
}

/// A child span in progress (of a sampled trace).
struct Open {
    ctx: Sampled,
    name: &'static str,
    start: Stamp,
    /// Its attributes, encoded as they are set.
    attributes: Vec<u8>,
    error: Option<String>,
}

/// A child span in progress; exported when it ends or is dropped.
pub struct ChildSpan(Option<Open>);

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
        if let Some(s) = &mut self.0 {
            put_attr(&mut s.attributes, ATTRIBUTES_FIELD, &a);
        }
    }

    pub fn set_error(&mut self, message: &str) {
        if let Some(s) = &mut self.0 {
            s.error = Some(message.to_owned());
        }
    }

    pub fn end(mut self) {
        self.finish();
    }

    fn finish(&mut self) {
        if let Some(s) = self.0.take() {
            s.ctx.child(
                s.name,
                (s.start, Stamp::now()),
                Attributes {
                    encoded: &s.attributes,
                    list: &[],
                },
                s.error.as_deref(),
            );
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
