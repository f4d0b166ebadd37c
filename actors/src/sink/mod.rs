//! The sink: the JSONL output.

pub mod actor;
pub mod error;

pub use actor::Sink;
