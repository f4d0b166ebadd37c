//! crawl-store-embedded: the frontier store of a single process, in redb on disk under data_dir, behind crawl-core's
//! [`FrontierStore`](crawl_core::frontier::FrontierStore) trait; and the data_dir itself, which every process
//! holds whatever its store (its lock and its identity).
//!
//! # Layout
//! - [`store`]: the store ([`EmbeddedFrontier`]): tables, commits, recovery.
//! - `known`: the known URLs, rows found by fingerprint through an in-memory part and `fpruns`, sorted run
//!   files written once.
//! - `outbox`: the outbox rows (records committed but not yet in the JSONL).
//! - `operator`: what operators set on the crawl (the control API's pauses and politeness), with its version.
//! - `schedule`: the revisit schedule (continuous crawling): due URLs in due order, with their prior visits.
//! - `bloom` and `recent`: the in-memory filter and cache that spare most lookups of new and repeated links.
//! - [`lock`]: the data_dir's lock ([`DirLock`]) and the process's identity ([`process_id`]).
//! - [`identity`]: the crawl the data_dir holds (`crawl-id`), and what a data_dir holds as seen before anything
//!   is written there.

mod bloom;
mod error;
mod fpruns;
pub mod identity;
mod known;
pub mod lock;
mod operator;
mod outbox;
mod recent;
mod schedule;
pub mod store;

pub use lock::{DirLock, process_id};
pub use store::EmbeddedFrontier;
