//! Continuous crawling: what the crawl remembers of a URL's last fetch so that it can visit it again — the
//! validators a conditional request sends, and the capture a WARC `revisit` record points at.
//!
//! A revisit's [`Entry`](crate::frontier::Entry) carries its [`Prior`]; a first visit carries none.

/// The validators of a URL's last fetch, sent back on the next visit (`If-None-Match`, `If-Modified-Since`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Validators {
    /// The `ETag` header as the server sent it (quotes and a `W/` prefix included).
    pub etag: Option<String>,
    /// The `Last-Modified` header as a Unix time in seconds (HTTP dates have second precision, so it is sent back
    /// exactly); None when absent, unparseable, or later than the fetch.
    pub last_modified_s: Option<u64>,
}

impl Validators {
    /// True when a conditional request can be made.
    pub fn is_empty(&self) -> bool {
        self.etag.is_none() && self.last_modified_s.is_none()
    }
}

/// The last full capture of a URL's payload (a WARC `response` record), which a `revisit` record refers to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Capture {
    /// When it was fetched (Unix time in ms): the `WARC-Refers-To-Date` of a revisit.
    pub fetched_at_ms: u64,
    /// Its payload digest as records and WARC headers write it (`sha1:` + base32).
    pub digest: String,
}

/// What the crawl knows of a URL's previous visit, handed to the next one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prior {
    /// How many times the URL was fetched before (1 on the first revisit).
    pub visits: u32,
    /// When the previous fetch happened (Unix time in ms).
    pub fetched_at_ms: u64,
    pub validators: Validators,
    /// The last full capture of its payload, when one was archived or digested.
    pub capture: Option<Capture>,
}
