//! crawl-core: the domain core of crawl-engine, with no actors in it.
//!
//! # Layout
//! - [`config`]: the TOML configuration, raw → validated, every problem reported at once with file:line:column.
//! - [`canon`]: URL canonicalisation (WHATWG parsing, IDN, default ports, dot segments, percent-encoding).
//! - [`control`]: what operators set on a running crawl (pauses, per-host politeness) and who asked.
//! - [`scope`]: crawl scope (host, registrable domain, any), include/exclude filters, depth.
//! - [`traps`]: crawler traps (long URLs, repeated segments, calendars, session parameters, per-host budgets).
//! - [`robots`]: RFC 9309 robots.txt parsing and matching.
//! - [`frontier`]: the durable set of known URLs and the record outbox, behind the [`frontier::FrontierStore`] trait.
//! - [`politeness`]: per-host queues, depth ordering, per-host concurrency, delays, crawl-delay and backoff.
//! - [`record`]: the JSONL output record.
//! - [`output`]: where the JSONL output stands ([`output::JsonlCheckpoint`]), as the stores checkpoint it.
//! - [`ownership`]: which crawl owns each output (data_dir, JSONL, WARC folder), and what a crawl may do with what
//!   it finds at its paths.
//! - [`netaddr`]: which IP addresses are public.
//! - [`retry_after`]: Retry-After header parsing.

pub mod backoff;
pub mod canon;
pub mod config;
pub mod control;
pub mod frontier;
pub mod netaddr;
pub mod netguard;
pub mod outage;
pub mod output;
pub mod ownership;
pub mod politeness;
pub mod record;
pub mod recrawl;
pub mod retry_after;
pub mod robots;
pub mod scope;
pub mod traps;
pub mod urlparts;
