//! The sink: the JSONL output.

pub mod actor;

pub use actor::Sink;
