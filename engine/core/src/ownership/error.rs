//! The refusals, worded for the operator: each names the config key, the path and the holder, and says how to go
//! on: stop the other process, give this crawl its own path, or start over (every path to delete, or `--fresh`).

use super::Output;
use super::decide::Refusal;
use super::marker::{Frontier, Holder};
use crate::config::FrontierBackend;
use std::fmt;

/// How to start over: delete every output that exists, or let `--fresh` move them aside.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StartOver {
    /// The outputs that exist (data_dir, JSONL, WARC folder), as paths.
    pub paths: Vec<String>,
}

impl fmt::Display for StartOver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.paths.as_slice() {
            [] => f.write_str("to start over, run with --fresh"),
            [one] => write!(
                f,
                "to start over, delete {one}, or run with --fresh to move it aside"
            ),
            [init @ .., last] => write!(
                f,
                "to start over, delete {} and {last}, or run with --fresh to move them aside",
                init.join(", ")
            ),
        }
    }
}

/// Why a crawl may not write an output: exit status 2, before anything is written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OwnershipError {
    #[error(
        "{output}: {path} is in use by another crawl-engine process ({holder}); stop it, or give this crawl its own \
         {output}"
    )]
    Busy {
        output: Output,
        path: String,
        holder: Holder,
    },
    #[error(
        "{output}: {path} belongs to {owner}; give this crawl its own {output}, or {start_over}"
    )]
    Foreign {
        output: Output,
        path: String,
        owner: Owner,
        start_over: StartOver,
    },
    #[error(
        "{output}: {path} holds {} that no crawl in frontier.data_dir {data_dir} wrote (it holds no crawl yet), and \
         crawl-engine never appends one crawl to another's; to continue the crawl that wrote them, point \
         frontier.data_dir at its data_dir; {start_over}",
        output.contents()
    )]
    Orphan {
        output: Output,
        path: String,
        data_dir: String,
        start_over: StartOver,
    },
    #[error(
        "frontier.data_dir: {path} holds {found}, but this config's frontier is {configured}; give this crawl its \
         own frontier.data_dir, or {start_over}"
    )]
    OtherFrontier {
        path: String,
        found: FoundFrontier,
        configured: Frontier,
        start_over: StartOver,
    },
    #[error(
        "frontier.data_dir: {path}/crawl-id, the crawl's identity, cannot be read; restore it, or {start_over}"
    )]
    Unreadable { path: String, start_over: StartOver },
}

/// Who owns an output refused as another crawl's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// A crawl with another data_dir (or an unreadable marker).
    Other(Holder),
    /// An earlier crawl in this very data_dir path, since deleted or replaced.
    Earlier(Holder),
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Owner::Other(h) => write!(f, "another crawl ({h})"),
            Owner::Earlier(h) => {
                let crawl = h
                    .crawl
                    .as_ref()
                    .map(|c| format!(" (crawl {c})"))
                    .unwrap_or_default();
                let dir = h.data_dir.as_deref().unwrap_or("its data_dir");
                write!(
                    f,
                    "an earlier crawl{crawl} whose frontier.data_dir {dir} was deleted or replaced since"
                )
            }
        }
    }
}

/// The frontier a refused data_dir holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FoundFrontier {
    /// As its identity says.
    Identified(Frontier),
    /// As the files of a data_dir from before crawl ids tell.
    Legacy(FrontierBackend),
}

impl fmt::Display for FoundFrontier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FoundFrontier::Identified(fr) => fr.fmt(f),
            FoundFrontier::Legacy(b) => write!(f, "a frontier of backend = \"{}\"", b.as_str()),
        }
    }
}

impl OwnershipError {
    /// The refusal of `output` at `path`, worded for this crawl (`data_dir`: its data_dir; `configured`: its
    /// frontier; `start_over`: its outputs that exist).
    pub fn new(
        output: Output,
        path: &str,
        refusal: Refusal,
        data_dir: &str,
        configured: &Frontier,
        start_over: StartOver,
    ) -> OwnershipError {
        let path = path.to_owned();
        match refusal {
            Refusal::Busy(holder) => OwnershipError::Busy {
                output,
                path,
                holder,
            },
            Refusal::Foreign(holder) => OwnershipError::Foreign {
                output,
                path,
                owner: if holder.data_dir.as_deref() == Some(data_dir) {
                    Owner::Earlier(holder)
                } else {
                    Owner::Other(holder)
                },
                start_over,
            },
            Refusal::Orphan => OwnershipError::Orphan {
                output,
                path,
                data_dir: data_dir.to_owned(),
                start_over,
            },
            Refusal::OtherFrontier(found) => OwnershipError::OtherFrontier {
                path,
                found: FoundFrontier::Identified(found),
                configured: configured.clone(),
                start_over,
            },
            Refusal::OtherBackend(b) => OwnershipError::OtherFrontier {
                path,
                found: FoundFrontier::Legacy(b),
                configured: configured.clone(),
                start_over,
            },
            Refusal::Unreadable => OwnershipError::Unreadable { path, start_over },
        }
    }

    /// The output refused.
    pub fn output(&self) -> Output {
        match self {
            OwnershipError::Busy { output, .. }
            | OwnershipError::Foreign { output, .. }
            | OwnershipError::Orphan { output, .. } => *output,
            OwnershipError::OtherFrontier { .. } | OwnershipError::Unreadable { .. } => {
                Output::DataDir
            }
        }
    }
}
