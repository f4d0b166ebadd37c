//! What the control API asks of a running crawl and what it is answered: the types the tree's `Control` hands to
//! the binary and the scheduler fills in.

use crawl_core::control::{HostRule, OperatorState};
use crawl_core::frontier::ProcessInfo;
use crawl_core::record::Reason;
use std::collections::BTreeMap;

/// Why an operator's request could not be carried out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControlError {
    /// The crawl ended (or its scheduler is gone).
    #[error("the crawl has ended")]
    Ended,
    /// The crawl did not answer in time.
    #[error("the crawl is busy; try again")]
    Busy,
    /// The request cannot be carried out as asked (`field` names what is wrong).
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    /// The frontier store refused or failed.
    #[error("frontier store: {0}")]
    Store(String),
}

/// URLs an operator adds to the crawl.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddUrls {
    /// As given (canonicalised here).
    pub urls: Vec<String>,
    /// The depth they are queued at (max_depth applies).
    pub depth: u32,
    /// Queue URLs already done again (a re-fetch).
    pub force: bool,
}

/// What became of one URL an operator added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlVerdict {
    /// Queued, durably.
    Queued,
    /// Known already (queued, or done and `force` not set).
    Known,
    /// Not queued: recorded `excluded` with this reason (scope, filters, depth, traps, robots.txt).
    Excluded(Reason),
    /// Not a URL that can be crawled (the detail says why).
    Invalid(String),
}

/// The answer for one URL an operator added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlAnswer {
    /// As given.
    pub url: String,
    /// Its canonical form, when it has one.
    pub canonical: Option<String>,
    pub verdict: UrlVerdict,
}

/// The order of a host listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostSort {
    /// Most URLs queued first.
    Queued,
    /// Most requests in flight first.
    InFlight,
    /// Most failed and excluded records first.
    Errors,
    /// By name.
    Name,
}

/// The robots.txt state of a host's authorities as the crawl knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RobotsState {
    /// robots.txt is not obeyed (`crawl.respect_robots = false`).
    Ignored,
    /// No rules known yet.
    Unknown,
    /// Being fetched.
    Fetching,
    /// Rules known.
    Known,
    /// robots.txt stayed unavailable: the host's URLs are recorded `robots_unavailable`, or retried later.
    Unavailable,
}

impl RobotsState {
    pub fn as_str(self) -> &'static str {
        match self {
            RobotsState::Ignored => "ignored",
            RobotsState::Unknown => "unknown",
            RobotsState::Fetching => "fetching",
            RobotsState::Known => "known",
            RobotsState::Unavailable => "unavailable",
        }
    }
}

/// One host as the crawl sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostView {
    pub host: String,
    /// URLs queued (in the store, leased ones aside) as this process counts them; None when another process
    /// crawls the host (its shard is not held here).
    pub queued: Option<u64>,
    pub in_flight: u32,
    /// How long until its next request may start, when later than now.
    pub next_allowed_in_ms: Option<u64>,
    /// The step of its 429/503 backoff, and how long the pause lasts.
    pub backoff_level: u32,
    pub backoff_for_ms: Option<u64>,
    /// The delay and concurrency in force.
    pub delay_ms: u64,
    pub concurrency: u32,
    /// What operators set on it (on every port).
    pub rule: Option<HostRule>,
    pub robots: RobotsState,
    /// Failed and excluded records of this run by reason.
    pub errors: BTreeMap<&'static str, u64>,
    /// The shard it belongs to and whether this process holds it (a crawl shared by many processes).
    pub shard: Option<u32>,
    pub held_here: bool,
    /// The id of the process that holds its shard (a crawl shared by many processes), when known.
    pub owner: Option<String>,
    /// This process has met the host. False for a view of a host another process of a crawl shared by many
    /// processes crawls, which this one never saw: nothing of it is counted here (what operators set on it is).
    pub known_here: bool,
}

/// What the crawl is doing, for `GET /v1/status`.
#[derive(Debug, Clone)]
pub struct StatusView {
    pub stats: crate::protocol::Stats,
    pub operator: OperatorState,
    pub draining: bool,
    /// What it waits for, when nothing runs: in words.
    pub waiting_for: Option<String>,
    pub processes: Processes,
    /// The `[[sinks]]` (filled in by the tree's Control).
    pub sinks: Vec<SinkView>,
}

/// A sink's state as an operator sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SinkView {
    pub name: String,
    /// `kafka`, `postgres` or `object_store`.
    pub kind: &'static str,
    /// Records (files, for an object store) delivered by this run.
    pub delivered: u64,
    pub bytes: u64,
    /// Records left out by a rule (`oversize = "skip"`).
    pub skipped: u64,
    /// Records (files, for an object store) and bytes committed but not delivered yet.
    pub lag_records: u64,
    pub lag_bytes: u64,
    /// True while it holds fetching back (`output.sink_max_lag`).
    pub holding: bool,
    /// Unix ms of the last delivery (or of the start).
    pub last_success_ms: u64,
    /// The last error, until a delivery succeeds.
    pub last_error: Option<String>,
}

/// The processes of the crawl, for `GET /v1/status`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Processes {
    /// This process alone: its store is not shared.
    #[default]
    Alone,
    /// The processes sharing the crawl's store, as the store has them now; `me` is this process's id there.
    Shared { me: String, list: Vec<ProcessInfo> },
    /// A shared crawl whose store did not say in time (or failed): this process's id there, and why.
    Unknown { me: String, why: String },
}
