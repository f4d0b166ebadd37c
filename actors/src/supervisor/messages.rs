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
    pub escalated: bool,
}

/// Read the supervisor's counters.
#[derive(Message)]
#[rtype(result = "SupervisorStats")]
pub struct GetSupervisorStats;
