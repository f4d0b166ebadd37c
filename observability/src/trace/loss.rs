//! Span loss on the way to the collector, counted in `crawl_trace_spans_dropped_total` and reported by a warning
//! at most once a minute.
//!
//! Spans are lost in three places: a batch the exporter failed to send (the collector is down, refuses, or does not
//! answer within the export timeout, retries included), a span that finds the pending spans at their bound (spans
//! ended and not yet settled by an export), and spans still pending when shutdown gives up. [`Loss`] keeps the
//! account: spans accepted, settled and dropped (fed by the wrappers of [`super::counting`]).

use crate::metrics::metrics;
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

    /// Spans accepted and not settled yet: what is waiting for (or inside) an export.
    fn pending(&self) -> u64 {
        self.accepted
            .load(Ordering::Acquire)
            .saturating_sub(self.settled.load(Ordering::Acquire))
    }

    /// Spans lost so far.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Spans accepted so far.
    pub(crate) fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::Acquire)
    }

    /// Takes `spans` spans if that leaves at most `limit` pending; otherwise they are dropped and counted.
    pub(crate) fn admit(&self, spans: u64, limit: u64) -> bool {
        let accepted = self.accepted.fetch_add(spans, Ordering::AcqRel) + spans;
        let settled = self.settled.load(Ordering::Acquire);
        if accepted.saturating_sub(settled) > limit {
            self.accepted.fetch_sub(spans, Ordering::AcqRel);
            self.lose(
                spans,
                "export queue full",
                "the collector is slower than the crawl",
            );
            return false;
        }
        true
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

    /// An export of `spans` finished, failed with `error` if there is one.
    pub(crate) fn settle(&self, spans: u64, error: Option<&str>) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        self.settled.fetch_add(spans, Ordering::AcqRel);
        if let Some(e) = error {
            self.lose(spans, "export failed", e);
        }
    }

    /// The exporter shut down: the spans it did not settle are lost and counted here (once: exports finishing
    /// later count nothing), and the whole account is logged.
    pub(crate) fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        self.lose(
            self.pending(),
            "exporter shut down",
            "spans still waiting for the collector at exit",
        );
        // The whole account once, past the once-a-minute gate: what the crawl handed over and what never arrived.
        tracing::info!(
            spans = self.accepted(),
            dropped = self.dropped(),
            "trace exporter shut down"
        );
    }
}

#[cfg(test)]
mod tests;
