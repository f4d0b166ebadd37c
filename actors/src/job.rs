//! The unit of work that travels through the actors: a [`Job`] goes scheduler → fetcher → parser and comes back to
//! the scheduler as a [`JobResult`] inside a `JobDone` message.

use crawl_core::frontier::Entry;
use crawl_core::politeness::HostId;
use crawl_core::record::Reason;
use crawl_core::robots::Robots;
use crawl_core::scope::ScopeVerdict;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Identifies one lease of a URL; a re-driven URL gets a new id, so late results of an abandoned lease are ignored.
pub type JobId = u64;

/// One leased URL.
#[derive(Debug, Clone)]
pub struct Job {
    pub id: JobId,
    pub host: HostId,
    pub entry: Entry,
    /// When the scheduler started it.
    pub started_at: Instant,
    /// The URL's trace; every actor the job visits adds its spans to it.
    pub trace: crawl_observability::trace::TraceCtx,
}

/// A link found in a page, canonicalised and judged against the scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundLink {
    pub url: String,
    pub host: String,
    pub verdict: ScopeVerdict,
}

/// The parsed result of a page job that got an HTTP answer.
#[derive(Debug, Clone, Default)]
pub struct PageOutcome {
    pub status: u16,
    pub content_type: Option<String>,
    /// Decoded body bytes.
    pub content_length: u64,
    pub http_version: String,
    pub elapsed_ms: u64,
    /// Link attributes found (before dedup and filtering).
    pub links_found: u32,
    /// Links to follow (nofollow removed), deduplicated within the page.
    pub links: Vec<FoundLink>,
    /// For 3xx: the canonical Location target, or why it is unusable.
    pub redirect_to: Option<Result<FoundLink, String>>,
    pub noindex: bool,
    /// The proxy chain used, or "direct" (None when no proxy is configured).
    pub proxy: Option<String>,
    /// Parsed Retry-After of a 429/503.
    pub retry_after: Option<Duration>,
    /// The body could not be used: too_large or decode.
    pub body_error: Option<(Reason, String)>,
}

/// The parsed result of a robots.txt job.
#[derive(Debug, Clone)]
pub enum RobotsOutcome {
    /// 2xx: rules (possibly empty).
    Rules(Arc<Robots>),
    /// 4xx: allow everything.
    AllowAll { status: u16 },
    /// 5xx, too many redirects or unreachable: disallow everything and retry later.
    Unavailable { detail: String },
}

/// The parsed result of a sitemap job.
#[derive(Debug, Clone, Default)]
pub struct SitemapOutcome {
    /// Page URLs (for a urlset), canonicalised and judged.
    pub pages: Vec<FoundLink>,
    /// Child sitemaps (for an index), canonical.
    pub sitemaps: Vec<String>,
    pub error: Option<String>,
}

/// How a job ended.
#[derive(Debug, Clone)]
pub enum JobResult {
    Page(Box<PageOutcome>),
    Robots(RobotsOutcome),
    Sitemap(SitemapOutcome),
    /// No HTTP answer.
    FetchFailed {
        reason: Reason,
        detail: String,
        retryable: bool,
    },
    /// A handler panicked while holding this job.
    Panicked {
        stage: &'static str,
        detail: String,
    },
}

/// Turns a caught panic payload into text.
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_owned()
    }
}
