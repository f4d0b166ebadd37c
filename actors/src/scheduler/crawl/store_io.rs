//! The scheduler's exchanges with the store: the group commit (and what its answer changes: windows settled, new
//! links offered, records numbered for the sink) and the window refills.

use super::*;

impl Crawl {
    /// The staged batch, to send to the store, when no commit is in flight.
    pub fn take_commit(&mut self, now: Instant) -> Option<Batch> {
        if self.in_flight.is_some() || !self.has_staged() {
            return None;
        }
        self.claims_waiting = false;
        let mut batch = std::mem::take(&mut self.staged);
        batch.written = self.records.take_checkpoint();
        self.records.start_commit(&batch.records);
        self.in_flight = Some(InFlight {
            started: Some(now),
            finished: batch.finished.clone(),
            robots: batch.robots.iter().map(|r| host_fp(&r.host)).collect(),
        });
        Some(batch)
    }

    /// The fetches to archive with the commit just taken ([`take_commit`](Self::take_commit)).
    pub fn take_archive(&mut self) -> Vec<ArchiveItem> {
        std::mem::take(&mut self.staged_archive)
    }

    /// The store's answer to the commit in flight. Returns the records now durable, in order, for the sink.
    pub fn commit_done(
        &mut self,
        result: Result<Committed, FrontierError>,
        now: Instant,
    ) -> Result<Vec<(u64, Vec<u8>)>, FrontierError> {
        let in_flight = self.in_flight.take().unwrap_or_default();
        let committed = match result {
            Ok(c) => c,
            Err(e) => {
                self.records.commit_failed();
                return Err(e);
            }
        };
        self.stats.commits += 1;
        self.commits_done += 1;
        if self.shards.is_none() {
            // A shared store's commit counters are this process's view only; the shard polls bring the crawl's.
            self.counters = committed.counters;
            self.stats.known = committed.counters.known;
        }
        tracing::trace!(
            added = committed.added.len(),
            duplicates = committed.duplicates,
            finished = in_flight.finished.len(),
            trimmed = committed.trimmed,
            "frontier committed"
        );
        for f in &in_flight.finished {
            if f.host == RECORDS_HOST {
                self.excluded.settle(f.id);
            } else if let Some(h) = self.queues.host_by_fp(f.host) {
                self.queues.settle(h, f.id);
            }
        }
        let cap = self.settings.window;
        for added in committed.added {
            let entry = added.entry;
            if !self.owns_host(entry.host) {
                // Its shard belongs to another process, which reads it from the store.
                continue;
            }
            if entry.host == RECORDS_HOST {
                self.excluded.offer(entry, cap);
            } else {
                let h = self.queues.host_id(&added.host);
                self.queues.offer(h, entry, now);
            }
        }
        if !committed.fenced_records.is_empty() {
            tracing::warn!(
                records = committed.fenced_records.len(),
                "commit refused for shards now owned by another process; their urls stay pending there"
            );
        }
        let renumbered = !committed.fenced_records.is_empty() || !committed.extra.is_empty();
        self.records.rewrite(committed.rewritten);
        let lines = self.records.committed(
            (in_flight.started.unwrap_or(now), now),
            &committed.fenced_records,
            committed.extra,
        );
        if renumbered {
            self.records.restage(&mut self.staged.records);
        }
        // Links recorded without a fetch get their records at once (staged for the next commit).
        self.record_excluded();
        Ok(lines)
    }

    /// Refills the windows need; the caller sends each to the store and hands the answer to [`filled`](Self::filled).
    pub fn take_refills(&mut self) -> Vec<RefillRequest> {
        let mut out: Vec<RefillRequest> = self
            .queues
            .take_refills()
            .into_iter()
            .map(|(h, fp, refill)| RefillRequest {
                window: WindowId::Host(h),
                host: fp,
                refill,
            })
            .collect();
        if let Some(refill) = self.excluded.want_refill(self.settings.window) {
            out.push(RefillRequest {
                window: WindowId::Records,
                host: RECORDS_HOST,
                refill,
            });
        }
        self.refills_out += out.len();
        out
    }

    /// The store's answer to a refill.
    pub fn filled(
        &mut self,
        req: RefillRequest,
        result: Result<Vec<Entry>, FrontierError>,
        now: Instant,
    ) -> Result<(), FrontierError> {
        self.refills_out = self.refills_out.saturating_sub(1);
        match (req.window, result) {
            (WindowId::Host(h), Ok(entries)) => self.queues.fill(h, entries, req.refill, now),
            (WindowId::Records, Ok(entries)) => {
                self.excluded
                    .fill(entries, req.refill, self.settings.window);
            }
            (WindowId::Host(h), Err(e)) => {
                self.queues.refill_failed(h, now);
                return Err(e);
            }
            (WindowId::Records, Err(e)) => {
                self.excluded.refill_failed();
                return Err(e);
            }
        }
        Ok(())
    }
}
