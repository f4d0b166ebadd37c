//! Messages the scheduler handles.

use crate::protocol::Stats;
use actix::Message;

/// Stop taking work, finish what is in flight within `grace`, flush and finish (command, on SIGINT/SIGTERM).
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct Drain {
    pub grace: std::time::Duration,
}

/// Read the counters.
#[derive(Message)]
#[rtype(result = "Stats")]
pub struct GetStats;

/// A config reload changed the politeness policy, the scope or the revisit schedule (notification, from the reload task). Applies from
/// the next lease; leases in flight are untouched. `None`: that part did not change.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct Reconfigure {
    pub politeness: Option<crawl_core::politeness::PolitenessPolicy>,
    /// Requests in flight at most (`fetch.concurrency`): fewer leases start until those out drop below it.
    pub concurrency: Option<usize>,
    /// A new scope: queued URLs are checked against it again as they come up.
    pub scope: Option<std::sync::Arc<crawl_core::scope::ScopePolicy>>,
    /// New `[recrawl]` intervals and budget (continuous crawling on): they apply from each URL's next fetch.
    pub recrawl: Option<crawl_core::config::RecrawlConfig>,
}

/// Apply an operator's change (command, from the control API): made durable in the store, then obeyed. Answers
/// whether the state changed.
#[derive(Message, Debug)]
#[rtype(result = "Result<bool, crate::protocol::ControlError>")]
pub struct Operate {
    pub change: crawl_core::control::Change,
}

/// Add URLs (command, from the control API): answered once the commit carrying them is durable.
#[derive(Message, Debug)]
#[rtype(result = "Result<Vec<crate::protocol::UrlAnswer>, crate::protocol::ControlError>")]
pub struct AddUrls {
    pub req: crate::protocol::AddUrls,
}

/// The hosts as an operator sees them, sorted, at most `limit`.
#[derive(Message, Debug)]
#[rtype(result = "Vec<crate::protocol::HostView>")]
pub struct GetHosts {
    pub sort: crate::protocol::HostSort,
    pub limit: usize,
}

/// One host as an operator sees it.
#[derive(Message, Debug)]
#[rtype(result = "Option<crate::protocol::HostView>")]
pub struct GetHost {
    pub name: String,
}

/// What the crawl is doing, for an operator.
#[derive(Message, Debug)]
#[rtype(result = "crate::protocol::StatusView")]
pub struct GetStatus;
