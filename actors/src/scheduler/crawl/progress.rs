//! The crawl's progress: this run's counters (records by outcome, reason and status, retries, panics, store
//! requests, ...), the pages done toward `max_pages`, and the store's counters as last read (URLs known, pending,
//! done).

use crate::protocol::Stats;
use crawl_core::frontier::Counters;
use crawl_core::record::Record;

/// Something that happened once, counted in [`Stats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Event {
    /// A result for a job no longer leased.
    StaleResult,
    Retry,
    Panic,
    RobotsFetch,
    SitemapFetch,
    /// A sitemap on a host out of scope, not fetched.
    SitemapOutOfScope,
    Commit,
    /// A request to the frontier store.
    StoreRequest,
    /// A job the fetcher did not start (its shard lease ran out).
    NotStarted,
}

/// Counters of the crawl, and the store's as of the last commit or shard poll.
#[derive(Debug)]
pub(super) struct Progress {
    stats: Stats,
    /// Pages fetched (their server answered), all runs (toward `max_pages`).
    pages_done: u64,
    counters: Counters,
}

impl Progress {
    /// Progress resumed from the store's counters.
    pub(super) fn new(counters: Counters) -> Progress {
        Progress {
            stats: Stats {
                resumed: counters.pending,
                known: counters.known,
                ..Stats::default()
            },
            pages_done: counters.pages_fetched,
            counters,
        }
    }

    pub(super) fn count(&mut self, event: Event) {
        let s = &mut self.stats;
        let n = match event {
            Event::StaleResult => &mut s.stale_results,
            Event::Retry => &mut s.retries,
            Event::Panic => &mut s.panics,
            Event::RobotsFetch => &mut s.robots_fetches,
            Event::SitemapFetch => &mut s.sitemap_fetches,
            Event::SitemapOutOfScope => &mut s.sitemaps_out_of_scope,
            Event::Commit => &mut s.commits,
            Event::StoreRequest => &mut s.store_requests,
            Event::NotStarted => &mut s.not_started,
        };
        *n += 1;
    }

    /// Counts a record; a fetched page's counts toward `max_pages`.
    pub(super) fn record(&mut self, record: &Record, fetched_page: bool) {
        self.stats.count(record);
        if fetched_page {
            self.pages_done += 1;
        }
    }

    /// `max_pages` counts this run's fetches only (continuous crawling: a crawl that runs for ever revisits).
    pub(super) fn count_this_run(&mut self) {
        self.pages_done = 0;
    }

    /// `n` scheduled URLs came due and are pending again (the store's counters, kept in step until its next
    /// commit reports them).
    pub(super) fn promoted(&mut self, n: u64) {
        self.counters.pending += n;
        self.counters.scheduled = self.counters.scheduled.saturating_sub(n);
    }

    /// True when `max_pages` (0: no limit) pages are done or leased (`leased` of them).
    pub(super) fn limit_reached(&self, max_pages: u64, leased: u64) -> bool {
        max_pages > 0 && self.pages_done + leased >= max_pages
    }

    /// The store's counters, as of the last commit (or shard poll in a shared crawl).
    pub(super) fn counters(&self) -> &Counters {
        &self.counters
    }

    pub(super) fn set_counters(&mut self, counters: Counters) {
        self.counters = counters;
        self.stats.known = counters.known;
    }

    /// URLs waiting: pending in the store (`leased` page jobs aside), or at least those `queued_here`.
    pub(super) fn queued(&self, leased: u64, queued_here: u64) -> u64 {
        self.counters
            .pending
            .saturating_sub(leased)
            .max(queued_here)
    }

    /// A snapshot of the counters, with the gauges of the moment.
    pub(super) fn snapshot(&self, queued: u64, in_flight: u64, hosts: u64) -> Stats {
        let mut s = self.stats.clone();
        s.queued = queued;
        s.in_flight = in_flight;
        s.hosts = hosts;
        s.known = self.counters.known;
        s.total_done = self.counters.done;
        s.total_fetched = self.counters.pages_fetched;
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crawl_core::record::{Outcome, Reason};

    fn counters(pending: u64, known: u64, done: u64, pages_fetched: u64) -> Counters {
        Counters {
            pending,
            known,
            done,
            pages_fetched,
            scheduled: 0,
        }
    }

    #[test]
    fn resumed_counters_start_the_progress_and_pages_count_toward_the_limit() {
        let mut p = Progress::new(counters(3, 10, 7, 5));
        assert!(!p.limit_reached(0, 1000), "0: no limit");
        assert!(!p.limit_reached(8, 2), "5 done and 2 leased");
        assert!(p.limit_reached(8, 3));
        let fetched = Record::terminal("http://a.test/", 0, None, Reason::Scope, None);
        p.record(&fetched, false);
        assert!(
            !p.limit_reached(8, 2),
            "a record without a fetch does not count"
        );
        p.record(&fetched, true);
        assert!(p.limit_reached(8, 2));
        let s = p.snapshot(4, 2, 1);
        assert_eq!(
            (s.resumed, s.known, s.total_done, s.total_fetched),
            (3, 10, 7, 5)
        );
        assert_eq!((s.queued, s.in_flight, s.hosts), (4, 2, 1));
        assert_eq!((s.excluded, s.records()), (2, 2));
        assert_eq!(s.by_reason.get("scope"), Some(&2));
        assert_eq!(fetched.outcome, Outcome::Excluded);
    }

    #[test]
    fn events_count_each_their_own_counter() {
        let mut p = Progress::new(Counters::default());
        for e in [
            Event::StaleResult,
            Event::Retry,
            Event::Retry,
            Event::Panic,
            Event::RobotsFetch,
            Event::SitemapFetch,
            Event::SitemapOutOfScope,
            Event::Commit,
            Event::StoreRequest,
            Event::StoreRequest,
            Event::StoreRequest,
            Event::NotStarted,
        ] {
            p.count(e);
        }
        let s = p.snapshot(0, 0, 0);
        assert_eq!(
            (
                s.stale_results,
                s.retries,
                s.panics,
                s.robots_fetches,
                s.sitemap_fetches,
                s.sitemaps_out_of_scope,
                s.commits,
                s.store_requests,
                s.not_started
            ),
            (1, 2, 1, 1, 1, 1, 1, 3, 1)
        );
    }

    #[test]
    fn queued_is_the_store_s_pending_less_leases_or_what_waits_here() {
        let mut p = Progress::new(counters(10, 20, 0, 0));
        assert_eq!(p.queued(4, 0), 6);
        assert_eq!(p.queued(4, 9), 9, "robots.txt and sitemap jobs wait here");
        assert_eq!(p.queued(12, 0), 0);
        p.set_counters(counters(1, 30, 29, 29));
        assert_eq!(p.counters().known, 30);
        assert_eq!(p.snapshot(0, 0, 0).known, 30);
        assert_eq!(p.queued(0, 0), 1);
    }
}
