//! crawl-store-redis: the Redis frontier, a [`FrontierStore`] shared by many crawl-engine processes on many machines.
//!
//! The crawl is split into shards (`host_fp % shards`); all keys of a shard carry one hash tag, so every script
//! touches one cluster slot (see [`keys`]). Any process may add discovered URLs to any shard (dedup makes adds
//! idempotent); only the owner of a shard finishes, updates and records its URLs, and every such change is fenced
//! by the shard's lease token (see [`shards`]). Records go to the shard's stream and, in the same script, into the
//! committing process's pending entries; once the process has them in its own JSONL (fsynced) it acknowledges and
//! deletes them. Records of a process that died before writing them are taken over by the shard's next owner.
//!
//! Dedup is exact at the 64-bit fingerprint level (not by comparing URLs like the embedded store): two URLs of one
//! shard that share a fingerprint count as one. The odds are in [`seen`] (about n²/2^65 for n URLs in a shard).
//!
//! # Layout
//! - `lib.rs`: the store ([`RedisFrontier`]), its settings ([`RedisSettings`]), reads of queues; the store is
//!   made of parts, each with its own state, which work against the connection and the crawl they are given:
//! - `crawl.rs`: the crawl as this process sees it (settings, key names, instance, process id);
//! - `poll.rs`: the shard view (what the caller was told of the shards, the counters) and the shard polls
//!   (counters, hosts and robots.txt rules of gained shards, hosts that appeared);
//! - `commit.rs`: the commit session, a commit as one pipeline; `records.rs`: the records ledger (numbering as
//!   JSONL lines, pending entries after a restart, acknowledgements, take-over); `instance.rs`: creating and
//!   checking the crawl's instance; `probe.rs`: `--check`'s look at Redis, changing nothing; `schedule.rs`: the
//!   revisit schedule (continuous crawling): promotion of due revisits, the outlook, sitemap hints;
//!   `operator.rs`: what operators set (the crawl's pause, hosts' rules kept with their shards) and this process's
//!   view of it; `refetch.rs`: forced re-fetches of known URLs; `processes.rs`: the live processes, the shards
//!   each holds and the hosts the crawl knows, for the control API;
//! - [`keys`]: key naming; [`seen`]: the dedup layout (and its collision odds); [`shards`]: leases, fencing and the
//!   [`LeaseTable`]; [`clock`]: the lease clock; `conn.rs`: connections, pipelines, [`redact`];
//! - `scripts.rs` and `lua/`: the scripts; `tests.rs`, on Redis servers the tests start (failures of Redis itself in
//!   `tests/outage.rs`).
//!
//! # Queue positions
//! A shard numbers its entries `n·shards + shard` (n counting from 1), so an entry's shard is its sequence number
//! modulo the shard count, and sequence numbers are unique across shards; each shard can queue 2^33 / shards URLs
//! (33 million with 256 shards). A host queue is one list per depth, appended in discovery order: queue order
//! (depth, then seq) is the lists' order from the lowest depth up (see [`keys`]). Every shard has its own part of the
//! records queue (host fp 0), so that an excluded link is marked seen and queued for its record in one script;
//! [`FrontierStore::next_urls`] for [`RECORDS_HOST`] merges the parts of the shards this process holds.
//!
//! # Revisit schedule
//! A commit's [`crawl_core::frontier::Rescheduled`] URLs go to their shard's schedule in the script that finishes
//! them, and only if it does (a fenced commit, or a URL finished twice, schedules nothing); `sched` in the meta
//! hash counts them like the other counters. The schedule lives with the shard (its keys carry the shard's hash
//! tag), so it moves with the lease: [`FrontierStore::promote_due`] promotes the due revisits of the shards this
//! process may work on, earliest first (across shards exactly while few are due in each; see `schedule.rs`), each
//! shard in one script fenced by its lease token like a finish, into their hosts' queues as new entries that carry
//! their prior visit. A URL due once is promoted once,
//! by the shard's owner of the moment. [`FrontierStore::outlook`] looks at the shards held;
//! [`FrontierStore::hint`] reads the entries of the URLs a sitemap lists in any shard and moves those the policy
//! brings forward, each only if it is still scheduled as read. The layout is in [`keys`].
//!
//! # Outbox numbering
//! A record's stream entry keeps the sequence number (JSONL line) it was committed with. [`FrontierStore::recover`]
//! returns this process's pending records above the JSONL position: the one given with
//! [`RedisFrontier::set_jsonl_lines`], else the checkpoint stored with the last commit that had one. They are
//! numbered again from that position + 1, in their order, which keeps their numbers unless records of this process
//! were taken over by a peer meanwhile (the gaps close). Records at or below the position are in the file already
//! and are acknowledged.

mod call;
pub mod clock;
mod commit;
mod conn;
mod crawl;
mod instance;
pub mod keys;
mod operator;
mod poll;
mod probe;
mod processes;
mod records;
mod refetch;
mod robots;
mod rollback;
mod schedule;
mod scripts;
pub mod seen;
pub mod shards;
mod spool;
#[cfg(test)]
mod tests;
mod topology;

pub use conn::redact;
use crawl_core::frontier::ShardGate;
use crawl_core::output::JsonlCheckpoint;
pub use probe::{CrawlThere, probe};
pub use shards::LeaseTable;

use commit::CommitSession;
use conn::{Call, Conn, reply};
use crawl::Crawl;
use crawl_core::control::{Change, OperatorState};
use crawl_core::frontier::codec;
use crawl_core::frontier::{
    Added, Batch, Committed, Discovered, Entry, Fp, FrontierError, FrontierStore, Hinted, HostInfo,
    Outlook, ProcessInfo, QueueKey, RECORDS_HOST, Resume, ShardChanges, SitemapHint, UrlRef,
    url_fp,
};
use instance::{open_instance, random_id, validate};
use keys::{Keys, member};
use operator::OperatorView;
use poll::ShardView;
use records::Records;
use redis::Value;
use scripts::SCRIPTS;
use shards::{Control, Ownership};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub const DEFAULT_SHARDS: u32 = 256;
pub const DEFAULT_LEASE_MS: u64 = 15_000;
pub const DEFAULT_MAX_OUTAGE_MS: u64 = 600_000;

/// Depths from here on are refused (a depth names a list of its host queue).
const MAX_DEPTH: u32 = 1 << 20;
/// Items per script call when reading or acknowledging in pages.
const PAGE: usize = 1000;
/// URLs per add call (a call's arguments stay well below Redis's limits).
const ADD_CHUNK: usize = 2000;

/// Where the crawl lives in Redis and how it is split.
#[derive(Clone)]
pub struct RedisSettings {
    /// `redis://[:password@]host:port[/db]` or `redis+unix:///path[?pass=...]`; one URL, or the seed nodes of a
    /// cluster.
    pub urls: Vec<String>,
    /// Use the cluster client.
    pub cluster: bool,
    /// The crawl's name: the namespace of its keys (no `{` or `}`).
    pub crawl: String,
    /// Number of shards (default 256); every process of a crawl must use the same.
    pub shards: u32,
    /// Shard lease in ms (default 15000).
    pub lease_ms: u64,
    /// How long the store's requests wait for an unreachable Redis before the crawl stops (default 600000).
    pub max_outage_ms: u64,
    /// A URL first queued at least this long ago (seconds; between once and twice that) is queued again when it
    /// is found again; 0: never.
    pub recrawl_after_s: u64,
    /// Where commits wait on disk during an outage (this process's data_dir/spool); None: in memory only.
    pub spool: Option<std::path::PathBuf>,
    /// Redis Sentinel nodes (`redis://[:password@]host:port`) that name the master; used instead of `urls`.
    pub sentinels: Vec<String>,
    /// The master's name as the sentinels know it.
    pub master: String,
    /// The sentinels' password (when their URLs carry none).
    pub sentinel_password: Option<String>,
    /// The password of the master (and its replicas) found through the sentinels.
    pub password: Option<String>,
    /// How many replicas must hold a commit or a lease before it counts (Redis WAIT); 0: none. None: decided
    /// when the store first connects, from the topology (1 when the master, or every master of a cluster, has a
    /// replica; else 0).
    pub replicas_ack: Option<u32>,
    /// How long one WAIT for those replicas lasts (ms).
    pub replicas_ack_timeout_ms: u64,
}

impl Default for RedisSettings {
    fn default() -> Self {
        RedisSettings {
            urls: Vec::new(),
            cluster: false,
            crawl: "crawl".into(),
            shards: DEFAULT_SHARDS,
            lease_ms: DEFAULT_LEASE_MS,
            max_outage_ms: DEFAULT_MAX_OUTAGE_MS,
            recrawl_after_s: 0,
            spool: None,
            sentinels: Vec::new(),
            master: String::new(),
            sentinel_password: None,
            password: None,
            replicas_ack: Some(0),
            replicas_ack_timeout_ms: 2_000,
        }
    }
}

/// Passwords never show: the URLs are redacted.
impl std::fmt::Debug for RedisSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisSettings")
            .field(
                "urls",
                &self.urls.iter().map(|u| redact(u)).collect::<Vec<_>>(),
            )
            .field("cluster", &self.cluster)
            .field("crawl", &self.crawl)
            .field("shards", &self.shards)
            .field("lease_ms", &self.lease_ms)
            .field("max_outage_ms", &self.max_outage_ms)
            .field("recrawl_after_s", &self.recrawl_after_s)
            .field("spool", &self.spool)
            .field(
                "sentinels",
                &self.sentinels.iter().map(|u| redact(u)).collect::<Vec<_>>(),
            )
            .field("master", &self.master)
            .field(
                "sentinel_password",
                &self.sentinel_password.as_ref().map(|_| "***"),
            )
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("replicas_ack", &self.replicas_ack)
            .field("replicas_ack_timeout_ms", &self.replicas_ack_timeout_ms)
            .finish()
    }
}

/// Redis-backed [`FrontierStore`], shared by the processes of one crawl.
pub struct RedisFrontier {
    crawl: Crawl,
    conn: Conn,
    fresh: bool,
    gate: Arc<LeaseTable>,
    control: Arc<Control>,
    thread: Option<JoinHandle<()>>,
    /// The lock of this process's data_dir (whatever holds it: dropping it releases it), held as long as the store.
    _lock: Option<Box<dyn Send>>,
    /// This process's records between the streams and its JSONL.
    ledger: Records,
    /// The shards and counters as the caller knows them.
    view: ShardView,
    session: CommitSession,
    /// The highest epoch seen of every shard (rollback detection).
    epochs: rollback::Epochs,
    /// A rollback was seen: acknowledgements it took are made again at the next poll.
    reack: bool,
    /// What operators set, as this process read it last.
    operator: OperatorView,
}

impl std::fmt::Debug for RedisFrontier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisFrontier")
            .field("target", &self.conn.target())
            .field("crawl", &self.crawl.settings.crawl)
            .field("process", &self.crawl.pid)
            .field("counters", &self.view.counters())
            .finish()
    }
}

/// The host a URL is deduplicated under (its shard): a page's host key, else the URL's own host.
fn dedup_host(d: &crawl_core::frontier::Discovered) -> String {
    if d.kind.is_fetched() && !d.host.is_empty() {
        return d.host.clone();
    }
    url_host(&d.url).unwrap_or_else(|| d.host.clone())
}

fn url_host(url: &str) -> Option<String> {
    url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
}

impl RedisFrontier {
    /// Connects, opens (or creates) the crawl, takes the shards this process should own that are free, and starts
    /// the lease thread. `process_id` must be stable for a data_dir: it names this process's pending records and
    /// its leases, so a restart finds both again.
    pub fn open(settings: RedisSettings, process_id: &str) -> Result<RedisFrontier, FrontierError> {
        validate(&settings, process_id)?;
        let keys = Keys::new(&settings.crawl);
        let mut conn = Conn::open(&settings)?;
        let (inst, fresh) = open_instance(&mut conn, &keys, settings.shards)?;
        let mut conn = conn.retrying(std::time::Duration::from_millis(settings.max_outage_ms));
        if let Some(dir) = &settings.spool {
            conn.spool_in(dir);
            // Before any lease is taken: a commit spooled by this process's previous run still carries the
            // token of a lease nobody has taken since, and applies; one whose shard moved on is refused.
            conn::replay_spool(&mut conn, dir)?;
        }
        let gate = Arc::new(LeaseTable::new(settings.shards));
        let mut own = Ownership {
            conn: conn.reopen()?,
            keys: keys.clone(),
            inst: inst.clone(),
            pid: process_id.to_owned(),
            lease_ms: settings.lease_ms,
            gate: gate.clone(),
            switches_seen: conn.switches().epoch(),
            hold_back_until: 0,
            unreplicated_since: None,
        };
        own.round()?;
        let control = Arc::new(Control::default());
        let ctl = control.clone();
        let thread = std::thread::Builder::new()
            .name("redis-leases".into())
            .spawn(move || shards::run(own, ctl))
            .map_err(|e| FrontierError::Store(format!("cannot start the lease thread: {e}")))?;
        tracing::info!(
            target_url = %conn.target(),
            crawl = %settings.crawl,
            process = %process_id,
            fresh,
            owned = gate.owned().len(),
            "redis frontier opened"
        );
        Ok(RedisFrontier {
            view: ShardView::new(settings.shards),
            operator: OperatorView::new(settings.shards),
            epochs: rollback::Epochs::new(settings.shards),
            reack: false,
            ledger: Records::new(),
            session: CommitSession::new(random_id()),
            crawl: Crawl {
                settings,
                keys,
                inst,
                pid: process_id.to_owned(),
            },
            conn,
            fresh,
            gate,
            control,
            thread: Some(thread),
            _lock: None,
        })
    }

    /// The number of complete lines in this process's JSONL, when known before [`FrontierStore::recover`]: records
    /// up to it are taken as written, the rest are numbered from it + 1.
    pub fn set_jsonl_lines(&mut self, lines: u64) {
        self.ledger.set_jsonl_lines(lines);
    }

    /// Requests this store sent to Redis over its own connection (a pipeline counts once; the lease thread's are
    /// not counted).
    pub fn requests(&self) -> u64 {
        self.conn.requests()
    }

    /// The lease table (what the scheduler sees through [`ShardGate`]).
    pub fn lease_table(&self) -> Arc<LeaseTable> {
        self.gate.clone()
    }

    /// Holds the lock of this process's data_dir for as long as the store lives.
    pub fn with_lock(mut self, lock: impl Send + 'static) -> RedisFrontier {
        self._lock = Some(Box::new(lock));
        self
    }

    /// This process's JSONL position as of its last commit that had one (None before the first).
    pub fn checkpoint(&mut self) -> Result<Option<JsonlCheckpoint>, FrontierError> {
        records::read_checkpoint(&mut self.conn, &self.crawl)
    }

    /// Compares the shards' epochs just read with the highest seen: a shard that went back lost commits.
    fn check_epochs(&mut self) {
        for (s, &e) in self.view.epochs().iter().enumerate() {
            if let Some(r) = self.epochs.read(s as u32, e) {
                rollback::repair(&r, &self.gate, &self.crawl.pid);
                self.reack = true;
            }
        }
    }

    fn check_fatal(&self) -> Result<(), FrontierError> {
        match self.gate.fatal() {
            Some(m) => Err(FrontierError::Lost(m.to_owned())),
            None => Ok(()),
        }
    }

    fn parse_entries(&self, v: Value, queue_host: Fp) -> Result<Vec<Entry>, FrontierError> {
        let mut it = reply::array(v, "queue")?.into_iter();
        let origin = match it.next() {
            Some(o) => reply::string(o, "queue origin")?,
            None => return Ok(Vec::new()),
        };
        let mut out = Vec::new();
        while let (Some(d), Some(raw), Some(row)) = (it.next(), it.next(), it.next()) {
            let depth = u32::try_from(reply::uint(&d, "queue depth")?)
                .map_err(|_| FrontierError::Store("queue depth out of range".into()))?;
            let raw = reply::bytes(raw, "queue element")?;
            let row = reply::bytes(row, "parent row")?;
            let corrupt = |detail: String| FrontierError::Corrupt {
                what: format!("queue element of host {queue_host:016x}"),
                detail,
            };
            let e = codec::decode_element(&raw, &origin).map_err(|e| corrupt(e.to_string()))?;
            let (parent, parent_ref) = match e.parent {
                None => (None, None),
                Some((key, is_ref)) => {
                    // `<pending children> <parent URL>`
                    let url = row
                        .iter()
                        .position(|&b| b == b' ')
                        .and_then(|i| std::str::from_utf8(&row[i + 1..]).ok())
                        .ok_or_else(|| corrupt(format!("no parent row for {}", e.url)))?;
                    let r = is_ref.then_some(UrlRef { key, slot: 0 });
                    (Some(url.to_owned()), r)
                }
            };
            out.push(Entry {
                id: UrlRef {
                    key: url_fp(&e.url),
                    slot: 0,
                },
                url: e.url,
                depth,
                parent,
                parent_ref,
                attempt: e.attempt,
                retries: e.retries,
                redirect_chain: e.redirect_chain,
                seq: e.seq,
                kind: e.kind,
                host: queue_host,
                queued_at: None,
                prior: e.prior,
            });
        }
        Ok(out)
    }

    fn next_call(&self, shard: u32, host: Fp, after: Option<QueueKey>, count: usize) -> Call {
        let (depth, seq) = after.map_or((-1, 0), |k| (i64::from(k.depth), k.seq));
        self.crawl
            .shard_call(&SCRIPTS.next, shard)
            .arg(host)
            .arg(depth)
            .arg(seq)
            .arg(count)
    }

    /// Shard news since the last poll (see [`ShardView::gather`]), and records taken over from processes that
    /// stopped, at most every half lease; the caller is told only once every request went through.
    fn poll(&mut self) -> Result<ShardChanges, FrontierError> {
        self.check_fatal()?;
        let read = self.view.gather(&mut self.conn, &self.crawl, &self.gate)?;
        self.check_epochs();
        if self.reack {
            // Records this process wrote and acknowledged before the failover are pending again on the new
            // master: acknowledged again, or the crawl would wait for them for ever.
            let pending = records::read_pel(&mut self.conn, &self.crawl)?;
            let again = self.ledger.forgotten(pending);
            let n = again.len();
            for r in self.conn.run(&records::ack_calls(&self.crawl, again))? {
                r.map_err(|e| self.conn.error(&e))?;
            }
            self.reack = false;
            tracing::info!(process = %self.crawl.pid, records = n, "acknowledgements lost in a failover made again");
        }
        let every = Duration::from_millis(self.crawl.settings.lease_ms / 2);
        if self.ledger.claim_due(Instant::now(), every) {
            // Handed to the caller with the next commit, numbered after that commit's own records.
            let taken = records::take_over(&mut self.conn, &self.crawl, &self.gate)?;
            self.ledger.hold(taken);
        }
        let mut ch = self.view.tell(read);
        ch.claimed = self.ledger.claimed();
        Ok(ch)
    }

    fn read_next(
        &mut self,
        host: Fp,
        after: Option<QueueKey>,
        max: usize,
    ) -> Result<Vec<Entry>, FrontierError> {
        self.check_fatal()?;
        if max == 0 {
            return Ok(Vec::new());
        }
        if host == RECORDS_HOST {
            let owned = self.gate.owned();
            let count = max.min(PAGE);
            let calls: Vec<Call> = owned
                .iter()
                .map(|&s| self.next_call(s, RECORDS_HOST, after, count))
                .collect();
            let mut out = Vec::new();
            for r in self.conn.run(&calls)? {
                let v = r.map_err(|e| self.conn.error(&e))?;
                out.extend(self.parse_entries(v, RECORDS_HOST)?);
            }
            out.sort_by_key(|e| (e.depth, e.seq));
            out.truncate(count);
            return Ok(out);
        }
        let shard = (host % u64::from(self.crawl.shards())) as u32;
        let mut out: Vec<Entry> = Vec::new();
        let mut after = after;
        while out.len() < max {
            let count = (max - out.len()).min(PAGE);
            let v = self.conn.call(&self.next_call(shard, host, after, count))?;
            let got = self.parse_entries(v, host)?;
            let n = got.len();
            if let Some(last) = got.last() {
                after = Some(last.key());
            }
            out.extend(got);
            if n < count {
                break;
            }
        }
        Ok(out)
    }

    /// Test hook: the lease thread stops renewing (as if the process hung).
    #[cfg(test)]
    pub(crate) fn pause_leases(&self) {
        self.control.paused.store(true, Ordering::Release);
    }

    /// Test hook: the lease thread renews again (the process woke up).
    #[cfg(test)]
    pub(crate) fn resume_leases(&self) {
        self.control.paused.store(false, Ordering::Release);
    }

    /// Test hook: drop without giving up leases or membership (as if the process died).
    #[cfg(test)]
    pub(crate) fn abandon(self) {
        self.control.abandon.store(true, Ordering::Release);
    }

    /// Test hook: marks fingerprints seen in shard `shard` without queueing anything.
    #[cfg(test)]
    pub(crate) fn mark_seen(&mut self, shard: u32, fps: &[Fp]) -> Result<u64, FrontierError> {
        let mut total = 0;
        let calls: Vec<Call> = fps
            .chunks(PAGE)
            .map(|chunk| {
                let mut c = self.crawl.shard_call(&SCRIPTS.mark, shard);
                for &fp in chunk {
                    c.push(member(fp));
                }
                c
            })
            .collect();
        for r in self.conn.run(&calls)? {
            let v = r.map_err(|e| self.conn.error(&e))?;
            total += reply::uint(&v, "mark")?;
        }
        Ok(total)
    }
}

impl Drop for RedisFrontier {
    fn drop(&mut self) {
        self.control.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

impl FrontierStore for RedisFrontier {
    fn recover(&mut self) -> Result<Resume, FrontierError> {
        self.check_fatal()?;
        self.view.refresh(&mut self.conn, &self.crawl, &self.gate)?;
        self.check_epochs();
        let mut rec = Resume::default();
        let owned = self.gate.owned();
        let mut records = HostInfo {
            fp: RECORDS_HOST,
            name: String::new(),
            pending: 0,
            paused_until_ms: 0,
            backoff_level: 0,
        };
        let (hosts, robots) = poll::hosts_of(&mut self.conn, &self.crawl, &owned, true)?;
        rec.robots = robots;
        for (s, hosts) in hosts {
            // A lease gone since `owned` was read is told as token 0 (no lease has it): the next poll tells the
            // shard lost, or lost and gained again.
            self.view.told(s, self.gate.token(s).unwrap_or(0));
            for h in hosts {
                if h.fp == RECORDS_HOST {
                    records.pending += h.pending;
                } else {
                    rec.hosts.push(h);
                }
            }
        }
        if records.pending > 0 {
            rec.hosts.push(records);
        }
        let checkpoint = records::read_checkpoint(&mut self.conn, &self.crawl)?;
        rec.archive_checkpoint = records::read_archive_checkpoint(&mut self.conn, &self.crawl)?;
        // Every record still pending for this process is written again: one appended after the last checkpoint
        // but not yet acknowledged may be in the file already (a duplicate `merge` drops), none is lost.
        let pending = records::read_pel(&mut self.conn, &self.crawl)?;
        rec.outbox = self.ledger.recover(checkpoint.map(|c| c.lines), pending);
        rec.next_record = self.ledger.next_record();
        rec.checkpoint = checkpoint;
        rec.counters = self.view.counters();
        rec.fresh = self.fresh;
        Ok(rec)
    }

    fn commit(&mut self, batch: Batch) -> Result<Committed, FrontierError> {
        self.check_fatal()?;
        let (out, applied) = self.session.commit(
            &mut self.conn,
            &self.crawl,
            &self.gate,
            &mut self.ledger,
            &mut self.view,
            batch,
        )?;
        for a in applied {
            if let Some(r) = self.epochs.committed(a.shard, a.epoch, a.pages) {
                rollback::repair(&r, &self.gate, &self.crawl.pid);
                self.reack = true;
            }
        }
        Ok(out)
    }

    fn next_urls(
        &mut self,
        host: Fp,
        after: Option<QueueKey>,
        max: usize,
    ) -> Result<Vec<Entry>, FrontierError> {
        // A read fails fast during an outage (the caller asks again later); only commits wait for Redis.
        let retry = self.conn.set_retry(false);
        let r = self.read_next(host, after, max);
        self.conn.set_retry(retry);
        r
    }

    fn is_known(&mut self, url: &str) -> Result<bool, FrontierError> {
        self.check_fatal()?;
        let shard = self.crawl.shard_of_host(&url_host(url).unwrap_or_default());
        let v = self.conn.call(
            &self
                .crawl
                .shard_call(&SCRIPTS.known, shard)
                .arg(member(url_fp(url)))
                .arg(self.crawl.settings.recrawl_after_s),
        )?;
        Ok(reply::int(&v, "known")? == 1)
    }

    fn reread_shards(&mut self) {
        self.view.reread();
    }

    fn poll_shards(&mut self) -> Result<ShardChanges, FrontierError> {
        let retry = self.conn.set_retry(false);
        let r = self.poll();
        self.conn.set_retry(retry);
        // A process with nothing to commit learns of the end of the outage here, at the same moment as its peers.
        match r {
            Err(FrontierError::Redis { .. }) => match self.conn.past_max_outage() {
                Some(lasted) => Err(self.conn.unreachable(lasted)),
                None => r,
            },
            r => r,
        }
    }

    fn shard_gate(&self) -> Option<Arc<dyn ShardGate>> {
        Some(self.gate.clone())
    }

    fn promote_due(&mut self, now_ms: u64, max: usize) -> Result<Vec<Added>, FrontierError> {
        self.check_fatal()?;
        // Fails fast during an outage like a read: the caller asks again later.
        let retry = self.conn.set_retry(false);
        let r = schedule::promote(
            &mut self.conn,
            &self.crawl,
            &self.gate,
            &mut self.view,
            now_ms,
            max,
        );
        self.conn.set_retry(retry);
        r
    }

    fn outlook(&mut self, horizon_ms: u64, cap: u64) -> Result<Outlook, FrontierError> {
        self.check_fatal()?;
        let retry = self.conn.set_retry(false);
        let r = schedule::outlook(&mut self.conn, &self.crawl, &self.gate, horizon_ms, cap);
        self.conn.set_retry(retry);
        r
    }

    fn hint(
        &mut self,
        hints: &[SitemapHint],
        policy: &crawl_core::recrawl::Policy,
        now_ms: u64,
    ) -> Result<Hinted, FrontierError> {
        self.check_fatal()?;
        let retry = self.conn.set_retry(false);
        let r = schedule::hint(&mut self.conn, &self.crawl, hints, policy, now_ms);
        self.conn.set_retry(retry);
        r
    }

    fn operator_state(&mut self) -> Result<(u64, OperatorState), FrontierError> {
        self.check_fatal()?;
        // Polled: fails fast during an outage like a read, and is asked again.
        let retry = self.conn.set_retry(false);
        let r = self
            .operator
            .state(&mut self.conn, &self.crawl, Instant::now());
        self.conn.set_retry(retry);
        r
    }

    fn apply_operator(&mut self, change: &Change) -> Result<bool, FrontierError> {
        self.check_fatal()?;
        // An operator's request: it fails fast during an outage (the operator asks again; a change applied twice
        // is applied once) rather than holding the store's thread.
        let retry = self.conn.set_retry(false);
        let r = self
            .operator
            .apply(&mut self.conn, &self.crawl, change)
            .and_then(|changed| {
                if changed {
                    self.conn.replicated()?;
                }
                Ok(changed)
            });
        self.conn.set_retry(retry);
        if let Ok(true) = r {
            tracing::debug!(change = ?change, "operator change stored");
        }
        r
    }

    fn processes(&mut self) -> Result<Vec<ProcessInfo>, FrontierError> {
        self.check_fatal()?;
        // A view for an operator: it fails fast during an outage like a read.
        let retry = self.conn.set_retry(false);
        let r = processes::read(&mut self.conn, &self.crawl);
        self.conn.set_retry(retry);
        r
    }

    fn knows_host(&mut self, host: &str) -> Result<bool, FrontierError> {
        self.check_fatal()?;
        let retry = self.conn.set_retry(false);
        let r = processes::knows_host(&mut self.conn, &self.crawl, host);
        self.conn.set_retry(retry);
        r
    }

    fn refetch(&mut self, urls: &[Discovered]) -> Result<Vec<Added>, FrontierError> {
        self.check_fatal()?;
        let retry = self.conn.set_retry(false);
        let r = refetch::refetch(&mut self.conn, &self.crawl, &mut self.view, urls).and_then(
            |queued| {
                if !queued.is_empty() {
                    self.conn.replicated()?;
                }
                Ok(queued)
            },
        );
        self.conn.set_retry(retry);
        if let Ok(q) = &r {
            tracing::debug!(
                queued = q.len(),
                asked = urls.len(),
                "known urls queued again"
            );
        }
        r
    }
}
