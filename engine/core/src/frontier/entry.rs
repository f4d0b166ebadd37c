//! A frontier entry: one URL waiting to be crawled (or recorded), with what the crawl knows about how it got there.

use super::Fp;
use crate::record::Reason;
use crate::scope::ScopeVerdict;

/// What a job does with its URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum JobKind {
    /// A page: fetched, parsed, recorded.
    #[default]
    Page,
    /// A robots.txt (not recorded, never stored).
    Robots,
    /// A sitemap or sitemap index (not recorded, never stored); `depth` counts index nesting.
    Sitemap,
    /// Recorded without a fetch: outside the scope.
    OutOfScope,
    /// Recorded without a fetch: rejected by the filters.
    Filtered,
    /// Recorded without a fetch: deeper than max_depth.
    TooDeep,
    /// A page requisite (`crawl.embeds`): fetched and recorded like a page, queued at its page's depth, never
    /// parsed for links (a stylesheet only for further requisites).
    Embed,
    /// Recorded without a fetch: cut by a trap rule or budget (`[traps]`), with that reason.
    Trap(TrapKind),
}

/// Which trap cut a URL (its record's reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TrapKind {
    HostBudget,
    RepeatedPath,
    LongUrl,
    Calendar,
    PatternBudget,
}

impl TrapKind {
    /// The trap of a reason, `None` for reasons that are not traps.
    pub fn from_reason(r: Reason) -> Option<TrapKind> {
        Some(match r {
            Reason::HostBudget => TrapKind::HostBudget,
            Reason::RepeatedPath => TrapKind::RepeatedPath,
            Reason::LongUrl => TrapKind::LongUrl,
            Reason::Calendar => TrapKind::Calendar,
            Reason::PatternBudget => TrapKind::PatternBudget,
            _ => return None,
        })
    }

    pub fn reason(self) -> Reason {
        match self {
            TrapKind::HostBudget => Reason::HostBudget,
            TrapKind::RepeatedPath => Reason::RepeatedPath,
            TrapKind::LongUrl => Reason::LongUrl,
            TrapKind::Calendar => Reason::Calendar,
            TrapKind::PatternBudget => Reason::PatternBudget,
        }
    }
}

impl JobKind {
    /// The kind for a scope verdict.
    pub fn from_verdict(v: ScopeVerdict) -> JobKind {
        match v {
            ScopeVerdict::InScope => JobKind::Page,
            ScopeVerdict::OutOfScope => JobKind::OutOfScope,
            ScopeVerdict::Filtered => JobKind::Filtered,
            ScopeVerdict::TooDeep => JobKind::TooDeep,
            ScopeVerdict::Trap(r) => JobKind::excluded_for(r),
        }
    }

    /// The kind recorded without a fetch for `reason`: a trap's, or the scope's exclusions.
    pub fn excluded_for(reason: Reason) -> JobKind {
        match (TrapKind::from_reason(reason), reason) {
            (Some(t), _) => JobKind::Trap(t),
            (None, Reason::Filter) => JobKind::Filtered,
            (None, Reason::Depth) => JobKind::TooDeep,
            (None, _) => JobKind::OutOfScope,
        }
    }

    /// Whether a job of this kind is fetched and recorded (a page or a page requisite), as opposed to robots.txt
    /// and sitemaps (fetched, not recorded) and the kinds recorded without a fetch.
    pub fn is_fetched(self) -> bool {
        matches!(self, JobKind::Page | JobKind::Embed)
    }

    /// The exclusion reason of a kind recorded without a fetch.
    pub fn excluded(self) -> Option<Reason> {
        match self {
            JobKind::OutOfScope => Some(Reason::Scope),
            JobKind::Filtered => Some(Reason::Filter),
            JobKind::TooDeep => Some(Reason::Depth),
            JobKind::Trap(t) => Some(t.reason()),
            _ => None,
        }
    }

    pub(crate) fn code(self) -> u8 {
        match self {
            JobKind::Page => 0,
            JobKind::Robots => 1,
            JobKind::Sitemap => 2,
            JobKind::OutOfScope => 3,
            JobKind::Filtered => 4,
            JobKind::TooDeep => 5,
            JobKind::Embed => 6,
            JobKind::Trap(TrapKind::HostBudget) => 7,
            JobKind::Trap(TrapKind::RepeatedPath) => 8,
            JobKind::Trap(TrapKind::LongUrl) => 9,
            JobKind::Trap(TrapKind::Calendar) => 10,
            JobKind::Trap(TrapKind::PatternBudget) => 11,
        }
    }

    pub(crate) fn from_code(c: u8) -> Option<JobKind> {
        Some(match c {
            0 => JobKind::Page,
            1 => JobKind::Robots,
            2 => JobKind::Sitemap,
            3 => JobKind::OutOfScope,
            4 => JobKind::Filtered,
            5 => JobKind::TooDeep,
            6 => JobKind::Embed,
            7 => JobKind::Trap(TrapKind::HostBudget),
            8 => JobKind::Trap(TrapKind::RepeatedPath),
            9 => JobKind::Trap(TrapKind::LongUrl),
            10 => JobKind::Trap(TrapKind::Calendar),
            11 => JobKind::Trap(TrapKind::PatternBudget),
            _ => return None,
        })
    }
}

/// A URL's place in its host's queue: breadth first, then discovery order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct QueueKey {
    pub depth: u32,
    pub seq: u64,
}

/// A stored URL's identity within its store: a number the store chose and a slot under it. The embedded store
/// numbers its URL rows (slot 0); the shared store uses the URL's fingerprint and the slot among URLs sharing it.
/// Key 0 refers to no URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct UrlRef {
    pub key: u64,
    pub slot: u8,
}

/// A URL in the frontier.
#[derive(Debug, Clone, Eq)]
pub struct Entry {
    /// Canonical URL.
    pub url: String,
    /// Link distance from a seed.
    pub depth: u32,
    /// The page that linked (or redirected to) this URL.
    pub parent: Option<String>,
    /// The stored identity of the parent.
    pub parent_ref: Option<UrlRef>,
    /// Times a handler panicked on this URL or its lease expired (poison counter).
    pub attempt: u32,
    /// Transient failures retried so far (timeouts, connect errors, 429/503).
    pub retries: u32,
    /// The redirect chain that led here (oldest first), empty when not reached through a redirect.
    pub redirect_chain: Vec<String>,
    /// Discovery order (assigned by the store), used to keep FIFO order within a depth.
    pub seq: u64,
    pub kind: JobKind,
    /// Fingerprint of its host key (the queue it is in).
    pub host: Fp,
    /// Stored identity (zero for jobs that are not stored: robots.txt, sitemaps).
    pub id: UrlRef,
    /// When it was last queued in this process (for the wait span of its trace); never stored.
    pub queued_at: Option<std::time::Instant>,
    /// A revisit: what the previous visit left (validators, the capture a revisit record points at); None for a
    /// first visit.
    pub prior: Option<Box<crate::recrawl::Prior>>,
}

/// Entries compare by what is stored; `queued_at` is bookkeeping of this process.
impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.url == o.url
            && self.depth == o.depth
            && self.parent == o.parent
            && self.parent_ref == o.parent_ref
            && self.attempt == o.attempt
            && self.retries == o.retries
            && self.redirect_chain == o.redirect_chain
            && self.seq == o.seq
            && self.kind == o.kind
            && self.host == o.host
            && self.id == o.id
            && self.prior == o.prior
    }
}

impl Entry {
    /// A new page entry (not stored yet).
    pub fn page(url: impl Into<String>, depth: u32, parent: Option<String>) -> Entry {
        Entry {
            url: url.into(),
            depth,
            parent,
            parent_ref: None,
            attempt: 0,
            retries: 0,
            redirect_chain: Vec::new(),
            seq: 0,
            kind: JobKind::Page,
            host: 0,
            id: UrlRef::default(),
            queued_at: None,
            prior: None,
        }
    }

    /// Its place in its host's queue.
    pub fn key(&self) -> QueueKey {
        QueueKey {
            depth: self.depth,
            seq: self.seq,
        }
    }

    /// Total tries so far, as reported in records.
    pub fn tries(&self) -> u32 {
        1 + self.attempt + self.retries
    }
}
