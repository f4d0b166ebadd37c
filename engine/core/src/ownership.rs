//! Who owns a crawl's outputs. Every output a crawl writes (the data_dir with its frontier or Redis spool, the
//! JSONL, the WARC folder) belongs to one crawl: the crawl's id is made with its data_dir and kept there
//! (`crawl-id`), and written in a marker beside each output it claims (`crawl.jsonl.owner`, `warc/OWNER`) and in
//! its WARC files' `warcinfo`. A process holds each marker's lock while it runs, so a second process is refused
//! at once; a marker left by a finished crawl is judged by its crawl id.
//!
//! This module decides, without any I/O, what a crawl may do with what it finds at its paths ([`decide`],
//! [`decide_data_dir`]), and words the refusals ([`OwnershipError`]). Reading and writing the markers is the
//! stores' and the output writers' business; the binary runs the decisions before it writes a byte.
//!
//! # Layout
//! - `marker`: the marker and identity files' contents ([`Marker`], [`Identity`], [`Frontier`]) and who they name
//!   ([`Holder`]).
//! - `decide`: what is found at a path ([`Found`], [`DirFound`]) and what to do with it ([`Decision`]).
//! - `error`: the refusals ([`OwnershipError`]) and how to start over ([`StartOver`]).
//! - `aside`: where `--fresh` moves an old output ([`aside_path`]).

mod aside;
mod decide;
mod error;
mod marker;

pub use aside::aside_path;
pub use decide::{Decision, DirFound, DirState, Found, Ours, Refusal, decide, decide_data_dir};
pub use error::{FoundFrontier, Owner, OwnershipError, StartOver};
pub use marker::{Frontier, Holder, Identity, Marker, MarkerRead};

use std::fmt;
use std::path::{Path, PathBuf};

/// A crawl's identity: made once with its data_dir (random, hex), kept there, and written beside every output the
/// crawl claims.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct CrawlId(String);

impl CrawlId {
    /// A crawl id from its text: 1 to 64 ASCII letters, digits, `-`, `_` or `.`; None otherwise.
    pub fn parse(s: &str) -> Option<CrawlId> {
        let ok = !s.is_empty()
            && s.len() <= 64
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
        ok.then(|| CrawlId(s.to_owned()))
    }

    /// The id of 128 random bits, as 32 hex digits.
    pub fn from_bits(high: u64, low: u64) -> CrawlId {
        CrawlId(format!("{high:016x}{low:016x}"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CrawlId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for CrawlId {
    type Error = String;

    fn try_from(s: String) -> Result<CrawlId, String> {
        CrawlId::parse(&s).ok_or_else(|| format!("not a crawl id: {s:?}"))
    }
}

impl From<CrawlId> for String {
    fn from(id: CrawlId) -> String {
        id.0
    }
}

/// The outputs of a crawl, each named by its config key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Output {
    /// `frontier.data_dir`: the frontier (embedded), or this process's identity and spool (Redis).
    DataDir,
    /// `output.jsonl`.
    Jsonl,
    /// `output.warc_dir`.
    WarcDir,
}

impl Output {
    /// The config key.
    pub fn key(self) -> &'static str {
        match self {
            Output::DataDir => "frontier.data_dir",
            Output::Jsonl => "output.jsonl",
            Output::WarcDir => "output.warc_dir",
        }
    }

    /// What the output holds, in a sentence ("holds records").
    pub fn contents(self) -> &'static str {
        match self {
            Output::DataDir => "a frontier",
            Output::Jsonl => "records",
            Output::WarcDir => "WARC files",
        }
    }

    /// The marker file of an output at `path`: `PATH.owner` beside the JSONL, `OWNER` in the WARC folder, the
    /// identity file `crawl-id` in the data_dir.
    pub fn marker(self, path: &Path) -> PathBuf {
        match self {
            Output::DataDir => path.join("crawl-id"),
            Output::Jsonl => {
                let mut s = path.as_os_str().to_owned();
                s.push(".owner");
                PathBuf::from(s)
            }
            Output::WarcDir => path.join("OWNER"),
        }
    }
}

impl fmt::Display for Output {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

#[cfg(test)]
mod tests;
