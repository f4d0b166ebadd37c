//! Span loss with fake transports: failed batches counted by their spans, spans past the pending bound counted
//! instead of silently lost, spans left at a shutdown that times out counted once, and the once-a-minute warning
//! gate.

use super::*;
use crate::trace::Attr;
use crate::trace::export::{Failure, Request, SPARE_CHUNKS, Transport};
use crate::trace::wire::SpanRef;
use crate::trace::{Exporter, SCOPE};
use std::future::Future;
use tokio::sync::Semaphore;

/// A transport that fails or succeeds, and holds every request until its gate opens.
#[derive(Debug, Clone)]
struct Fake {
    fail: bool,
    gate: Arc<Semaphore>,
    /// Requests sent and the bytes of each.
    sent: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl Fake {
    fn new(fail: bool, open: bool) -> Fake {
        let fake = Fake {
            fail,
            gate: Arc::new(Semaphore::new(0)),
            sent: Arc::new(Mutex::new(Vec::new())),
        };
        if open {
            fake.open();
        }
        fake
    }

    fn open(&self) {
        self.gate.add_permits(Semaphore::MAX_PERMITS / 2);
    }

    /// Spans in the requests sent so far.
    fn exported(&self) -> usize {
        use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
        use prost::Message as _;
        self.sent
            .lock()
            .unwrap()
            .iter()
            .map(|r| {
                let req = ExportTraceServiceRequest::decode(r.as_slice()).unwrap();
                let ss = &req.resource_spans[0].scope_spans[0];
                assert_eq!(ss.scope.as_ref().unwrap().name, SCOPE);
                ss.spans.len()
            })
            .sum()
    }
}

impl Transport for Fake {
    fn send(&self, request: &Request) -> impl Future<Output = Result<(), Failure>> + Send {
        let fake = self.clone();
        let mut bytes = request.head.to_vec();
        for chunk in &request.spans {
            bytes.extend_from_slice(chunk);
        }
        async move {
            // A hung collector: the export waits here.
            let _permit = fake
                .gate
                .acquire()
                .await
                .map_err(|e| Failure::fatal(e.to_string()))?;
            if fake.fail {
                // Refused for good: not tried again (retries are `export::retry`'s tests).
                return Err(Failure::fatal("bad request"));
            }
            fake.sent.lock().unwrap().push(bytes);
            Ok(())
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// An exporter to `fake` that sends only full batches of `batch` (its timer is an hour).
fn exporter(fake: &Fake, limit: u64, batch: usize) -> Exporter {
    Exporter::launch(
        runtime(),
        fake.clone(),
        (limit, batch),
        Duration::from_secs(3600),
        &[Attr::new("service.name", "loss-test")],
    )
}

fn end_spans(e: &Exporter, n: usize) {
    for _ in 0..n {
        e.batches.push(&SpanRef::numbered(1, 2));
    }
}

/// Waits until `f` holds (the export task runs on its own thread).
fn eventually(what: &str, f: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn one_warning_per_minute_at_most() {
    let gate = Every::new(WARN_EVERY);
    let t0 = Instant::now();
    assert!(gate.allow(t0));
    assert!(!gate.allow(t0 + Duration::from_secs(1)));
    assert!(!gate.allow(t0 + Duration::from_millis(59_999)));
    assert!(gate.allow(t0 + Duration::from_secs(60)));
    assert!(!gate.allow(t0 + Duration::from_secs(119)));
    assert!(gate.allow(t0 + Duration::from_secs(185)));
}

#[test]
fn a_failed_export_counts_its_spans() {
    let fake = Fake::new(true, true);
    let e = exporter(&fake, 1024, 5);
    let loss = e.batches.loss().clone();
    end_spans(&e, 5);
    eventually("the failed batch is counted", || loss.dropped() == 5);
    end_spans(&e, 2);
    // Shutdown sends the last two, which fail too; nothing is left over to count again.
    e.shutdown_within(Duration::from_secs(10));
    assert_eq!(loss.dropped(), 7);
    assert_eq!(loss.accepted(), 7);
}

#[test]
fn spans_past_the_pending_bound_are_counted_not_lost_silently() {
    // The collector hangs: the first full batch (4) blocks the export. A thread's spans are admitted a chunk at a
    // time (here a batch, 4): the second chunk finds the bound reached and is dropped; the last two wait in the
    // thread's chunk.
    let fake = Fake::new(false, false);
    let e = exporter(&fake, 4, 4);
    let loss = e.batches.loss().clone();
    end_spans(&e, 10);
    assert_eq!(loss.dropped(), 4);
    assert_eq!(loss.accepted(), 4);
    fake.open();
    eventually("the first batch is sent", || fake.exported() == 4);
    // There is room again: the two waiting and two more make a chunk, sent.
    end_spans(&e, 2);
    e.shutdown_within(Duration::from_secs(10));
    assert_eq!(fake.exported(), 8);
    assert_eq!(loss.dropped(), 4);
    assert_eq!(loss.accepted(), 8);
}

#[test]
fn spans_left_at_a_shutdown_that_times_out_are_counted_once() {
    let fake = Fake::new(false, false);
    let e = exporter(&fake, 64, 64);
    let loss = e.batches.loss().clone();
    end_spans(&e, 3);
    // The last export hangs past the wait: the spans are counted lost.
    e.shutdown_within(Duration::from_millis(200));
    assert_eq!(loss.dropped(), 3);
    assert_eq!(loss.accepted(), 3);
    assert_eq!(fake.exported(), 0);
}

/// A sent request's chunk buffers serve the threads' next chunks, emptied: every span sent after arrives once,
/// none of an earlier request comes again; the exporter keeps a bounded number of them, and none once closed.
#[test]
fn a_sent_chunks_buffer_serves_the_next_chunk_and_its_spans_arrive_once() {
    let fake = Fake::new(false, true);
    // A chunk and a batch of four spans: each four spans make one request.
    let e = exporter(&fake, 1_000, 4);
    let spare = |e: &Exporter| e.batches.spare_lens().len();
    end_spans(&e, 4);
    eventually("the first request is sent", || fake.exported() == 4);
    eventually("its buffer is kept", || spare(&e) == 1);
    for round in 2..=5 {
        // The next chunk's hand-over takes the kept buffer for the chunk after it; the request of this one
        // gives its own buffer back.
        end_spans(&e, 4);
        eventually("the request is sent", || fake.exported() == 4 * round);
        eventually("a buffer is kept again", || spare(&e) == 1);
    }
    assert_eq!(fake.sent.lock().unwrap().len(), 5, "one request a chunk");
    // At most SPARE_CHUNKS are kept, emptied, and none after the exporter closed.
    e.batches.recycle((0..40).map(|_| vec![7u8; 64]));
    assert_eq!(spare(&e), SPARE_CHUNKS);
    assert!(e.batches.spare_lens().iter().all(|&len| len == 0));
    e.batches.close();
    assert_eq!(spare(&e), 0, "freed when the exporter closes");
    e.batches.recycle(std::iter::once(Vec::with_capacity(64)));
    assert_eq!(spare(&e), 0, "and none kept after");
    e.shutdown_within(Duration::from_secs(10));
    assert_eq!(fake.exported(), 20);
}
