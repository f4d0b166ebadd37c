//! Messages the scheduler handles.

use super::stats::Stats;
use crate::fetcher::messages::Fetch;
use crate::job::{JobId, JobResult};
use actix::{Message, Recipient};

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
}

/// A fetcher died; re-drive what it held (notification, from the supervisor).
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct FetcherDown {
    pub index: usize,
    pub panicked: Option<JobId>,
    pub detail: String,
}

/// A (re)started fetcher is ready (notification, from the supervisor).
#[derive(Message)]
#[rtype(result = "()")]
pub struct FetcherUp {
    pub index: usize,
    pub fetcher: Recipient<Fetch>,
}

/// Stop taking work, finish what is in flight within `grace`, flush and finish (command, on SIGINT/SIGTERM).
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct Drain {
    pub grace: std::time::Duration,
}

/// Stop now with a fatal error, after committing and writing what is done (command, from the supervisor).
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct Abort {
    pub reason: String,
}

/// Read the counters.
#[derive(Message)]
#[rtype(result = "Stats")]
pub struct GetStats;

/// A config reload changed the politeness policy or the scope (notification, from the reload task). Applies from
/// the next lease; leases in flight are untouched.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct Reconfigure {
    pub politeness: crawl_core::politeness::PolitenessPolicy,
    pub scope: std::sync::Arc<crawl_core::scope::ScopePolicy>,
}
