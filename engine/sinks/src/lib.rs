//! Sinks: where committed records and closed archives go beyond the local files.
//!
//! The JSONL is the local truth and the outbox every record sink reads: a record is there only once its commit
//! landed, its line number is its sequence number, and each sink keeps its own durable [`checkpoint`] (lines and
//! bytes of the JSONL shipped), so a sink that is down falls behind and later continues where it stopped. The
//! record sinks ([`kafka`], [`postgres`]) ship [`record::ShipRecord`]s read by [`tail`] and parsed once for all
//! of them ([`feed`]); the object store sink
//! ([`archive`]) uploads closed WARC files and keeps a manifest of what it uploaded.

pub mod archive;
pub mod checkpoint;
pub mod error;
pub mod feed;
pub mod kafka;
pub mod postgres;
pub mod record;
pub mod tail;
pub mod target;

pub use error::SinkError;
pub use target::RecordTarget;

/// What one batch delivered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shipped {
    /// Records the target acknowledged.
    pub records: u64,
    /// Their bytes as sent (the JSONL lines).
    pub bytes: u64,
    /// Records left out by a defined rule (Kafka's `oversize = "skip"`), counted and logged, not sent.
    pub skipped: u64,
}
