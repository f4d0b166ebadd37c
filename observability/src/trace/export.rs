//! The span exporter: spans are encoded into OTLP protobuf when they end ([`Batches::push`], on the thread that
//! ends them) and sent in batches by one task on the exporter's runtime ([`run`]), over OTLP/gRPC ([`Grpc`]).
//!
//! A span costs one encoding (into a buffer of the thread that ends it) and one copy into a growing buffer under a
//! short lock; nothing of it is kept but its bytes (about 100 to 300 a span), so the bound on pending spans
//! ([`QUEUE_SPANS`]) is a bound of a few MiB at most, allocated only as spans come. An export takes a batch of
//! [`BATCH_SPANS`] when one is full, and whatever is pending every [`EXPORT_EVERY`]; up to [`IN_FLIGHT`] requests
//! are in flight at a time, so that the collector's answer to one (and its decoding of the batch) does not hold the
//! next back while the crawl keeps ending spans.

use super::loss::Loss;
use super::wire::{Header, SpanRef, encode_span, put_encoded};
use bytes::{Buf as _, BufMut as _};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// Spans encoded and not yet settled by an export at most; past that a span is dropped (and counted).
pub(crate) const QUEUE_SPANS: u64 = 16_384;
/// Spans per export request.
pub(crate) const BATCH_SPANS: usize = 2_048;
/// Time between exports when no batch fills up.
pub(crate) const EXPORT_EVERY: Duration = Duration::from_millis(500);
/// Export requests sent and not yet answered at most.
pub(crate) const IN_FLIGHT: usize = 4;
/// How long an export request may take.
pub(crate) const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);

thread_local! {
    /// Where a thread encodes the span it ends, before taking the batch's lock to copy it in.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Encoded spans not yet taken by an export.
#[derive(Debug, Default)]
struct Pending {
    /// The batch being filled: a run of `ScopeSpans.spans` fields.
    current: Vec<u8>,
    spans: usize,
    /// Full batches, oldest first.
    full: VecDeque<(Vec<u8>, usize)>,
    /// No span is taken any more (the exporter is shutting down).
    closed: bool,
}

/// Where ended spans go: shared by the threads that end spans and the export task.
#[derive(Debug)]
pub(crate) struct Batches {
    pending: Mutex<Pending>,
    wake: Notify,
    loss: Arc<Loss>,
    limit: u64,
    batch: usize,
}

impl Batches {
    pub(crate) fn new(limit: u64, batch: usize) -> Arc<Batches> {
        Arc::new(Batches {
            pending: Mutex::new(Pending::default()),
            wake: Notify::new(),
            loss: Loss::new(),
            limit,
            batch: batch.max(1),
        })
    }

    pub(crate) fn loss(&self) -> &Arc<Loss> {
        &self.loss
    }

    /// Encodes an ended span into the pending batch (or drops and counts it when the pending spans are at their
    /// bound).
    pub(crate) fn push(&self, span: &SpanRef<'_>) {
        if !self.loss.admit(self.limit) {
            return;
        }
        // The thread's scratch buffer, or a buffer of its own for a span that ends while the thread's locals are
        // being torn down (a trace dropped in a thread-local destructor).
        let encoded = SCRATCH.try_with(|scratch| {
            let Ok(mut buf) = scratch.try_borrow_mut() else {
                return false;
            };
            buf.clear();
            encode_span(&mut buf, span);
            self.append(&buf);
            true
        });
        if encoded != Ok(true) {
            let mut buf = Vec::new();
            encode_span(&mut buf, span);
            self.append(&buf);
        }
    }

    /// Appends an admitted span, encoded, to the batch being filled (under the lock: a copy of its bytes).
    fn append(&self, span: &[u8]) {
        let Ok(mut p) = self.pending.lock() else {
            self.loss.unadmit();
            return;
        };
        if p.closed {
            drop(p);
            self.loss.unadmit();
            return;
        }
        put_encoded(&mut p.current, span);
        p.spans += 1;
        if p.spans >= self.batch {
            let capacity = p.current.capacity();
            let full = std::mem::replace(&mut p.current, Vec::with_capacity(capacity));
            let spans = std::mem::take(&mut p.spans);
            p.full.push_back((full, spans));
            drop(p);
            self.wake.notify_one();
        }
    }

    /// The oldest full batch, else (with `partial`) the one being filled; None when there is none.
    pub(crate) fn take(&self, partial: bool) -> Option<(Vec<u8>, usize)> {
        let mut p = self.pending.lock().ok()?;
        if let Some(full) = p.full.pop_front() {
            return Some(full);
        }
        if !partial || p.spans == 0 {
            return None;
        }
        let spans = std::mem::take(&mut p.spans);
        // The next batch starts with room for one like this (growing a buffer from empty copies it many times).
        let capacity = p.current.capacity();
        Some((
            std::mem::replace(&mut p.current, Vec::with_capacity(capacity)),
            spans,
        ))
    }

    /// Takes no more spans.
    pub(crate) fn close(&self) {
        if let Ok(mut p) = self.pending.lock() {
            p.closed = true;
        }
    }
}

/// One encoded `ExportTraceServiceRequest`: its head (resource, scope, lengths) and its spans, kept apart so that
/// the spans are copied once, into the transport's buffer.
#[derive(Debug)]
pub(crate) struct Request {
    pub head: Vec<u8>,
    pub spans: Vec<u8>,
}

/// Sends one request.
pub(crate) trait Transport: Send + Sync + 'static {
    fn send(&self, request: Request) -> impl Future<Output = Result<(), String>> + Send;
}

/// The export loop: sends every full batch as soon as it is full, the partial one every `every` (not after each
/// send: spans that came during a send would go out in many small requests), and all that is left once `stop` is
/// notified (after [`Batches::close`]).
pub(crate) async fn run<T: Transport>(
    batches: Arc<Batches>,
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
    batches: Arc<Batches>,
    header: Header,
    transport: T,
    /// One permit per request in flight.
    slots: Arc<tokio::sync::Semaphore>,
}

/// Sends `batch` as a task of its own once fewer than [`IN_FLIGHT`] requests are in flight, and settles its spans
/// when it is answered.
async fn dispatch<T: Transport>(out: &Arc<Out<T>>, (spans, n): (Vec<u8>, usize)) {
    let Ok(slot) = out.slots.clone().acquire_owned().await else {
        return;
    };
    let out = out.clone();
    tokio::spawn(async move {
        let request = Request {
            head: out.header.prefix(spans.len()),
            spans,
        };
        let result = out.transport.send(request).await;
        out.batches.loss.settle(n as u64, &result);
        drop(slot);
    });
}

/// The gRPC method of OTLP trace export.
const EXPORT_PATH: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

/// OTLP/gRPC over a tonic channel, the request already encoded.
#[derive(Debug, Clone)]
pub(crate) struct Grpc {
    client: tonic::client::Grpc<tonic::transport::Channel>,
    timeout: Duration,
}

impl Grpc {
    /// A lazily connecting client of `endpoint` (`http://host:port`); must be called inside a tokio runtime, whose
    /// tasks then carry the connection.
    pub(crate) fn new(endpoint: &str, timeout: Duration) -> Result<Grpc, String> {
        let channel = tonic::transport::Endpoint::from_shared(endpoint.to_owned())
            .map_err(|e| e.to_string())?
            .connect_timeout(timeout)
            .timeout(timeout)
            .connect_lazy();
        Ok(Grpc {
            client: tonic::client::Grpc::new(channel),
            timeout,
        })
    }
}

impl Transport for Grpc {
    fn send(&self, request: Request) -> impl Future<Output = Result<(), String>> + Send {
        let mut client = self.client.clone();
        let timeout = self.timeout;
        async move {
            let call = async {
                client
                    .ready()
                    .await
                    .map_err(|e| format!("collector unavailable: {e}"))?;
                client
                    .unary::<_, (), _>(
                        tonic::Request::new(request),
                        http::uri::PathAndQuery::from_static(EXPORT_PATH),
                        Raw,
                    )
                    .await
                    .map(|_| ())
                    .map_err(|s| s.to_string())
            };
            match tokio::time::timeout(timeout, call).await {
                Ok(result) => result,
                Err(_) => Err(format!(
                    "the collector did not answer within {} ms",
                    timeout.as_millis()
                )),
            }
        }
    }
}

/// A gRPC codec of already encoded requests; the answer (`ExportTraceServiceResponse`) is read and not looked at.
#[derive(Debug, Clone, Copy, Default)]
struct Raw;

impl tonic::codec::Codec for Raw {
    type Encode = Request;
    type Decode = ();
    type Encoder = Raw;
    type Decoder = Raw;

    fn encoder(&mut self) -> Raw {
        Raw
    }

    fn decoder(&mut self) -> Raw {
        Raw
    }
}

impl tonic::codec::Encoder for Raw {
    type Item = Request;
    type Error = tonic::Status;

    fn encode(
        &mut self,
        item: Request,
        dst: &mut tonic::codec::EncodeBuf<'_>,
    ) -> Result<(), tonic::Status> {
        dst.reserve(item.head.len() + item.spans.len());
        dst.put_slice(&item.head);
        dst.put_slice(&item.spans);
        Ok(())
    }
}

impl tonic::codec::Decoder for Raw {
    type Item = ();
    type Error = tonic::Status;

    fn decode(
        &mut self,
        src: &mut tonic::codec::DecodeBuf<'_>,
    ) -> Result<Option<()>, tonic::Status> {
        let n = src.remaining();
        src.advance(n);
        Ok(Some(()))
    }
}
