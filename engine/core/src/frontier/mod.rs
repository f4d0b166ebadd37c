//! The frontier: every URL the crawl has discovered, which of them are still to do, and the outbox of records
//! committed but not yet written to the JSONL.
//!
//! The [`FrontierStore`] trait is the durable part. The embedded store (`crawl-store-embedded`, redb on disk)
//! implements it; a store shared by many processes (`crawl-store-redis`) implements the same contract, checked by
//! the functions of the `contract` module (feature `contract`). Scheduling order and politeness live in
//! [`crate::politeness`]; the scheduler keeps only a bounded window of ready URLs per host in memory and asks the
//! store for a host's next URLs, in order, when the window runs low.
//!
//! Crash safety rests on one rule: a page's record, its "done" mark and the URLs it discovered are committed in the
//! same [`Batch`], and the record is appended to the JSONL only after that commit. Records carry a sequence number
//! equal to their line number in the JSONL; the JSONL's position is checkpointed with each commit, so after a crash
//! the store re-emits exactly the committed records the file is missing (see [`Resume::outbox`]) and nothing reads
//! the whole file or the whole frontier.
//!
//! Links discovered out of scope are stored too, as pending entries of the records queue (host [`RECORDS_HOST`]):
//! a URL is recorded exactly once even when the process dies between discovering it and writing its record.
//!
//! Identity: a stored URL is named by a [`UrlRef`] its store chose (the embedded store's row number; the shared
//! store's 64-bit fingerprint ([`url_fp`]) plus a slot that tells apart the rare URLs sharing one). Both find a URL
//! by its fingerprint and compare the URL itself, never the fingerprint alone, so dedup is exact.

pub mod codec;
mod entry;
pub mod fphash;
mod lock;
mod process;
pub mod window;

#[cfg(any(test, feature = "contract"))]
pub mod contract;

pub use entry::{Entry, JobKind, QueueKey, TrapKind, UrlRef};
pub use lock::LockError;
pub use process::ProcessInfo;

use crate::output::JsonlCheckpoint;

/// A 64-bit fingerprint (xxh3) of a canonical URL or a host key.
pub type Fp = u64;

/// The host fingerprint of the records queue: URLs that are recorded without a fetch (out of scope, filtered,
/// too deep). No real host gets it.
pub const RECORDS_HOST: Fp = 0;

/// The fingerprint of a canonical URL.
pub fn url_fp(url: &str) -> Fp {
    twox_hash::XxHash3_64::oneshot(url.as_bytes())
}

/// The fingerprint of a host key (as in [`crate::canon::host_key`]); never [`RECORDS_HOST`].
pub fn host_fp(host: &str) -> Fp {
    twox_hash::XxHash3_64::oneshot(host.as_bytes()).max(1)
}

/// A link to add to the frontier, as the scheduler found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovered {
    /// Canonical URL.
    pub url: String,
    /// Its host key; ignored for the records queue (kinds other than `Page`).
    pub host: String,
    pub depth: u32,
    /// The page that linked (or redirected) to it.
    pub parent: Option<(UrlRef, String)>,
    /// The redirect chain that led here (oldest first).
    pub redirect_chain: Vec<String>,
    /// `Page` to crawl it, or one of the excluded kinds to record it without a fetch.
    pub kind: JobKind,
}

/// A URL that is done: its record is in the batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finished {
    pub id: UrlRef,
    pub host: Fp,
    pub key: QueueKey,
    /// A page its server answered (any status): counts toward max_pages and [`Counters::pages_fetched`].
    pub fetched_page: bool,
}

/// Everything one group commit makes durable, all together or nothing.
#[derive(Debug, Default)]
pub struct Batch {
    /// New links; known ones are dropped (exact dedup), new ones queued.
    pub discovered: Vec<Discovered>,
    /// New states (attempt, retries) of pending URLs that go back to their queue.
    pub updates: Vec<Entry>,
    /// URLs that are done.
    pub finished: Vec<Finished>,
    /// Record lines with their sequence numbers (JSONL line numbers), in order: `records[i]` is the record of
    /// `finished[i]`.
    pub records: Vec<(u64, Vec<u8>)>,
    /// Where the JSONL stands now: outbox records up to `lines` can go.
    pub written: Option<JsonlCheckpoint>,
    /// Hosts paused after a 429/503 or a Retry-After: (host key, until in Unix ms, step of its exponential backoff).
    /// A store shared by many processes keeps them with the host's shard, so the next owner honours them; a
    /// single-process store need not.
    pub pauses: Vec<(String, u64, u32)>,
    /// Where this process's archive (WARC files) stands with the records of this batch written (opaque to the
    /// store): kept with the commit, so that a restart cuts whatever was archived but never committed.
    pub archive_checkpoint: Option<Vec<u8>>,
    /// robots.txt rules as this process obtained them. A store shared by many processes keeps them with the
    /// host's shard, so the next owner obeys them without fetching robots.txt again; a single-process store need not.
    pub robots: Vec<SharedRobots>,
    /// Finished URLs that come due again (continuous crawling), each also in `finished`: applied only when its
    /// finish is (a URL finished twice, or fenced, is not scheduled again), so a URL has at most one schedule entry.
    pub rescheduled: Vec<Rescheduled>,
}

/// A finished URL scheduled to be visited again: it leaves its queue like any finished URL and comes back to its
/// host's queue, with its prior visit, when [`FrontierStore::promote_due`] finds it due.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rescheduled {
    /// The finished URL (as in its [`Finished`]).
    pub id: UrlRef,
    /// Its host's fingerprint (as in its [`Finished`]).
    pub host: Fp,
    /// Canonical URL.
    pub url: String,
    /// Its depth (kept: revisits are judged against max_depth like first visits).
    pub depth: u32,
    /// `Page` or `Embed`.
    pub kind: JobKind,
    /// When it comes due and what its next visit sends and refers to.
    pub stored: crate::recrawl::Stored,
}

/// The revisit schedule as a store sees it (continuous crawling).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Outlook {
    /// When the earliest scheduled revisit is due (Unix ms); None when nothing is scheduled.
    pub next_due_ms: Option<u64>,
    /// Revisits due before the horizon asked for (counted up to the cap asked for).
    pub due_before: u64,
}

/// The robots.txt rules of one authority, kept with its host's shard in a store shared by many processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedRobots {
    /// The host key (it names the shard).
    pub host: String,
    /// `scheme://host[:port]`, as the robots table keys it.
    pub authority: String,
    /// Until when the rules may be used (Unix time in ms).
    pub expires_ms: u64,
    /// [`crate::robots::Robots::snapshot`].
    pub snapshot: Vec<u8>,
}

impl Batch {
    /// Number of staged changes.
    pub fn len(&self) -> usize {
        self.discovered.len()
            + self.updates.len()
            + self.finished.len()
            + self.records.len()
            + self.pauses.len()
            + self.robots.len()
            + self.rescheduled.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0 && self.written.is_none()
    }
}

/// A discovered link the store did not know: queued now, with its identity and queue position.
#[derive(Debug, Clone, PartialEq)]
pub struct Added {
    pub entry: Entry,
    /// The host key it was discovered with (empty for the records queue).
    pub host: String,
}

/// Counters the store keeps durably (never recounted by a scan).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counters {
    /// URLs ever added (done and pending).
    pub known: u64,
    /// URLs queued and not done (including the records queue).
    pub pending: u64,
    /// URLs done.
    pub done: u64,
    /// Pages fetched (outcome fetched) across all runs; used by max_pages.
    pub pages_fetched: u64,
    /// URLs waiting in the revisit schedule (continuous crawling): done for now, neither pending nor finished
    /// for good. A URL due again moves from here to `pending`.
    pub scheduled: u64,
}

/// What a commit did.
#[derive(Debug, Default)]
pub struct Committed {
    /// The new links, queued, in the order they were discovered.
    pub added: Vec<Added>,
    /// Discovered links that were already known.
    pub duplicates: u64,
    /// Outbox records trimmed.
    pub trimmed: u64,
    pub counters: Counters,
    /// Finished URLs that were not applied because this process no longer holds their shard (a store shared by
    /// many processes; the shard's new owner does them again). Never set by the embedded store.
    pub fenced: Vec<UrlRef>,
    /// Sequence numbers of the batch's records that were not committed for the same reason. The records that were
    /// kept take the lowest sequence numbers in order, then `extra`: the caller numbers them that way.
    pub fenced_records: Vec<u64>,
    /// The shards refused (they are no longer this process's).
    pub fenced_shards: Vec<u32>,
    /// Committed records of processes that died before writing them, handed to this one to write (after the
    /// batch's own records).
    pub extra: Vec<Vec<u8>>,
    /// Records of the batch whose lines changed on the way to the store (they gained their archive location), by
    /// sequence number: the caller writes these lines instead of its own copies. Never set by a store.
    pub rewritten: Vec<(u64, Vec<u8>)>,
}

/// Which hosts this process may crawl, in a store shared by many processes: hosts map to shards, and a shard has
/// one owner at a time. Cheap and callable from any thread.
pub trait ShardGate: Send + Sync + std::fmt::Debug {
    /// The shard a host (by fingerprint) belongs to.
    fn shard_of(&self, host: Fp) -> u32;
    /// True while this process owns the host's shard, its lease has not run out on the local clock and the shard
    /// is not being handed over: only then may a request to the host start.
    fn may_start(&self, host: Fp) -> bool;
    /// True while this process holds the host's shard and its lease has not run out on the local clock, a hand-over
    /// in progress included: bytes of a request already started may still go to the host (checked at every write
    /// of a connection, where [`may_start`](Self::may_start) is checked before a request starts).
    fn may_send(&self, host: Fp) -> bool {
        self.may_start(host)
    }
    /// True while this process owns the shard (its lease may be about to be renewed).
    fn owns(&self, shard: u32) -> bool;
    /// How many shards this process owns.
    fn owned_count(&self) -> usize;
    /// Shards this process holds but a live peer should own: no new work starts there, and once nothing is in
    /// flight the caller says so with [`quiet`](Self::quiet) and the shard is handed over.
    fn handoffs(&self) -> Vec<u32>;
    /// Nothing of this process is in flight in `shard` any more: it may be given up.
    fn quiet(&self, shard: u32);
}

/// Changes in the shards this process works on (a store shared by many processes; see [`ShardGate`]).
#[derive(Debug, Default)]
pub struct ShardChanges {
    /// Shards taken since the last poll, with their hosts that have pending URLs (the records queue's part of a
    /// shard appears as host [`RECORDS_HOST`]).
    pub gained: Vec<(u32, Vec<HostInfo>)>,
    /// robots.txt rules kept with the gained shards (see [`Batch::robots`]).
    pub robots: Vec<SharedRobots>,
    /// Shards no longer held: their hosts' windows must be dropped and no new work started there. A shard lost
    /// and taken again since the last poll (held now under another lease) is in `lost` and in `gained`: what was
    /// held of it is dropped first, then it is read again.
    pub lost: Vec<u32>,
    /// Hosts that appeared (added by any process) in shards already held.
    pub hosts: Vec<HostInfo>,
    /// Counters summed over the whole crawl (None when the store did not read them this time).
    pub counters: Option<Counters>,
    /// Committed records of the whole crawl not yet acknowledged as written: the crawl is finished when no URL is
    /// pending and this is 0.
    pub unacked: u64,
    /// Shard leases this process renewed, and leases it found taken over, since it started.
    pub leases_renewed: u64,
    pub leases_lost: u64,
    /// Commits waiting in this process's spool for Redis to come back.
    pub spooled: u64,
    /// Records of stopped processes this process took over, waiting to be handed out with its next commit (the
    /// caller commits soon even with nothing of its own to store: they count as unacknowledged until written).
    pub claimed: u64,
    /// URLs pending in the shards this process holds (leased ones included), as of this poll.
    pub pending_held: u64,
}

/// A host with URLs in the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostInfo {
    pub fp: Fp,
    /// Its host key (empty for the records queue).
    pub name: String,
    /// Pending URLs.
    pub pending: u64,
    /// Until when (Unix time in ms; 0: not) requests to it are paused after a 429/503 or a Retry-After, as the
    /// process that last crawled it recorded (a store shared by many processes moves it with the host's shard).
    pub paused_until_ms: u64,
    /// The step of its exponential backoff then (how many throttled answers in a row it gave).
    pub backoff_level: u32,
}

/// What a store hands back when it is opened. Its size is bounded by the hosts and the outbox, not the frontier.
#[derive(Debug, Default)]
pub struct Resume {
    /// Hosts with pending URLs (the records queue included when it has any).
    pub hosts: Vec<HostInfo>,
    /// Committed records with their sequence numbers beyond the checkpointed JSONL position, oldest first.
    pub outbox: Vec<(u64, Vec<u8>)>,
    /// The sequence number the next record gets.
    pub next_record: u64,
    /// The JSONL position at the last commit that recorded one (None: never written; scan the file).
    pub checkpoint: Option<JsonlCheckpoint>,
    pub counters: Counters,
    /// True when the store was created by this open.
    pub fresh: bool,
    /// robots.txt rules kept with the shards held at the start (a store shared by many processes).
    pub robots: Vec<SharedRobots>,
    /// The archive checkpoint of the last commit that carried one ([`Batch::archive_checkpoint`]).
    pub archive_checkpoint: Option<Vec<u8>>,
}

/// Errors of the frontier stores.
#[derive(Debug, thiserror::Error)]
pub enum FrontierError {
    #[error("data_dir {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Locked(#[from] LockError),
    #[error("frontier store: {0}")]
    Store(String),
    #[error("frontier entry {what} is corrupt: {detail}")]
    Corrupt { what: String, detail: String },
    #[error("frontier store is gone: {0}")]
    Gone(String),
    /// A Redis request failed; `target` is the redacted URL(s), `detail` has every password scrubbed.
    #[error("redis {target}: {detail}")]
    Redis { target: String, detail: String },
    /// Fewer replicas than asked for acknowledged a write within the time given.
    #[error("redis {target}: {acked} of {wanted} replicas acknowledged within {within_ms} ms")]
    Replicas {
        target: String,
        acked: u32,
        wanted: u32,
        within_ms: u64,
    },
    /// Redis could not be reached (and no failover brought a master back) for `max_outage_ms`: every request of
    /// the process, commit or poll, ends with this one error, so every process of the crawl stops alike.
    #[error(
        "redis {target} unreachable for {for_ms} ms (max_outage_ms = {max_ms}): the crawl stops"
    )]
    Unreachable {
        target: String,
        for_ms: u64,
        max_ms: u64,
    },
    /// The crawl's data in Redis is gone (flushed, evicted, or a server restarted without persistence).
    #[error("redis lost the crawl's data: {0}")]
    Lost(String),
}

/// A stored entry that cannot be read: what it is, and why.
pub fn corrupt(what: impl Into<String>, e: impl std::fmt::Display) -> FrontierError {
    FrontierError::Corrupt {
        what: what.into(),
        detail: e.to_string(),
    }
}

/// The durable frontier. One caller at a time (the store actor's thread); every method may touch the disk.
///
/// The contract (checked by the contract tests for every implementation):
/// - `commit` applies a whole [`Batch`] atomically: discovered links deduplicated exactly against everything ever
///   added (a URL is added at most once, whatever its kind), finished URLs marked done and taken off their queue,
///   updates written, records put in the outbox, the outbox trimmed up to `written`, counters kept.
/// - `next_urls` hands out a host's pending URLs in queue order (depth, then discovery), strictly after `after`.
/// - `recover` reads no more than the hosts, the counters and the outbox.
pub trait FrontierStore: Send {
    /// Loads the state left by earlier runs. Called once, right after opening.
    fn recover(&mut self) -> Result<Resume, FrontierError>;
    /// Applies one batch atomically and makes it durable.
    fn commit(&mut self, batch: Batch) -> Result<Committed, FrontierError>;
    /// Up to `max` pending URLs of `host` in queue order, after `after` (from the start when None).
    fn next_urls(
        &mut self,
        host: Fp,
        after: Option<QueueKey>,
        max: usize,
    ) -> Result<Vec<Entry>, FrontierError>;
    /// True when the canonical URL was ever added (exact).
    fn is_known(&mut self, url: &str) -> Result<bool, FrontierError>;
    /// Work to do while idle (e.g. rebuilding an in-memory filter); returns true while there is more.
    fn idle_work(&mut self) -> bool {
        false
    }
    /// Shards gained and lost since the last call, hosts new in held shards and crawl-wide counters, for a store
    /// shared by many processes. A store used by one process owns everything: nothing ever changes.
    fn poll_shards(&mut self) -> Result<ShardChanges, FrontierError> {
        Ok(ShardChanges::default())
    }
    /// The next [`poll_shards`](Self::poll_shards) reports every held shard as gained again, with its hosts and
    /// robots.txt rules (a safety net for a process that holds pending URLs it does not know about).
    fn reread_shards(&mut self) {}
    /// The gate telling which hosts this process may crawl; None for a store that is not shared.
    fn shard_gate(&self) -> Option<std::sync::Arc<dyn ShardGate>> {
        None
    }
    /// Moves up to `max` scheduled revisits due at `now_ms` (oldest due first; in a store shared by many
    /// processes, of the shards this process holds) into their hosts' queues, durably, and returns them as new
    /// queue entries whose [`Entry::prior`] is set. A URL due once is promoted once. A store without a schedule
    /// returns none.
    fn promote_due(&mut self, now_ms: u64, max: usize) -> Result<Vec<Added>, FrontierError> {
        let _ = (now_ms, max);
        Ok(Vec::new())
    }
    /// The schedule's earliest due time and how many revisits are due before `horizon_ms`, counted up to `cap`
    /// (in a store shared by many processes: of the shards this process holds).
    fn outlook(&mut self, horizon_ms: u64, cap: u64) -> Result<Outlook, FrontierError> {
        let _ = (horizon_ms, cap);
        Ok(Outlook::default())
    }
    /// A sitemap's hints for URLs it lists: a scheduled URL whose hint ([`crate::recrawl::Policy::sitemap_hint`]
    /// with its stored prior and due time, at `now_ms`) is earlier than its due time comes due then. URLs not
    /// scheduled (unknown, pending) are left alone. Returns what was moved and the anomalies seen. Advisory: a
    /// store may apply it outside the group commit.
    fn hint(
        &mut self,
        hints: &[SitemapHint],
        policy: &crate::recrawl::Policy,
        now_ms: u64,
    ) -> Result<Hinted, FrontierError> {
        let _ = (hints, policy, now_ms);
        Ok(Hinted::default())
    }
    /// What operators set on the crawl ([`crate::control::OperatorState`]) with a version that changes whenever
    /// it does. In a store shared by many processes: the crawl-wide pause and every shard's host rules, as any
    /// process left them.
    fn operator_state(&mut self) -> Result<(u64, crate::control::OperatorState), FrontierError> {
        Err(FrontierError::Store(
            "this store keeps no operator state".into(),
        ))
    }
    /// Applies an operator's change durably (it holds once this returns); true when the state changed. In a store
    /// shared by many processes, a host's rule is kept with the host's shard (the crawl-wide pause crawl-wide),
    /// for every process and the shard's later owners; any process may apply any change.
    fn apply_operator(&mut self, change: &crate::control::Change) -> Result<bool, FrontierError> {
        let _ = change;
        Err(FrontierError::Store(
            "this store keeps no operator state".into(),
        ))
    }
    /// The live processes of a crawl shared by many processes and the shards each holds now, read in one round
    /// trip; a process that still holds a lease after its heartbeat lapsed is listed too. A store used by one
    /// process answers none: this process is the crawl.
    fn processes(&mut self) -> Result<Vec<ProcessInfo>, FrontierError> {
        Ok(Vec::new())
    }
    /// True when any process of a crawl shared by many processes added URLs of `host` (a host key), for a view
    /// of a host another process crawls. A store used by one process answers false: its process knows its hosts.
    fn knows_host(&mut self, host: &str) -> Result<bool, FrontierError> {
        let _ = host;
        Ok(false)
    }
    /// A forced re-fetch: each known URL of `urls` that is done (fetched or recorded, or waiting in the revisit
    /// schedule) is queued again as a new entry of its host's queue (with its prior visit when it was scheduled,
    /// its schedule entry gone), durably, and returned; unknown URLs and URLs already pending are left out (the
    /// caller adds unknown ones through a commit). In a store shared by many processes, any process may queue a
    /// URL of any shard.
    fn refetch(&mut self, urls: &[Discovered]) -> Result<Vec<Added>, FrontierError> {
        let _ = urls;
        Err(FrontierError::Store(
            "this store cannot re-fetch known URLs".into(),
        ))
    }
}

/// A sitemap entry's word on when a URL changed, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SitemapHint {
    /// Canonical URL.
    pub url: String,
    pub lastmod: Option<String>,
    pub changefreq: Option<String>,
}

/// What [`FrontierStore::hint`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Hinted {
    /// Scheduled URLs brought forward.
    pub moved: u64,
    pub anomalies: Vec<crate::recrawl::Anomaly>,
}
