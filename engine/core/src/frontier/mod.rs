//! The frontier: every URL the crawl has discovered, which of them are still to do, and the outbox of records
//! committed but not yet written to the JSONL.
//!
//! The [`FrontierStore`] trait is the durable part, behind which the embedded store ([`embedded::EmbeddedFrontier`],
//! redb on disk) sits today and a Redis store will later. Scheduling order and politeness live in
//! [`crate::politeness`]; the store only answers "is this URL known", stages changes and commits them atomically.
//!
//! Crash safety rests on one rule: a page's record, its "done" mark and the URLs it discovered are committed in the
//! same transaction, and the record is appended to the JSONL only after that commit. Records carry a sequence number
//! equal to their line number in the JSONL, so after a crash the store re-emits exactly the committed records the
//! file is missing (see [`Recovered::outbox`]).

pub mod embedded;
mod entry;
mod lock;

pub use entry::{Entry, JobKind};
pub use lock::{DirLock, LockError};

/// What a store hands back when it is opened.
#[derive(Debug, Default)]
pub struct Recovered {
    /// URLs discovered but not yet done, in discovery order. URLs that were in flight when the process died are
    /// among them and will be fetched once more.
    pub pending: Vec<Entry>,
    /// Committed records with their sequence numbers, oldest first. The caller writes those whose sequence number
    /// is beyond the JSONL's line count.
    pub outbox: Vec<(u64, Vec<u8>)>,
    /// The sequence number the next record gets.
    pub next_seq: u64,
    /// How many URLs the store knows (done and pending).
    pub known: u64,
    /// How many URLs are done.
    pub done: u64,
    /// How many pages have been fetched (outcome fetched), across all runs; used by max_pages.
    pub pages_fetched: u64,
    /// True when the store was created by this open.
    pub fresh: bool,
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
    #[error("frontier entry for {url} is corrupt: {detail}")]
    Corrupt { url: String, detail: String },
}

impl From<redb::Error> for FrontierError {
    fn from(e: redb::Error) -> Self {
        FrontierError::Store(e.to_string())
    }
}

macro_rules! redb_error_from {
    ($($t:ty),*) => { $(impl From<$t> for FrontierError {
        fn from(e: $t) -> Self { FrontierError::Store(e.to_string()) }
    })* };
}
redb_error_from!(
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError,
    redb::SetDurabilityError
);

/// Counts of one commit.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CommitInfo {
    pub added: usize,
    pub updated: usize,
    pub finished: usize,
    pub trimmed: usize,
}

/// The durable frontier. Changes are staged by `add`, `update`, `finish` and `trim_outbox` and become durable,
/// all together or not at all, at `commit`.
pub trait FrontierStore: Send {
    /// Loads the state left by earlier runs. Called once, right after opening.
    fn recover(&mut self) -> Result<Recovered, FrontierError>;
    /// True when the canonical URL was ever added (done or pending, committed or staged). Exact, not probabilistic.
    fn is_known(&self, url: &str) -> bool;
    /// Stages a newly discovered URL; returns false (and stages nothing) when it is already known.
    fn add(&mut self, entry: &Entry) -> bool;
    /// Stages a new state of a pending URL (retry counters, attempt), e.g. before re-queueing it.
    fn update(&mut self, entry: &Entry);
    /// Stages the end of a URL: marks it done and puts its record line into the outbox. Returns the record's
    /// sequence number (its line number in the JSONL).
    fn finish(&mut self, url: &str, record_line: Vec<u8>, fetched_page: bool) -> u64;
    /// Stages the removal of outbox records up to and including `seq` (they are in the JSONL now).
    fn trim_outbox(&mut self, upto_seq: u64);
    /// Number of staged changes.
    fn staged(&self) -> usize;
    /// Makes every staged change durable in one atomic transaction.
    fn commit(&mut self) -> Result<CommitInfo, FrontierError>;
}
