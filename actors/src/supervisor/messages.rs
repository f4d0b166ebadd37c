//! Messages the supervisor handles.

use crate::job::JobId;
use crate::scheduler::crawl::FinishReason;
use crate::scheduler::stats::Stats;
use actix::Message;

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

/// Read the supervisor's counters.
#[derive(Message)]
#[rtype(result = "SupervisorStats")]
pub struct GetSupervisorStats;
