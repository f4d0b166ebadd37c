//! The protocol between the actors: the unit of work ([`Job`]) and its results, and every message that one actor
//! sends to another, with the types they carry ([`RawResponse`], [`RedirectError`], [`Stats`], [`SinkError`],
//! [`CrawlSummary`]). Children (fetchers, parsers, the sink, the store) import what they exchange from here and
//! nothing from their supervisor or the scheduler; this module imports no actor.
//!
//! A job goes scheduler → fetcher ([`Fetch`]) → parser ([`Parse`]) → scheduler ([`JobDone`]); committed records go
//! scheduler → sink ([`WriteRecords`]); children report to the supervisor ([`ChildFailed`], [`LeaseExpired`]), which
//! tells the scheduler about fetchers ([`FetcherDown`], [`FetcherUp`], [`Abort`]) and the engine about the end
//! ([`CrawlFinished`]).

mod control;
mod redirect;
mod response;
mod sink;
mod stats;

use actix::{Message, Recipient};
pub use control::{
    AddUrls, ControlError, HostSort, HostView, Processes, RobotsState, SinkView, StatusView,
    UrlAnswer, UrlVerdict,
};
use crawl_core::frontier::{Entry, Fp, ShardGate};
use crawl_core::politeness::HostId;
use crawl_core::record::Reason;
use crawl_core::robots::Robots;
use crawl_core::scope::ScopeVerdict;
pub use redirect::RedirectError;
pub use response::{RawResponse, Timings};
pub use sink::{Backpressure, OutputProgress, SinkError};
pub use stats::{RevisitStats, Stats};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Identifies one lease of a URL; a re-driven URL gets a new id, so late results of an abandoned lease are ignored.
pub type JobId = u64;

/// One leased URL.
#[derive(Debug, Clone)]
pub struct Job {
    pub id: JobId,
    pub host: HostId,
    pub entry: Entry,
    /// When the scheduler started it.
    pub started_at: Instant,
    /// The URL's trace; every actor the job visits adds its spans to it.
    pub trace: crawl_observability::trace::TraceCtx,
    /// In a crawl shared by many processes, the host's shard lease, checked again right before the request goes
    /// out: a job may wait in a mailbox or behind DNS, or the whole process may have been paused, past the lease.
    pub gate: Option<StartGate>,
}

/// Whether a request to one host may still start (see [`Job::gate`]).
#[derive(Debug, Clone)]
pub struct StartGate {
    shards: Arc<dyn ShardGate>,
    host: Fp,
}

impl StartGate {
    pub fn new(shards: Arc<dyn ShardGate>, host: Fp) -> StartGate {
        StartGate { shards, host }
    }

    /// True while this process owns the host's shard and its lease has not run out on the local clock.
    pub fn is_open(&self) -> bool {
        self.shards.may_start(self.host)
    }

    /// True while this process holds the host's shard lease on the local clock (a hand-over in progress included):
    /// checked by the connection at each write, so that a request held up after [`is_open`](Self::is_open) (in the
    /// pool's checkout, the connect, a pause of the whole process) does not go out once the lease ran out.
    pub fn may_send(&self) -> bool {
        self.shards.may_send(self.host)
    }

    /// The host (by fingerprint) this gate is of.
    pub fn host(&self) -> Fp {
        self.host
    }

    /// The gate of another host, from the same shards.
    pub fn for_host(&self, host: Fp) -> StartGate {
        StartGate {
            shards: self.shards.clone(),
            host,
        }
    }
}

/// A link found in a page, canonicalised and judged against the scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundLink {
    pub url: String,
    pub host: String,
    pub verdict: ScopeVerdict,
}

/// The parsed result of a page job that got an HTTP answer.
#[derive(Debug, Clone, Default)]
pub struct PageOutcome {
    pub status: u16,
    pub content_type: Option<String>,
    /// Decoded body bytes.
    pub content_length: u64,
    pub http_version: String,
    pub elapsed_ms: u64,
    /// Request start to body end, unrounded (`elapsed_ms` is whole milliseconds): the latency histogram's value.
    pub elapsed: Duration,
    /// Link attributes found (before dedup and filtering).
    pub links_found: u32,
    /// Links to follow (nofollow removed), deduplicated within the page.
    pub links: Vec<FoundLink>,
    /// For 3xx: the canonical Location target, or why it is unusable.
    pub redirect_to: Option<Result<FoundLink, RedirectError>>,
    pub noindex: bool,
    /// The proxy chain used, or "direct" (None when no proxy is configured).
    pub proxy: Option<String>,
    /// Parsed Retry-After of a 429/503.
    pub retry_after: Option<Duration>,
    /// The body could not be used: too_large or decode.
    pub body_error: Option<(Reason, String)>,
    /// The page's `<title>` (collapsed, capped).
    pub title: Option<String>,
    /// `sha1:` + base32 of the decoded body; None for a `304 Not Modified` (no body: whether the page changed is
    /// the recrawl schedule's to say) and for a body that could not be used.
    pub digest: Option<String>,
    /// The response's `ETag`, as sent (a 2xx or 304 answer): the validator of the next visit.
    pub etag: Option<String>,
    /// The response's `Last-Modified`, as sent (a 2xx or 304 answer): the validator of the next visit.
    pub last_modified: Option<String>,
    /// The response's `Date`, as sent (a 2xx or 304 answer): a `Last-Modified` later than it is not kept.
    pub date: Option<String>,
    /// When the request was sent (Unix time in ms): the `WARC-Date` of its archived records to the millisecond,
    /// which a later revisit's `WARC-Refers-To-Date` names (`crawl_core::recrawl::Capture::fetched_at_ms`).
    pub requested_at_ms: u64,
    /// Link references cut by the per-page cap.
    pub links_dropped: u32,
    /// Page requisites (with `crawl.embeds`), judged against `crawl.embeds_scope`, to queue at the page's depth:
    /// those of an HTML page, or those a stylesheet fetched as a requisite loads.
    pub embeds: Vec<FoundLink>,
    /// Requisite references cut by the per-page cap.
    pub embeds_dropped: u32,
}

/// The parsed result of a robots.txt job.
#[derive(Debug, Clone)]
pub enum RobotsOutcome {
    /// 2xx: rules (possibly empty).
    Rules(Arc<Robots>),
    /// 4xx: allow everything.
    AllowAll { status: u16 },
    /// 5xx, too many redirects or unreachable: disallow everything and retry later.
    Unavailable { detail: String },
}

/// The parsed result of a sitemap job.
#[derive(Debug, Clone, Default)]
pub struct SitemapOutcome {
    /// Page URLs (for a urlset), canonicalised and judged.
    pub pages: Vec<FoundLink>,
    /// Child sitemaps (for an index), canonical.
    pub sitemaps: Vec<String>,
    /// What the urlset's entries say of when their pages changed (`<lastmod>`, `<changefreq>`), by canonical URL.
    pub hints: Vec<crawl_core::frontier::SitemapHint>,
    pub error: Option<String>,
}

/// How a job ended.
#[derive(Debug, Clone)]
pub enum JobResult {
    Page(Box<PageOutcome>),
    Robots(RobotsOutcome),
    Sitemap(SitemapOutcome),
    /// No HTTP answer.
    FetchFailed {
        reason: Reason,
        detail: String,
        retryable: bool,
    },
    /// No request was sent: the host's shard lease ran out before it could start (see [`Job::gate`]).
    NotStarted,
    /// A handler panicked while holding this job.
    Panicked {
        stage: &'static str,
        detail: String,
    },
}

/// Why the crawl ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    /// Nothing left to do.
    Completed,
    /// max_pages reached.
    LimitReached,
    /// SIGINT/SIGTERM: in-flight work finished (or the grace period ran out).
    Shutdown,
    /// A child failed too often or a store failed.
    Fatal(String),
}

/// Fetch a job's URL (command, from the scheduler).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Fetch {
    pub job: Job,
}

/// Answered at once (request, from the supervisor): a fetcher whose thread is blocked never answers.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct Ping;
/// Parse a fetched body (command, from a fetcher). The result goes to the scheduler as `JobDone`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Parse {
    pub job: Job,
    pub response: RawResponse,
    /// The job's URL as the fetcher parsed it (pages only), so the parser does not parse it again.
    pub page_url: Option<url::Url>,
    /// How the host was resolved (passed through to the record).
    pub dns: Option<crawl_core::record::DnsInfo>,
}
/// A job ended (notification, from a fetcher or a parser).
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct JobDone {
    pub job: JobId,
    /// The job's URL (for logs and the fault-injection hook).
    pub url: String,
    pub result: JobResult,
    /// How the host was resolved, for the record.
    pub dns: Option<crawl_core::record::DnsInfo>,
    /// The fetch, ready for the archive (when WARC output is on and an answer came).
    pub archive: Option<Box<Archived>>,
}

/// A fetch to archive with the next commit; `record` is the sequence number of its JSONL record in that commit
/// (whose line then gains the archive location), None for fetches without one (robots.txt, sitemaps, retries).
#[derive(Debug)]
pub struct ArchiveItem {
    pub record: Option<u64>,
    pub archived: Box<Archived>,
}

/// A fetch ready for the archive: its encoded records, and a page's outlinks (for its metadata record).
#[derive(Debug)]
pub struct Archived {
    pub prepared: crawl_output::warc::Prepared,
    pub outlinks: Vec<String>,
}

/// A fetcher died; re-drive what it held (notification, from the supervisor).
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct FetcherDown {
    pub index: usize,
    pub panicked: Option<JobId>,
    pub detail: String,
}

/// Jobs whose responses waited in the mailbox of a parser thread that was replaced (stuck on another job): they are
/// queued again without counting an attempt (notification, from the supervisor).
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct ParsesLost {
    pub jobs: Vec<JobId>,
}

/// A (re)started fetcher is ready (notification, from the supervisor).
#[derive(Message)]
#[rtype(result = "()")]
pub struct FetcherUp {
    pub index: usize,
    pub fetcher: Recipient<Fetch>,
}

/// Stop now with a fatal error, after committing and writing what is done (command, from the supervisor).
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct Abort {
    pub reason: String,
}

/// Append committed records, in sequence order (command, from the scheduler). Replies with the highest sequence
/// number now in the file.
#[derive(Message)]
#[rtype(result = "Result<crawl_core::output::JsonlCheckpoint, SinkError>")]
pub struct WriteRecords {
    pub lines: Vec<(u64, Vec<u8>)>,
}
/// Which child failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChildId {
    Fetcher(usize),
    Parser,
}

impl ChildId {
    pub fn kind(&self) -> &'static str {
        match self {
            ChildId::Fetcher(_) => "fetcher",
            ChildId::Parser => "parser",
        }
    }
}

/// A child caught a panic (notification). `job` is the job it held when it panicked.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct ChildFailed {
    pub child: ChildId,
    pub job: Option<JobId>,
    pub detail: String,
}

/// A lease's deadline (request timeout + parse budget) passed (notification, from the scheduler, which has re-driven
/// the URL already). The supervisor finds the child that holds the job and replaces it when it is stuck: the parser
/// working on the job, or else the fetcher it was leased to when that fetcher's thread does not answer a probe.
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct LeaseExpired {
    pub job: JobId,
    /// The fetcher the job was leased to, if it was sent to one.
    pub fetcher: Option<usize>,
    pub url: String,
}

/// The scheduler is done (notification).
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct CrawlFinished {
    pub reason: FinishReason,
    pub stats: Stats,
}

/// How the crawl ended, handed to whoever started the tree.
#[derive(Debug, Clone)]
pub struct CrawlSummary {
    pub reason: FinishReason,
    pub stats: Stats,
    pub supervisor: SupervisorStats,
}

/// Counters the supervisor keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SupervisorStats {
    pub panics: u64,
    pub restarts_fetcher: u64,
    pub restarts_parser: u64,
    /// Children found stuck on an expired lease and replaced (each also counts as a restart).
    pub stuck: u64,
    pub escalated: bool,
}
