//! What the marker and identity files say: the crawl that claimed an output ([`Marker`]), the crawl a data_dir
//! holds ([`Identity`]), and who they name in a message ([`Holder`]).

use super::CrawlId;
use crate::config::{FrontierBackend, FrontierConfig};
use std::fmt;

/// The marker a crawl writes beside an output it claims (`crawl.jsonl.owner`, `warc/OWNER`): which crawl, from
/// which data_dir, and the process that claimed it last. One JSON object.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Marker {
    pub crawl: CrawlId,
    /// The claiming crawl's data_dir.
    pub data_dir: String,
    /// The process that claimed it last (it holds the marker's lock while it runs).
    pub pid: u32,
}

/// What a marker file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MarkerRead {
    /// No marker, or an empty one (a claim cut short before it wrote anything).
    Empty,
    Marker(Marker),
    /// Something that is not a marker: it belongs to no crawl this build can name.
    Unreadable,
}

impl Marker {
    /// The file's bytes: one JSON line.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec(self).unwrap_or_default();
        v.push(b'\n');
        v
    }

    /// Reads a marker file's bytes.
    pub fn read(bytes: &[u8]) -> MarkerRead {
        if bytes.trim_ascii().is_empty() {
            return MarkerRead::Empty;
        }
        match serde_json::from_slice(bytes) {
            Ok(m) => MarkerRead::Marker(m),
            Err(_) => MarkerRead::Unreadable,
        }
    }
}

impl MarkerRead {
    /// Who the marker names; None without one.
    pub fn holder(&self) -> Option<Holder> {
        match self {
            MarkerRead::Empty => None,
            MarkerRead::Marker(m) => Some(Holder::from(m)),
            MarkerRead::Unreadable => Some(Holder::default()),
        }
    }
}

/// The frontier a data_dir was made for.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "backend", rename_all = "lowercase")]
pub enum Frontier {
    /// The embedded store in the data_dir itself.
    Embedded,
    /// A process of the Redis crawl named `crawl` (`frontier.redis.crawl`): the data_dir holds its identity in
    /// that crawl and its spool of commits for it.
    Redis {
        #[serde(rename = "redis_crawl")]
        crawl: String,
    },
}

impl Frontier {
    /// The frontier a config names.
    pub fn of(config: &FrontierConfig) -> Frontier {
        match config.backend {
            FrontierBackend::Embedded => Frontier::Embedded,
            FrontierBackend::Redis => Frontier::Redis {
                crawl: config.redis.crawl.clone(),
            },
        }
    }

    /// The backend alone.
    pub fn backend(&self) -> FrontierBackend {
        match self {
            Frontier::Embedded => FrontierBackend::Embedded,
            Frontier::Redis { .. } => FrontierBackend::Redis,
        }
    }
}

impl fmt::Display for Frontier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Frontier::Embedded => f.write_str("the embedded frontier (backend = \"embedded\")"),
            Frontier::Redis { crawl } => {
                write!(
                    f,
                    "a process of the Redis crawl {crawl:?} (backend = \"redis\")"
                )
            }
        }
    }
}

/// What a data_dir says about the crawl it holds (`data_dir/crawl-id`): one JSON object.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Identity {
    pub crawl: CrawlId,
    #[serde(flatten)]
    pub frontier: Frontier,
}

impl Identity {
    /// The file's bytes: one JSON line.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec(self).unwrap_or_default();
        v.push(b'\n');
        v
    }

    /// Reads an identity file's bytes; None when they are not one.
    pub fn read(bytes: &[u8]) -> Option<Identity> {
        serde_json::from_slice(bytes).ok()
    }
}

/// Who holds an output now (a live process) or claimed it last, as far as its marker and lock tell.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Holder {
    pub crawl: Option<CrawlId>,
    pub data_dir: Option<String>,
    pub pid: Option<u32>,
}

impl From<&Marker> for Holder {
    fn from(m: &Marker) -> Holder {
        Holder {
            crawl: Some(m.crawl.clone()),
            data_dir: Some(m.data_dir.clone()),
            pid: Some(m.pid),
        }
    }
}

/// `pid 12, crawl 3f.., data_dir /x` with the parts known; `no readable marker` when none is.
impl fmt::Display for Holder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(p) = self.pid {
            parts.push(format!("pid {p}"));
        }
        if let Some(c) = &self.crawl {
            parts.push(format!("crawl {c}"));
        }
        if let Some(d) = &self.data_dir {
            parts.push(format!("data_dir {d}"));
        }
        if parts.is_empty() {
            f.write_str("no readable marker")
        } else {
            f.write_str(&parts.join(", "))
        }
    }
}
