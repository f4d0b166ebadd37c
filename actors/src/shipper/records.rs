//! The loop of a record sink (Kafka, PostgreSQL): reads committed records from the JSONL after its checkpoint,
//! ships them in batches, and stores the checkpoint once the target acknowledged a batch; a failed batch is shipped
//! again after a backoff, never skipped. Its lag (the JSONL's flushed end minus its checkpoint) decides whether it
//! holds fetching back.

use std::time::{Duration, Instant};

use crawl_core::output::JsonlCheckpoint;
use crawl_observability::trace::{self, Attr, Stamp};
use crawl_sinks::checkpoint::{CheckpointFile, SinkCheckpoint};
use crawl_sinks::feed::FeedReader;
use crawl_sinks::record::ShipRecord;
use crawl_sinks::{RecordTarget, SinkError};
use tokio::sync::watch;

use super::hold::Lag;
use super::outage::{Outage, Say};
use super::{Common, unix_ms};

/// How long an idle loop waits for news before it looks again anyway.
const IDLE_POLL: Duration = Duration::from_secs(1);
/// How long a batch short of `batch_records` waits for more committed records before it is shipped.
const BATCH_LINGER: Duration = Duration::from_millis(100);

/// One record sink's loop.
pub(super) struct RecordLoop {
    pub common: Common,
    pub target: RecordTarget,
    pub batch: usize,
    pub tail: FeedReader,
    pub checkpoint: CheckpointFile,
    /// What the checkpoint says is delivered.
    pub delivered: SinkCheckpoint,
    pub jsonl: watch::Receiver<JsonlCheckpoint>,
}

impl RecordLoop {
    /// Ships until the crawl ends and everything committed is delivered.
    pub async fn run(mut self) {
        let mut outage = Outage::new(self.common.retry_max);
        let mut pending: Vec<ShipRecord> = Vec::new();
        // A batch once tried is shipped again as it is until it lands.
        let mut tried = false;
        let mut filling_since: Option<Instant> = None;
        loop {
            let end = *self.jsonl.borrow_and_update();
            if !tried && pending.len() < self.batch {
                match self.tail.read(end.bytes, self.batch - pending.len()) {
                    Ok(more) => pending.extend(more),
                    Err(e) => {
                        self.common.failed(&mut outage, &e).await;
                        continue;
                    }
                }
            }
            self.publish(end);
            if pending.is_empty() {
                if self.common.finishing() {
                    return;
                }
                self.common.wait(&mut self.jsonl, IDLE_POLL).await;
                continue;
            }
            // A batch short of batch_records waits a little for more lines: fewer, larger batches (one checkpoint,
            // one transaction, one round of acknowledgements each) for a little latency.
            if !tried && pending.len() < self.batch && !self.common.finishing() {
                let since = *filling_since.get_or_insert_with(Instant::now);
                let left = BATCH_LINGER.saturating_sub(since.elapsed());
                if !left.is_zero() {
                    self.common.wait(&mut self.jsonl, left).await;
                    continue;
                }
            }
            filling_since = None;
            tried = true;
            match self.ship(&pending).await {
                Ok(()) => {
                    pending.clear();
                    tried = false;
                    self.common.delivered(&mut outage);
                }
                Err(e) => self.common.failed(&mut outage, &e).await,
            }
        }
    }

    /// Ships one batch and stores the checkpoint after it.
    async fn ship(&mut self, batch: &[ShipRecord]) -> Result<(), SinkError> {
        let c = &self.common;
        let mut span = trace::root(
            "sink.batch",
            Stamp::now(),
            &[
                Attr::new("sink.name", c.name.as_str()),
                Attr::new("sink.kind", c.kind),
                Attr::new(
                    "sink.records",
                    i64::try_from(batch.len()).unwrap_or(i64::MAX),
                ),
            ],
        );
        let shipped = match self.target.ship(batch).await {
            Ok(s) => s,
            Err(e) => {
                span.set_error(&e.to_string());
                span.end(Stamp::now());
                return Err(e);
            }
        };
        span.set_attributes(&[Attr::new(
            "sink.bytes",
            i64::try_from(shipped.bytes).unwrap_or(i64::MAX),
        )]);
        span.end(Stamp::now());
        let at = self.tail.position();
        self.delivered = at;
        // Delivered: the checkpoint must follow, or a restart delivers the batch again.
        let mut outage = Outage::new(c.retry_max);
        while let Err(e) = self.checkpoint.store(at) {
            let (say, delay) = outage.failed(&e.to_string(), Instant::now());
            if say != Say::Quiet {
                tracing::error!(sink = %c.name, error = %e, "sink checkpoint not stored; retrying");
            }
            crawl_observability::metrics::metrics()
                .sinks()
                .error(&c.name, e.kind());
            tokio::time::sleep(delay).await;
        }
        let now_ms = unix_ms();
        crawl_observability::metrics::metrics().sinks().delivered(
            &c.name,
            shipped.records,
            shipped.bytes,
            shipped.skipped,
            now_ms as f64 / 1000.0,
        );
        c.state.update(|v| {
            v.delivered += shipped.records;
            v.bytes += shipped.bytes;
            v.skipped += shipped.skipped;
            v.last_success_ms = now_ms;
            v.last_error = None;
        });
        Ok(())
    }

    /// The lag now, in the metrics, the shared state and the backpressure gate.
    fn publish(&mut self, end: JsonlCheckpoint) {
        let done = self.delivered;
        self.common.lag(Lag {
            records: end.lines.saturating_sub(done.lines),
            bytes: end.bytes.saturating_sub(done.bytes),
        });
    }
}
