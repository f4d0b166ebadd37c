//! Steering a running crawl: what an operator (through the control API, or an alert acting for one) may set — the
//! crawl or a host paused, a host's politeness — in the form the stores keep and the scheduler obeys, and who
//! asked; what alerts ask for ([`alerts`]) and the settings they hold over the running config while they fire
//! ([`SettingOverrides`]). Nothing here does I/O; every time is given.

pub mod alerts;
mod host_match;
mod operator;
mod overrides;
mod requester;

pub use host_match::{BadHost, HostMatch};
pub use operator::{Change, HostRule, OperatorState, Pause, PolitenessOverride};
pub use overrides::{OverrideOutcome, OverrideResult, SettingKey, SettingOverrides, SettingValue};
pub use requester::Requester;
