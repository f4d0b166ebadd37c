//! Span loss with fake exporters: failed batches counted by their spans, a full queue counted instead of silently
//! dropped, spans left at a shutdown that times out counted once, and the once-a-minute warning gate.

use super::*;
use crate::trace::batch_processor;
use opentelemetry::trace::{Span as _, Tracer as _, TracerProvider as _};
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::sync::Condvar;

/// An exporter that fails or succeeds, and holds every export until its gate opens.
#[derive(Debug, Clone)]
struct Fake {
    fail: bool,
    gate: Arc<(Mutex<bool>, Condvar)>,
    exported: Arc<AtomicU64>,
    shut: Arc<AtomicBool>,
}

impl Fake {
    fn new(fail: bool, open: bool) -> Fake {
        Fake {
            fail,
            gate: Arc::new((Mutex::new(open), Condvar::new())),
            exported: Arc::new(AtomicU64::new(0)),
            shut: Arc::new(AtomicBool::new(false)),
        }
    }

    fn open(&self) {
        let (lock, cv) = &*self.gate;
        *lock.lock().unwrap() = true;
        cv.notify_all();
    }
}

impl SpanExporter for Fake {
    fn export(
        &self,
        batch: Vec<SpanData>,
    ) -> impl std::future::Future<Output = OTelSdkResult> + Send {
        // Runs on the batch processor's thread: blocking it is what a hung collector does.
        let (lock, cv) = &*self.gate;
        let mut open = lock.lock().unwrap();
        while !*open {
            open = cv.wait(open).unwrap();
        }
        let result = if self.fail {
            Err(OTelSdkError::InternalFailure("connection refused".into()))
        } else {
            self.exported
                .fetch_add(batch.len() as u64, Ordering::SeqCst);
            Ok(())
        };
        std::future::ready(result)
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        self.shut.store(true, Ordering::SeqCst);
        Ok(())
    }
}

fn provider(fake: &Fake, queue: usize, every: Duration) -> (SdkTracerProvider, Arc<Loss>) {
    let (processor, loss) = batch_processor(fake.clone(), queue, every);
    let p = SdkTracerProvider::builder()
        .with_span_processor(processor)
        .build();
    (p, loss)
}

fn end_spans(p: &SdkTracerProvider, n: usize) {
    let tracer = p.tracer("loss-test");
    for _ in 0..n {
        tracer.start("s").end();
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
    let (p, loss) = provider(&fake, 1024, Duration::from_secs(3600));
    end_spans(&p, 5);
    assert!(p.force_flush().is_err(), "the export failed");
    assert_eq!(loss.dropped(), 5);
    end_spans(&p, 2);
    assert!(p.force_flush().is_err());
    assert_eq!(loss.dropped(), 7);
    assert!(p.shutdown().is_ok());
    assert_eq!(loss.dropped(), 7, "nothing was left at shutdown");
}

#[test]
fn spans_past_the_queue_bound_are_counted_not_lost_silently() {
    // The collector hangs: the first full batch (4) blocks the export, so every further span finds the queue full.
    let fake = Fake::new(false, false);
    let (p, loss) = provider(&fake, 4, Duration::from_secs(3600));
    end_spans(&p, 10);
    assert_eq!(loss.dropped(), 6);
    fake.open();
    assert!(p.force_flush().is_ok());
    assert_eq!(fake.exported.load(Ordering::SeqCst), 4);
    // The queue has room again.
    end_spans(&p, 3);
    assert!(p.force_flush().is_ok());
    assert_eq!(fake.exported.load(Ordering::SeqCst), 7);
    assert_eq!(loss.dropped(), 6);
    assert!(p.shutdown().is_ok());
}

#[test]
fn spans_left_at_a_shutdown_that_times_out_are_counted_once() {
    let fake = Fake::new(false, false);
    let (p, loss) = provider(&fake, 64, Duration::from_secs(3600));
    end_spans(&p, 3);
    // The last export hangs past the timeout: reported as lost spans, not as an error.
    assert!(p.shutdown_with_timeout(Duration::from_millis(200)).is_ok());
    assert_eq!(loss.dropped(), 3);
    // The export finishes late: it is not counted again.
    fake.open();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !fake.shut.load(Ordering::SeqCst) {
        assert!(
            Instant::now() < deadline,
            "the export thread did not finish"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(loss.dropped(), 3);
}
