//! Continuous crawling in the scheduler (`[recrawl]`): what a fetch decides for its URL's next visit (the record's
//! revisit fields and the schedule entry staged with its finish), the per-host revisit budget, the sitemap hints
//! waiting for the store, and the schedule's outlook as last read from the store.
//!
//! A URL is scheduled again when it was fetched or tried (a page or a requisite, whatever the answer), or dropped
//! by robots.txt (looked at again after `max_interval_s`: the rules may change); a URL that left the scope is not. The arithmetic is
//! [`crawl_core::recrawl::Policy`]'s.

use crawl_core::config::RecrawlConfig;
use crawl_core::frontier::{Entry, Outlook, Rescheduled, SitemapHint};
use crawl_core::politeness::HostId;
use crawl_core::record::{Reason, Record};
use crawl_core::recrawl::{Anomaly, Fetch, Policy, Stored};
use crawl_observability::metrics::metrics;
use crawl_observability::redact::redact_url;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Sitemap hints waiting for the store, at most (a sitemap lists at most 50,000 URLs; more wait for the next).
const MAX_HINTS: usize = 100_000;

/// What a fetch's answer said that the schedule needs, taken from the page outcome before it becomes a record.
#[derive(Debug, Clone, Default)]
pub(super) struct Seen {
    pub status: u16,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    /// The response's `Date`.
    pub date: Option<String>,
    /// The payload digest of a full body.
    pub digest: Option<String>,
    /// When the request was sent (Unix ms).
    pub requested_at_ms: u64,
}

/// A host's revisit budget: a bucket of `per_minute` starts, refilled continuously.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Continuous crawling's state in the scheduler.
#[derive(Debug)]
pub(super) struct Revisits {
    policy: Policy,
    per_minute: u32,
    buckets: HashMap<HostId, Bucket>,
    hints: Vec<SitemapHint>,
    outlook: Outlook,
}

impl Revisits {
    pub(super) fn new(config: &RecrawlConfig) -> Revisits {
        Revisits {
            policy: Policy::new(config),
            per_minute: config.host_revisits_per_minute,
            buckets: HashMap::new(),
            hints: Vec::new(),
            outlook: Outlook::default(),
        }
    }

    /// A reload: the new intervals apply from the next fetch of each URL (what is scheduled keeps its due time).
    pub(super) fn reconfigure(&mut self, config: &RecrawlConfig) {
        self.policy = Policy::new(config);
        self.per_minute = config.host_revisits_per_minute;
        self.buckets.clear();
    }

    pub(super) fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Whether a URL recorded with `record` comes due again.
    fn schedules(entry: &Entry, record: &Record) -> bool {
        entry.kind.is_fetched()
            && !matches!(
                record.reason,
                Some(Reason::Scope | Reason::Filter | Reason::Depth)
            )
            && record
                .reason
                .is_none_or(|r| crawl_core::frontier::TrapKind::from_reason(r).is_none())
    }

    /// What the fetch of `entry` (`seen`, None when no answer came) at `now_ms` decides: the record gets its
    /// revisit fields, and the returned entry goes to the store with the URL's finish. None when the URL is not
    /// scheduled again.
    pub(super) fn decide(
        &mut self,
        entry: &Entry,
        record: &mut Record,
        seen: Option<&Seen>,
        now_ms: u64,
    ) -> Option<Rescheduled> {
        if !Self::schedules(entry, record) {
            return None;
        }
        let fetch = match seen {
            Some(s) => Fetch {
                status: s.status,
                etag: s.etag.as_deref(),
                last_modified: s.last_modified.as_deref(),
                date: s.date.as_deref(),
                digest: s.digest.as_deref(),
                now_ms: if s.requested_at_ms > 0 {
                    s.requested_at_ms
                } else {
                    now_ms
                },
            },
            None => Fetch {
                now_ms,
                ..Fetch::default()
            },
        };
        let mut visit = self
            .policy
            .visit(&entry.url, entry.prior.as_deref(), &fetch);
        if record.reason == Some(Reason::Robots) {
            // Disallowed now: looked at again rarely (the rules may change), not at the page's pace.
            visit.next_due_ms = now_ms.saturating_add(self.policy.max_s().saturating_mul(1000));
        }
        for a in &visit.anomalies {
            note(*a, &entry.url);
        }
        record.revisit = Some(visit.record_fields());
        Some(Rescheduled {
            id: entry.id,
            host: entry.host,
            url: entry.url.clone(),
            depth: entry.depth,
            kind: entry.kind,
            stored: Stored {
                next_due_ms: visit.next_due_ms,
                prior: visit.prior,
            },
        })
    }

    /// Takes one revisit start from `host`'s budget at `now`; Err(when the next one is available) when spent.
    pub(super) fn take(&mut self, host: HostId, now: Instant) -> Result<(), Instant> {
        if self.per_minute == 0 {
            return Ok(());
        }
        let cap = f64::from(self.per_minute);
        let per_s = cap / 60.0;
        let b = self.buckets.entry(host).or_insert(Bucket {
            tokens: cap,
            at: now,
        });
        let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
        b.tokens = (b.tokens + elapsed * per_s).min(cap);
        b.at = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            return Ok(());
        }
        let wait = (1.0 - b.tokens) / per_s;
        Err(now + Duration::from_secs_f64(wait.max(0.001)))
    }

    /// Hints of a sitemap just read, for the store.
    pub(super) fn hint(&mut self, hints: Vec<SitemapHint>) {
        let room = MAX_HINTS.saturating_sub(self.hints.len());
        if hints.len() > room {
            tracing::debug!(
                dropped = hints.len() - room,
                "sitemap hints over the cap; the rest wait for the next read"
            );
        }
        self.hints.extend(hints.into_iter().take(room));
    }

    /// The hints waiting for the store.
    pub(super) fn take_hints(&mut self) -> Vec<SitemapHint> {
        std::mem::take(&mut self.hints)
    }

    /// The store's schedule as last read.
    pub(super) fn set_outlook(&mut self, outlook: Outlook) {
        self.outlook = outlook;
    }

    pub(super) fn outlook(&self) -> Outlook {
        self.outlook
    }
}

/// Logs and counts something odd a fetch or a sitemap said.
pub(super) fn note(a: Anomaly, url: &str) {
    metrics().recrawl_anomaly(a.as_str());
    tracing::debug!(url = %redact_url(url), anomaly = a.as_str(), "recrawl anomaly");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crawl_core::frontier::{JobKind, UrlRef};
    use crawl_core::recrawl::{Prior, Validators};

    fn config() -> RecrawlConfig {
        RecrawlConfig {
            enabled: true,
            interval: Duration::from_secs(600),
            min_interval: Duration::from_secs(60),
            host_revisits_per_minute: 2,
            ..RecrawlConfig::default()
        }
    }

    fn entry(prior: Option<Prior>) -> Entry {
        let mut e = Entry::page("http://a.test/p", 1, None);
        e.id = UrlRef { key: 9, slot: 0 };
        e.host = 77;
        e.prior = prior.map(Box::new);
        e
    }

    fn fetched() -> Record {
        let mut r = Record::terminal("http://a.test/p", 1, None, Reason::Scope, None);
        r.reason = None;
        r.outcome = crawl_core::record::Outcome::Fetched;
        r
    }

    const NOW: u64 = 1_796_083_200_000;

    #[test]
    fn a_first_fetch_is_visit_one_and_comes_due_after_the_first_interval() {
        let mut r = Revisits::new(&config());
        let mut rec = fetched();
        let seen = Seen {
            status: 200,
            etag: Some("\"v1\"".into()),
            digest: Some("sha1:AAAA".into()),
            requested_at_ms: NOW,
            ..Seen::default()
        };
        let s = r
            .decide(&entry(None), &mut rec, Some(&seen), NOW + 50)
            .expect("scheduled");
        let v = rec.revisit.expect("fields");
        assert_eq!((v.visit, v.changed, v.previous_fetched_at), (1, None, None));
        assert_eq!(
            (s.id.key, s.host, s.depth, s.kind),
            (9, 77, 1, JobKind::Page)
        );
        let due = s.stored.next_due_ms - NOW;
        assert!((570_000..=630_000).contains(&due), "600 s ± 5 %: {due}");
        assert_eq!(s.stored.prior.validators.etag.as_deref(), Some("\"v1\""));
        assert_eq!(s.stored.prior.fetched_at_ms, NOW, "the request's time");
    }

    #[test]
    fn a_304_is_an_unchanged_revisit_that_keeps_the_capture() {
        let mut r = Revisits::new(&config());
        let prior = Prior {
            visits: 1,
            fetched_at_ms: NOW - 600_000,
            interval_ds: 6_000,
            validators: Validators {
                etag: Some("\"v1\"".into()),
                last_modified_s: None,
            },
            capture: None,
        };
        let mut rec = fetched();
        let seen = Seen {
            status: 304,
            requested_at_ms: NOW,
            ..Seen::default()
        };
        let s = r
            .decide(&entry(Some(prior)), &mut rec, Some(&seen), NOW)
            .expect("scheduled");
        let v = rec.revisit.expect("fields");
        assert_eq!((v.visit, v.changed), (2, Some(false)));
        assert_eq!(s.stored.prior.interval_ds, 7_200, "grown by 20 %");
        assert_eq!(s.stored.prior.validators.etag.as_deref(), Some("\"v1\""));
    }

    #[test]
    fn urls_that_left_the_scope_or_are_not_pages_are_not_scheduled() {
        let mut r = Revisits::new(&config());
        let mut out = Record::terminal("http://a.test/p", 1, None, Reason::Scope, None);
        assert!(r.decide(&entry(None), &mut out, None, NOW).is_none());
        assert!(out.revisit.is_none());
        let mut robots = Record::terminal("http://a.test/p", 1, None, Reason::Robots, None);
        let s = r.decide(&entry(None), &mut robots, None, NOW);
        let s = s.expect("robots.txt may allow it later");
        assert_eq!(
            s.stored.next_due_ms,
            NOW + RecrawlConfig::default().max_interval.as_secs() * 1000,
            "looked at again after the longest interval"
        );
        let mut sitemap = entry(None);
        sitemap.kind = JobKind::Sitemap;
        assert!(r.decide(&sitemap, &mut fetched(), None, NOW).is_none());
    }

    #[test]
    fn the_host_budget_allows_per_minute_revisits_and_refills() {
        let mut r = Revisits::new(&config());
        let t = Instant::now();
        assert!(r.take(1, t).is_ok());
        assert!(r.take(1, t).is_ok());
        let next = r.take(1, t).expect_err("spent");
        assert_eq!(next - t, Duration::from_secs(30), "one start every 30 s");
        assert!(r.take(2, t).is_ok(), "another host has its own");
        assert!(r.take(1, t + Duration::from_secs(29)).is_err());
        assert!(r.take(1, t + Duration::from_secs(31)).is_ok());
        let mut off = config();
        off.host_revisits_per_minute = 0;
        r.reconfigure(&off);
        for _ in 0..100 {
            assert!(r.take(1, t).is_ok(), "0: no limit");
        }
    }

    #[test]
    fn a_reload_applies_from_the_next_fetch() {
        let mut r = Revisits::new(&config());
        let due = |r: &mut Revisits| {
            let s = r
                .decide(&entry(None), &mut fetched(), None, NOW)
                .expect("scheduled");
            s.stored.next_due_ms - NOW
        };
        assert!(due(&mut r) <= 630_000);
        let mut longer = config();
        longer.interval = Duration::from_secs(3_600);
        r.reconfigure(&longer);
        assert!(due(&mut r) >= 3_420_000, "the new first interval");
    }

    #[test]
    fn hints_wait_for_the_store_up_to_a_cap() {
        let mut r = Revisits::new(&config());
        let h = |i: usize| SitemapHint {
            url: format!("http://a.test/{i}"),
            lastmod: Some("2026-12-01".into()),
            changefreq: None,
        };
        r.hint((0..MAX_HINTS + 5).map(h).collect());
        assert_eq!(r.take_hints().len(), MAX_HINTS);
        assert!(r.take_hints().is_empty());
    }
}
