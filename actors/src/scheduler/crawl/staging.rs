//! Commit staging: the changes waiting for the next group commit (discovered links, records, finished URLs, queue
//! updates, shared pauses and robots.txt rules), the fetches to archive with it, the commit in flight, and the
//! record log that numbers records as JSONL lines from staged to committed to written. Records of a crawl shared
//! by many processes carry a crawl-wide id; with recrawl it also names the queueing the record answers.

use super::records::RecordLog;
use crate::protocol::ArchiveItem;
use crawl_core::frontier::{
    Added, Batch, Committed, Counters, Discovered, Entry, Finished, Fp, FrontierError,
    SharedRobots, host_fp,
};
use crawl_core::output::JsonlCheckpoint;
use crawl_core::record::Record;
use crawl_observability::trace::Trace;
use std::time::Instant;

/// The commit in flight: what to do once it is durable.
#[derive(Debug, Default)]
struct InFlight {
    started: Option<Instant>,
    finished: Vec<Finished>,
    /// Hosts whose robots.txt rules the commit carries (a shard is handed over only once they are stored).
    robots: Vec<Fp>,
}

/// What a durable commit changes outside the records: URLs finished (their windows settle them), links new to the
/// store (offered to their windows), and the store's counters.
#[derive(Debug)]
pub(super) struct Landed {
    pub finished: Vec<Finished>,
    /// The finished URLs the store refused (their shard's lease had moved on): still pending there.
    pub refused: Vec<Finished>,
    pub added: Vec<Added>,
    pub counters: Counters,
    /// The records now durable, in order, for the sink.
    pub lines: Vec<(u64, Vec<u8>)>,
}

/// The staged batch, the commit in flight and the record log.
#[derive(Debug)]
pub(super) struct Staging {
    staged: Batch,
    /// Fetches to archive with the next commit.
    archive: Vec<ArchiveItem>,
    in_flight: Option<InFlight>,
    records: RecordLog,
}

impl Staging {
    /// `next_record` is the sequence number of the next record, `jsonl` where the JSONL stands, and `moved` true
    /// when that position is news to the store (checkpointed with the first commit).
    pub(super) fn new(next_record: u64, jsonl: JsonlCheckpoint, moved: bool) -> Staging {
        Staging {
            staged: Batch::default(),
            archive: Vec::new(),
            in_flight: None,
            records: RecordLog::new(next_record, jsonl.lines, moved.then_some(jsonl)),
        }
    }

    pub(super) fn discovered(&mut self, d: Discovered) {
        self.staged.discovered.push(d);
    }

    /// A URL queued again: its retry counters go to the store.
    pub(super) fn update(&mut self, entry: Entry) {
        self.staged.updates.push(entry);
    }

    /// A fetch to archive with the next commit.
    pub(super) fn archive(&mut self, item: ArchiveItem) {
        self.archive.push(item);
    }

    /// A host's pause (until `until_ms` since the epoch, at backoff `level`), shared through the store.
    pub(super) fn pause(&mut self, host: String, until_ms: u64, level: u32) {
        self.staged.pauses.retain(|(h, _, _)| *h != host);
        self.staged.pauses.push((host, until_ms, level));
    }

    /// robots.txt rules shared through the store (the latest of an authority).
    pub(super) fn robots(&mut self, rules: SharedRobots) {
        self.staged
            .robots
            .retain(|r| r.authority != rules.authority);
        self.staged.robots.push(rules);
    }

    /// Sets a record's crawl-wide id, unique per fetch: the URL's fingerprint and the queueing the fetch answers
    /// (a URL queued again, by a revisit or a forced re-fetch, is queued under a new number). A fetch done again
    /// after a crash answers the same queueing, so its record keeps the id: what every sink deduplicates on.
    pub(super) fn name(&self, entry: &Entry, record: &mut Record) {
        let fp = crawl_core::frontier::url_fp(&entry.url);
        record.record_id = Some(format!("{fp:016x}-{:x}", entry.seq));
    }

    /// Stages the record `line` of a URL taken from a window (its trace ends once the line is written); the URL
    /// is done. Returns the record's sequence number.
    pub(super) fn record(&mut self, entry: &Entry, line: Vec<u8>, trace: Trace, page: bool) -> u64 {
        let seq = self.records.stage(trace);
        self.staged.records.push((seq, line));
        self.staged.finished.push(Finished {
            id: entry.id,
            host: entry.host,
            key: entry.key(),
            fetched_page: page,
        });
        seq
    }

    /// A URL finished in this batch comes due again (continuous crawling).
    pub(super) fn reschedule(&mut self, again: crawl_core::frontier::Rescheduled) {
        self.staged.rescheduled.push(again);
    }

    /// Changes staged (the archive and the checkpoint aside).
    pub(super) fn len(&self) -> usize {
        self.staged.len()
    }

    /// True when something is staged for the next commit, the JSONL checkpoint included.
    pub(super) fn has_staged(&self) -> bool {
        !self.staged.is_empty() || !self.archive.is_empty() || self.records.has_checkpoint()
    }

    pub(super) fn committing(&self) -> bool {
        self.in_flight.is_some()
    }

    /// Back-pressure: a commit is in flight and twice `max_ops` changes wait behind it.
    pub(super) fn backlogged(&self, max_ops: usize) -> bool {
        self.in_flight.is_some() && self.staged.len() >= 2 * max_ops
    }

    /// True when nothing is staged or being committed (the record log aside).
    pub(super) fn is_empty(&self) -> bool {
        self.staged.is_empty() && self.in_flight.is_none()
    }

    /// True when every record is committed and written, and the store knows it.
    pub(super) fn settled(&self) -> bool {
        self.staged.is_empty()
            && self.archive.is_empty()
            && self.in_flight.is_none()
            && self.records.settled()
            && !self.records.has_checkpoint()
    }

    /// True when a staged or committing change touches a host `in_shard` (a record, robots.txt rules).
    pub(super) fn touches(&self, in_shard: impl Fn(Fp) -> bool) -> bool {
        self.staged.finished.iter().any(|f| in_shard(f.host))
            || self
                .staged
                .robots
                .iter()
                .any(|r| in_shard(host_fp(&r.host)))
            || self.in_flight.as_ref().is_some_and(|c| {
                c.finished.iter().any(|f| in_shard(f.host))
                    || c.robots.iter().any(|fp| in_shard(*fp))
            })
    }

    /// The staged batch, to send to the store, when no commit is in flight and something is staged (or `due`
    /// anyway).
    pub(super) fn take_commit(&mut self, due: bool, now: Instant) -> Option<Batch> {
        if self.in_flight.is_some() || !(due || self.has_staged()) {
            return None;
        }
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

    /// The fetches to archive with the commit just taken.
    pub(super) fn take_archive(&mut self) -> Vec<ArchiveItem> {
        std::mem::take(&mut self.archive)
    }

    /// The store's answer to the commit in flight: the records are numbered for the sink (those the store refused
    /// left out, those it handed over added) and what else changed is returned.
    pub(super) fn land(
        &mut self,
        result: Result<Committed, FrontierError>,
        now: Instant,
    ) -> Result<Landed, FrontierError> {
        let in_flight = self.in_flight.take().unwrap_or_default();
        let committed = match result {
            Ok(c) => c,
            Err(e) => {
                self.records.commit_failed();
                return Err(e);
            }
        };
        tracing::trace!(
            added = committed.added.len(),
            duplicates = committed.duplicates,
            finished = in_flight.finished.len(),
            trimmed = committed.trimmed,
            "frontier committed"
        );
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
        let refused = in_flight
            .finished
            .iter()
            .filter(|f| committed.fenced.contains(&f.id))
            .cloned()
            .collect();
        Ok(Landed {
            refused,
            finished: in_flight.finished,
            added: committed.added,
            counters: committed.counters,
            lines,
        })
    }

    /// The sink wrote records up to `cp.lines`: their outbox copies can go at the next commit. Returns the traces
    /// of the records now written, with their line numbers.
    pub(super) fn written(
        &mut self,
        cp: JsonlCheckpoint,
    ) -> impl Iterator<Item = (u64, Trace)> + '_ {
        self.records.written(cp);
        self.records.take_written(cp.lines)
    }

    /// Records committed but not yet written.
    pub(super) fn pending_writes(&self) -> u64 {
        self.records.pending_writes()
    }

    /// The host pauses staged (for tests of their sharing).
    #[cfg(test)]
    pub(super) fn staged_pauses(&self) -> &[(String, u64, u32)] {
        &self.staged.pauses
    }

    /// The robots.txt rules staged (for tests of their sharing).
    #[cfg(test)]
    pub(super) fn staged_robots(&self) -> &[SharedRobots] {
        &self.staged.robots
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crawl_core::frontier::UrlRef;

    fn line(n: u64) -> Vec<u8> {
        format!("{{\"n\":{n}}}\n").into_bytes()
    }

    fn page(url: &str) -> Entry {
        let mut e = Entry::page(url, 0, None);
        e.host = host_fp("a.test");
        e
    }

    #[test]
    fn records_are_numbered_on_from_the_file_committed_then_written() {
        let jsonl = JsonlCheckpoint {
            lines: 2,
            bytes: 20,
        };
        let mut s = Staging::new(1, jsonl, true);
        assert!(s.has_staged(), "a moved checkpoint is news to the store");
        let t0 = Instant::now();
        let a = s.record(&page("http://a.test/1"), line(1), Trace::default(), true);
        let b = s.record(&page("http://a.test/2"), line(2), Trace::default(), false);
        assert_eq!((a, b), (3, 4), "numbered after the file's two lines");
        assert_eq!(s.len(), 4, "two records and two finished urls");
        assert!(s.touches(|fp| fp == host_fp("a.test")));
        assert!(!s.touches(|fp| fp == host_fp("b.test")));
        let batch = s.take_commit(false, t0).expect("a batch");
        assert_eq!(batch.written, Some(jsonl));
        assert_eq!(batch.records.len(), 2);
        assert!(
            s.committing() && s.take_commit(true, t0).is_none(),
            "one at a time"
        );
        assert!(
            s.touches(|fp| fp == host_fp("a.test")),
            "until it is durable"
        );
        assert!(!s.backlogged(1), "nothing waits behind it");
        let landed = s.land(Ok(Committed::default()), t0).unwrap();
        assert_eq!(landed.finished.len(), 2);
        let seqs: Vec<u64> = landed.lines.iter().map(|(n, _)| *n).collect();
        assert_eq!(seqs, [3, 4]);
        assert_eq!(s.pending_writes(), 2);
        assert!(!s.settled());
        let ended: Vec<u64> = s
            .written(JsonlCheckpoint {
                lines: 3,
                bytes: 30,
            })
            .map(|(n, _)| n)
            .collect();
        assert_eq!(ended, [3]);
        assert_eq!(s.pending_writes(), 1);
        let ended: Vec<u64> = s
            .written(JsonlCheckpoint {
                lines: 4,
                bytes: 40,
            })
            .map(|(n, _)| n)
            .collect();
        assert_eq!(ended, [4]);
        assert!(!s.settled(), "the checkpoint is not stored yet");
        let trim = s.take_commit(false, t0).expect("the checkpoint commit");
        assert!(trim.records.is_empty());
        s.land(Ok(Committed::default()), t0).unwrap();
        assert!(s.settled() && s.is_empty());
        assert!(s.take_commit(false, t0).is_none());
        assert!(
            s.take_commit(true, t0).is_some(),
            "due even when nothing is staged"
        );
    }

    #[test]
    fn fenced_records_leave_no_gap_and_staged_ones_are_numbered_again() {
        let mut s = Staging::new(1, JsonlCheckpoint::default(), false);
        let t0 = Instant::now();
        let stored = |n: u64| {
            let mut e = page(&format!("http://a.test/{n}"));
            e.id = UrlRef { key: n, slot: 0 };
            e
        };
        for n in 1..=3 {
            s.record(&stored(n), line(n), Trace::default(), true);
        }
        s.take_commit(false, t0).expect("a batch");
        s.record(&stored(4), line(4), Trace::default(), true);
        let committed = Committed {
            fenced: vec![stored(2).id],
            fenced_records: vec![2],
            ..Committed::default()
        };
        let landed = s.land(Ok(committed), t0).unwrap();
        assert_eq!(
            landed.finished.len(),
            3,
            "every url of the commit is settled"
        );
        let refused: Vec<UrlRef> = landed.refused.iter().map(|f| f.id).collect();
        assert_eq!(refused, [stored(2).id], "still pending in the store");
        let got: Vec<(u64, Vec<u8>)> = landed.lines;
        assert_eq!(got, [(1, line(1)), (2, line(3))]);
        let next = s.take_commit(false, t0).expect("the staged record");
        assert_eq!(
            next.records,
            [(3, line(4))],
            "numbered on from the kept ones"
        );
    }

    #[test]
    fn a_failed_commit_is_an_error_and_pauses_and_rules_keep_the_latest() {
        let mut s = Staging::new(1, JsonlCheckpoint::default(), false);
        assert!(!s.has_staged());
        s.pause("a.test".into(), 10, 1);
        s.pause("a.test".into(), 20, 2);
        let rules = |ms| SharedRobots {
            host: "a.test".into(),
            authority: "http://a.test:80".into(),
            expires_ms: ms,
            snapshot: Vec::new(),
        };
        s.robots(rules(1));
        s.robots(rules(2));
        assert_eq!(s.staged_robots().len(), 1);
        assert_eq!(s.staged_robots()[0].expires_ms, 2);
        let batch = s.take_commit(false, Instant::now()).expect("a batch");
        assert_eq!(batch.pauses, [("a.test".to_owned(), 20, 2)]);
        assert!(
            s.touches(|fp| fp == host_fp("a.test")),
            "rules being stored"
        );
        let err = s.land(Err(FrontierError::Gone("down".into())), Instant::now());
        assert!(err.is_err());
        assert!(!s.committing());
    }

    #[test]
    fn record_ids_name_the_url_and_its_queueing() {
        let s = Staging::new(1, JsonlCheckpoint::default(), false);
        let mut e = page("http://a.test/1");
        e.seq = 26;
        let mut r = Record::terminal(&e.url, 0, None, crawl_core::record::Reason::Scope, None);
        s.name(&e, &mut r);
        let fp = crawl_core::frontier::url_fp(&e.url);
        assert_eq!(r.record_id, Some(format!("{fp:016x}-1a")));
        // Queued again (a revisit, a forced re-fetch): another id.
        e.seq = 27;
        s.name(&e, &mut r);
        assert_eq!(r.record_id, Some(format!("{fp:016x}-1b")));
    }
}
