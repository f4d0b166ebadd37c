//! A frontier entry: one URL waiting to be crawled, with what the crawl knows about how it got there.

use serde::{Deserialize, Serialize};

/// What a job does with its URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum JobKind {
    /// A page: fetched, parsed, recorded.
    #[default]
    Page,
    /// A robots.txt (not recorded).
    Robots,
    /// A sitemap or sitemap index (not recorded); `depth` counts index nesting.
    Sitemap,
}

/// A URL in the frontier.
#[derive(Debug, Clone, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Canonical URL.
    pub url: String,
    /// Link distance from a seed.
    pub depth: u32,
    /// The page that linked (or redirected to) this URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Times a handler panicked on this URL (poison counter).
    #[serde(default)]
    pub attempt: u32,
    /// Transient failures retried so far (timeouts, connect errors, 429/503).
    #[serde(default)]
    pub retries: u32,
    /// The redirect chain that led here (oldest first), empty when not reached through a redirect.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redirect_chain: Vec<String>,
    /// Discovery order, used to keep FIFO order within a depth.
    #[serde(default)]
    pub seq: u64,
    #[serde(default)]
    pub kind: JobKind,
    /// When it was last queued in this process (for the wait span of its trace); never stored.
    #[serde(skip)]
    pub queued_at: Option<std::time::Instant>,
}

/// Entries compare by what is stored; `queued_at` is bookkeeping of this process.
impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.url == o.url
            && self.depth == o.depth
            && self.parent == o.parent
            && self.attempt == o.attempt
            && self.retries == o.retries
            && self.redirect_chain == o.redirect_chain
            && self.seq == o.seq
            && self.kind == o.kind
    }
}

impl Entry {
    /// A new page entry.
    pub fn page(url: impl Into<String>, depth: u32, parent: Option<String>) -> Entry {
        Entry {
            url: url.into(),
            depth,
            parent,
            attempt: 0,
            retries: 0,
            redirect_chain: Vec::new(),
            seq: 0,
            kind: JobKind::Page,
            queued_at: None,
        }
    }

    /// Total tries so far, as reported in records.
    pub fn tries(&self) -> u32 {
        1 + self.attempt + self.retries
    }
}
