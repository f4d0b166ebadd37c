//! What a crawl may do with what it finds at its paths, decided before anything is written: the data_dir first
//! ([`decide_data_dir`]), which tells who this crawl is ([`Ours`]), then each output ([`decide`]).

use super::CrawlId;
use super::marker::{Frontier, Holder, Identity, MarkerRead};
use crate::config::FrontierBackend;

/// What is in a data_dir, seen without writing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DirState {
    /// Absent, or nothing of a crawl in it.
    New,
    /// A frontier made before crawl ids existed (no `crawl-id`), of this backend as its files tell.
    Legacy(FrontierBackend),
    /// A crawl with its identity.
    Identified(Identity),
    /// An identity file that cannot be read.
    Unreadable,
}

/// A data_dir as found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirFound {
    pub state: DirState,
    /// A live process holds its lock: who, as the lock file and the identity say.
    pub busy: Option<Holder>,
    /// It holds files (`--fresh` moves it aside).
    pub has_files: bool,
}

/// An output (the JSONL or the WARC folder) as found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Its marker.
    pub marker: MarkerRead,
    /// A live process holds the marker's lock.
    pub busy: bool,
    /// It holds records (the JSONL) or WARC files (the WARC folder).
    pub content: bool,
}

/// What to do with an output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Nothing of another crawl is there: claim it (write this crawl's marker).
    Claim,
    /// This crawl's own: go on with it.
    Resume,
    /// Unmarked, beside a frontier made before crawl ids existed: taken as this crawl's, and marked.
    Adopt,
    /// `--fresh`: moved aside (renamed with a timestamp suffix) before the crawl starts.
    MoveAside,
    Refuse(Refusal),
}

/// Why an output is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A live process holds it.
    Busy(Holder),
    /// Another crawl's output, with something in it.
    Foreign(Holder),
    /// Records or WARC files that no crawl of this data_dir wrote (it is new): appending would mix two crawls.
    Orphan,
    /// A data_dir made for another frontier.
    OtherFrontier(Frontier),
    /// A data_dir from before crawl ids whose files are of the other backend.
    OtherBackend(FrontierBackend),
    /// A data_dir whose identity file cannot be read.
    Unreadable,
}

/// This crawl, as its data_dir tells before anything is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ours {
    /// Its id; None when the data_dir holds none yet (it is made when the crawl claims the data_dir).
    pub crawl: Option<CrawlId>,
    /// The data_dir holds a frontier from an earlier run.
    pub established: bool,
}

impl Ours {
    /// Who this crawl is, from its data_dir and what was decided for it.
    pub fn of(found: &DirFound, decision: &Decision) -> Ours {
        if *decision == Decision::MoveAside {
            return Ours {
                crawl: None,
                established: false,
            };
        }
        match &found.state {
            DirState::Identified(i) => Ours {
                crawl: Some(i.crawl.clone()),
                established: true,
            },
            DirState::Legacy(_) => Ours {
                crawl: None,
                established: true,
            },
            DirState::New | DirState::Unreadable => Ours {
                crawl: None,
                established: false,
            },
        }
    }
}

/// The data_dir: a busy one is refused, `--fresh` moves one with files aside, one made for another frontier (the
/// other backend, or another Redis crawl, whose spool it may hold) is refused.
pub fn decide_data_dir(found: &DirFound, configured: &Frontier, fresh: bool) -> Decision {
    if let Some(h) = &found.busy {
        return Decision::Refuse(Refusal::Busy(h.clone()));
    }
    if fresh && found.has_files {
        return Decision::MoveAside;
    }
    match &found.state {
        DirState::New => Decision::Claim,
        DirState::Identified(i) if i.frontier == *configured => Decision::Resume,
        DirState::Identified(i) => Decision::Refuse(Refusal::OtherFrontier(i.frontier.clone())),
        DirState::Legacy(b) if *b == configured.backend() => Decision::Adopt,
        DirState::Legacy(b) => Decision::Refuse(Refusal::OtherBackend(*b)),
        DirState::Unreadable => Decision::Refuse(Refusal::Unreadable),
    }
}

/// The JSONL or the WARC folder. A busy one is refused whatever else holds; `--fresh` moves one with content
/// aside; this crawl's own is resumed; another crawl's with content is refused (judged by its crawl id: a marker
/// left by a finished crawl holds no lock); content without a marker is this crawl's only beside a frontier made
/// before markers existed, and refused beside a new one.
pub fn decide(ours: &Ours, found: &Found, fresh: bool) -> Decision {
    if found.busy {
        return Decision::Refuse(Refusal::Busy(found.marker.holder().unwrap_or_default()));
    }
    if fresh {
        return if found.content {
            Decision::MoveAside
        } else {
            Decision::Claim
        };
    }
    if let MarkerRead::Marker(m) = &found.marker
        && ours.crawl.as_ref() == Some(&m.crawl)
    {
        return Decision::Resume;
    }
    match (found.marker.holder(), found.content) {
        (_, false) => Decision::Claim,
        (Some(holder), true) => Decision::Refuse(Refusal::Foreign(holder)),
        (None, true) if ours.established => Decision::Adopt,
        (None, true) => Decision::Refuse(Refusal::Orphan),
    }
}
