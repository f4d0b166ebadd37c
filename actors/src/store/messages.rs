//! Messages the store actor handles.

use actix::Message;
use crawl_core::frontier::{Batch, Committed, Entry, Fp, FrontierError, QueueKey, ShardChanges};

/// Make a batch durable (command, from the scheduler).
#[derive(Message, Debug)]
#[rtype(result = "Result<Committed, FrontierError>")]
pub struct Commit {
    pub batch: Batch,
    /// Fetches to archive first (WARC output on): the batch's records then carry their location.
    pub archive: Vec<crate::protocol::ArchiveItem>,
}

/// Read a host's next pending URLs (command, from the scheduler).
#[derive(Message, Debug)]
#[rtype(result = "Result<Vec<Entry>, FrontierError>")]
pub struct NextUrls {
    pub host: Fp,
    pub after: Option<QueueKey>,
    pub max: usize,
    /// A URL that stands for the request in fault injection (the first URL the scheduler expects, or the host).
    pub subject: String,
}

/// Background work between requests (notification, to itself).
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct IdleWork;

/// Shard ownership news and the crawl's counters (command, from the scheduler of a sharded crawl).
#[derive(Message, Debug)]
#[rtype(result = "Result<ShardChanges, FrontierError>")]
pub struct PollShards {
    /// Report every held shard as gained again, with its hosts (see `FrontierStore::reread_shards`).
    pub reread: bool,
}

/// Queue the revisits due now (command, from the scheduler; continuous crawling).
#[derive(Message, Debug)]
#[rtype(result = "Result<Vec<crawl_core::frontier::Added>, FrontierError>")]
pub struct PromoteDue {
    /// Now, as Unix ms.
    pub now_ms: u64,
    pub max: usize,
}

/// Read the revisit schedule's outlook (command, from the scheduler; continuous crawling).
#[derive(Message, Debug)]
#[rtype(result = "Result<crawl_core::frontier::Outlook, FrontierError>")]
pub struct ReadOutlook {
    /// Count the revisits due before this (Unix ms).
    pub horizon_ms: u64,
    pub cap: u64,
}

/// Apply sitemap hints to the revisit schedule (command, from the scheduler; continuous crawling).
#[derive(Message, Debug)]
#[rtype(result = "Result<crawl_core::frontier::Hinted, FrontierError>")]
pub struct ApplyHints {
    pub hints: Vec<crawl_core::frontier::SitemapHint>,
    pub policy: crawl_core::recrawl::Policy,
    pub now_ms: u64,
}

/// What operators set on the crawl, with its version (on start, and polled in a crawl shared by many processes).
#[derive(Message, Debug)]
#[rtype(result = "Result<(u64, crawl_core::control::OperatorState), FrontierError>")]
pub struct ReadOperator;

/// Apply an operator's change durably, then read the state back (command): whether it changed, and the state
/// with its version.
#[derive(Message, Debug)]
#[rtype(result = "Result<(bool, u64, crawl_core::control::OperatorState), FrontierError>")]
pub struct ApplyOperator {
    pub change: crawl_core::control::Change,
}

/// Queue done URLs again (a forced re-fetch, command); returns the entries queued.
#[derive(Message, Debug)]
#[rtype(result = "Result<Vec<crawl_core::frontier::Added>, FrontierError>")]
pub struct Refetch {
    pub urls: Vec<crawl_core::frontier::Discovered>,
}

/// The live processes of a crawl shared by many processes and the shards each holds (query, from the tree's
/// `Control` for the control API). Its slot is free again once the message is handled or dropped.
#[derive(Message, Debug)]
#[rtype(result = "Result<Vec<crawl_core::frontier::ProcessInfo>, FrontierError>")]
pub struct ReadProcesses {
    pub slot: super::read_slots::ReadSlot,
}

/// Whether any process of a crawl shared by many processes added URLs of a host (query, from the tree's `Control`
/// for a view of a host this process does not know). Its slot is free again once the message is handled or
/// dropped.
#[derive(Message, Debug)]
#[rtype(result = "Result<bool, FrontierError>")]
pub struct KnowsHost {
    /// The host key.
    pub host: String,
    pub slot: super::read_slots::ReadSlot,
}
