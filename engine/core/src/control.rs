//! Steering a running crawl: what an operator (through the control API, or an alert acting for one) may set — the
//! crawl or a host paused, a host's politeness — in the form the stores keep and the scheduler obeys, and who
//! asked. Nothing here does I/O; every time is given.

pub mod alerts;
mod host_match;
mod operator;
mod requester;

pub use host_match::{BadHost, HostMatch};
pub use operator::{Change, HostRule, OperatorState, Pause, PolitenessOverride};
pub use requester::Requester;
