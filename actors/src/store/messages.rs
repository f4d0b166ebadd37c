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
