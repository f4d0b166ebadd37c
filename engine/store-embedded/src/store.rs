//! The embedded frontier: redb on disk under data_dir.
//!
//! Tables (all keys fixed-width integers, all values compact binary, see [`crawl_core::frontier::codec`]):
//! - `url_rows`, with sorted run files beside the database: the known URLs, each with a reference to the page
//!   that linked it, found by fingerprint (the `known` module). A URL is pending while it is in its queue
//!   and done once it left it, so finishing a URL writes nothing there.
//! - `queue`: (host fingerprint, depth, discovery seq) -> a pending URL's reference, kind, counters and parent
//!   reference. A host's queue is one ordered key range, read a window at a time.
//! - `hosts`: host fingerprint -> pending count and host key, for hosts with pending URLs.
//! - `outbox`: record sequence number -> JSONL line, for records committed but not yet known to be in the file.
//! - `schedule_due` and `schedule_rows`: the revisit schedule (continuous crawling), finished URLs that come due
//!   again with their prior visit, in due order and by row (the `schedule` module). A URL due is promoted back into its
//!   host's queue under a new queue number taken from the counter that numbers rows (so rows skip numbers, which
//!   nothing minds), with its prior in its queue value.
//! - `requeued`: the rows of done URLs queued again by a forced re-fetch ([`FrontierStore::refetch`]) and still
//!   pending (a first visit is pending when its queue holds its row number as sequence number, a promoted revisit
//!   when its schedule entry is there without its due pair; a re-fetched URL has neither), removed when it finishes.
//! - `operator`: what operators set on the crawl (the `operator` module): one row, a version and the state as JSON.
//! - `meta`: counters and the JSONL checkpoint, so that opening reads no table whole.
//!
//! Every commit is `Durability::Immediate` with quick repair (the allocator state is saved), so opening after
//! `kill -9` does not walk the file. An in-memory Bloom filter answers "surely new" for most new URLs; after a
//! restart it is rebuilt in the background ([`FrontierStore::idle_work`]) and, until then, every link is looked up.

use crate::bloom::Bloom;
use crate::error::StoreResult;
use crate::fpruns::{self, Run};
use crate::known::{FpIndex, ROWS};
use crate::lock::DirLock;
use crate::operator::Operator;
use crate::outbox;
use crate::recent::RecentUrls;
use crate::schedule::codec::{Revisit, due_s, due_upto_s};
use crate::schedule::{self, Schedule};
use crawl_core::control::{Change, OperatorState};
use crawl_core::frontier::codec::{self, Parent, QueuedValue, Row};
use crawl_core::frontier::fphash::FpMap;
use crawl_core::frontier::{
    Added, Batch, Committed, Counters, Discovered, Entry, Fp, FrontierError, FrontierStore, Hinted,
    HostInfo, Outlook, QueueKey, RECORDS_HOST, Resume, SitemapHint, UrlRef, corrupt, host_fp,
    url_fp,
};
use crawl_core::output::JsonlCheckpoint;
use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const QUEUE: TableDefinition<(u64, u32, u64), &[u8]> = TableDefinition::new("queue");
const HOSTS: TableDefinition<u64, &[u8]> = TableDefinition::new("hosts");
const OUTBOX: TableDefinition<u64, &[u8]> = TableDefinition::new("outbox");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
/// Opaque values kept with the commits (the archive checkpoint).
const BLOBS: TableDefinition<&str, &[u8]> = TableDefinition::new("blobs");
/// Rows of done URLs queued again by a forced re-fetch, while pending.
const REQUEUED: TableDefinition<u64, ()> = TableDefinition::new("requeued");
const ARCHIVE_CHECKPOINT: &str = "archive_checkpoint";
/// The fingerprint runs' list ([`crate::fpruns::encode_list`]).
const RUN_LIST: &str = "fp_runs";

/// The on-disk format this code writes; a store of another format is refused with a clear error.
const FORMAT: u64 = 3;

const CACHE_BYTES: usize = 16 * 1024 * 1024;
/// URLs per generation of the exact cache of recently seen URLs.
const RECENT_URLS: usize = 32_768;
/// Fingerprints fed to the Bloom filter per [`FrontierStore::idle_work`] call while rebuilding it.
const REBUILD_STEP: usize = 16_384;

mod key {
    pub const FORMAT: &str = "format";
    pub const NEXT_RECORD: &str = "next_record";
    pub const NEXT_ENTRY: &str = "next_entry";
    pub const KNOWN: &str = "known";
    pub const PENDING: &str = "pending";
    pub const DONE: &str = "done";
    pub const PAGES: &str = "pages_fetched";
    pub const SCHEDULED: &str = "scheduled";
    pub const CP_SET: &str = "jsonl_checkpoint";
    pub const CP_LINES: &str = "jsonl_lines";
    pub const CP_BYTES: &str = "jsonl_bytes";
    pub const NEXT_RUN: &str = "next_run";
    /// The last row the fingerprint runs cover.
    pub const RUN_ROWS: &str = "run_rows_upto";
    /// Written by the first format, which this code cannot read.
    pub const OLD_NEXT_SEQ: &str = "next_seq";
}

/// A known URL queued again: where, and with what.
struct Again {
    host: Fp,
    host_key: String,
    depth: u32,
    kind: crawl_core::frontier::JobKind,
    seq: u64,
    id: UrlRef,
    prior: Option<Box<crawl_core::recrawl::Prior>>,
}

/// Per host fingerprint: how its pending count changes, and its host key (fingerprints hash as themselves: two
/// lookups a URL).
type HostDeltas = FpMap<Fp, (i64, Option<String>)>;

/// Applies pending-count changes to the host rows: a host whose count reaches 0 loses its row.
fn apply_host_deltas(
    hosts: &mut redb::Table<'_, u64, &'static [u8]>,
    deltas: HostDeltas,
) -> Result<(), FrontierError> {
    for (h, (delta, name)) in deltas {
        if delta == 0 {
            continue;
        }
        let (pending, stored_name) = match hosts.get(h).store()? {
            Some(v) => codec::decode_host(v.value()).map_err(|e| corrupt("host row", e))?,
            None => (0, String::new()),
        };
        let name = if stored_name.is_empty() {
            name.unwrap_or_default()
        } else {
            stored_name
        };
        let pending = pending.saturating_add_signed(delta);
        if pending == 0 {
            hosts.remove(h).store()?;
        } else {
            hosts
                .insert(h, codec::encode_host(pending, &name).as_slice())
                .store()?;
        }
    }
    Ok(())
}

/// redb-backed [`FrontierStore`].
pub struct EmbeddedFrontier {
    db: Database,
    bloom: Bloom,
    recent: RecentUrls,
    index: FpIndex,
    /// Where the Bloom rebuild after a restart stands: None when the filter is complete.
    rebuild: Option<Rebuild>,
    counters: Counters,
    next_record: u64,
    next_entry: u64,
    trimmed_upto: u64,
    /// What operators set (read at the first use).
    operator: Operator,
    dir: PathBuf,
    _lock: DirLock,
}

/// The Bloom filter's rebuild after a restart: the runs listed then (held open, so that a merge deleting one does
/// not cut the rebuild short), and the next block to read.
struct Rebuild {
    runs: Vec<Arc<Run>>,
    run: usize,
    block: usize,
}

impl std::fmt::Debug for EmbeddedFrontier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedFrontier")
            .field("dir", &self.dir)
            .field("counters", &self.counters)
            .finish()
    }
}

impl EmbeddedFrontier {
    /// Opens (or creates) the frontier under `dir`, taking the directory's lock first.
    pub fn open(dir: &Path) -> Result<EmbeddedFrontier, FrontierError> {
        let lock = DirLock::acquire(dir)?;
        Self::open_locked(dir, lock)
    }

    /// Opens (or creates) the frontier under `dir` with the directory's lock already taken (by the caller, before
    /// anything else that could fail because another process runs on the same directory).
    pub fn open_locked(dir: &Path, lock: DirLock) -> Result<EmbeddedFrontier, FrontierError> {
        let path = dir.join("frontier.redb");
        if !path.exists() {
            create_atomically(&path)?;
        }
        // redb caches up to 1 GiB by default; memory must follow the configuration, not the frontier.
        let db = Database::builder()
            .set_cache_size(CACHE_BYTES)
            .create(&path)
            .store()?;
        Ok(EmbeddedFrontier {
            db,
            bloom: Bloom::new(1 << 16),
            recent: RecentUrls::new(RECENT_URLS),
            index: FpIndex::empty(dir),
            rebuild: None,
            counters: Counters::default(),
            next_record: 1,
            next_entry: 1,
            trimmed_upto: 0,
            operator: Operator::default(),
            dir: dir.to_path_buf(),
            _lock: lock,
        })
    }

    /// Sets the sequence number of the next record (a fresh store whose JSONL already has lines).
    pub fn set_next_record(&mut self, next: u64) {
        self.next_record = next.max(1);
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Bytes of memory the dedup filter holds.
    pub fn filter_bytes(&self) -> usize {
        self.bloom.bytes()
    }

    /// Commits `batch` in one durable transaction; on an error nothing of it is stored.
    fn write_batch(&mut self, batch: Batch) -> Result<Committed, FrontierError> {
        let mut out = Committed::default();
        let txn = self.begin_durable()?;
        let mut counters = self.counters;
        let mut next_entry = self.next_entry;
        let mut next_record = self.next_record;
        let mut host_delta = HostDeltas::default();
        let mut trim_to = self.trimmed_upto;
        let filter_complete = self.rebuild.is_none();
        let mut added_fps = Vec::new();
        let prepared;
        {
            let mut rows = txn.open_table(ROWS).store()?;
            let mut queue = txn.open_table(QUEUE).store()?;
            for d in batch.discovered {
                let fp = url_fp(&d.url);
                if self.recent.contains(fp, &d.url) {
                    out.duplicates += 1;
                    continue;
                }
                // Links added earlier in this batch are in the filter and the index too.
                let maybe = !filter_complete || self.bloom.may_contain(fp);
                if maybe && self.index.find(&rows, fp, &d.url)?.is_some() {
                    out.duplicates += 1;
                    self.recent.insert(fp, &d.url);
                    continue;
                }
                let parent = match &d.parent {
                    Some((r, _)) if r.key != 0 => Parent::Ref(*r),
                    Some((_, u)) => Parent::Url(u.clone()),
                    None => Parent::None,
                };
                // The row number is the entry's sequence number: rows are appended in order.
                let seq = next_entry;
                next_entry += 1;
                rows.insert(seq, codec::encode_row(&d.url, &parent).as_slice())
                    .store()?;
                self.index.add(fp, seq);
                self.bloom.insert(fp);
                added_fps.push(fp);
                let host = if d.kind.is_fetched() {
                    host_fp(&d.host)
                } else {
                    RECORDS_HOST
                };
                let id = UrlRef { key: seq, slot: 0 };
                let value = QueuedValue {
                    id,
                    kind: d.kind,
                    attempt: 0,
                    retries: 0,
                    redirect_chain: d.redirect_chain.clone(),
                    prior: None,
                };
                queue
                    .insert(
                        (host, d.depth, seq),
                        codec::encode_queued(&value).as_slice(),
                    )
                    .store()?;
                let delta = host_delta.entry(host).or_insert((0, None));
                delta.0 += 1;
                if delta.1.is_none() {
                    delta.1 = Some(if host == RECORDS_HOST {
                        String::new()
                    } else {
                        d.host.clone()
                    });
                }
                counters.known += 1;
                counters.pending += 1;
                let (parent_ref, parent) = match d.parent {
                    Some((r, u)) => (Some(r).filter(|r| r.key != 0), Some(u)),
                    None => (None, None),
                };
                out.added.push(Added {
                    entry: Entry {
                        url: d.url,
                        depth: d.depth,
                        parent,
                        parent_ref,
                        attempt: 0,
                        retries: 0,
                        redirect_chain: d.redirect_chain,
                        seq,
                        kind: d.kind,
                        host,
                        id,
                        queued_at: None,
                        prior: None,
                    },
                    host: if host == RECORDS_HOST {
                        String::new()
                    } else {
                        d.host
                    },
                });
            }
            for e in &batch.updates {
                let k = (e.host, e.depth, e.seq);
                if queue.get(k).store()?.is_none() {
                    continue; // done meanwhile: never bring it back
                }
                let value = QueuedValue {
                    id: e.id,
                    kind: e.kind,
                    attempt: e.attempt,
                    retries: e.retries,
                    redirect_chain: e.redirect_chain.clone(),
                    prior: e.prior.clone(),
                };
                queue
                    .insert(k, codec::encode_queued(&value).as_slice())
                    .store()?;
            }
            // The finished URLs this batch took off their queue: only those are scheduled again. Of those, the
            // revisits (their queue value holds a prior): their schedule entry goes unless they are.
            let mut applied = std::collections::HashSet::new();
            let mut revisits = Vec::new();
            let mut requeued = None;
            for f in &batch.finished {
                // A URL is done when it leaves its queue; its row in the URL table stays as it is (it only serves
                // dedup and as a parent), so finishing costs no random write there. Finishing twice counts once.
                let Some(value) = queue.remove((f.host, f.key.depth, f.key.seq)).store()? else {
                    continue;
                };
                if codec::decode_queued(value.value()).is_ok_and(|q| q.prior.is_some()) {
                    revisits.push(f.id.key);
                } else if f.key.seq != f.id.key {
                    // Queued again by a forced re-fetch (a first visit's number is its row's).
                    if requeued.is_none() {
                        requeued = Some(txn.open_table(REQUEUED).store()?);
                    }
                    if let Some(t) = &mut requeued {
                        t.remove(f.id.key).store()?;
                    }
                }
                drop(value);
                applied.insert(f.id);
                counters.pending = counters.pending.saturating_sub(1);
                host_delta.entry(f.host).or_insert((0, None)).0 -= 1;
                counters.done += 1;
                if f.fetched_page {
                    counters.pages_fetched += 1;
                }
            }
            if !batch.rescheduled.is_empty() || !revisits.is_empty() {
                let mut sched = Schedule::open(&txn)?;
                let mut again = std::collections::HashSet::new();
                for r in batch.rescheduled {
                    if !applied.remove(&r.id) {
                        continue; // finished already, or not in this batch: never a second entry
                    }
                    if !r.kind.is_fetched() {
                        tracing::warn!(url = %r.url, kind = ?r.kind, "only fetched kinds are revisited");
                        continue;
                    }
                    again.insert(r.id.key);
                    let revisit = Revisit {
                        row: r.id.key,
                        due_s: due_s(r.stored.next_due_ms),
                        depth: r.depth,
                        kind: r.kind,
                        prior: r.stored.prior,
                    };
                    if sched.put(&revisit)? {
                        counters.scheduled += 1;
                    }
                }
                for row in revisits {
                    if !again.contains(&row) && sched.forget(row)? {
                        counters.scheduled = counters.scheduled.saturating_sub(1);
                    }
                }
            }
            let mut outbox = txn.open_table(OUTBOX).store()?;
            if let Some((key, row)) = outbox::encode(&batch.records) {
                outbox.insert(key, row.as_slice()).store()?;
            }
            for (seq, _) in &batch.records {
                next_record = next_record.max(seq + 1);
            }
            if let Some(cp) = batch.written
                && cp.lines > trim_to
            {
                out.trimmed = outbox::trim(&mut outbox, cp.lines)?;
                trim_to = cp.lines;
            }
            apply_host_deltas(&mut txn.open_table(HOSTS).store()?, host_delta)?;
            prepared = self.index.flush_if_full()?;
            let mut meta = txn.open_table(META).store()?;
            meta.insert(key::FORMAT, FORMAT).store()?;
            meta.insert(key::NEXT_RECORD, next_record).store()?;
            meta.insert(key::NEXT_ENTRY, next_entry).store()?;
            meta.insert(key::KNOWN, counters.known).store()?;
            meta.insert(key::PENDING, counters.pending).store()?;
            meta.insert(key::DONE, counters.done).store()?;
            meta.insert(key::PAGES, counters.pages_fetched).store()?;
            meta.insert(key::SCHEDULED, counters.scheduled).store()?;
            if let Some(cp) = batch.written {
                meta.insert(key::CP_SET, 1).store()?;
                meta.insert(key::CP_LINES, cp.lines).store()?;
                meta.insert(key::CP_BYTES, cp.bytes).store()?;
            }
            if let Some(a) = &batch.archive_checkpoint {
                txn.open_table(BLOBS)
                    .store()?
                    .insert(ARCHIVE_CHECKPOINT, a.as_slice())
                    .store()?;
            }
            if let Some(p) = &prepared {
                let l = p.listing(&self.index);
                txn.open_table(BLOBS)
                    .store()?
                    .insert(RUN_LIST, l.list.as_slice())
                    .store()?;
                meta.insert(key::NEXT_RUN, l.next_id).store()?;
                meta.insert(key::RUN_ROWS, l.covered).store()?;
            }
        }
        if let Err(e) = txn.commit() {
            if let Some(p) = prepared {
                self.index.abandon(p);
            }
            return Err(e).store();
        }
        self.index.settle(prepared);
        for (a, fp) in out.added.iter().zip(added_fps) {
            self.recent.insert(fp, &a.entry.url);
        }
        self.counters = counters;
        self.next_entry = next_entry;
        self.next_record = next_record;
        self.trimmed_upto = trim_to;
        out.counters = counters;
        Ok(out)
    }

    /// A write transaction as every change of the store takes: durable when it returns, and quick to open after
    /// a crash.
    fn begin_durable(&self) -> Result<redb::WriteTransaction, FrontierError> {
        let mut txn = self.db.begin_write().store()?;
        txn.set_durability(Durability::Immediate).store()?;
        txn.set_quick_repair(true);
        Ok(txn)
    }

    /// Moves up to `max` revisits due at `now_ms` into their hosts' queues, in one durable transaction.
    fn promote(&mut self, now_ms: u64, max: usize) -> Result<Vec<Added>, FrontierError> {
        let Some(upto) = due_upto_s(now_ms) else {
            return Ok(Vec::new());
        };
        // Most calls find nothing due: they cost a read, not a durable commit.
        let first = schedule::first_due_s(&self.db.begin_read().store()?)?;
        if max == 0 || first.is_none_or(|d| d > upto) {
            return Ok(Vec::new());
        }
        let txn = self.begin_durable()?;
        let mut counters = self.counters;
        let mut next_entry = self.next_entry;
        let mut out = Vec::new();
        {
            let due = Schedule::open(&txn)?.take_due(upto, max)?;
            let rows = txn.open_table(ROWS).store()?;
            let mut queue = txn.open_table(QUEUE).store()?;
            let mut host_delta = HostDeltas::default();
            for r in due {
                let row = Self::lookup_row(
                    &rows,
                    UrlRef {
                        key: r.row,
                        slot: 0,
                    },
                )?;
                let parsed = crawl_core::urlparts::parse(&row.url)
                    .map_err(|e| corrupt(format!("url row {}", r.row), e))?;
                let host_key = crawl_core::canon::host_key(&parsed).to_owned();
                let host = host_fp(&host_key);
                // A new queue number, from the counter that numbers rows: unique, and growing with the order of
                // queueing, so a host's revisits come oldest due first and no queueing's number is used twice.
                let seq = next_entry;
                next_entry += 1;
                let id = UrlRef {
                    key: r.row,
                    slot: 0,
                };
                counters.scheduled = counters.scheduled.saturating_sub(1);
                let again = Again {
                    host,
                    host_key,
                    depth: r.depth,
                    kind: r.kind,
                    seq,
                    id,
                    prior: Some(Box::new(r.prior)),
                };
                out.push(Self::queue_again(
                    &rows,
                    &mut queue,
                    &mut host_delta,
                    &mut counters,
                    again,
                    row,
                )?);
            }
            apply_host_deltas(&mut txn.open_table(HOSTS).store()?, host_delta)?;
            let mut meta = txn.open_table(META).store()?;
            meta.insert(key::NEXT_ENTRY, next_entry).store()?;
            meta.insert(key::PENDING, counters.pending).store()?;
            meta.insert(key::SCHEDULED, counters.scheduled).store()?;
        }
        txn.commit().store()?;
        self.counters = counters;
        self.next_entry = next_entry;
        tracing::debug!(promoted = out.len(), "revisits due queued");
        Ok(out)
    }

    /// A forced re-fetch ([`FrontierStore::refetch`]), in one durable transaction: each known URL that is done or
    /// scheduled is queued again under a new queue number (as a promotion does), a scheduled one as its schedule
    /// entry says (depth, kind, prior visit) and taken out of the schedule, a done one as the caller describes it;
    /// pending and unknown URLs are left out. A URL is pending when its first visit's queue entry is there (the
    /// host's queue, or the records queue, at any depth, numbered as its row), when it is a promoted revisit (its
    /// schedule entry without its due pair), or when it was re-fetched before and has not finished (`requeued`).
    fn requeue(&mut self, urls: &[Discovered]) -> Result<Vec<Added>, FrontierError> {
        if urls.is_empty() {
            return Ok(Vec::new());
        }
        let filter_complete = self.rebuild.is_none();
        let txn = self.begin_durable()?;
        let mut counters = self.counters;
        let mut next_entry = self.next_entry;
        let mut out = Vec::new();
        {
            let rows = txn.open_table(ROWS).store()?;
            let mut queue = txn.open_table(QUEUE).store()?;
            let mut requeued = txn.open_table(REQUEUED).store()?;
            let mut sched = Schedule::open(&txn)?;
            let mut host_delta = HostDeltas::default();
            let mut rows_seen = std::collections::HashSet::new();
            for d in urls {
                let fp = url_fp(&d.url);
                if filter_complete && !self.bloom.may_contain(fp) {
                    continue;
                }
                let Some(row) = self.index.find(&rows, fp, &d.url)? else {
                    continue;
                };
                if !rows_seen.insert(row) {
                    continue; // twice in one call: queued once
                }
                let (depth, kind, prior) = match sched.take(row)? {
                    Some(r) => {
                        counters.scheduled = counters.scheduled.saturating_sub(1);
                        (r.depth, r.kind, Some(Box::new(r.prior)))
                    }
                    None => {
                        let pending = sched.holds(row)?
                            || requeued.get(row).store()?.is_some()
                            || queued_as_first_visit(&queue, host_fp(&d.host), row)?
                            || queued_as_first_visit(&queue, RECORDS_HOST, row)?;
                        if pending {
                            continue;
                        }
                        requeued.insert(row, ()).store()?;
                        counters.done = counters.done.saturating_sub(1);
                        (d.depth, d.kind, None)
                    }
                };
                let host = if kind.is_fetched() {
                    host_fp(&d.host)
                } else {
                    RECORDS_HOST
                };
                let host_key = if host == RECORDS_HOST {
                    String::new()
                } else {
                    d.host.clone()
                };
                let seq = next_entry;
                next_entry += 1;
                let id = UrlRef { key: row, slot: 0 };
                let stored = Self::lookup_row(&rows, id)?;
                let again = Again {
                    host,
                    host_key,
                    depth,
                    kind,
                    seq,
                    id,
                    prior,
                };
                out.push(Self::queue_again(
                    &rows,
                    &mut queue,
                    &mut host_delta,
                    &mut counters,
                    again,
                    stored,
                )?);
            }
            if out.is_empty() {
                drop((rows, queue, requeued, sched));
                txn.abort().store()?;
                return Ok(out);
            }
            apply_host_deltas(&mut txn.open_table(HOSTS).store()?, host_delta)?;
            let mut meta = txn.open_table(META).store()?;
            meta.insert(key::NEXT_ENTRY, next_entry).store()?;
            meta.insert(key::PENDING, counters.pending).store()?;
            meta.insert(key::DONE, counters.done).store()?;
            meta.insert(key::SCHEDULED, counters.scheduled).store()?;
        }
        txn.commit().store()?;
        self.counters = counters;
        self.next_entry = next_entry;
        tracing::debug!(
            queued = out.len(),
            asked = urls.len(),
            "known urls queued again"
        );
        Ok(out)
    }

    /// Brings scheduled URLs forward as a sitemap's entries say, in one durable transaction.
    fn apply_hints(
        &mut self,
        hints: &[SitemapHint],
        policy: &crawl_core::recrawl::Policy,
        now_ms: u64,
    ) -> Result<Hinted, FrontierError> {
        let mut out = Hinted::default();
        if hints.is_empty() {
            return Ok(out);
        }
        let filter_complete = self.rebuild.is_none();
        let txn = self.begin_durable()?;
        {
            let rows = txn.open_table(ROWS).store()?;
            let mut sched = Schedule::open(&txn)?;
            for h in hints {
                let fp = url_fp(&h.url);
                if filter_complete && !self.bloom.may_contain(fp) {
                    continue;
                }
                let Some(row) = self.index.find(&rows, fp, &h.url)? else {
                    continue;
                };
                // Pending URLs have no entry: only scheduled ones are moved.
                let Some(mut r) = sched.get(row)? else {
                    continue;
                };
                let hint = policy.sitemap_hint(
                    &h.url,
                    &r.prior,
                    schedule::codec::due_ms(r.due_s),
                    h.lastmod.as_deref(),
                    h.changefreq.as_deref(),
                    now_ms,
                );
                out.anomalies.extend(hint.anomaly);
                let Some(due_ms) = hint.due_ms else {
                    continue;
                };
                let due = due_s(due_ms);
                if due < r.due_s {
                    r.due_s = due;
                    sched.put(&r)?;
                    out.moved += 1;
                }
            }
        }
        txn.commit().store()?;
        Ok(out)
    }

    /// Queues a known URL (`row`) again as `again` says (a revisit come due, a forced re-fetch): its queue entry,
    /// its host's pending count, the pending counter, and the entry the caller hands out.
    fn queue_again(
        rows: &impl ReadableTable<u64, &'static [u8]>,
        queue: &mut redb::Table<'_, (u64, u32, u64), &'static [u8]>,
        host_delta: &mut HostDeltas,
        counters: &mut Counters,
        again: Again,
        row: Row,
    ) -> Result<Added, FrontierError> {
        let Again {
            host,
            host_key,
            depth,
            kind,
            seq,
            id,
            prior,
        } = again;
        let value = QueuedValue {
            id,
            kind,
            attempt: 0,
            retries: 0,
            redirect_chain: Vec::new(),
            prior: prior.clone(),
        };
        queue
            .insert((host, depth, seq), codec::encode_queued(&value).as_slice())
            .store()?;
        let delta = host_delta.entry(host).or_insert((0, None));
        delta.0 += 1;
        if delta.1.is_none() {
            delta.1 = Some(host_key.clone());
        }
        counters.pending += 1;
        let (parent, parent_ref) = match row.parent {
            Parent::Ref(p) => (Some(Self::lookup_row(rows, p)?.url), Some(p)),
            Parent::Url(u) => (Some(u), None),
            Parent::None => (None, None),
        };
        Ok(Added {
            entry: Entry {
                url: row.url,
                depth,
                parent,
                parent_ref,
                attempt: 0,
                retries: 0,
                redirect_chain: Vec::new(),
                seq,
                kind,
                host,
                id,
                queued_at: None,
                prior,
            },
            host: host_key,
        })
    }

    fn lookup_row(
        rows: &impl ReadableTable<u64, &'static [u8]>,
        id: UrlRef,
    ) -> Result<Row, FrontierError> {
        let Some(v) = rows.get(id.key).store()? else {
            return Err(corrupt(
                format!("url row {}", id.key),
                "missing from the row table",
            ));
        };
        codec::decode_row(v.value()).map_err(|e| corrupt("url row", e))
    }
}

/// True when `host`'s queue holds an entry numbered `seq` at any depth (a first visit's entry is numbered as its
/// row). The queue is ordered by (host, depth, seq): each depth present costs one or two lookups, whatever its
/// length.
fn queued_as_first_visit(
    queue: &impl ReadableTable<(u64, u32, u64), &'static [u8]>,
    host: Fp,
    seq: u64,
) -> Result<bool, FrontierError> {
    let mut depth = 0u32;
    loop {
        let next = queue
            .range::<(u64, u32, u64)>((host, depth, seq)..=(host, u32::MAX, u64::MAX))
            .store()?
            .next();
        let Some(item) = next else {
            return Ok(false);
        };
        let (_, d, s) = item.store()?.0.value();
        if s == seq {
            return Ok(true);
        }
        if d > depth {
            // The next depth with entries: look there for `seq`.
            depth = d;
        } else if let Some(deeper) = depth.checked_add(1) {
            // Past `seq` at this depth.
            depth = deeper;
        } else {
            return Ok(false);
        }
    }
}

/// Creates an empty database under a temporary name and renames it into place, so a crash in the middle of
/// creation never leaves a half-written `frontier.redb` behind.
fn create_atomically(path: &Path) -> Result<(), FrontierError> {
    let io = |source| FrontierError::Io {
        path: path.display().to_string(),
        source,
    };
    let tmp = path.with_extension("redb.creating");
    if tmp.exists() {
        std::fs::remove_file(&tmp).map_err(io)?;
    }
    drop(
        Database::builder()
            .set_cache_size(CACHE_BYTES)
            .create(&tmp)
            .store()?,
    );
    std::fs::File::open(&tmp)
        .and_then(|f| f.sync_all())
        .map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)?;
    if let Some(parent) = path.parent() {
        std::fs::File::open(parent)
            .and_then(|d| d.sync_all())
            .map_err(io)?;
    }
    Ok(())
}

impl FrontierStore for EmbeddedFrontier {
    fn recover(&mut self) -> Result<Resume, FrontierError> {
        let mut rec = Resume::default();
        let txn = self.db.begin_read().store()?;
        let mut checkpoint = None;
        let mut next_run = 1;
        let mut covered = 0;
        let mut run_list = None;
        match txn.open_table(META) {
            Ok(meta) => {
                let get = |k: &str| -> Result<Option<u64>, FrontierError> {
                    Ok(meta.get(k).store()?.map(|g| g.value()))
                };
                match get(key::FORMAT)? {
                    Some(FORMAT) => {}
                    Some(other) => {
                        return Err(FrontierError::Store(format!(
                            "{} holds a frontier of format {other}; this build reads format {FORMAT}: \
                             finish that crawl with the build that wrote it or use a new data_dir",
                            self.dir.display()
                        )));
                    }
                    None if get(key::OLD_NEXT_SEQ)?.is_some() => {
                        return Err(FrontierError::Store(format!(
                            "{} holds a frontier written by an older crawl-engine (format 1); this build reads \
                             format {FORMAT}: finish that crawl with the older build or use a new data_dir",
                            self.dir.display()
                        )));
                    }
                    None => rec.fresh = true,
                }
                self.counters = Counters {
                    known: get(key::KNOWN)?.unwrap_or(0),
                    pending: get(key::PENDING)?.unwrap_or(0),
                    done: get(key::DONE)?.unwrap_or(0),
                    pages_fetched: get(key::PAGES)?.unwrap_or(0),
                    scheduled: get(key::SCHEDULED)?.unwrap_or(0),
                };
                if let Some(n) = get(key::NEXT_RECORD)? {
                    self.next_record = n;
                }
                if let Some(n) = get(key::NEXT_ENTRY)? {
                    self.next_entry = n;
                }
                next_run = get(key::NEXT_RUN)?.unwrap_or(1);
                covered = get(key::RUN_ROWS)?.unwrap_or(0);
                if get(key::CP_SET)?.unwrap_or(0) == 1 {
                    checkpoint = Some(JsonlCheckpoint {
                        lines: get(key::CP_LINES)?.unwrap_or(0),
                        bytes: get(key::CP_BYTES)?.unwrap_or(0),
                    });
                }
            }
            Err(redb::TableError::TableDoesNotExist(_)) => rec.fresh = true,
            Err(e) => return Err(e).store(),
        }
        match txn.open_table(BLOBS) {
            Ok(blobs) => {
                rec.archive_checkpoint = blobs
                    .get(ARCHIVE_CHECKPOINT)
                    .store()?
                    .map(|v| v.value().to_vec());
                run_list = blobs.get(RUN_LIST).store()?.map(|v| v.value().to_vec());
            }
            Err(redb::TableError::TableDoesNotExist(_)) => {}
            Err(e) => return Err(e).store(),
        }
        match txn.open_table(ROWS) {
            Ok(rows) => {
                self.index =
                    FpIndex::open(&self.dir, run_list.as_deref(), next_run, &rows, covered)?;
            }
            Err(redb::TableError::TableDoesNotExist(_)) => {
                // A store that never committed a URL: no run is listed, and any run file is a stray.
                fpruns::remove_strays(&self.dir, &[])?;
            }
            Err(e) => return Err(e).store(),
        }
        match txn.open_table(HOSTS) {
            Ok(hosts) => {
                for item in hosts.iter().store()? {
                    let (k, v) = item.store()?;
                    let (pending, name) =
                        codec::decode_host(v.value()).map_err(|e| corrupt("host row", e))?;
                    if pending > 0 {
                        rec.hosts.push(HostInfo {
                            fp: k.value(),
                            name,
                            pending,
                            paused_until_ms: 0,
                            backoff_level: 0,
                        });
                    }
                }
            }
            Err(redb::TableError::TableDoesNotExist(_)) => {}
            Err(e) => return Err(e).store(),
        }
        let from = checkpoint.map_or(0, |c| c.lines);
        self.trimmed_upto = from;
        match txn.open_table(OUTBOX) {
            Ok(outbox) => {
                // A row keyed at or below the checkpoint may still hold later lines: read every row.
                for item in outbox.iter().store()? {
                    let (k, v) = item.store()?;
                    let lines = outbox::decode(k.value(), v.value())
                        .map_err(|e| corrupt("outbox row", e))?;
                    rec.outbox.extend(
                        lines
                            .into_iter()
                            .filter(|(seq, _)| *seq > from)
                            .map(|(seq, line)| (seq, line.to_vec())),
                    );
                }
                rec.outbox.sort_unstable_by_key(|(seq, _)| *seq);
            }
            Err(redb::TableError::TableDoesNotExist(_)) => {}
            Err(e) => return Err(e).store(),
        }
        // Size the filter for what is known and rebuild it while the crawl runs: the pairs in memory now, the
        // runs' in the idle time. Sized for what is known plus a quarter: the filter grows by layers past that.
        self.bloom = Bloom::new(
            (self.counters.known as usize)
                .saturating_add(self.counters.known as usize / 4)
                .max(1 << 16),
        );
        for fp in self.index.fresh_fps() {
            self.bloom.insert(fp);
        }
        self.rebuild = (self.counters.known > 0).then(|| Rebuild {
            runs: self.index.runs(),
            run: 0,
            block: 0,
        });
        rec.checkpoint = checkpoint;
        rec.next_record = self.next_record;
        rec.counters = self.counters;
        Ok(rec)
    }

    fn commit(&mut self, batch: Batch) -> Result<Committed, FrontierError> {
        let out = self.write_batch(batch);
        if out.is_err() {
            // The batch's new URLs are not stored: the index must not point at their rows.
            self.index.rollback();
        }
        out
    }

    fn next_urls(
        &mut self,
        host: Fp,
        after: Option<QueueKey>,
        max: usize,
    ) -> Result<Vec<Entry>, FrontierError> {
        let txn = self.db.begin_read().store()?;
        let queue = match txn.open_table(QUEUE) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(e).store(),
        };
        let rows = txn.open_table(ROWS).store()?;
        let start = match after {
            Some(k) => Bound::Excluded((host, k.depth, k.seq)),
            None => Bound::Included((host, 0, 0)),
        };
        let end = Bound::Included((host, u32::MAX, u64::MAX));
        let mut out = Vec::with_capacity(max.min(1024));
        let mut last_parent: Option<(UrlRef, String)> = None;
        for item in queue
            .range::<(u64, u32, u64)>((start, end))
            .store()?
            .take(max)
        {
            let (k, v) = item.store()?;
            let (h, depth, seq) = k.value();
            let q = codec::decode_queued(v.value()).map_err(|e| corrupt("queue entry", e))?;
            let row = Self::lookup_row(&rows, q.id)?;
            let (parent, parent_ref) = match row.parent {
                Parent::Ref(p) => {
                    // Links of one page sit together in a queue: their parent is read once per window.
                    let url = match &last_parent {
                        Some((r, u)) if *r == p => u.clone(),
                        _ => {
                            let u = Self::lookup_row(&rows, p)?.url;
                            last_parent = Some((p, u.clone()));
                            u
                        }
                    };
                    (Some(url), Some(p))
                }
                Parent::Url(u) => (Some(u), None),
                Parent::None => (None, None),
            };
            out.push(Entry {
                url: row.url,
                depth,
                parent,
                parent_ref,
                attempt: q.attempt,
                retries: q.retries,
                redirect_chain: q.redirect_chain,
                seq,
                kind: q.kind,
                host: h,
                id: q.id,
                queued_at: None,
                prior: q.prior,
            });
        }
        Ok(out)
    }

    fn is_known(&mut self, url: &str) -> Result<bool, FrontierError> {
        let txn = self.db.begin_read().store()?;
        let rows = match txn.open_table(ROWS) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(false),
            Err(e) => return Err(e).store(),
        };
        Ok(self.index.find(&rows, url_fp(url), url)?.is_some())
    }

    fn promote_due(&mut self, now_ms: u64, max: usize) -> Result<Vec<Added>, FrontierError> {
        self.promote(now_ms, max)
    }

    fn outlook(&mut self, horizon_ms: u64, cap: u64) -> Result<Outlook, FrontierError> {
        schedule::outlook(&self.db.begin_read().store()?, horizon_ms, cap)
    }

    fn hint(
        &mut self,
        hints: &[SitemapHint],
        policy: &crawl_core::recrawl::Policy,
        now_ms: u64,
    ) -> Result<Hinted, FrontierError> {
        self.apply_hints(hints, policy, now_ms)
    }

    fn operator_state(&mut self) -> Result<(u64, OperatorState), FrontierError> {
        self.operator.state(&self.db)
    }

    fn apply_operator(&mut self, change: &Change) -> Result<bool, FrontierError> {
        let txn = self.begin_durable()?;
        self.operator.apply(txn, change)
    }

    fn refetch(&mut self, urls: &[Discovered]) -> Result<Vec<Added>, FrontierError> {
        self.requeue(urls)
    }

    fn idle_work(&mut self) -> bool {
        let Some(r) = &mut self.rebuild else {
            return false;
        };
        // The fingerprints are read from the runs, a block at a time: no URL is read or hashed again.
        let mut fps = Vec::with_capacity(REBUILD_STEP + fpruns::BLOCK);
        let mut failed = None;
        while fps.len() < REBUILD_STEP && r.run < r.runs.len() {
            let run = &r.runs[r.run];
            if r.block == run.blocks() {
                r.run += 1;
                r.block = 0;
                continue;
            }
            if let Err(e) = run.block_fps(r.block, &mut fps) {
                failed = Some(e);
                break;
            }
            r.block += 1;
        }
        let more = r.run < r.runs.len();
        for fp in fps {
            self.bloom.insert(fp);
        }
        if let Some(e) = failed {
            // The filter stays incomplete: every link is looked up, which is correct, only slower.
            tracing::warn!(error = %e, "dedup filter rebuild stopped");
            return false;
        }
        if !more {
            tracing::debug!(bytes = self.bloom.bytes(), "dedup filter rebuilt");
            self.rebuild = None;
        }
        more
    }
}

#[cfg(test)]
mod tests;
