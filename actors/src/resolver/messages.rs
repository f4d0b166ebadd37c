//! Messages the resolver handles.

use super::logic::Outcome;
use super::stats::ResolverStats;
use actix::Message;

/// Resolve a host name (command, from fetchers and the connector). Always answers: failures are outcomes.
#[derive(Message, Debug, Clone)]
#[rtype(result = "Outcome")]
pub struct Resolve {
    pub name: String,
    /// The trace of the URL job asking; the lookup adds a `dns.resolve` span to it.
    pub trace: crawl_observability::trace::TraceCtx,
}

/// Read the resolver's counters.
#[derive(Message)]
#[rtype(result = "ResolverStats")]
pub struct GetResolverStats;
