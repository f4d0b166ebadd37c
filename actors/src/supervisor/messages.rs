//! Messages the supervisor handles.

use actix::Message;

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
