//! robots.txt and sitemap jobs: the robots.txt state of each authority (the gate of its pages), the robots.txt
//! fetches (rules, allow-all, unavailable with retries and giving up, with the DNS or proxy reason when that is
//! why), crawl-delay, rules taken over with a shard, and reading sitemaps and sitemap indexes (each once).

use super::CrawlSettings;
use super::admission::Admission;
use super::progress::{Event, Progress};
use super::windows::Windows;
use crate::protocol::{FoundLink, Job, JobResult, RobotsOutcome, SitemapOutcome};
use crate::scheduler::robots_state::{RobotsState, RobotsTable};
use crawl_core::backoff::Backoff;
use crawl_core::canon;
use crawl_core::frontier::{Entry, JobKind, SharedRobots};
use crawl_core::politeness::{Feedback, Gate, HostId};
use crawl_core::record::{DnsInfo, Reason};
use crawl_core::robots::Robots;
use crawl_observability::Attr;
use crawl_observability::metrics::metrics;
use crawl_observability::redact::redact_url;
use crawl_observability::trace::Trace;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The parts a robots.txt or sitemap job changes besides its own: the host queues (releases, delays, urgent jobs),
/// the scope (sitemaps on hosts out of scope are not fetched) and the counters.
pub(super) struct Around<'a> {
    pub windows: &'a mut Windows,
    pub admission: &'a Admission,
    pub progress: &'a mut Progress,
}

/// robots.txt rules obtained here, for the store when the crawl is shared.
pub(super) struct Obtained {
    pub host: HostId,
    pub authority: String,
    pub rules: Arc<Robots>,
}

/// The robots.txt table and the sitemaps asked for.
pub(super) struct RobotsJobs {
    table: RobotsTable,
    /// Sitemaps asked for, with when; with `reread` one is asked for again once the robots.txt cache lifetime
    /// has passed since.
    sitemaps_seen: HashMap<String, Instant>,
    /// Continuous crawling: sitemaps are read again (how new pages are found between revisits).
    reread: bool,
    respect: bool,
    cache: Duration,
    retry: Duration,
    max_attempts: u32,
    follow_sitemaps: bool,
    sitemap_max_depth: u32,
}

impl RobotsJobs {
    pub(super) fn new(settings: &CrawlSettings) -> RobotsJobs {
        RobotsJobs {
            table: RobotsTable::default(),
            sitemaps_seen: HashMap::new(),
            reread: false,
            respect: settings.respect_robots,
            cache: settings.robots_cache,
            retry: settings.robots_retry,
            max_attempts: settings.robots_max_attempts,
            follow_sitemaps: settings.follow_sitemaps,
            sitemap_max_depth: settings.sitemap_max_depth,
        }
    }

    /// Continuous crawling: a sitemap named again (robots.txt read again after its cache lifetime, or an index
    /// read again) is fetched again once that lifetime has passed since it was last asked for.
    pub(super) fn reread_sitemaps(&mut self) {
        self.reread = true;
    }

    /// True when pages wait for their robots.txt (`respect_robots`).
    pub(super) fn respected(&self) -> bool {
        self.respect
    }

    /// How long rules obtained now are obeyed.
    pub(super) fn cache(&self) -> Duration {
        self.cache
    }

    /// The gate decision for a page: `None` when robots.txt must be fetched first.
    pub(super) fn gate(&self, page_url: &str, now: Instant) -> Option<Gate> {
        self.table.gate(page_url, now)
    }

    /// The robots.txt state of a host as far as this process knows it (its https authority, else its http one).
    pub(super) fn state_of_host(&self, host: &str, now: Instant) -> crate::protocol::RobotsState {
        use crate::protocol::RobotsState;
        if !self.respect {
            return RobotsState::Ignored;
        }
        let mut state = RobotsState::Unknown;
        for scheme in ["https", "http"] {
            let page = format!("{scheme}://{host}/");
            let Ok(u) = url::Url::parse(&page) else {
                continue;
            };
            let authority = canon::authority_key(&u);
            let s = if self.table.gave_up(&page).is_some() {
                RobotsState::Unavailable
            } else if self.table.has_rules(&authority, now) {
                RobotsState::Known
            } else if self.table.is_pending(&authority) {
                RobotsState::Fetching
            } else {
                RobotsState::Unknown
            };
            if s != RobotsState::Unknown {
                return s;
            }
            state = s;
        }
        state
    }

    /// Queues a fetch of an authority's robots.txt on `host`, unless one is pending.
    pub(super) fn request(
        &mut self,
        host: HostId,
        authority: &str,
        windows: &mut Windows,
        now: Instant,
    ) {
        if !self.table.start(authority) {
            return;
        }
        let mut entry = Entry::page(format!("{authority}/robots.txt"), 0, None);
        entry.kind = JobKind::Robots;
        if let Some(job) = windows.hosts_mut().push_urgent(host, entry, now) {
            self.forget(&job);
        }
    }

    /// A robots.txt or sitemap job that will not run here (its host went to another process): whoever crawls the
    /// host next reads its robots.txt (and the sitemaps named there) itself.
    pub(super) fn forget(&mut self, job: &Entry) {
        if job.kind == JobKind::Robots
            && let Ok(u) = url::Url::parse(&job.url)
        {
            self.table.forget_pending(&canon::authority_key(&u));
        }
        tracing::debug!(url = %job.url, kind = ?job.kind, "job of a host given up");
    }

    /// Why a page's authority was given up on, if it was: the reason, DNS evidence and detail for its record.
    pub(super) fn gave_up(&self, page_url: &str) -> Option<(Reason, Option<DnsInfo>, String)> {
        self.table.gave_up(page_url)
    }

    /// A robots.txt job ended with `result` (`dns`: how its host was resolved). The host is released; rules (or
    /// allow-all) unblock its pages, an unavailable robots.txt is asked again after a doubling wait and given up
    /// on after `robots_max_attempts`. Returns the rules obtained.
    pub(super) fn on_robots(
        &mut self,
        job: Job,
        result: JobResult,
        dns: Option<DnsInfo>,
        trace: Option<&mut Trace>,
        around: Around<'_>,
        now: Instant,
    ) -> Option<Obtained> {
        let host = job.host;
        around.windows.hosts_mut().release(host, now, Feedback::Ok);
        let authority = match url::Url::parse(&job.entry.url) {
            Ok(u) => canon::authority_key(&u),
            Err(_) => return None,
        };
        // A host the network guard refused, or whose name never resolved, was sent no request.
        let requested = !matches!(
            result,
            JobResult::FetchFailed {
                reason: Reason::PrivateNetwork | Reason::Dns | Reason::DnsPolluted,
                ..
            }
        );
        if requested {
            around.progress.count(Event::RobotsFetch);
        }
        // Why the host's pages fail if robots.txt never comes: a name that never resolved is a DNS failure, a host
        // no proxy chain could reach is a proxy failure.
        let give_up_reason = match &result {
            JobResult::FetchFailed {
                reason: r @ (Reason::Dns | Reason::DnsPolluted | Reason::Proxy),
                ..
            } => *r,
            _ => Reason::RobotsUnavailable,
        };
        let outcome = match result {
            JobResult::Robots(o) => o,
            JobResult::FetchFailed {
                reason: Reason::PrivateNetwork,
                ..
            } => {
                // Pages on this host will each be recorded as private_network without any connection.
                RobotsOutcome::AllowAll { status: 0 }
            }
            JobResult::FetchFailed {
                reason: Reason::Dns,
                retryable: false,
                ..
            } => {
                // NXDOMAIN: no server, no rules to break. Each page is then recorded failed/dns (from the cache).
                RobotsOutcome::AllowAll { status: 0 }
            }
            JobResult::FetchFailed { detail, .. } => RobotsOutcome::Unavailable { detail },
            other => RobotsOutcome::Unavailable {
                detail: format!("unexpected robots result {other:?}"),
            },
        };
        let result = match &outcome {
            RobotsOutcome::Rules(_) => "rules",
            RobotsOutcome::AllowAll { .. } => "allow_all",
            RobotsOutcome::Unavailable { .. } => "unavailable",
        };
        if requested {
            metrics().robots_fetch(result);
        }
        if let Some(t) = trace {
            t.set_attributes(&[Attr::new("robots.result", result)]);
        }
        let Around {
            windows,
            admission,
            progress,
        } = around;
        match outcome {
            RobotsOutcome::Rules(rules) => {
                tracing::debug!(authority, rules = rules.rule_count(), "robots.txt loaded");
                windows
                    .hosts_mut()
                    .set_crawl_delay(host, rules.crawl_delay());
                if self.follow_sitemaps {
                    for sm in rules.sitemaps() {
                        self.request_sitemap(sm, 0, windows, admission, progress, now);
                    }
                }
                self.obey(&authority, rules.clone(), now + self.cache);
                windows.hosts_mut().unblock(host, now);
                Some(Obtained {
                    host,
                    authority,
                    rules,
                })
            }
            RobotsOutcome::AllowAll { status } => {
                tracing::debug!(authority, status, "robots.txt absent: allow all");
                let rules = Arc::new(Robots::allow_all());
                self.obey(&authority, rules.clone(), now + self.cache);
                windows.hosts_mut().unblock(host, now);
                Some(Obtained {
                    host,
                    authority,
                    rules,
                })
            }
            RobotsOutcome::Unavailable { detail } => {
                let attempts = self.table.failed(&authority);
                if attempts >= self.max_attempts {
                    tracing::warn!(
                        authority,
                        attempts,
                        detail,
                        "robots.txt unavailable; giving up on its urls"
                    );
                    self.table.set(
                        &authority,
                        RobotsState::GaveUp {
                            reason: give_up_reason,
                            dns,
                            detail: format!(
                                "robots.txt unavailable after {attempts} attempts: {detail}"
                            ),
                        },
                    );
                    windows.hosts_mut().unblock(host, now);
                } else {
                    let wait = Backoff::uncapped(self.retry).delay(attempts - 1);
                    tracing::info!(
                        authority,
                        attempts,
                        detail,
                        wait_ms = wait.as_millis() as u64,
                        "robots.txt unavailable; urls wait"
                    );
                    windows.hosts_mut().pause_until(host, now + wait);
                    let mut entry = job.entry;
                    entry.retries += 1;
                    if let Some(job) = windows.hosts_mut().push_urgent(host, entry, now) {
                        self.forget(&job);
                    }
                }
                None
            }
        }
    }

    fn obey(&mut self, authority: &str, rules: Arc<Robots>, expires: Instant) {
        self.table
            .set(authority, RobotsState::Ready { rules, expires });
    }

    /// robots.txt rules kept with gained shards: obeyed until they expire, as if fetched here (no second fetch of
    /// robots.txt). Their sitemaps are read here too (the previous owner may have gone before it could).
    pub(super) fn take_shared(
        &mut self,
        shared: Vec<SharedRobots>,
        around: Around<'_>,
        now: Instant,
    ) {
        let Around {
            windows,
            admission,
            progress,
        } = around;
        let wall_now = super::trace_metrics::unix_ms(std::time::SystemTime::now());
        for r in shared {
            if r.expires_ms <= wall_now || self.table.has_rules(&r.authority, now) {
                continue;
            }
            let Some(rules) = Robots::from_snapshot(&r.snapshot) else {
                tracing::warn!(authority = %r.authority, "unreadable robots.txt rules from the store ignored");
                continue;
            };
            let h = windows.hosts_mut().host_id(&r.host);
            windows.hosts_mut().set_crawl_delay(h, rules.crawl_delay());
            if self.follow_sitemaps {
                for sm in rules.sitemaps() {
                    self.request_sitemap(sm, 0, windows, admission, progress, now);
                }
            }
            let expires = now + Duration::from_millis(r.expires_ms - wall_now);
            self.obey(&r.authority, Arc::new(rules), expires);
            windows.hosts_mut().unblock(h, now);
            tracing::debug!(authority = %r.authority, "robots.txt rules taken over with a shard");
        }
    }

    /// Queues a sitemap (once per URL, or once per robots.txt cache lifetime with continuous crawling; not on hosts
    /// out of scope).
    fn request_sitemap(
        &mut self,
        sitemap: &str,
        depth: u32,
        windows: &mut Windows,
        admission: &Admission,
        progress: &mut Progress,
        now: Instant,
    ) {
        let Ok(u) = canon::canonicalize(sitemap) else {
            return;
        };
        let again = |at: &Instant| self.reread && now.saturating_duration_since(*at) >= self.cache;
        match self.sitemaps_seen.get(u.as_str()) {
            Some(at) if !again(at) => return,
            _ => {
                self.sitemaps_seen.insert(u.as_str().to_owned(), now);
            }
        }
        if !admission.host_in_scope(&u) {
            progress.count(Event::SitemapOutOfScope);
            tracing::info!(
                sitemap = %redact_url(u.as_str()),
                reason = "host out of scope",
                "sitemap not fetched"
            );
            return;
        }
        let mut entry = Entry::page(u.as_str(), depth, None);
        entry.kind = JobKind::Sitemap;
        let host = windows.hosts_mut().host_id(canon::host_key(&u));
        if let Some(job) = windows.hosts_mut().push_urgent(host, entry, now) {
            self.forget(&job);
        }
    }

    /// A sitemap job ended: the sitemaps it names are queued (up to `sitemap_max_depth`). Returns the pages it
    /// lists, to admit as links of the sitemap.
    pub(super) fn on_sitemap(
        &mut self,
        job: &Job,
        result: JobResult,
        around: Around<'_>,
        now: Instant,
    ) -> Vec<FoundLink> {
        let Around {
            windows,
            admission,
            progress,
        } = around;
        windows.hosts_mut().release(job.host, now, Feedback::Ok);
        progress.count(Event::SitemapFetch);
        match result {
            JobResult::Sitemap(SitemapOutcome {
                pages,
                sitemaps,
                hints: _,
                error,
            }) => {
                if let Some(e) = error {
                    metrics().parse_failure("sitemap");
                    tracing::info!(sitemap = %job.entry.url, error = %e, "sitemap unusable");
                }
                if job.entry.depth < self.sitemap_max_depth {
                    for sm in &sitemaps {
                        self.request_sitemap(
                            sm,
                            job.entry.depth + 1,
                            windows,
                            admission,
                            progress,
                            now,
                        );
                    }
                }
                pages
            }
            JobResult::FetchFailed { detail, .. } => {
                tracing::info!(sitemap = %job.entry.url, error = %detail, "sitemap fetch failed");
                Vec::new()
            }
            other => {
                tracing::info!(sitemap = %job.entry.url, result = ?other, "sitemap not read");
                Vec::new()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::crawl::tests::settings;
    use crawl_core::frontier::Counters;
    use crawl_core::politeness::{HostQueues, PolitenessPolicy, Pop};
    use crawl_core::scope::{ScopeMode, ScopePolicy};

    struct Parts {
        windows: Windows,
        admission: Admission,
        progress: Progress,
    }

    impl Parts {
        fn new() -> Parts {
            let seed = url::Url::parse("http://a.test/").unwrap();
            Parts {
                windows: Windows::new(
                    HostQueues::new(PolitenessPolicy {
                        min_delay: Duration::ZERO,
                        ..PolitenessPolicy::default()
                    }),
                    4,
                ),
                admission: Admission::new(Arc::new(ScopePolicy::new(
                    ScopeMode::Host,
                    &[seed],
                    Vec::new(),
                    Vec::new(),
                    10,
                ))),
                progress: Progress::new(Counters::default()),
            }
        }

        fn around(&mut self) -> Around<'_> {
            Around {
                windows: &mut self.windows,
                admission: &self.admission,
                progress: &mut self.progress,
            }
        }

        /// The next urgent job ready on any host.
        fn next(&mut self, now: Instant) -> Option<Job> {
            match self.windows.pop_ready(now, |_, _| Gate::Go) {
                Pop::Ready(host, entry) => Some(Job {
                    id: 1,
                    host,
                    entry,
                    started_at: now,
                    trace: Default::default(),
                    gate: None,
                }),
                _ => None,
            }
        }
    }

    fn robots_settings() -> CrawlSettings {
        CrawlSettings {
            respect_robots: true,
            robots_retry: Duration::from_secs(10),
            robots_max_attempts: 2,
            ..settings()
        }
    }

    #[test]
    fn rules_gate_pages_and_their_in_scope_sitemaps_are_queued_once() {
        let t0 = Instant::now();
        let mut p = Parts::new();
        let mut r = RobotsJobs::new(&robots_settings());
        assert!(r.respected());
        assert_eq!(r.gate("http://a.test/x", t0), None, "robots.txt first");
        let h = p.windows.hosts_mut().host_id("a.test");
        r.request(h, "http://a.test:80", &mut p.windows, t0);
        r.request(h, "http://a.test:80", &mut p.windows, t0);
        assert_eq!(p.windows.hosts().queued(), 1, "one fetch at a time");
        assert_eq!(r.gate("http://a.test/x", t0), Some(Gate::Block));
        let job = p.next(t0).expect("the robots.txt job");
        assert_eq!(job.entry.url, "http://a.test:80/robots.txt");
        let body = "User-agent: *\nDisallow: /private/\nSitemap: http://a.test/s.xml\n\
                    Sitemap: http://a.test/s.xml\nSitemap: http://b.test/s.xml\n";
        let rules = Arc::new(Robots::parse(body.as_bytes(), "crawl-engine/0.1"));
        let got = r.on_robots(
            job,
            JobResult::Robots(RobotsOutcome::Rules(rules)),
            None,
            None,
            p.around(),
            t0,
        );
        let got = got.expect("rules obtained");
        assert_eq!(got.authority, "http://a.test:80");
        assert_eq!(r.gate("http://a.test/x", t0), Some(Gate::Go));
        assert_eq!(r.gate("http://a.test/private/1", t0), Some(Gate::Drop));
        assert_eq!(
            r.gate("http://a.test/x", t0 + r.cache()),
            None,
            "expired: fetched again"
        );
        let sm = p.next(t0).expect("the sitemap");
        assert_eq!(
            (sm.entry.url.as_str(), sm.entry.kind),
            ("http://a.test/s.xml", JobKind::Sitemap)
        );
        assert!(p.next(t0).is_none(), "once, and not out of scope");
        let s = p.progress.snapshot(0, 0, 0);
        assert_eq!((s.robots_fetches, s.sitemaps_out_of_scope), (1, 1));
    }

    #[test]
    fn with_continuous_crawling_a_sitemap_is_read_again_once_per_robots_cache_lifetime() {
        // robots.txt read at t0 and again when its rules expire: the sitemap it names comes again with it only
        // with continuous crawling.
        let read_twice = |reread: bool| {
            let t0 = Instant::now();
            let mut p = Parts::new();
            let mut r = RobotsJobs::new(&robots_settings());
            if reread {
                r.reread_sitemaps();
            }
            let h = p.windows.hosts_mut().host_id("a.test");
            let mut sitemaps = Vec::new();
            for at in [t0, t0 + r.cache()] {
                r.request(h, "http://a.test:80", &mut p.windows, at);
                let job = p.next(at).expect("the robots.txt job");
                let rules = Arc::new(Robots::parse(
                    b"User-agent: *\nSitemap: http://a.test/s.xml\n",
                    "crawl-engine/0.1",
                ));
                r.on_robots(
                    job,
                    JobResult::Robots(RobotsOutcome::Rules(rules)),
                    None,
                    None,
                    p.around(),
                    at,
                );
                if let Some(j) = p.next(at) {
                    p.windows.hosts_mut().release(h, at, Feedback::Ok);
                    sitemaps.push(j.entry.url);
                }
            }
            sitemaps
        };
        assert_eq!(read_twice(false), ["http://a.test/s.xml"]);
        assert_eq!(
            read_twice(true),
            ["http://a.test/s.xml", "http://a.test/s.xml"]
        );
    }

    #[test]
    fn an_unavailable_robots_txt_is_asked_again_then_given_up_with_the_dns_reason() {
        let t0 = Instant::now();
        let mut p = Parts::new();
        let mut r = RobotsJobs::new(&robots_settings());
        let h = p.windows.hosts_mut().host_id("a.test");
        r.request(h, "http://a.test:80", &mut p.windows, t0);
        let job = p.next(t0).unwrap();
        let down = JobResult::FetchFailed {
            reason: Reason::Dns,
            detail: "servfail".into(),
            retryable: true,
        };
        assert!(
            r.on_robots(job, down.clone(), None, None, p.around(), t0)
                .is_none()
        );
        assert!(
            p.next(t0 + Duration::from_millis(9_999)).is_none(),
            "waits 10 s"
        );
        let again = p.next(t0 + Duration::from_secs(10)).expect("asked again");
        assert_eq!(again.entry.retries, 1);
        r.on_robots(again, down, None, None, p.around(), t0);
        assert_eq!(r.gate("http://a.test/x", t0), Some(Gate::Drop));
        let (reason, _, detail) = r.gave_up("http://a.test/x").expect("given up");
        assert_eq!(reason, Reason::Dns);
        assert!(detail.contains("after 2 attempts"), "{detail}");
    }

    #[test]
    fn a_forgotten_robots_job_is_asked_for_again() {
        let t0 = Instant::now();
        let mut p = Parts::new();
        let mut r = RobotsJobs::new(&robots_settings());
        let h = p.windows.hosts_mut().host_id("a.test");
        r.request(h, "http://a.test:80", &mut p.windows, t0);
        let job = p.next(t0).unwrap();
        p.windows
            .hosts_mut()
            .release(job.host, t0, Feedback::NotStarted);
        r.forget(&job.entry);
        assert_eq!(r.gate("http://a.test/x", t0), None, "no fetch pending");
        r.request(h, "http://a.test:80", &mut p.windows, t0);
        assert!(p.next(t0).is_some());
    }

    #[test]
    fn child_sitemaps_stop_at_the_depth_limit_and_pages_are_returned() {
        let t0 = Instant::now();
        let mut p = Parts::new();
        let mut r = RobotsJobs::new(&robots_settings());
        let h = p.windows.hosts_mut().host_id("a.test");
        let job = |url: &str, depth| Job {
            id: 1,
            host: h,
            entry: Entry::page(url, depth, None),
            started_at: t0,
            trace: Default::default(),
            gate: None,
        };
        let out = |child: &str| {
            JobResult::Sitemap(SitemapOutcome {
                pages: vec![FoundLink {
                    url: "http://a.test/p".into(),
                    host: "a.test".into(),
                    verdict: crawl_core::scope::ScopeVerdict::InScope,
                }],
                sitemaps: vec![child.to_owned()],
                hints: Vec::new(),
                error: None,
            })
        };
        let pages = r.on_sitemap(
            &job("http://a.test/i.xml", 0),
            out("http://a.test/c.xml"),
            p.around(),
            t0,
        );
        assert_eq!(pages.len(), 1);
        let child = p.next(t0).expect("the child sitemap");
        assert_eq!(
            (child.entry.url.as_str(), child.entry.depth),
            ("http://a.test/c.xml", 1)
        );
        r.on_sitemap(&child, out("http://a.test/g.xml"), p.around(), t0);
        assert!(p.next(t0).is_none(), "sitemap_max_depth is 1");
        assert_eq!(p.progress.snapshot(0, 0, 0).sitemap_fetches, 2);
    }
}
