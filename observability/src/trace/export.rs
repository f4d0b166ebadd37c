//! The span exporter: spans are encoded into OTLP protobuf when they end ([`Batches::push`], on the thread that
//! ends them) and sent in batches by one task on the exporter's runtime ([`run`]), over OTLP/gRPC or OTLP/HTTP
//! ([`Otlp`]).
//!
//! A span costs one encoding, straight into a buffer of the thread that ends it, under that thread's own lock;
//! every [`CHUNK_SPANS`] spans the thread hands its buffer (not a copy) to the batch being filled, under the
//! shared lock (taken once a span, that lock was contended by every thread that ends spans). The bound on pending
//! spans is checked at that hand-over too, for the whole chunk: a shared counter written at every span cost each
//! span a cache line taken from another core. Nothing of a span is
//! kept but its bytes (about 100 to 300 a span), so the bound on pending spans ([`QUEUE_SPANS`]) is a bound of a
//! few MiB at most, allocated only as spans come. An export takes a batch of [`BATCH_SPANS`] when one is full,
//! and whatever is pending every [`EXPORT_EVERY`]; up to [`IN_FLIGHT`] requests are in flight at a time, so that
//! the collector's answer to one (and its decoding of the batch) does not hold the next back while the crawl
//! keeps ending spans.

use super::loss::Loss;
use super::wire::{Header, SpanRef, Template, put_span};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

mod mismatch;
mod otlp;
mod retry;
pub(crate) use otlp::Otlp;
pub use otlp::{Compression, Protocol};
pub(crate) use retry::Failure;

/// Spans handed over and not yet settled by an export at most; past that a thread's chunk of spans is dropped
/// (and counted) when it is handed over.
pub(crate) const QUEUE_SPANS: u64 = 16_384;
/// Spans per export request.
pub(crate) const BATCH_SPANS: usize = 2_048;
/// Time between exports when no batch fills up.
pub(crate) const EXPORT_EVERY: Duration = Duration::from_millis(500);
/// Export requests sent and not yet answered at most.
pub(crate) const IN_FLIGHT: usize = 4;
/// How long an export request may take.
pub(crate) const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);

/// Sent chunks' buffers kept for the threads' next chunks at most (about 40 KB each).
pub(crate) const SPARE_CHUNKS: usize = 16;

/// Spans a thread encodes into a buffer of its own before it hands them to the batch being filled: the shared
/// lock is taken once a chunk (about 40 KB), not once a span, and a batch is sent as a few such pieces.
pub(crate) const CHUNK_SPANS: usize = 256;

/// Encoded spans not yet taken by an export.
#[derive(Debug, Default)]
struct Pending {
    /// The batch being filled: chunks of `ScopeSpans.spans` fields, as the threads handed them over (each a piece
    /// of the request's body when sent).
    current: Vec<Vec<u8>>,
    spans: usize,
    /// Full batches, oldest first.
    full: VecDeque<(Vec<Vec<u8>>, usize)>,
}

/// The spans one thread has encoded and not yet handed over (a run of `ScopeSpans.spans` fields).
#[derive(Debug, Default)]
struct Chunk {
    bytes: Vec<u8>,
    spans: usize,
}

/// One thread's chunk. Its lock is the thread's own but when the export task drains it (on its tick and at the
/// end), so taking it costs no cache line from another core (nor does it share one with another thread's shard).
/// parking_lot's lock, not std's: it is taken at every span, and std's also checks for poisoning on the way in
/// and out, where nothing done under this one panics (a span is appended to a vector, the chunk handed over).
#[derive(Debug, Default)]
#[repr(align(128))]
struct Shard {
    chunk: parking_lot::Mutex<Chunk>,
}

static NEXT_BATCHES: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// This thread's shard of each `Batches` it has pushed to (by id; almost always one).
    static SHARDS: RefCell<Vec<(u64, &'static Shard)>> = const { RefCell::new(Vec::new()) };
    /// The shard this thread pushed to last, with its `Batches`' id: a span's way to its shard, without a borrow
    /// or a search (and, having no destructor, there while the thread's other locals are torn down).
    static LAST_SHARD: Cell<Option<(u64, &'static Shard)>> = const { Cell::new(None) };
}

/// A value on cache lines of its own, so that writing it does not take the lines of the fields beside it from the
/// other cores (the fields read at every span share none with those written at every hand-over).
#[derive(Debug, Default)]
#[repr(align(128))]
struct Apart<T>(T);

/// Where ended spans go: shared by the threads that end spans and the export task.
#[derive(Debug)]
pub(crate) struct Batches {
    id: u64,
    pending: Apart<Mutex<Pending>>,
    /// Every thread's shard, for the export task to drain (each lives as long as the batches).
    shards: Apart<Mutex<Vec<&'static Shard>>>,
    /// Buffers of chunks that were sent, empty, for the chunks that follow (at most [`SPARE_CHUNKS`]): a chunk's
    /// buffer of some 40 KB went back to the allocator after its send and a new one came from it at the next
    /// hand-over.
    spare: Apart<Mutex<Vec<Vec<u8>>>>,
    /// No span is taken any more (the exporter is shutting down).
    closed: AtomicBool,
    wake: Notify,
    loss: Arc<Loss>,
    limit: u64,
    batch: usize,
    /// Spans a thread's chunk holds before it is handed over: [`CHUNK_SPANS`], or a batch if that is smaller.
    chunk: usize,
}

impl Batches {
    /// New batches, which live as long as the process: the exporter's [`TraceCtx`](super::TraceCtx)s refer to
    /// them without counting references (a count written as each trace came and went was a cache line every
    /// thread took from the others). An exporter is started once a process; what a closed one keeps is its
    /// fields and each thread's empty chunk.
    pub(crate) fn new(limit: u64, batch: usize) -> &'static Batches {
        Box::leak(Box::new(Batches {
            id: NEXT_BATCHES.fetch_add(1, Ordering::Relaxed),
            pending: Apart::default(),
            shards: Apart::default(),
            spare: Apart::default(),
            closed: AtomicBool::new(false),
            wake: Notify::new(),
            loss: Loss::new(),
            limit,
            batch: batch.max(1),
            chunk: CHUNK_SPANS.min(batch.max(1)),
        }))
    }

    pub(crate) fn loss(&self) -> &Arc<Loss> {
        &self.loss
    }

    /// Encodes an ended span into this thread's chunk; a full chunk goes to the batch being filled (or is dropped
    /// and counted when the pending spans are at their bound). Spans ended where the thread has no shard to be
    /// found (its locals torn down before it pushed any) go to the batch directly.
    pub(crate) fn push(&self, span: &SpanRef<'_>) {
        self.push_with(|buf| {
            put_span(buf, span);
        });
    }

    /// Like [`push`](Self::push), for the span of `template` in trace `trace_id`, with id `span_id` under the
    /// root `parent`.
    pub(crate) fn push_alike(
        &self,
        template: &Template,
        (trace_id, span_id, parent): (&[u8; 16], &[u8; 8], &[u8; 8]),
    ) {
        self.push_with(|buf| template.put(buf, trace_id, span_id, parent));
    }

    /// Pushes the span that `write` appends to a buffer.
    fn push_with(&self, write: impl FnOnce(&mut Vec<u8>)) {
        let last = LAST_SHARD
            .try_with(Cell::get)
            .ok()
            .flatten()
            .filter(|(id, _)| *id == self.id);
        let shard = match last {
            Some((_, shard)) => Some(shard),
            None => self.thread_shard(),
        };
        match shard {
            Some(shard) => self.push_local(shard, write),
            None => self.push_shared(write),
        }
    }

    /// This thread's shard of these batches, made on its first span (None when the thread's locals are gone).
    fn thread_shard(&self) -> Option<&'static Shard> {
        let shard = SHARDS
            .try_with(|shards| {
                let mut shards = shards.try_borrow_mut().ok()?;
                if let Some((_, shard)) = shards.iter().find(|(id, _)| *id == self.id) {
                    return Some(*shard);
                }
                let shard: &'static Shard = Box::leak(Box::default());
                self.shards.0.lock().ok()?.push(shard);
                shards.push((self.id, shard));
                Some(shard)
            })
            .ok()
            .flatten()?;
        let _ = LAST_SHARD.try_with(|last| last.set(Some((self.id, shard))));
        Some(shard)
    }

    /// Writes a span into `shard`.
    fn push_local(&self, shard: &Shard, write: impl FnOnce(&mut Vec<u8>)) {
        let mut chunk = shard.chunk.lock();
        // Checked under the shard's lock: the last drain, after the exporter closed, cannot miss this span.
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        write(&mut chunk.bytes);
        chunk.spans += 1;
        if chunk.spans >= self.chunk {
            self.hand_over(&mut chunk);
        }
    }

    /// Writes a span into the batch being filled (if the pending spans are under their bound).
    fn push_shared(&self, write: impl FnOnce(&mut Vec<u8>)) {
        if !self.loss.admit(1, self.limit) {
            return;
        }
        let Ok(mut p) = self.pending.0.lock() else {
            self.loss.unadmit(1);
            return;
        };
        if self.closed.load(Ordering::Acquire) {
            drop(p);
            self.loss.unadmit(1);
            return;
        }
        let mut one = Vec::new();
        write(&mut one);
        p.current.push(one);
        p.spans += 1;
        self.seal_if_full(p);
    }

    /// Moves a chunk's spans to the batch being filled, without a copy: the chunk's buffer becomes part of the
    /// batch and the chunk starts a new one of the same size. A chunk that finds the pending spans at their bound
    /// is dropped (and counted) instead, and its buffer kept for the next spans.
    fn hand_over(&self, chunk: &mut Chunk) {
        if chunk.spans == 0 {
            return;
        }
        if !self.loss.admit(chunk.spans as u64, self.limit) {
            chunk.bytes.clear();
            chunk.spans = 0;
            return;
        }
        // Once closed, the chunk keeps no room (the batches outlive the exporter).
        let fresh = if self.closed.load(Ordering::Acquire) {
            Vec::new()
        } else {
            self.spare_buffer(chunk.bytes.capacity())
        };
        let Ok(mut p) = self.pending.0.lock() else {
            self.loss.unadmit(chunk.spans as u64);
            return;
        };
        p.current.push(std::mem::replace(&mut chunk.bytes, fresh));
        p.spans += std::mem::take(&mut chunk.spans);
        self.seal_if_full(p);
    }

    /// A buffer for a chunk: a sent chunk's, else a new one of `capacity` bytes.
    fn spare_buffer(&self, capacity: usize) -> Vec<u8> {
        let spare = self.spare.0.lock().ok().and_then(|mut spare| spare.pop());
        spare.unwrap_or_else(|| Vec::with_capacity(capacity))
    }

    /// The lengths of the kept buffers (the tests').
    #[cfg(test)]
    pub(crate) fn spare_lens(&self) -> Vec<usize> {
        self.spare
            .0
            .lock()
            .map(|s| s.iter().map(Vec::len).collect())
            .unwrap_or_default()
    }

    /// Keeps the buffers of a sent request's chunks (those nothing else holds) for the chunks that follow.
    pub(crate) fn recycle(&self, buffers: impl Iterator<Item = Vec<u8>>) {
        let Ok(mut spare) = self.spare.0.lock() else {
            return;
        };
        // Checked under the lock: `close` empties the spares after it sets the flag, under the same lock.
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        for mut buffer in buffers {
            if spare.len() >= SPARE_CHUNKS {
                break;
            }
            buffer.clear();
            spare.push(buffer);
        }
    }

    /// Closes the batch being filled when it holds a batch's worth of spans, and wakes the export task.
    fn seal_if_full(&self, mut p: std::sync::MutexGuard<'_, Pending>) {
        if p.spans >= self.batch {
            let full = std::mem::take(&mut p.current);
            let spans = std::mem::take(&mut p.spans);
            p.full.push_back((full, spans));
            drop(p);
            self.wake.notify_one();
        }
    }

    /// The oldest full batch, else (with `partial`) the one being filled, with every thread's chunk handed over
    /// first; None when there is none.
    pub(crate) fn take(&self, partial: bool) -> Option<(Vec<Vec<u8>>, usize)> {
        if partial {
            let shards = self.shards.0.lock().ok()?.clone();
            for shard in shards {
                self.hand_over(&mut shard.chunk.lock());
            }
        }
        let mut p = self.pending.0.lock().ok()?;
        if let Some(full) = p.full.pop_front() {
            return Some(full);
        }
        if !partial || p.spans == 0 {
            return None;
        }
        let spans = std::mem::take(&mut p.spans);
        Some((std::mem::take(&mut p.current), spans))
    }

    /// Takes no more spans (those already in a thread's chunk are still taken by the next partial take).
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        // The batches outlive the exporter: the kept buffers are freed now.
        if let Ok(mut spare) = self.spare.0.lock() {
            *spare = Vec::new();
        }
    }
}

/// One encoded `ExportTraceServiceRequest`: its head (resource, scope, lengths) and its spans, in the chunks they
/// were encoded in, kept apart so that the spans are copied once, into the transport's buffer (shared, not
/// copied, when the request is sent again).
#[derive(Debug)]
pub(crate) struct Request {
    pub head: bytes::Bytes,
    pub spans: Vec<bytes::Bytes>,
    /// The pieces are one gzip stream of the request (see [`Compression`]).
    pub gzip: bool,
}

impl Request {
    /// The request of `spans`, its head made by `header`.
    fn new(header: &Header, spans: Vec<Vec<u8>>) -> Request {
        let head = header.prefix(spans.iter().map(Vec::len).sum());
        Request::of(head, spans)
    }

    /// The request of a head and chunks of spans (no copy).
    pub(crate) fn of(head: Vec<u8>, spans: Vec<Vec<u8>>) -> Request {
        Request {
            head: head.into(),
            spans: spans.into_iter().map(bytes::Bytes::from).collect(),
            gzip: false,
        }
    }

    /// The request as one gzip stream (the fastest level: a batch of spans, its keys repeated in every span,
    /// shrinks several times); itself when it cannot be compressed.
    pub(crate) fn gzipped(self) -> Request {
        use std::io::Write as _;
        let len = self.head.len() + self.spans_len();
        let mut gz =
            flate2::write::GzEncoder::new(Vec::with_capacity(len / 4), flate2::Compression::fast());
        let written = std::iter::once(&self.head)
            .chain(&self.spans)
            .try_for_each(|piece| gz.write_all(piece));
        match written.and_then(|()| gz.finish()) {
            Ok(body) => Request {
                head: body.into(),
                spans: Vec::new(),
                gzip: true,
            },
            Err(_) => self,
        }
    }

    /// The buffers of its chunks of spans that nothing else holds any more (the transport's copies of the pieces
    /// dropped once the request was answered).
    fn into_span_buffers(self) -> impl Iterator<Item = Vec<u8>> {
        self.spans
            .into_iter()
            .filter_map(|piece| piece.try_into_mut().ok())
            .map(Vec::from)
    }

    /// Bytes of spans.
    pub(crate) fn spans_len(&self) -> usize {
        self.spans.iter().map(bytes::Bytes::len).sum()
    }
}

/// Sends one request (and may be asked to send it again: [`retry::send`]).
pub(crate) trait Transport: Send + Sync + 'static {
    fn send(&self, request: &Request) -> impl Future<Output = Result<(), Failure>> + Send;

    /// The request as it is sent (and sent again): compressed when the transport compresses.
    fn prepare(&self, request: Request) -> Request {
        request
    }

    /// After an export failed: the fix to name when the collector speaks the other OTLP protocol (None when it
    /// does not, or cannot be asked).
    fn other_protocol(&self) -> impl Future<Output = Option<String>> + Send {
        std::future::ready(None)
    }
}

/// The export loop: sends every full batch as soon as it is full, the partial one every `every` (not after each
/// send: spans that came during a send would go out in many small requests), and all that is left once `stop` is
/// notified (after [`Batches::close`]).
pub(crate) async fn run<T: Transport>(
    batches: &'static Batches,
    header: Header,
    transport: T,
    every: Duration,
    stop: Arc<Notify>,
) {
    let out = Arc::new(Out {
        batches,
        header,
        transport,
        slots: Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT)),
        halt: retry::Halt::default(),
        asked: AtomicBool::new(false),
    });
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        let (stopping, partial) = tokio::select! {
            biased;
            () = stop.notified() => (true, false),
            () = out.batches.wake.notified() => (false, false),
            _ = tick.tick() => (false, true),
        };
        if stopping {
            // The requests waiting to be tried again are tried at once, and so are the last ones after a failure.
            out.halt.halt();
        }
        // Full batches (and at the end everything), then on a tick the batch being filled, once.
        while let Some(batch) = out.batches.take(stopping) {
            dispatch(&out, batch).await;
        }
        if stopping {
            // Every request answered (or the shutdown's wait runs out).
            let _all = out.slots.acquire_many(IN_FLIGHT as u32).await;
            return;
        }
        if partial && let Some(batch) = out.batches.take(true) {
            dispatch(&out, batch).await;
        }
    }
}

/// What the export loop's requests share.
struct Out<T> {
    batches: &'static Batches,
    header: Header,
    transport: T,
    /// One permit per request in flight (a request waiting to be tried again keeps its permit).
    slots: Arc<tokio::sync::Semaphore>,
    halt: retry::Halt,
    /// Whether the collector was asked, after the first failed export, which protocol it speaks.
    asked: AtomicBool,
}

/// Sends `batch` as a task of its own once fewer than [`IN_FLIGHT`] requests are in flight (again after a failure
/// that may pass), and settles its spans when it is answered or given up.
async fn dispatch<T: Transport>(out: &Arc<Out<T>>, (spans, n): (Vec<Vec<u8>>, usize)) {
    let Ok(slot) = out.slots.clone().acquire_owned().await else {
        return;
    };
    let out = out.clone();
    tokio::spawn(async move {
        let request = out.transport.prepare(Request::new(&out.header, spans));
        let result = retry::send(&out.transport, &request, &out.halt).await;
        out.batches.loss.settle(n as u64, &result);
        out.batches.recycle(request.into_span_buffers());
        // Asked once, holding the slot: the exporter's shutdown waits for the answer.
        if result.is_err()
            && !out.asked.swap(true, Ordering::AcqRel)
            && let Some(fix) = out.transport.other_protocol().await
        {
            tracing::warn!(fix = %fix, "trace export failed: the collector speaks the other otlp protocol");
        }
        drop(slot);
    });
}

#[cfg(test)]
mod tests;
