//! The root supervisor: restarts, backoff, escalation.

pub mod actor;

pub use actor::{FetcherFactory, RestartPolicy, Supervisor};
