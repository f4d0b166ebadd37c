//! The scheduler: the frontier, robots.txt state and politeness, and the only place that decides what runs next.

pub mod actor;
pub mod crawl;
pub mod messages;
pub mod robots_state;

pub use actor::Scheduler;
