//! crawl-output: the files the crawler writes, on top of crawl-core's records.
//!
//! # Layout
//! - [`jsonl`]: the JSONL file (torn-line repair, line counting, appends, reopening at a checkpoint).
//! - [`owner`]: the markers of the JSONL and the WARC folder: which crawl claimed them, locked while it runs.
//! - [`warc`]: the WARC 1.1 archive (records, rotating `.warc.gz` files, checkpoints, torn-tail repair, a reader).

pub mod jsonl;
pub mod owner;
pub mod warc;
