//! Span loss on the way to the collector, counted in `crawl_trace_spans_dropped_total` and reported by a warning
//! at most once a minute.
//!
//! The SDK's batch processor drops spans in three places without telling the application: a batch the exporter
//! failed to send (the collector is down, refuses, or does not answer within the export timeout), a span that finds
//! the queue full, and spans still queued when shutdown gives up. So the exporter is wrapped in a
//! [`CountingExporter`] that counts the spans of every failed batch, and the processor in a [`GuardedProcessor`]
//! that keeps its own bound below the SDK's queue (spans handed over and not yet settled by an export), drops and
//! counts what would not fit, and counts at shutdown the spans that were never settled.

use crate::metrics::metrics;
use opentelemetry::Context;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SpanData, SpanExporter, SpanProcessor};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// At most one warning about dropped spans per this period.
pub(crate) const WARN_EVERY: Duration = Duration::from_secs(60);

/// Lets one event through per period.
#[derive(Debug)]
pub(crate) struct Every {
    period: Duration,
    last: Mutex<Option<Instant>>,
}

impl Every {
    pub(crate) fn new(period: Duration) -> Every {
        Every {
            period,
            last: Mutex::new(None),
        }
    }

    /// Whether an event at `now` may go out (and, if so, starts a new period).
    pub(crate) fn allow(&self, now: Instant) -> bool {
        let Ok(mut last) = self.last.lock() else {
            return false;
        };
        match *last {
            Some(at) if now.saturating_duration_since(at) < self.period => false,
            _ => {
                *last = Some(now);
                true
            }
        }
    }
}

/// The account of spans between the processor and the collector.
#[derive(Debug)]
pub(crate) struct Loss {
    /// Spans handed to the batch processor.
    accepted: AtomicU64,
    /// Spans whose export finished, sent or failed.
    settled: AtomicU64,
    /// Spans lost so far.
    dropped: AtomicU64,
    /// Set once shutdown has counted what was never settled: exports finishing later count nothing more.
    closed: AtomicBool,
    warn: Every,
}

impl Loss {
    pub(crate) fn new() -> Arc<Loss> {
        Arc::new(Loss {
            accepted: AtomicU64::new(0),
            settled: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            warn: Every::new(WARN_EVERY),
        })
    }

    /// Spans handed over and not settled yet: an upper bound of what waits in the batch processor.
    fn pending(&self) -> u64 {
        self.accepted
            .load(Ordering::Acquire)
            .saturating_sub(self.settled.load(Ordering::Acquire))
    }

    /// Spans lost so far.
    #[cfg(test)]
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Counts `spans` lost for `reason` and warns unless a warning went out less than a minute ago.
    fn lose(&self, spans: u64, reason: &'static str, error: &str) {
        if spans == 0 {
            return;
        }
        let total = self.dropped.fetch_add(spans, Ordering::Relaxed) + spans;
        metrics().trace_spans_dropped(spans);
        if self.warn.allow(Instant::now()) {
            tracing::warn!(
                spans,
                total,
                reason,
                error,
                "trace spans dropped; traces stay incomplete until the collector takes spans again"
            );
        }
    }

    /// An export of `spans` finished with `result`.
    fn settle(&self, spans: u64, result: &OTelSdkResult) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        self.settled.fetch_add(spans, Ordering::AcqRel);
        if let Err(e) = result {
            self.lose(spans, "export failed", &e.to_string());
        }
    }
}

/// A span exporter that counts the spans of the batches it fails to send.
#[derive(Debug)]
pub(crate) struct CountingExporter<E> {
    inner: E,
    loss: Arc<Loss>,
}

impl<E> CountingExporter<E> {
    pub(crate) fn new(inner: E, loss: Arc<Loss>) -> CountingExporter<E> {
        CountingExporter { inner, loss }
    }
}

impl<E: SpanExporter> SpanExporter for CountingExporter<E> {
    fn export(
        &self,
        batch: Vec<SpanData>,
    ) -> impl std::future::Future<Output = OTelSdkResult> + Send {
        let spans = batch.len() as u64;
        let export = self.inner.export(batch);
        let loss = self.loss.clone();
        async move {
            let result = export.await;
            loss.settle(spans, &result);
            result
        }
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// A span processor (the batch processor) that never lets its queue overflow unseen: at `limit` spans handed over
/// and not yet settled, a new span is dropped and counted here instead of silently by the queue.
#[derive(Debug)]
pub(crate) struct GuardedProcessor<P> {
    inner: P,
    loss: Arc<Loss>,
    limit: u64,
}

impl<P> GuardedProcessor<P> {
    /// `inner`'s queue must hold at least `limit` spans.
    pub(crate) fn new(inner: P, loss: Arc<Loss>, limit: u64) -> GuardedProcessor<P> {
        GuardedProcessor { inner, loss, limit }
    }
}

impl<P: SpanProcessor> SpanProcessor for GuardedProcessor<P> {
    fn on_start(&self, span: &mut opentelemetry_sdk::trace::Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        let accepted = self.loss.accepted.fetch_add(1, Ordering::AcqRel) + 1;
        let settled = self.loss.settled.load(Ordering::Acquire);
        if accepted.saturating_sub(settled) > self.limit {
            self.loss.accepted.fetch_sub(1, Ordering::AcqRel);
            self.loss.lose(
                1,
                "export queue full",
                "the collector is slower than the crawl",
            );
            return;
        }
        self.inner.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    /// Shuts the processor down (its last export included); the spans it did not settle in `timeout` are lost and
    /// counted here, so a timeout is reported once, as lost spans, and not again as an error.
    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        let result = self.inner.shutdown_with_timeout(timeout);
        self.loss.closed.store(true, Ordering::Release);
        let unsettled = self.loss.pending();
        self.loss.lose(
            unsettled,
            "exporter shut down",
            "spans still waiting for the collector at exit",
        );
        // The whole account once, past the once-a-minute gate: what the crawl handed over and what never arrived.
        tracing::info!(
            spans = self.loss.accepted.load(Ordering::Acquire),
            dropped = self.loss.dropped.load(Ordering::Relaxed),
            "trace exporter shut down"
        );
        match result {
            Err(OTelSdkError::Timeout(_)) => Ok(()),
            other => other,
        }
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

#[cfg(test)]
mod tests;
