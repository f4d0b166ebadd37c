//! The sink: the JSONL output.

pub mod actor;
pub mod error;
pub mod messages;

pub use actor::Sink;
