//! Unit tests of [`Crawl`], driven directly (no actix) with a real `EmbeddedFrontier` in a tempdir, synthetic job
//! results and explicit instants; every check reads the committed JSONL lines back as [`Record`]s.
//! The harness plays the store actor synchronously: it commits staged batches and answers window refills before
//! every lease. This file holds the harness and the robots and sitemap tests; the child modules hold the rest:
//! `links` links, redirects and concurrency, `faults` retries, panics, limits, drain and durability, `reload` live
//! reconfiguration, `embeds` requisites, `shards` a crawl shared by many processes, `traps` crawler traps.

use super::*;
use crate::protocol::SitemapOutcome;
use crawl_core::frontier::FrontierStore;
use crawl_core::frontier::{Counters, Fp};
use crawl_core::politeness::PolitenessPolicy;
use crawl_core::record::Outcome;
use crawl_core::robots::Robots;
use crawl_core::scope::{ScopeMode, ScopeVerdict};
use crawl_store_embedded::EmbeddedFrontier;
use std::collections::HashSet;

mod embeds;
mod faults;
mod links;
mod operator;
mod reload;
mod revisits;
/// Also the home of the shard-gate test double the `Shards` part's tests use.
pub(in crate::scheduler::crawl) mod shards;
mod traps;

pub(super) fn settings() -> CrawlSettings {
    CrawlSettings {
        max_pages: 0,
        concurrency: 16,
        respect_robots: false,
        robots_cache: Duration::from_secs(3600),
        robots_retry: Duration::from_secs(10),
        robots_max_attempts: 3,
        follow_sitemaps: true,
        sitemap_max_depth: 1,
        max_retries: 2,
        retry_base: Duration::from_secs(1),
        max_attempts: 3,
        max_redirects: 2,
        commit_max_ops: 1000,
        lease_timeout: Duration::from_secs(60),
        window: 4,
    }
}

pub(super) fn policy(per_host: u32) -> PolitenessPolicy {
    PolitenessPolicy {
        per_host_concurrency: per_host,
        min_delay: Duration::ZERO,
        backoff_base: Duration::from_secs(1),
        ..PolitenessPolicy::default()
    }
}

pub(super) fn link(url: &str, verdict: ScopeVerdict) -> FoundLink {
    let u = url::Url::parse(url).unwrap();
    FoundLink {
        url: u.as_str().to_owned(),
        host: canon::host_key(&u).to_owned(),
        verdict,
    }
}

pub(super) fn inscope(urls: &[&str]) -> Vec<FoundLink> {
    urls.iter()
        .map(|u| link(u, ScopeVerdict::InScope))
        .collect()
}

pub(super) fn status(code: u16, retry_after: Option<Duration>) -> JobResult {
    JobResult::Page(Box::new(PageOutcome {
        status: code,
        content_type: Some("text/html".into()),
        content_length: 10,
        http_version: "HTTP/1.1".into(),
        elapsed_ms: 3,
        retry_after,
        ..PageOutcome::default()
    }))
}

pub(super) fn ok(links: Vec<FoundLink>) -> JobResult {
    JobResult::Page(Box::new(PageOutcome {
        status: 200,
        content_type: Some("text/html".into()),
        content_length: 100,
        http_version: "HTTP/1.1".into(),
        elapsed_ms: 5,
        links_found: links.len() as u32,
        links,
        ..PageOutcome::default()
    }))
}

pub(super) fn redirect(to: &str) -> JobResult {
    JobResult::Page(Box::new(PageOutcome {
        status: 301,
        http_version: "HTTP/1.1".into(),
        redirect_to: Some(Ok(link(to, ScopeVerdict::InScope))),
        ..PageOutcome::default()
    }))
}

pub(super) fn failed(reason: Reason, retryable: bool) -> JobResult {
    JobResult::FetchFailed {
        reason,
        detail: format!("synthetic {}", reason.as_str()),
        retryable,
    }
}

pub(super) fn panicked() -> JobResult {
    JobResult::Panicked {
        stage: "parser",
        detail: "boom".into(),
    }
}

pub(super) fn robots(body: &str) -> JobResult {
    JobResult::Robots(RobotsOutcome::Rules(Arc::new(Robots::parse(
        body.as_bytes(),
        "crawl-engine/0.1",
    ))))
}

fn unavailable() -> JobResult {
    JobResult::Robots(RobotsOutcome::Unavailable {
        detail: "503".into(),
    })
}

/// A crawl over a real store, plus the JSONL it has written so far.
pub(super) struct H {
    pub crawl: Crawl,
    pub store: EmbeddedFrontier,
    pub dir: tempfile::TempDir,
    pub t0: Instant,
    /// The JSONL: line n (1-based) is `file[n - 1]`.
    pub file: Vec<Record>,
    /// Every job leased, in order.
    pub leased: Vec<Job>,
    /// Records made durable while leasing, not yet handed to `commit`.
    pub pending: Vec<(u64, Vec<u8>)>,
}

fn open(dir: &std::path::Path) -> (EmbeddedFrontier, Resume) {
    let mut store = EmbeddedFrontier::open(dir).unwrap();
    let rec = store.recover().unwrap();
    (store, rec)
}

/// What a store in `dir` holds: every pending URL (queue order per host, hosts in the store's order) and what
/// it resumes with.
pub(super) fn stored(dir: &std::path::Path) -> (Vec<Entry>, Resume) {
    let (mut store, rec) = open(dir);
    let mut pending = Vec::new();
    for h in &rec.hosts {
        pending.extend(store.next_urls(h.fp, None, usize::MAX).unwrap());
    }
    (pending, rec)
}

pub(super) fn parse(line: &[u8]) -> Record {
    assert_eq!(line.last(), Some(&b'\n'), "a line ends with a newline");
    serde_json::from_slice(line).unwrap()
}

impl H {
    pub fn new(settings: CrawlSettings, policy: PolitenessPolicy) -> H {
        H::resume(tempfile::tempdir().unwrap(), settings, policy, Vec::new())
    }

    /// Reopens the store in `dir` the way the tree does: writes the outbox records the file lacks, trims, then
    /// builds a new crawl from the recovery.
    pub fn resume(
        dir: tempfile::TempDir,
        settings: CrawlSettings,
        policy: PolitenessPolicy,
        mut file: Vec<Record>,
    ) -> H {
        let (store, mut rec) = open(dir.path());
        let mut bytes = 0;
        for (seq, line) in std::mem::take(&mut rec.outbox) {
            if seq > file.len() as u64 {
                assert_eq!(seq, file.len() as u64 + 1, "outbox continues the file");
                file.push(parse(&line));
                bytes += line.len() as u64;
            }
        }
        let scope = Arc::new(ScopePolicy::new(
            ScopeMode::Any,
            &[],
            Vec::new(),
            Vec::new(),
            10,
        ));
        let t0 = Instant::now();
        let jsonl = JsonlCheckpoint {
            lines: file.len() as u64,
            bytes: rec.checkpoint.map_or(0, |c| c.bytes) + bytes,
        };
        let crawl = Crawl::new(
            settings,
            scope,
            HostQueues::new(policy).with_window(4),
            rec,
            jsonl,
            t0,
        );
        H {
            crawl,
            store,
            dir,
            t0,
            file,
            leased: Vec::new(),
            pending: Vec::new(),
        }
    }

    /// The crawl with continuous crawling on.
    pub fn revisiting(mut self, config: &crawl_core::config::RecrawlConfig) -> H {
        self.crawl = self.crawl.with_revisits(config);
        self
    }

    /// Drops the crawl (releasing the store's lock) and hands back the directory and the file.
    pub fn close(self) -> (tempfile::TempDir, Vec<Record>) {
        drop(self.crawl);
        drop(self.store);
        (self.dir, self.file)
    }

    /// Plays the store actor: answers every refill the windows ask for. Returns whether any was asked.
    pub fn refill(&mut self, now: Instant) -> bool {
        let reqs = self.crawl.take_refills();
        let any = !reqs.is_empty();
        for req in reqs {
            let res = self
                .store
                .next_urls(req.host, req.refill.after, req.refill.max);
            self.crawl.filled(req, res, now).unwrap();
        }
        any
    }

    /// Commits what is staged (links become queued); returns the durable records.
    pub fn sync(&mut self, now: Instant) -> Vec<(u64, Vec<u8>)> {
        let mut out = Vec::new();
        loop {
            let mut progress = self.refill(now);
            if let Some(batch) = self.crawl.take_commit(now) {
                let res = self.store.commit(batch);
                out.extend(self.crawl.commit_done(res, now).unwrap());
                progress = true;
            }
            if !progress {
                return out;
            }
        }
    }

    pub fn at(&self, ms: u64) -> Instant {
        self.t0 + Duration::from_millis(ms)
    }

    /// Adds a seed; true when the store did not know it.
    pub fn seed(&mut self, url: &str) -> bool {
        let u = canon::canonicalize(url).unwrap();
        let known = self.store.is_known(u.as_str()).unwrap();
        self.crawl.add_seed(&u);
        let records = self.sync(self.t0);
        self.pending.extend(records);
        !known
    }

    /// next_jobs at `ms` after t0, after the store answered what was staged and asked.
    pub fn lease(&mut self, ms: u64) -> (Vec<Job>, Option<Instant>) {
        let now = self.at(ms);
        let mut all = Vec::new();
        let mut wake;
        loop {
            let records = self.sync(now);
            self.pending.extend(records);
            let (jobs, w) = self.crawl.next_jobs(now);
            wake = w;
            let more = self.refill(now) || self.crawl.has_staged();
            all.extend(jobs);
            if !more {
                break;
            }
        }
        self.leased.extend(all.iter().cloned());
        (all, wake)
    }

    /// Leases and expects no job; returns the wake-up instant.
    pub fn idle(&mut self, ms: u64) -> Option<Instant> {
        let (jobs, wake) = self.lease(ms);
        assert!(jobs.is_empty(), "{jobs:?}");
        wake
    }

    /// Leases and expects exactly one job.
    pub fn one(&mut self, ms: u64) -> Job {
        let (jobs, _) = self.lease(ms);
        assert_eq!(jobs.len(), 1, "{jobs:?}");
        jobs.into_iter().next().unwrap()
    }

    pub fn done(&mut self, job: &Job, result: JobResult, ms: u64) {
        let now = self.at(ms);
        self.crawl.job_done(job.id, result, None, now);
    }

    /// Commits and returns the durable records (not written yet), checking their sequence numbers follow the file.
    pub fn commit(&mut self) -> Vec<(u64, Record)> {
        let now = self.t0;
        let mut out = std::mem::take(&mut self.pending);
        out.extend(self.sync(now));
        out.iter().map(|(seq, line)| (*seq, parse(line))).collect()
    }

    /// Tells the crawl the sink wrote records up to line `lines`.
    pub fn written(&mut self, lines: u64) {
        self.crawl.written(JsonlCheckpoint {
            lines,
            bytes: lines * 10,
        });
    }

    /// Commit, write everything to the file, acknowledge, commit the trim. Returns the new records.
    pub fn flush(&mut self) -> Vec<Record> {
        let out = self.commit();
        let mut new = Vec::new();
        for (seq, r) in out {
            assert_eq!(
                seq,
                self.file.len() as u64 + 1,
                "records are numbered by line"
            );
            self.file.push(r.clone());
            new.push(r);
        }
        self.written(self.file.len() as u64);
        let now = self.t0;
        let more = self.sync(now);
        assert!(more.is_empty(), "a checkpoint commit makes no records");
        new
    }

    /// The one record of `url` in the file (fails when there are none or several).
    pub fn record(&self, url: &str) -> &Record {
        let found: Vec<&Record> = self.file.iter().filter(|r| r.url == url).collect();
        assert_eq!(found.len(), 1, "{url}: {found:?}");
        found[0]
    }

    pub fn assert_unique(&self) {
        let mut seen = HashSet::new();
        for r in &self.file {
            assert!(seen.insert(r.url.clone()), "{} recorded twice", r.url);
        }
    }

    pub fn leased_urls(&self) -> Vec<String> {
        self.leased.iter().map(|j| j.entry.url.clone()).collect()
    }
}

fn robots_settings() -> CrawlSettings {
    CrawlSettings {
        respect_robots: true,
        ..settings()
    }
}

#[test]
fn robots_first_then_rules_crawl_delay_and_sitemaps() {
    let mut h = H::new(robots_settings(), policy(2));
    assert!(h.seed("http://a.test/"));
    assert!(h.seed("http://a.test/private/1"));
    assert!(!h.seed("http://a.test/"), "a seed is added once");

    let r = h.one(0);
    assert_eq!(r.entry.kind, JobKind::Robots);
    assert_eq!(
        url::Url::parse(&r.entry.url).unwrap().as_str(),
        "http://a.test/robots.txt"
    );
    // two slots on the host, yet no page goes while robots.txt is unknown, however long we wait
    assert!(h.lease(0).0.is_empty());
    assert!(h.lease(100_000).0.is_empty());

    h.done(
        &r,
        robots(
            "User-agent: *\nDisallow: /private/\nCrawl-delay: 5\n\
             Sitemap: http://a.test/sitemap.xml\n",
        ),
        1000,
    );
    // the sitemap goes first (urgent); the crawl-delay keeps the first page 5 s behind it
    let (jobs, wake) = h.lease(1000);
    assert_eq!(jobs.len(), 1);
    let sm = &jobs[0];
    assert_eq!(sm.entry.kind, JobKind::Sitemap);
    assert_eq!(sm.entry.url, "http://a.test/sitemap.xml");
    assert_eq!(wake, Some(h.at(6000)));
    let pages = SitemapOutcome {
        pages: inscope(&["http://a.test/from-sitemap", "http://a.test/private/2"]),
        sitemaps: Vec::new(),
        hints: Vec::new(),
        error: None,
    };
    h.done(sm, JobResult::Sitemap(pages), 1000);
    assert!(h.lease(5999).0.is_empty());

    let (jobs, wake) = h.lease(6000);
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].entry.url, "http://a.test/");
    assert_eq!(wake, Some(h.at(11_000)), "crawl-delay between two starts");
    h.done(&jobs[0], ok(Vec::new()), 6000);

    let p = h.one(11_000);
    assert_eq!(p.entry.url, "http://a.test/from-sitemap");
    assert_eq!(p.entry.depth, 1);
    assert_eq!(p.entry.parent.as_deref(), Some("http://a.test/sitemap.xml"));
    h.done(&p, ok(Vec::new()), 11_000);
    assert!(h.lease(16_000).0.is_empty());
    assert!(h.lease(60_000).0.is_empty());

    h.flush();
    for url in ["http://a.test/private/1", "http://a.test/private/2"] {
        let rec = h.record(url);
        assert_eq!(
            (rec.outcome, rec.reason),
            (Outcome::Excluded, Some(Reason::Robots))
        );
        assert_eq!((rec.status, rec.attempts), (None, 0));
    }
    assert_eq!(h.record("http://a.test/private/2").depth, 1);
    assert_eq!(h.record("http://a.test/").outcome, Outcome::Fetched);
    assert!(
        !h.leased_urls().iter().any(|u| u.contains("/private/")),
        "disallowed pages are never leased"
    );
    assert_eq!(h.file.len(), 4, "robots.txt and sitemaps are not recorded");
    assert_eq!(h.crawl.finished(), Some(FinishReason::Completed));
    let s = h.crawl.stats();
    assert_eq!((s.robots_fetches, s.sitemap_fetches), (1, 1));
}

#[test]
fn child_sitemaps_stop_at_sitemap_max_depth() {
    let mut h = H::new(robots_settings(), policy(1));
    h.seed("http://a.test/");
    let r = h.one(0);
    h.done(&r, robots("Sitemap: http://a.test/index.xml\n"), 0);
    let index = h.one(0);
    let children = SitemapOutcome {
        sitemaps: vec!["http://a.test/child.xml".into()],
        ..SitemapOutcome::default()
    };
    h.done(&index, JobResult::Sitemap(children), 0);
    let child = h.one(0);
    assert_eq!(child.entry.url, "http://a.test/child.xml");
    assert_eq!(child.entry.depth, 1);
    let deeper = SitemapOutcome {
        pages: inscope(&["http://a.test/p"]),
        sitemaps: vec!["http://a.test/grandchild.xml".into()],
        hints: Vec::new(),
        error: None,
    };
    h.done(&child, JobResult::Sitemap(deeper), 0);
    let mut urls = Vec::new();
    for _ in 0..4 {
        let (jobs, _) = h.lease(0);
        for j in jobs {
            urls.push(j.entry.url.clone());
            h.done(&j, ok(Vec::new()), 0);
        }
    }
    assert_eq!(urls, ["http://a.test/", "http://a.test/p"]);
    h.flush();
    assert_eq!(h.record("http://a.test/p").depth, 1);
    assert_eq!(h.crawl.finished(), Some(FinishReason::Completed));
}

#[test]
fn robots_unavailable_retries_with_doubling_then_gives_up() {
    let mut h = H::new(robots_settings(), policy(1));
    h.seed("http://a.test/1");
    h.seed("http://a.test/2");
    let r = h.one(0);
    h.done(&r, unavailable(), 0);
    assert_eq!(h.idle(0), Some(h.at(10_000)));
    assert!(h.lease(9_999).0.is_empty());
    let r = h.one(10_000);
    assert_eq!(r.entry.kind, JobKind::Robots, "only robots.txt goes");
    h.done(&r, unavailable(), 10_000);
    // doubled: 20 s this time
    assert_eq!(h.idle(29_999), Some(h.at(30_000)));
    let r = h.one(30_000);
    assert_eq!(r.entry.kind, JobKind::Robots);
    h.done(&r, failed(Reason::Timeout, true), 30_000);
    assert!(h.lease(30_000).0.is_empty());
    assert!(
        h.leased.iter().all(|j| j.entry.kind == JobKind::Robots),
        "no page was leased"
    );
    h.flush();
    for url in ["http://a.test/1", "http://a.test/2"] {
        let rec = h.record(url);
        assert_eq!(rec.outcome, Outcome::Failed);
        assert_eq!(rec.reason, Some(Reason::RobotsUnavailable));
    }
    assert_eq!(h.crawl.stats().robots_fetches, 3);
    assert_eq!(h.crawl.finished(), Some(FinishReason::Completed));
}

#[test]
fn robots_4xx_allows_all_and_private_network_lets_pages_fail_alone() {
    let mut h = H::new(robots_settings(), policy(1));
    h.seed("http://a.test/x");
    h.seed("http://b.test/y");
    let (jobs, _) = h.lease(0);
    assert_eq!(jobs.len(), 2);
    assert!(jobs.iter().all(|j| j.entry.kind == JobKind::Robots));
    let (ra, rb) = if jobs[0].entry.url.contains("a.test") {
        (&jobs[0], &jobs[1])
    } else {
        (&jobs[1], &jobs[0])
    };
    h.done(
        ra,
        JobResult::Robots(RobotsOutcome::AllowAll { status: 404 }),
        0,
    );
    h.done(rb, failed(Reason::PrivateNetwork, false), 0);
    let (pages, _) = h.lease(0);
    let mut urls: Vec<_> = pages.iter().map(|j| j.entry.url.as_str()).collect();
    urls.sort();
    assert_eq!(urls, ["http://a.test/x", "http://b.test/y"]);
    for j in &pages {
        let result = if j.entry.url.contains("b.test") {
            failed(Reason::PrivateNetwork, false)
        } else {
            ok(Vec::new())
        };
        h.done(j, result, 0);
    }
    h.flush();
    assert_eq!(h.record("http://a.test/x").status, Some(200));
    let b = h.record("http://b.test/y");
    assert_eq!(
        (b.outcome, b.reason, b.status),
        (Outcome::Excluded, Some(Reason::PrivateNetwork), None)
    );
    assert_eq!(h.crawl.finished(), Some(FinishReason::Completed));
    // Only a.test was asked for anything: b.test's robots.txt and page were refused before any request, and
    // only a.test's page counts as fetched, in this run and in the store's total.
    let s = h.crawl.stats();
    assert_eq!((s.robots_fetches, s.fetched, s.excluded), (1, 1, 1));
    assert_eq!(s.total_fetched, 1);
}

#[test]
fn robots_rules_expire_and_are_fetched_again() {
    let s = CrawlSettings {
        robots_cache: Duration::from_secs(60),
        ..robots_settings()
    };
    let mut h = H::new(s, policy(1));
    h.seed("http://a.test/1");
    h.seed("http://a.test/2");
    let r = h.one(0);
    h.done(&r, robots("User-agent: *\nDisallow:\n"), 0);
    let p = h.one(0);
    h.done(&p, ok(Vec::new()), 0);
    let r2 = h.one(61_000);
    assert_eq!(
        r2.entry.kind,
        JobKind::Robots,
        "cache expired: refetch first"
    );
    h.done(&r2, robots("User-agent: *\nDisallow: /2\n"), 61_000);
    assert!(h.lease(61_000).0.is_empty());
    h.flush();
    assert_eq!(h.record("http://a.test/2").reason, Some(Reason::Robots));
}
