//! crawl-actors: the actors of crawl-engine.
//!
//! # Layout
//! One folder per actor: `actor.rs` (actix glue), `messages.rs` (one struct per message), `error.rs`, and the pure
//! logic the tests call without starting actors.
//! - [`supervisor`]: the root supervisor (restarts with backoff, escalation).
//! - [`scheduler`]: frontier, robots.txt state, politeness; leases jobs and group-commits results.
//! - [`fetcher`]: HTTP(S) with deadlines and limits.
//! - [`parser`]: decoding, link extraction, robots.txt and sitemaps, on a thread pool.
//! - [`sink`]: the JSONL output, exactly once.
//! - [`shipper`]: the `[[sinks]]` beyond it (Kafka, PostgreSQL, object storage), each from its own checkpoint, with
//!   backpressure on fetching.
//! - [`proxy`]: SOCKS5 proxy chains: rules, selection, breakers, the chain handshake.
//! - [`faults`]: the fault-injection test hook; [`fatal`]: panics that end the process.
//! - [`job`]: the text of a caught panic.
//! - [`protocol`]: the job, its results and every message that travels between them, with the types they carry.
//! - [`tree`] wires them together and is all that the binary talks to: it starts the tree, applies config reloads
//!   to it part by part, and reads its counters.

pub mod backoff;
pub mod fatal;
pub mod faults;
pub mod fetcher;
pub mod job;
pub mod live;
pub mod parser;
pub mod protocol;
pub mod proxy;
#[cfg(test)]
mod recorder;
pub mod resolver;
pub mod scheduler;
pub mod shipper;
pub mod sink;
pub mod store;
pub mod supervisor;
pub mod tree;
