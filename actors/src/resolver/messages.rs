//! Messages the resolver handles.

use super::logic::Outcome;
use super::setup::Parts;
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

/// Replace the resolver's settings, detection context and DoH client (command, from a config reload).
///
/// Build `parts` with [`super::setup::build`] from the new config first: every error (bogus-IP file, DoH CA
/// file) rejects the reload before anything changes. The handler swaps everything at once and clears the cache;
/// lookups already running finish with the settings they started with and answer their waiters, without caching.
/// A later restart by the actix `Supervisor` keeps the new settings.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Reconfigure {
    pub parts: Parts,
}
