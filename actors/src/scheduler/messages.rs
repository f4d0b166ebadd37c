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
    /// A new scope: queued URLs are checked against it again as they come up.
    pub scope: Option<std::sync::Arc<crawl_core::scope::ScopePolicy>>,
    /// New `[recrawl]` intervals and budget (continuous crawling on): they apply from each URL's next fetch.
    pub recrawl: Option<crawl_core::config::RecrawlConfig>,
}
