//! Continuous crawling: what the crawl remembers of a URL's last fetch so that it can visit it again — the
//! validators a conditional request sends, and the capture a WARC `revisit` record points at — and the pure
//! arithmetic of when it comes due again ([`Policy`]), sitemap hints included, with the compact form the stores
//! keep ([`Stored`]). Nothing here reads a clock: every time is given.
//!
//! A revisit's [`Entry`](crate::frontier::Entry) carries its [`Prior`]; a first visit carries none.

mod dates;
mod policy;
mod sitemap;
mod stored;

pub use dates::{http_date, parse_http_date_s, parse_w3c_datetime_ms, rfc3339_ms};
pub use policy::{Anomaly, Fetch, MAX_ETAG_BYTES, Policy, Visit};
pub use sitemap::{Changefreq, Hint};
pub use stored::{RECRAWL_EPOCH_S, STORED_FIXED_MAX, Stored};

/// The validators of a URL's last fetch, sent back on the next visit (`If-None-Match`, `If-Modified-Since`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Validators {
    /// The `ETag` header as the server sent it (quotes and a `W/` prefix included; at most [`MAX_ETAG_BYTES`]).
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

    /// The `If-Modified-Since` value to send (an IMF-fixdate), when a Last-Modified is known.
    pub fn if_modified_since(&self) -> Option<String> {
        self.last_modified_s.map(http_date)
    }
}

/// What "the same payload as the last capture?" compares: the first 8 bytes of the xxh3 of the payload digest
/// as records write it (`sha1:` + base32). Two different payloads share a key with a chance of 2⁻⁶⁴ per
/// comparison (a changed page taken for unchanged once in 10¹⁹ revisits). A revisit record's own
/// `WARC-Payload-Digest` is computed from its body, so the full old digest is never needed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct DigestKey(pub [u8; 8]);

impl DigestKey {
    /// The key of a payload digest (`sha1:…`).
    pub fn of(digest: &str) -> DigestKey {
        DigestKey(twox_hash::XxHash3_64::oneshot(digest.as_bytes()).to_le_bytes())
    }
}

/// The last full capture of a URL's payload (a WARC `response` record), which a `revisit` record refers to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Capture {
    /// When it was fetched (Unix time in ms): the `WARC-Refers-To-Date` of a revisit.
    pub fetched_at_ms: u64,
    /// The comparison key of its payload digest (a fetch with the same key is unchanged).
    pub digest: DigestKey,
}

/// What the crawl knows of a URL's previous visit, handed to the next one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prior {
    /// How many times the URL was fetched before (1 on the first revisit).
    pub visits: u32,
    /// When the previous fetch happened (Unix time in ms).
    pub fetched_at_ms: u64,
    /// The interval the previous fetch chose (tenths of a second, before jitter), which the adaptive schedule
    /// grows or shrinks; 0 when unknown (the URL's first interval applies).
    pub interval_ds: u32,
    pub validators: Validators,
    /// The last full capture of its payload, when one was archived or digested.
    pub capture: Option<Capture>,
}
