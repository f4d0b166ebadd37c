//! The root supervisor: restarts, backoff, escalation.

pub mod actor;

pub mod error;
pub mod messages;

pub use actor::{CrawlSummary, FetcherFactory, RestartPolicy, Supervisor};
