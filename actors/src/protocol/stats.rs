//! Counters of a crawl, kept by the scheduler and read by the progress display, the summary and (later) metrics.

use crawl_core::record::{Outcome, Record};
use std::collections::BTreeMap;

/// A snapshot of the crawl's counters (this run only, except `known`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    pub fetched: u64,
    pub failed: u64,
    pub excluded: u64,
    /// Decoded body bytes of fetched pages.
    pub bytes: u64,
    /// Records by reason (failed and excluded).
    pub by_reason: BTreeMap<&'static str, u64>,
    /// Fetched records by status class ("2xx", "3xx", ...).
    pub by_status: BTreeMap<&'static str, u64>,
    pub queued: u64,
    pub in_flight: u64,
    pub hosts: u64,
    /// URLs the frontier knows (all runs).
    pub known: u64,
    /// URLs done in all runs (the frontier's counter, as of the last commit).
    pub total_done: u64,
    /// Pages fetched in all runs (the frontier's counter, as of the last commit).
    pub total_fetched: u64,
    /// Pending URLs picked up from an earlier run.
    pub resumed: u64,
    pub retries: u64,
    pub panics: u64,
    pub robots_fetches: u64,
    pub sitemap_fetches: u64,
    /// Sitemaps named by robots.txt (or a sitemap index) on a host outside the crawl's scope: not fetched.
    pub sitemaps_out_of_scope: u64,
    pub commits: u64,
    /// Requests to the frontier store (commits, window refills, shard polls): with Redis, each is one round trip
    /// (one pipeline) on a single server.
    pub store_requests: u64,
    pub stale_results: u64,
    /// Jobs not started because their host's shard lease ran out before the request could go out.
    pub not_started: u64,
    /// Child restarts (filled in by the supervisor).
    pub restarts: u64,
    /// The revisit schedule (continuous crawling on), as last read from the store.
    pub revisits: Option<RevisitStats>,
}

/// The revisit schedule in [`Stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RevisitStats {
    /// URLs waiting for their next visit.
    pub scheduled: u64,
    /// When the earliest is due (Unix ms); None when nothing is scheduled.
    pub next_due_ms: Option<u64>,
    /// Revisits due within the next hour (counted up to a cap).
    pub due_within_hour: u64,
}

impl Stats {
    /// Counts one record.
    pub fn count(&mut self, r: &Record) {
        match r.outcome {
            Outcome::Fetched => {
                self.fetched += 1;
                self.bytes += r.content_length.unwrap_or(0);
                if let Some(s) = r.status {
                    *self.by_status.entry(status_class(s)).or_insert(0) += 1;
                }
            }
            Outcome::Failed => self.failed += 1,
            Outcome::Excluded => self.excluded += 1,
        }
        if let Some(reason) = r.reason {
            *self.by_reason.entry(reason.as_str()).or_insert(0) += 1;
        }
    }

    /// Records written this run.
    pub fn records(&self) -> u64 {
        self.fetched + self.failed + self.excluded
    }
}

/// "1xx" .. "5xx" ("other" outside 100-599), without allocating per record.
fn status_class(status: u16) -> &'static str {
    match status / 100 {
        1 => "1xx",
        2 => "2xx",
        3 => "3xx",
        4 => "4xx",
        5 => "5xx",
        _ => "other",
    }
}
