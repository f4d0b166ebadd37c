//! The scheduler's state machine, without actix: a coordinator over the parts of a crawl, following the life of a
//! job: a link is admitted (scope and traps) and staged, the store queues it, a host window reads it, it is leased
//! when politeness, robots.txt and the host's shard let it start, its result makes a record (or queues it again),
//! and the record is committed with the group commit and written by the sink. The actor in `actor.rs` only moves
//! messages in and out: it sends the batches this state hands it ([`Crawl::take_commit`]) and the window refills
//! ([`Crawl::take_refills`]) to the store actor and feeds the answers back.
//!
//! The parts own their state: `Admission` (scope, trap budgets), `Windows` (host queues and their
//! politeness, the records window, refills), `RobotsJobs` (robots.txt state, robots.txt and sitemap jobs),
//! `Leases` (jobs out, retried traces, fetchers set aside), `Staging` (the batch, the commit in flight, the
//! record log), `Shards` (a crawl shared by many processes), `Operator` (what operators set: pauses, politeness,
//! queue drops) and `Progress` (counters). Traces and metrics of a
//! URL are made in `trace_metrics`.

mod adds;
mod admission;
mod embeds;
mod leases;
mod operator;
mod page_answer;
mod progress;
mod records;
mod revisits;
mod robots_jobs;
mod shards;
mod staging;
mod tally;
mod trace_metrics;
mod windows;

use crate::protocol::Stats;
use crate::protocol::{
    ArchiveItem, Archived, FinishReason, FoundLink, Job, JobId, JobResult, PageOutcome,
    RobotsOutcome,
};
use adds::Adds;
use admission::Admission;
use crawl_core::backoff::Backoff;
use crawl_core::canon;
use crawl_core::frontier::{
    Batch, Committed, Discovered, Entry, FrontierError, JobKind, Resume, ShardChanges, ShardGate,
    SharedRobots,
};
use crawl_core::output::JsonlCheckpoint;
use crawl_core::politeness::{Feedback, Gate, HostId, HostQueues, Pop};
use crawl_core::record::{DnsInfo, Outcome, Reason, Record};
use crawl_core::scope::ScopePolicy;
use crawl_observability::metrics::metrics;
use crawl_observability::redact::redact_url;
use crawl_observability::trace::Trace;
use leases::Leases;
use operator::Operator;
use progress::{Event, Progress};
use revisits::{Revisits, Seen};
use robots_jobs::{Around, Obtained, RobotsJobs};
use shards::{PolledCounters, Shards};
use staging::Staging;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tally::HostTally;
use windows::Windows;

pub use windows::{RefillRequest, WindowId};

/// How often a crawl held back by a sink looks whether it may go on.
const SINK_POLL: Duration = Duration::from_millis(200);

/// Settings the scheduler needs (a projection of the config).
#[derive(Debug, Clone)]
pub struct CrawlSettings {
    pub max_pages: u64,
    pub concurrency: usize,
    pub respect_robots: bool,
    pub robots_cache: Duration,
    pub robots_retry: Duration,
    pub robots_max_attempts: u32,
    pub follow_sitemaps: bool,
    pub sitemap_max_depth: u32,
    pub max_retries: u32,
    pub retry_base: Duration,
    pub max_attempts: u32,
    pub max_redirects: u32,
    pub commit_max_ops: usize,
    /// How long a lease may stay out (request timeout plus the parse budget).
    pub lease_timeout: Duration,
    /// Entries the records queue's window holds.
    pub window: usize,
}

/// What a finished job carries to its record: how its host was resolved and its trace. Whatever the record does
/// not take (the URL was queued again, or the job makes no record) is dealt with by [`Crawl::job_done`].
#[derive(Debug, Default)]
struct JobCtx {
    dns: Option<DnsInfo>,
    trace: Option<Trace>,
    /// The fetch, for the archive: bound to the job's record when one is made.
    archive: Option<Box<Archived>>,
    /// What the answer said that the revisit schedule needs (continuous crawling).
    seen: Option<Seen>,
}

/// The scheduler's state: the parts of a crawl and what only the coordinator decides.
pub struct Crawl {
    settings: CrawlSettings,
    admission: Admission,
    windows: Windows,
    robots: RobotsJobs,
    leases: Leases,
    staging: Staging,
    shards: Shards,
    progress: Progress,
    /// Continuous crawling (`[recrawl]` enabled): fetched URLs come due again.
    revisits: Option<Revisits>,
    /// What operators set (control API): pauses, politeness, queue drops.
    operator: Operator,
    /// URLs operators add (control API), waiting for their commit.
    adds: Adds,
    /// Per-host counts for operators' views.
    tally: HostTally,
    /// No new lease starts (SIGINT/SIGTERM).
    draining: bool,
    /// The sinks' backpressure: while one is too far behind, no new fetch starts.
    sinks: Option<Arc<crate::protocol::Backpressure>>,
}

impl Crawl {
    /// Builds the state from what the store recovered. `jsonl` is where the JSONL stands (after the outbox was
    /// written to it).
    pub fn new(
        settings: CrawlSettings,
        scope: Arc<ScopePolicy>,
        queues: HostQueues,
        resume: Resume,
        jsonl: JsonlCheckpoint,
        now: Instant,
    ) -> Crawl {
        let mut admission = Admission::new(scope);
        let mut windows = Windows::new(queues, settings.window);
        let mut tally = HostTally::default();
        for h in &resume.hosts {
            if windows.resume(h, now) {
                admission.resume(&h.name, h.pending);
                tally.set_queued(h.fp, h.pending);
            }
        }
        let moved = resume.checkpoint != Some(jsonl);
        let mut crawl = Crawl {
            leases: Leases::new(settings.lease_timeout),
            staging: Staging::new(resume.next_record, jsonl, moved),
            robots: RobotsJobs::new(&settings),
            progress: Progress::new(resume.counters),
            shards: Shards::default(),
            settings,
            admission,
            windows,
            revisits: None,
            operator: Operator::default(),
            adds: Adds::default(),
            tally,
            draining: false,
            sinks: None,
        };
        crawl.take_robots(resume.robots, now);
        crawl
    }

    /// Sinks beyond the JSONL: while `gate` says one is too far behind, no new fetch starts.
    pub fn with_backpressure(mut self, gate: Arc<crate::protocol::Backpressure>) -> Crawl {
        self.sinks = Some(gate);
        self
    }

    /// The sink that holds fetching back now, if any.
    fn sink_holding(&self) -> Option<&str> {
        self.sinks.as_ref().and_then(|g| g.holding())
    }

    /// A crawl shared by many processes: only hosts whose shard `gate` says this process owns are crawled.
    pub fn with_shards(mut self, gate: Arc<dyn ShardGate>) -> Crawl {
        self.shards = Shards::new(gate);
        self
    }

    /// Continuous crawling: every fetched URL comes due again after an interval `[recrawl]` decides, records say
    /// which visit they are, the crawl never completes by itself (it waits for the next
    /// due URL), and `max_pages` counts this run's fetches.
    pub fn with_revisits(mut self, config: &crawl_core::config::RecrawlConfig) -> Crawl {
        self.progress.count_this_run();
        self.robots.reread_sitemaps();
        self.revisits = Some(Revisits::new(config));
        self
    }

    /// True with continuous crawling.
    pub fn revisits(&self) -> bool {
        self.revisits.is_some()
    }

    /// A `[recrawl]` reload: the new intervals apply from each URL's next fetch.
    pub fn reconfigure_revisits(&mut self, config: &crawl_core::config::RecrawlConfig) {
        if let Some(r) = &mut self.revisits {
            r.reconfigure(config);
        }
    }

    /// Revisits the store found due and queued again: offered to their hosts' windows like new links.
    pub fn promoted(&mut self, added: Vec<crawl_core::frontier::Added>, now: Instant) {
        let n = added.len() as u64;
        for a in added {
            if self.shards.owns_host(a.entry.host) {
                self.windows.offer(a, now);
            }
        }
        if !self.shards.is_sharded() {
            self.progress.promoted(n);
        }
    }

    /// The store's revisit schedule as just read.
    pub fn set_outlook(&mut self, outlook: crawl_core::frontier::Outlook) {
        let scheduled = self.progress.counters().scheduled;
        if let Some(r) = &mut self.revisits {
            r.set_outlook(outlook);
        }
        metrics().revisit_schedule(scheduled, outlook.next_due_ms);
    }

    /// Sitemap hints waiting for the store, with the policy that judges them.
    pub fn take_hints(
        &mut self,
    ) -> Option<(
        Vec<crawl_core::frontier::SitemapHint>,
        crawl_core::recrawl::Policy,
    )> {
        let r = self.revisits.as_mut()?;
        let hints = r.take_hints();
        (!hints.is_empty()).then(|| (hints, r.policy().clone()))
    }

    // --- operators: pauses, politeness and queue drops set through the control API ---

    /// The operator state as the store keeps it (`version`): what changed applies from now on (in-flight
    /// requests finish). An older version than the one in force is ignored; returns whether it was taken.
    pub fn operator_state(
        &mut self,
        version: u64,
        state: crawl_core::control::OperatorState,
        now: Instant,
        now_ms: u64,
    ) -> bool {
        self.operator
            .set(version, state, self.windows.hosts_mut(), now, now_ms)
    }

    /// The operator state in force and its version (None before the first read).
    pub fn operator(&self) -> (&crawl_core::control::OperatorState, Option<u64>) {
        (self.operator.state(), self.operator.version())
    }

    /// Politeness overrides that lapsed go; returns how long until the next one does.
    pub fn operator_lapse(&mut self, now: Instant, now_ms: u64) -> Option<Duration> {
        self.operator.lapse(self.windows.hosts_mut(), now, now_ms)
    }

    /// Drops of hosts' queues that finished here and whose records are durable: to be cleared in the store.
    pub fn take_operator_done(&mut self) -> Vec<crawl_core::control::Change> {
        self.operator.take_done()
    }

    /// Carries out the queue drops operators asked for, for the hosts this process crawls: every queued URL of the
    /// host is recorded `excluded` (reason `operator`), a window at a time, until its queue is read to the end.
    fn run_drops(&mut self, now: Instant) {
        for (host, requested_ms) in self.operator.drops_to_start() {
            if self.shards.is_sharded()
                && !self.shards.owns_host(crawl_core::frontier::host_fp(&host))
            {
                continue; // whoever crawls the host drops its queue
            }
            tracing::info!(host = %host, "dropping host queue");
            self.operator.start_drop(&host, requested_ms);
            if let Some(id) = self.windows.hosts().find(&host) {
                self.windows.hosts_mut().block(id);
            }
        }
        let hosts: Vec<String> = self.operator.dropping().map(str::to_owned).collect();
        for host in hosts {
            let id = self.windows.hosts().find(&host);
            let (pages, more) = match id {
                Some(id) => self.windows.hosts_mut().take_pages(id),
                None => (Vec::new(), false),
            };
            self.operator.count_dropped(&host, pages.len() as u64);
            for entry in pages {
                let record = Record::terminal(
                    &entry.url,
                    entry.depth,
                    entry.parent.as_deref(),
                    Reason::Operator,
                    Some("host queue dropped by an operator".to_owned()),
                );
                let trace = self.leases.resume_trace(&entry.url);
                self.record(&entry, record, false, trace);
            }
            if !more {
                self.operator
                    .finish_drop(&host, self.windows.hosts_mut(), id, now);
            }
        }
    }

    /// URLs an operator adds (request `token`): each is judged like a link (scope, filters, depth, traps, and
    /// robots.txt when its rules are known here) and staged; the answers come out of
    /// [`take_add_answers`](Self::take_add_answers) once the commit carrying them is durable (and, with `force`,
    /// known URLs are queued again through [`take_refetch`](Self::take_refetch)).
    pub fn add_urls(&mut self, token: u64, req: crate::protocol::AddUrls, now: Instant) {
        use crate::protocol::{UrlAnswer, UrlVerdict};
        let mut answers = Vec::with_capacity(req.urls.len());
        let mut staged = Vec::new();
        for raw in req.urls {
            let url = match canon::canonicalize(&raw) {
                Ok(u) if u.host_str().is_some() => u,
                Ok(_) => {
                    answers.push(UrlAnswer {
                        url: raw,
                        canonical: None,
                        verdict: UrlVerdict::Invalid("a URL without a host".into()),
                    });
                    continue;
                }
                Err(e) => {
                    answers.push(UrlAnswer {
                        url: raw,
                        canonical: None,
                        verdict: UrlVerdict::Invalid(e.to_string()),
                    });
                    continue;
                }
            };
            let mut link = self.admission.link(&url, req.depth);
            let kind = self.admission.screen(&mut link, req.depth);
            let verdict = match kind.excluded() {
                Some(reason) => UrlVerdict::Excluded(reason),
                None if self.robots.respected()
                    && self.robots.gate(&link.url, now) == Some(Gate::Drop) =>
                {
                    // Queued all the same: it is recorded `robots` when it comes up, like any disallowed link.
                    UrlVerdict::Excluded(Reason::Robots)
                }
                None => UrlVerdict::Queued,
            };
            let d = Discovered {
                url: link.url.clone(),
                host: link.host,
                depth: req.depth,
                parent: None,
                redirect_chain: Vec::new(),
                kind,
            };
            if verdict == UrlVerdict::Queued {
                staged.push((answers.len(), d.clone()));
            }
            self.staging.discovered(d);
            answers.push(UrlAnswer {
                url: raw,
                canonical: Some(link.url),
                verdict,
            });
        }
        self.adds.add(token, answers, staged, req.force);
    }

    /// Answers to operators' adds, by request token.
    pub fn take_add_answers(&mut self) -> Vec<(u64, Vec<crate::protocol::UrlAnswer>)> {
        self.adds.take_answers()
    }

    /// Known URLs operators asked to fetch again, by request token: for the store's
    /// [`refetch`](crawl_core::frontier::FrontierStore::refetch).
    pub fn take_refetch(&mut self) -> Vec<(u64, Vec<Discovered>)> {
        self.adds.take_refetch()
    }

    /// The store's answer to a re-fetch: the URLs queued again join their hosts' windows.
    pub fn refetched(
        &mut self,
        token: u64,
        result: Result<Vec<crawl_core::frontier::Added>, FrontierError>,
        now: Instant,
    ) {
        match result {
            Ok(added) => {
                self.adds.refetched(token, Ok(&added));
                for a in added {
                    self.tally.queued(a.entry.host);
                    if self.shards.owns_host(a.entry.host) {
                        self.windows.offer(a, now);
                    }
                }
            }
            Err(e) => self.adds.refetched(token, Err(e.to_string())),
        }
    }

    /// The hosts as an operator sees them: sorted by `sort`, at most `limit`.
    pub fn host_views(
        &self,
        sort: crate::protocol::HostSort,
        limit: usize,
        now: Instant,
    ) -> Vec<crate::protocol::HostView> {
        use crate::protocol::HostSort;
        let q = self.windows.hosts();
        let mut ids: Vec<HostId> = (0..q.hosts() as HostId)
            .filter(|id| !q.host_name(*id).is_empty())
            .collect();
        let fp = |id: &HostId| q.host_fp(*id);
        // The first `limit` in order, without sorting every host (a crawl may know millions): select, then sort.
        let order = |a: &HostId, b: &HostId| {
            match sort {
                HostSort::Queued => self
                    .tally
                    .queued_of(fp(b))
                    .cmp(&self.tally.queued_of(fp(a))),
                HostSort::InFlight => {
                    let n = |id: &HostId| q.snapshot(*id, now).map_or(0, |s| s.in_flight);
                    n(b).cmp(&n(a))
                }
                HostSort::Errors => self
                    .tally
                    .error_count(fp(b))
                    .cmp(&self.tally.error_count(fp(a))),
                HostSort::Name => std::cmp::Ordering::Equal,
            }
            .then_with(|| q.host_name(*a).cmp(q.host_name(*b)))
        };
        if limit < ids.len() {
            ids.select_nth_unstable_by(limit, order);
            ids.truncate(limit);
        }
        ids.sort_by(order);
        ids.into_iter()
            .filter_map(|id| self.host_view_of(id, now))
            .collect()
    }

    /// One host as an operator sees it; None when the crawl does not know it. In a crawl shared by many processes,
    /// a host this process never met may be another's: its view says so (`known_here` false), with its shard and
    /// what operators set on it, and the caller asks the store whether the crawl knows it.
    pub fn host_view(&self, name: &str, now: Instant) -> Option<crate::protocol::HostView> {
        match self.windows.hosts().find(name) {
            Some(id) => self.host_view_of(id, now),
            None => self.elsewhere_view(name, now),
        }
    }

    /// The view of a host this process never met, in a crawl shared by many processes (None otherwise).
    fn elsewhere_view(&self, name: &str, now: Instant) -> Option<crate::protocol::HostView> {
        let fp = crawl_core::frontier::host_fp(name);
        let shard = self.shards.shard_of(fp)?;
        let rule = self
            .operator
            .state()
            .hosts
            .get(&crawl_core::control::HostMatch::every_port(name))
            .cloned();
        let policy = self.windows.hosts().policy();
        let set = rule.as_ref().and_then(|r| r.politeness.as_ref());
        Some(crate::protocol::HostView {
            host: name.to_owned(),
            queued: None,
            in_flight: 0,
            next_allowed_in_ms: None,
            backoff_level: 0,
            backoff_for_ms: None,
            delay_ms: set
                .and_then(|p| p.delay_ms)
                .unwrap_or_else(|| u64::try_from(policy.min_delay.as_millis()).unwrap_or(u64::MAX)),
            concurrency: set
                .and_then(|p| p.concurrency)
                .unwrap_or(policy.per_host_concurrency),
            rule,
            robots: self.robots.state_of_host(name, now),
            errors: self.tally.errors_of(fp),
            shard: Some(shard),
            held_here: self.shards.owns_host(fp),
            owner: None,
            known_here: false,
        })
    }

    fn host_view_of(&self, id: HostId, now: Instant) -> Option<crate::protocol::HostView> {
        let s = self.windows.hosts().snapshot(id, now)?;
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let held_here = self.shards.owns_host(s.fp);
        Some(crate::protocol::HostView {
            host: s.name.to_owned(),
            queued: held_here.then(|| self.tally.queued_of(s.fp)),
            in_flight: s.in_flight,
            next_allowed_in_ms: s.next_start_in.map(ms),
            backoff_level: s.backoff_level,
            backoff_for_ms: s.paused_for.map(ms),
            delay_ms: ms(s.delay),
            concurrency: s.concurrency,
            rule: self.rule_of_host(s.name),
            robots: self.robots.state_of_host(s.name, now),
            errors: self.tally.errors_of(s.fp),
            shard: self.shards.shard_of(s.fp),
            held_here,
            // The tree's Control asks the store (the scheduler knows only its own shards).
            owner: None,
            known_here: true,
        })
    }

    /// What operators set on a host (on every port): its own rule, with a pause of a domain above it
    /// (`*.example.org`) when it has none of its own.
    fn rule_of_host(&self, name: &str) -> Option<crawl_core::control::HostRule> {
        let state = self.operator.state();
        let own = state
            .hosts
            .get(&crawl_core::control::HostMatch::every_port(name))
            .cloned();
        let domain = state
            .hosts
            .iter()
            .find(|(m, r)| m.has_subdomains() && m.matches(name, 0) && r.paused.is_some())
            .and_then(|(_, r)| r.paused.clone());
        match (own, domain) {
            (Some(mut r), Some(p)) if r.paused.is_none() => {
                r.paused = Some(p);
                Some(r)
            }
            (None, Some(p)) => Some(crawl_core::control::HostRule {
                paused: Some(p),
                ..Default::default()
            }),
            (own, _) => own,
        }
    }

    /// What the crawl is doing, for an operator.
    pub fn status_view(&self) -> crate::protocol::StatusView {
        let stats = self.stats();
        let waiting_for = if self.operator.crawl_paused() {
            Some("an operator to resume the crawl".to_owned())
        } else if let Some(sink) = self.sink_holding() {
            Some(format!(
                "sink `{sink}` to catch up (output.sink_max_lag): no new fetch starts meanwhile"
            ))
        } else if self.draining {
            Some("in-flight requests to finish (draining)".to_owned())
        } else if stats.in_flight == 0 && stats.queued == 0 {
            stats.revisits.and_then(|r| r.next_due_ms).map(|t| {
                format!(
                    "the next revisit, due at {}",
                    crawl_core::recrawl::rfc3339_ms(t)
                )
            })
        } else {
            None
        };
        crate::protocol::StatusView {
            stats,
            operator: self.operator.state().clone(),
            draining: self.draining,
            waiting_for,
            // The tree's Control asks the store in a crawl shared by many processes.
            processes: crate::protocol::Processes::Alone,
            sinks: Vec::new(),
        }
    }

    // --- admit: a URL found is judged (scope, traps) and staged for the store ---

    /// Adds a seed (depth 0); the store drops it when it is known already.
    pub fn add_seed(&mut self, url: &url::Url) {
        let link = self.admission.seed(url);
        self.admit(link, 0, None, Vec::new());
    }

    /// Stages a discovered URL; the store keeps it when it is new (in scope: queued; otherwise: recorded).
    fn admit(
        &mut self,
        mut link: FoundLink,
        depth: u32,
        parent: Option<&Entry>,
        chain: Vec<String>,
    ) {
        let kind = self.admission.screen(&mut link, depth);
        self.stage_discovered(link, depth, parent, chain, kind);
    }

    /// Stages a page requisite found by `parent` (or a requisite's redirect target): an embed job when it is in the
    /// requisites' scope, else recorded without a fetch like an excluded link. The depth is the page's own.
    fn admit_embed(
        &mut self,
        link: FoundLink,
        depth: u32,
        parent: Option<&Entry>,
        chain: Vec<String>,
    ) {
        let kind = embeds::embed_kind(link.verdict);
        self.stage_discovered(link, depth, parent, chain, kind);
    }

    /// Stages a redirect target: a requisite's stays a requisite (same depth either way).
    fn admit_target(&mut self, target: FoundLink, entry: &Entry, chain: Vec<String>) {
        if entry.kind == JobKind::Embed {
            self.admit_embed(target, entry.depth, Some(entry), chain);
        } else {
            self.admit(target, entry.depth, Some(entry), chain);
        }
    }

    /// Stages a discovered URL to be queued (or recorded) as `kind`.
    fn stage_discovered(
        &mut self,
        link: FoundLink,
        depth: u32,
        parent: Option<&Entry>,
        chain: Vec<String>,
        kind: JobKind,
    ) {
        self.staging.discovered(Discovered {
            url: link.url,
            host: link.host,
            depth,
            parent: parent.map(|p| (p.id, p.url.clone())),
            redirect_chain: chain,
            kind,
        });
    }

    /// A config reload: the politeness policy applies from the next lease, the scope to links found from now on
    /// and to URLs still queued (judged again when they come up, and recorded excluded if they left the scope).
    /// `None`: that part did not change (an unchanged scope does not judge the queued URLs again).
    pub fn reconfigure(
        &mut self,
        politeness: Option<crawl_core::politeness::PolitenessPolicy>,
        scope: Option<Arc<ScopePolicy>>,
    ) {
        if let Some(politeness) = politeness {
            self.windows.hosts_mut().set_policy(politeness);
        }
        if let Some(scope) = scope {
            self.admission.reconfigure(scope);
        }
    }

    /// A reload (or an alert) changed `fetch.concurrency`: leases start while fewer than `n` are out (those out
    /// finish).
    pub fn set_concurrency(&mut self, n: usize) {
        self.settings.concurrency = n.max(1);
    }

    // --- queue and lease: windows read the store's queues; ready jobs are leased ---

    /// Refills the windows need; the caller sends each to the store and hands the answer to [`filled`](Self::filled).
    pub fn take_refills(&mut self) -> Vec<RefillRequest> {
        self.windows.take_refills()
    }

    /// The store's answer to a refill.
    pub fn filled(
        &mut self,
        req: RefillRequest,
        result: Result<Vec<Entry>, FrontierError>,
        now: Instant,
    ) -> Result<(), FrontierError> {
        self.windows.filled(req, result, now)
    }

    /// Back-pressure: while a commit is in flight and twice `commit_max_ops` changes wait behind it, no new job
    /// starts, so what waits for the store (and the memory it takes) stays bounded however fast pages come in.
    fn backlogged(&self) -> bool {
        self.staging.backlogged(self.settings.commit_max_ops)
    }

    fn limit_reached(&self) -> bool {
        self.progress
            .limit_reached(self.settings.max_pages, self.leases.pages())
    }

    /// Leases up to the free global capacity of ready jobs. Returns them and the instant to call again when some
    /// are waiting on politeness.
    pub fn next_jobs(&mut self, now: Instant) -> (Vec<Job>, Option<Instant>) {
        self.record_excluded();
        self.run_drops(now);
        if self.draining || self.limit_reached() {
            // No new lease will start: the windows' URLs stay in the store, their memory goes.
            self.windows.let_go();
        }
        let mut jobs = Vec::new();
        let mut wake = None;
        if self.sink_holding().is_some() && !self.draining {
            // Looked at again shortly: the sink's loop runs on another thread and tells nobody when it caught up.
            wake = Some(now + SINK_POLL);
        }
        while !self.draining
            && !self.operator.crawl_paused()
            && self.sink_holding().is_none()
            && self.leases.len() < self.settings.concurrency
            && !self.limit_reached()
            && !self.backlogged()
        {
            let mut need_robots: Vec<(HostId, String)> = Vec::new();
            let mut over_budget: Vec<(HostId, Instant)> = Vec::new();
            let robots = &self.robots;
            let shards = &mut self.shards;
            let revisits = &mut self.revisits;
            let operator = &self.operator;
            let pop = self.windows.pop_ready(now, |host, entry| {
                if !shards.lets_start(host, entry.host) || operator.holds(&entry.url) {
                    return Gate::Block;
                }
                let gate = if !robots.respected() {
                    Gate::Go
                } else {
                    match robots.gate(&entry.url, now) {
                        Some(g) => g,
                        None => {
                            if let Ok(u) = url::Url::parse(&entry.url) {
                                need_robots.push((host, canon::authority_key(&u)));
                            }
                            Gate::Block
                        }
                    }
                };
                // A revisit takes from its host's revisit budget; a spent budget holds the host until it refills.
                if gate == Gate::Go
                    && entry.prior.is_some()
                    && let Some(r) = revisits.as_mut()
                    && let Err(at) = r.take(host, now)
                {
                    over_budget.push((host, at));
                    return Gate::Block;
                }
                gate
            });
            let asked_robots = !need_robots.is_empty() || !over_budget.is_empty();
            for (host, authority) in need_robots {
                self.robots
                    .request(host, &authority, &mut self.windows, now);
            }
            for (host, at) in over_budget {
                let q = self.windows.hosts_mut();
                q.unblock(host, now);
                q.pause_until(host, at);
            }
            self.record_dropped();
            match pop {
                Pop::Ready(host, entry) => {
                    if !entry.kind.is_fetched() && !self.may_start(host) {
                        // Urgent jobs pass the page gate: their shard is checked here.
                        self.windows
                            .hosts_mut()
                            .release(host, now, Feedback::NotStarted);
                        self.hold_urgent(host, entry, now);
                        continue;
                    }
                    if !self.still_in_scope(host, &entry, now) {
                        continue;
                    }
                    jobs.push(self.lease(host, entry, now));
                }
                // a robots.txt request queued by the gate may be ready right away
                _ if asked_robots => continue,
                Pop::WaitUntil(t) => {
                    wake = Some(t);
                    break;
                }
                Pop::Idle => break,
            }
        }
        self.heal(now);
        (jobs, wake)
    }

    /// Leases a ready job: the trace of its earlier tries goes on (or a new one starts from when it was queued).
    fn lease(&mut self, host: HostId, entry: Entry, now: Instant) -> Job {
        let id = self.leases.next_id();
        let fp = self.windows.hosts().host_fp(host);
        let trace = trace_metrics::lease_trace(
            self.leases.resume_trace(&entry.url),
            self.windows.hosts().host_name(host),
            &entry,
            self.robots.respected(),
            now,
        );
        let job = Job {
            id,
            host,
            entry,
            started_at: now,
            trace: trace.ctx(),
            gate: self.shards.start_gate(fp),
        };
        self.leases.insert(job.clone(), trace, now);
        job
    }

    /// After a scope reload: whether a queued page URL is still in scope; records it excluded if not.
    fn still_in_scope(&mut self, host: HostId, entry: &Entry, now: Instant) -> bool {
        let Some(reason) = self.admission.left_scope(entry) else {
            return true;
        };
        self.windows
            .hosts_mut()
            .release(host, now, Feedback::NotStarted);
        let record = Record::terminal(
            &entry.url,
            entry.depth,
            entry.parent.as_deref(),
            reason,
            Some("left the scope in a config reload".to_owned()),
        );
        let trace = self.leases.resume_trace(&entry.url);
        self.record(entry, record, false, trace);
        false
    }

    /// Records the pages the robots gate dropped (disallowed, or robots.txt given up on).
    fn record_dropped(&mut self) {
        for entry in self.windows.take_dropped() {
            let (reason, dns, error) = match self.robots.gave_up(&entry.url) {
                Some((reason, dns, detail)) => (reason, dns, Some(detail)),
                None => (Reason::Robots, None, None),
            };
            let mut record = Record::terminal(
                &entry.url,
                entry.depth,
                entry.parent.as_deref(),
                reason,
                error,
            );
            record.dns = dns;
            record.attempts = 0;
            let trace = trace_metrics::dropped_trace(&entry, reason);
            self.record(&entry, record, false, Some(trace));
        }
    }

    /// Records the links of the records queue (excluded without a fetch) that are in memory.
    fn record_excluded(&mut self) {
        while let Some(entry) = self.windows.pop_excluded() {
            let reason = entry.kind.excluded().unwrap_or(Reason::Scope);
            let record = Record::terminal(
                &entry.url,
                entry.depth,
                entry.parent.as_deref(),
                reason,
                None,
            );
            self.record(&entry, record, false, None);
        }
    }

    /// A safety net: when nothing is out and no window accounts for the URLs the store holds, read every queue
    /// again from its start. Never needed when the windows' bookkeeping is right; it keeps a crawl from stalling
    /// when it is not.
    fn heal(&mut self, now: Instant) {
        // In a sharded crawl the pending count is the whole crawl's: other processes hold the rest (see
        // `Shards::watch_idle` for its own safety net).
        if !self.shards.is_sharded() && self.progress.counters().pending > 0 && self.idle() {
            tracing::warn!(
                pending = self.progress.counters().pending,
                "pending urls outside every window; reading the queues again"
            );
            self.windows.rescan(now);
        }
    }

    /// True when nothing is out, staged, being read or queued here, every window has read its whole queue, and
    /// leasing goes on (not draining, no limit reached): whatever the store still holds as pending, no window
    /// accounts for.
    fn idle(&self) -> bool {
        self.leases.is_empty()
            && self.staging.is_empty()
            && self.windows.all_read()
            && !self.draining
            && !self.limit_reached()
            && !self.operator.holds_any()
    }

    /// True when a job of this host may start now (always, without shards).
    fn may_start(&self, host: HostId) -> bool {
        self.shards.may_start(self.windows.hosts().host_fp(host))
    }

    /// An urgent job (robots.txt, sitemap) that may not start now because its host's shard lease ran out: the
    /// host is held, urgent jobs included, until the lease is renewed.
    fn hold_urgent(&mut self, host: HostId, entry: Entry, now: Instant) {
        let q = self.windows.hosts_mut();
        q.hold(host);
        if let Some(job) = q.push_urgent(host, entry, now) {
            self.robots.forget(&job);
        }
        self.shards.block(host);
    }

    // --- the jobs out: fetchers, deadlines ---

    /// Remembers which fetcher holds a job.
    pub fn assign(&mut self, job: JobId, fetcher: usize) {
        self.leases.assign(job, fetcher);
    }

    /// A fetcher answered again or was replaced: it may take jobs.
    pub fn fetcher_back(&mut self, fetcher: usize) {
        self.leases.fetcher_back(fetcher);
    }

    /// Whether a fetcher is set aside after an expired lease.
    pub fn is_suspect(&self, fetcher: usize) -> bool {
        self.leases.is_suspect(fetcher)
    }

    /// A fetcher died: every job it held is re-driven; the one it panicked on counts an attempt.
    pub fn fetcher_down(
        &mut self,
        fetcher: usize,
        panicked: Option<JobId>,
        detail: &str,
        now: Instant,
    ) {
        let mut redriven = 0u64;
        for id in self.leases.held_by(fetcher) {
            if Some(id) == panicked {
                self.job_done(
                    id,
                    JobResult::Panicked {
                        stage: "fetcher",
                        detail: detail.to_owned(),
                    },
                    None,
                    now,
                );
            } else if self.redrive(id, now) {
                redriven += 1;
            }
        }
        tracing::info!(fetcher, redriven, "jobs of a stopped fetcher queued again");
    }

    /// Jobs whose responses waited for a parser thread that was replaced: queued again without an attempt (they
    /// did nothing wrong; the job the thread was stuck on has its own lease expiry).
    pub fn parses_lost(&mut self, jobs: &[JobId], now: Instant) {
        let redriven = jobs.iter().filter(|&&id| self.redrive(id, now)).count();
        tracing::info!(
            redriven,
            "jobs waiting for a replaced parser thread queued again"
        );
    }

    /// Takes a job's lease and queues its URL again, with no attempt counted. False when the job is not leased
    /// (done, or re-driven already).
    fn redrive(&mut self, id: JobId, now: Instant) -> bool {
        let Some(job) = self.leases.take_for_redrive(id) else {
            return false;
        };
        self.windows
            .hosts_mut()
            .release(job.host, now, Feedback::NotStarted);
        self.requeue(job.host, job.entry, now);
        true
    }

    /// Leases whose deadline passed: each is re-driven with one more attempt (poisoned after max_attempts), as
    /// if its handler had panicked. Returns the jobs and the fetchers that held them, so the stuck child can be
    /// replaced.
    pub fn expire_leases(&mut self, now: Instant) -> Vec<(JobId, Option<usize>, String)> {
        let mut out = Vec::new();
        for expired in self.leases.expire(now) {
            let id = expired.id;
            if expired.behind_stuck {
                // Queued behind the stuck job on a fetcher already reported: re-driven without an attempt.
                self.redrive(id, now);
                continue;
            }
            let url = self.leases.url_of(id).unwrap_or_default();
            tracing::warn!(url = %redact_url(&url), job = id, "lease deadline passed; re-driving url");
            self.job_done(
                id,
                JobResult::Panicked {
                    stage: "lease",
                    detail: format!(
                        "no result within the lease deadline of {} ms",
                        self.settings.lease_timeout.as_millis()
                    ),
                },
                None,
                now,
            );
            out.push((id, expired.fetcher, url));
        }
        out
    }

    /// The earliest lease deadline.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.leases.next_deadline()
    }

    // --- fetch result: a job ended; it is recorded, retried or re-driven ---

    /// A job ended. Results of leases no longer held (re-driven after a restart) are ignored.
    /// `dns` is how its host was resolved (for its record).
    pub fn job_done(&mut self, id: JobId, result: JobResult, dns: Option<DnsInfo>, now: Instant) {
        self.job_done_archived(id, result, dns, None, now);
    }

    /// [`job_done`](Self::job_done) with the fetch ready for the archive (WARC output on).
    pub fn job_done_archived(
        &mut self,
        id: JobId,
        result: JobResult,
        dns: Option<DnsInfo>,
        archive: Option<Box<Archived>>,
        now: Instant,
    ) {
        let Some(lease) = self.leases.take(id) else {
            self.progress.count(Event::StaleResult);
            return;
        };
        let (job, trace) = (lease.job, lease.trace);
        let (kind, url) = (job.entry.kind, job.entry.url.clone());
        let mut done = JobCtx {
            dns,
            trace: Some(trace),
            archive,
            seen: None,
        };
        if let JobResult::FetchFailed { reason, .. } = &result {
            metrics().fetch_error(reason.as_str());
        }
        if let JobResult::Page(out) = &result
            && matches!(out.status, 403 | 429 | 503)
        {
            metrics().antibot(out.status, &trace_metrics::host_group(&url));
        }
        self.dispatch_result(job, result, &mut done, now);
        // What the crawler saw is archived even when it makes no record (robots.txt, sitemaps, a retried answer).
        if let Some(archived) = done.archive.take() {
            self.staging.archive(ArchiveItem {
                record: None,
                archived,
            });
        }
        // A trace not taken by a record: the URL was queued again, or the job makes no record (robots, sitemap).
        if let Some(t) = done.trace.take() {
            if kind.is_fetched() {
                self.leases.park_trace(url, t);
            } else {
                t.end(now);
            }
        }
    }

    fn dispatch_result(&mut self, job: Job, result: JobResult, done: &mut JobCtx, now: Instant) {
        match (job.entry.kind, result) {
            (_, JobResult::NotStarted) => self.not_started(job, now),
            (_, JobResult::Panicked { stage, detail }) => {
                self.on_panic(job, stage, &detail, done, now)
            }
            (JobKind::Robots, result) => self.on_robots(job, result, done, now),
            (JobKind::Sitemap, result) => self.on_sitemap(job, result, now),
            (JobKind::Page | JobKind::Embed, JobResult::Page(outcome)) => {
                self.on_page(job, *outcome, done, now)
            }
            (
                JobKind::Page | JobKind::Embed,
                JobResult::FetchFailed {
                    reason,
                    detail,
                    retryable,
                },
            ) => self.on_fetch_failed(job, (reason, detail, retryable), done, now),
            (_, other) => {
                self.windows
                    .hosts_mut()
                    .release(job.host, now, Feedback::Ok);
                let e = &job.entry;
                let detail = format!("unexpected result for a page job: {other:?}");
                let mut record = Record::terminal(
                    &e.url,
                    e.depth,
                    e.parent.as_deref(),
                    Reason::Protocol,
                    Some(detail),
                );
                record.attempts = e.tries();
                self.record_job(&job.entry, record, done);
            }
        }
    }

    /// A request that failed: retried with backoff while it may be, else recorded failed.
    fn on_fetch_failed(
        &mut self,
        job: Job,
        (reason, detail, retryable): (Reason, String, bool),
        done: &mut JobCtx,
        now: Instant,
    ) {
        if retryable && job.entry.retries < self.settings.max_retries {
            let wait = Backoff::uncapped(self.settings.retry_base).delay(job.entry.retries);
            self.windows.hosts_mut().release(
                job.host,
                now,
                Feedback::Throttled {
                    retry_after: Some(wait),
                },
            );
            self.share_pause(job.host, now);
            self.retry(job.host, job.entry, now);
            return;
        }
        self.windows
            .hosts_mut()
            .release(job.host, now, Feedback::Ok);
        let e = &job.entry;
        let mut record =
            Record::terminal(&e.url, e.depth, e.parent.as_deref(), reason, Some(detail));
        record.attempts = e.tries();
        let latency = now.saturating_duration_since(job.started_at);
        record.elapsed_ms = Some(latency.as_millis() as u64);
        self.record_fetch(&job.entry, record, done, (latency, now));
    }

    /// A handler panicked on the job (or its lease expired): re-driven with one more attempt, poisoned after
    /// `max_attempts`.
    fn on_panic(&mut self, job: Job, stage: &str, detail: &str, done: &mut JobCtx, now: Instant) {
        self.progress.count(Event::Panic);
        let mut entry = job.entry;
        entry.attempt += 1;
        tracing::warn!(url = %entry.url, stage, attempt = entry.attempt, detail, "handler panicked; re-driving url");
        let poisoned = entry.attempt >= self.settings.max_attempts;
        if !(poisoned && entry.kind == JobKind::Robots) {
            // on_robots releases the host itself
            self.windows
                .hosts_mut()
                .release(job.host, now, Feedback::Ok);
        }
        if poisoned {
            if entry.kind.is_fetched() {
                let why = if stage == "lease" {
                    format!(
                        "stuck {} times (lease deadline passed): {detail}",
                        entry.attempt
                    )
                } else {
                    format!("{stage} panicked {} times: {detail}", entry.attempt)
                };
                let mut record = Record::terminal(
                    &entry.url,
                    entry.depth,
                    entry.parent.as_deref(),
                    Reason::Poison,
                    Some(why),
                );
                // `attempt` already counts this try
                record.attempts = entry.attempt + entry.retries;
                self.record_job(&entry, record, done);
            } else if entry.kind == JobKind::Robots {
                self.on_robots(
                    Job { entry, ..job },
                    JobResult::Robots(RobotsOutcome::Unavailable {
                        detail: detail.to_owned(),
                    }),
                    done,
                    now,
                );
            }
            return;
        }
        self.requeue(job.host, entry, now);
    }

    /// A robots.txt job ended: the rules obtained are shared with the store in a shared crawl.
    fn on_robots(&mut self, job: Job, result: JobResult, done: &mut JobCtx, now: Instant) {
        let around = Around {
            windows: &mut self.windows,
            admission: &self.admission,
            progress: &mut self.progress,
        };
        let obtained = self.robots.on_robots(
            job,
            result,
            done.dns.take(),
            done.trace.as_mut(),
            around,
            now,
        );
        if let Some(obtained) = obtained {
            self.share_robots(obtained, now);
        }
    }

    /// A sitemap job ended: the pages it lists are admitted as its links (depth 1).
    fn on_sitemap(&mut self, job: Job, mut result: JobResult, now: Instant) {
        if let JobResult::Sitemap(out) = &mut result {
            let hints = std::mem::take(&mut out.hints);
            if let Some(r) = &mut self.revisits {
                r.hint(hints);
            }
        }
        let around = Around {
            windows: &mut self.windows,
            admission: &self.admission,
            progress: &mut self.progress,
        };
        for link in self.robots.on_sitemap(&job, result, around, now) {
            self.admit(link, 1, Some(&job.entry), Vec::new());
        }
    }

    /// A page answered: throttled answers are retried while they may be; otherwise the page is recorded, a
    /// redirect followed (within the loop and length limits), and the requisites and links of a 2xx admitted.
    fn on_page(&mut self, job: Job, out: PageOutcome, done: &mut JobCtx, now: Instant) {
        let entry = job.entry;
        let throttled = out.status == 429 || out.status == 503;
        if throttled && entry.retries < self.settings.max_retries {
            self.windows.hosts_mut().release(
                job.host,
                now,
                Feedback::Throttled {
                    retry_after: out.retry_after,
                },
            );
            self.share_pause(job.host, now);
            self.retry(job.host, entry, now);
            return;
        }
        let feedback = if throttled {
            Feedback::Throttled {
                retry_after: out.retry_after,
            }
        } else {
            Feedback::Ok
        };
        self.windows.hosts_mut().release(job.host, now, feedback);
        if throttled {
            self.share_pause(job.host, now);
        }
        let latency = out.elapsed;
        if self.revisits.is_some() {
            done.seen = Some(Seen {
                status: out.status,
                etag: out.etag.clone(),
                last_modified: out.last_modified.clone(),
                date: out.date.clone(),
                digest: out.digest.clone(),
                requested_at_ms: out.requested_at_ms,
            });
        }
        let (record, then) = page_answer::record(&entry, out, self.settings.max_redirects);
        self.record_fetch(&entry, record, done, (latency, now));
        match then {
            page_answer::Then::Done => {}
            page_answer::Then::Follow(target, chain) => self.admit_target(target, &entry, chain),
            page_answer::Then::Admit { embeds, links } => {
                // Requisites first: a URL both linked and embedded is fetched once, as the page's requisite.
                for embed in embeds {
                    self.admit_embed(embed, entry.depth, Some(&entry), Vec::new());
                }
                for link in links {
                    self.admit(link, entry.depth + 1, Some(&entry), Vec::new());
                }
            }
        }
    }

    /// A job the fetcher did not start because its host's shard lease ran out while it waited (in a mailbox,
    /// behind DNS, or in a paused process). Nothing changed in the store. While the shard is still held the job
    /// waits here for the lease to be renewed; once it is not, the URL stays pending in the store for whoever holds
    /// the shard.
    fn not_started(&mut self, job: Job, now: Instant) {
        self.windows
            .hosts_mut()
            .release(job.host, now, Feedback::NotStarted);
        self.progress.count(Event::NotStarted);
        let held = self.shards.holds(self.windows.hosts().host_fp(job.host));
        tracing::debug!(url = %job.entry.url, held, "request not started: shard lease ran out");
        match job.entry.kind {
            JobKind::Page | JobKind::Embed if held => {
                self.windows.hosts_mut().push(job.host, job.entry, now)
            }
            JobKind::Page | JobKind::Embed => {
                self.windows.hosts_mut().settle(job.host, job.entry.id)
            }
            JobKind::Robots | JobKind::Sitemap if held => {
                self.hold_urgent(job.host, job.entry, now)
            }
            _ => self.robots.forget(&job.entry),
        }
    }

    fn retry(&mut self, host: HostId, mut entry: Entry, now: Instant) {
        entry.retries += 1;
        self.progress.count(Event::Retry);
        metrics().retry();
        self.requeue(host, entry, now);
    }

    /// Queues a URL again: a page's retry counters go to the store with the next commit.
    fn requeue(&mut self, host: HostId, entry: Entry, now: Instant) {
        match entry.kind {
            JobKind::Page | JobKind::Embed => {
                self.staging.update(entry.clone());
                self.windows.hosts_mut().push(host, entry, now);
            }
            JobKind::Robots | JobKind::Sitemap => {
                // A host detached meanwhile (its shard went to another process) takes none: given up here.
                if let Some(job) = self.windows.hosts_mut().push_urgent(host, entry, now) {
                    self.robots.forget(&job);
                }
            }
            _ => {}
        }
    }

    /// A host was throttled: in a crawl shared by many processes its pause goes to the store with the next commit,
    /// so that whoever crawls its shard next honours it.
    fn share_pause(&mut self, host: HostId, now: Instant) {
        if !self.shards.is_sharded() {
            return;
        }
        let q = self.windows.hosts();
        if let Some(until) = q.paused_until(host).filter(|u| *u > now) {
            let ms = trace_metrics::wall_ms(until);
            self.staging
                .pause(q.host_name(host).to_owned(), ms, q.backoff_level(host));
        }
    }

    /// robots.txt rules were obtained here: in a crawl shared by many processes they go to the store with the next
    /// commit, kept with the host's shard until they expire.
    fn share_robots(&mut self, obtained: Obtained, now: Instant) {
        if !self.shards.is_sharded() {
            return;
        }
        self.staging.robots(SharedRobots {
            host: self.windows.hosts().host_name(obtained.host).to_owned(),
            authority: obtained.authority,
            expires_ms: trace_metrics::wall_ms(now + self.robots.cache()),
            snapshot: obtained.rules.snapshot(),
        });
    }

    // --- record: a URL's record is staged with its trace ---

    /// Records a fetch that took `latency` (an answer, or an error after the request started) and observes it in
    /// the latency histogram.
    fn record_fetch(
        &mut self,
        entry: &Entry,
        record: Record,
        done: &mut JobCtx,
        (latency, now): (Duration, Instant),
    ) {
        trace_metrics::observe_latency(&record, latency, done.trace.as_ref(), now);
        self.record_job(entry, record, done);
    }

    /// Records a leased page job's URL: the record takes the job's DNS evidence and trace from `done`.
    fn record_job(&mut self, entry: &Entry, mut record: Record, done: &mut JobCtx) {
        if record.dns.is_none() {
            record.dns = done.dns.take();
        }
        let trace = done.trace.take();
        let seen = done.seen.take();
        let seq = self.record_seen(entry, record, true, trace, seen.as_ref());
        if let Some(archived) = done.archive.take() {
            self.staging.archive(ArchiveItem {
                record: Some(seq),
                archived,
            });
        }
    }

    /// Records a URL taken from a window, with `trace` or a root span of its own. Returns the record's sequence
    /// number.
    fn record(
        &mut self,
        entry: &Entry,
        record: Record,
        page_job: bool,
        trace: Option<Trace>,
    ) -> u64 {
        self.record_seen(entry, record, page_job, trace, None)
    }

    /// [`record`](Self::record) with what the fetch's answer said (continuous crawling schedules the URL again
    /// from it).
    fn record_seen(
        &mut self,
        entry: &Entry,
        mut record: Record,
        page_job: bool,
        trace: Option<Trace>,
        seen: Option<&Seen>,
    ) -> u64 {
        embeds::mark_kind(entry, &mut record);
        if let Some(r) = &mut self.revisits {
            let now_ms = trace_metrics::unix_ms(std::time::SystemTime::now());
            if let Some(again) = r.decide(entry, &mut record, seen, now_ms) {
                if entry.prior.is_some() {
                    metrics().revisit(record.revisit.as_ref().and_then(|v| v.changed));
                }
                self.staging.reschedule(again);
            }
        }
        let mut trace = trace.unwrap_or_else(|| trace_metrics::record_trace(&record));
        record.trace_id = trace.trace_id();
        self.staging.name(entry, &mut record);
        trace_metrics::observe(&record, &mut trace);
        let line = record.to_line();
        // A page counts as fetched (toward max_pages and in the store's total) when its server answered: a page
        // refused by the network guard or failed without an answer is no fetch.
        let fetched_page = page_job && record.outcome == Outcome::Fetched;
        self.progress.record(&record, fetched_page);
        if let Some(reason) = record.reason {
            self.tally.error(entry.host, reason);
        }
        self.staging.record(entry, line, trace, fetched_page)
    }

    // --- commit: the staged batch goes to the store, its records to the sink ---

    /// True when the store should commit now rather than at the end of the window.
    pub fn commit_due(&self) -> bool {
        self.staging.len() >= self.settings.commit_max_ops
    }

    pub fn has_staged(&self) -> bool {
        self.staging.has_staged() || self.shards.claims_waiting()
    }

    pub fn committing(&self) -> bool {
        self.staging.committing()
    }

    /// The staged batch, to send to the store, when no commit is in flight.
    pub fn take_commit(&mut self, now: Instant) -> Option<Batch> {
        let batch = self
            .staging
            .take_commit(self.shards.claims_waiting(), now)?;
        self.shards.claims_taken();
        self.adds.committing();
        self.operator.committing();
        Some(batch)
    }

    /// The fetches to archive with the commit just taken ([`take_commit`](Self::take_commit)).
    pub fn take_archive(&mut self) -> Vec<ArchiveItem> {
        self.staging.take_archive()
    }

    /// The store's answer to the commit in flight. Returns the records now durable, in order, for the sink.
    pub fn commit_done(
        &mut self,
        result: Result<Committed, FrontierError>,
        now: Instant,
    ) -> Result<Vec<(u64, Vec<u8>)>, FrontierError> {
        let landed = match self.staging.land(result, now) {
            Ok(l) => l,
            Err(e) => {
                self.adds.failed(&e.to_string());
                return Err(e);
            }
        };
        self.adds.committed(&landed.added);
        self.operator.committed();
        self.progress.count(Event::Commit);
        self.shards.committed();
        if !self.shards.is_sharded() {
            // A shared store's commit counters are this process's view only; the shard polls bring the crawl's.
            self.progress.set_counters(landed.counters);
        }
        for f in &landed.finished {
            self.windows.settle(f);
            self.tally.done(f.host);
        }
        self.shards.refused(&landed.refused, &mut self.windows, now);
        for added in landed.added {
            self.tally.queued(added.entry.host);
            if self.shards.owns_host(added.entry.host) {
                self.windows.offer(added, now);
            }
            // Otherwise its shard belongs to another process, which reads it from the store.
        }
        // Links recorded without a fetch get their records at once (staged for the next commit).
        self.record_excluded();
        Ok(landed.lines)
    }

    /// The sink wrote records up to `cp.lines`: their outbox copies can go at the next commit.
    pub fn written(&mut self, cp: JsonlCheckpoint) {
        trace_metrics::end_written(self.staging.written(cp));
    }

    /// Records committed but not yet written (for the final flush).
    pub fn pending_writes(&self) -> u64 {
        self.staging.pending_writes()
    }

    /// Counts a request sent to the store.
    pub fn store_request(&mut self) {
        self.progress.count(Event::StoreRequest);
    }

    // --- a crawl shared by many processes: the shard polls ---

    /// True in a crawl shared by many processes.
    pub fn is_sharded(&self) -> bool {
        self.shards.is_sharded()
    }

    /// What to give [`shards_changed`](Self::shards_changed) with the answer of a shard poll sent now.
    pub fn poll_token(&self) -> u64 {
        self.shards.poll_token()
    }

    /// Shard ownership news from the store: hosts of gained shards are read from the store (each waits its
    /// politeness delay first, as a request of the previous owner may have just started); hosts of lost shards
    /// start nothing more (their requests in flight finish, and their commits are refused by the store).
    /// Returns how many shards this process owns now. `token` is [`poll_token`](Self::poll_token) as of when the
    /// poll was sent.
    pub fn shards_changed(&mut self, changes: ShardChanges, token: u64, now: Instant) -> u64 {
        if !self.shards.is_sharded() {
            return 0;
        }
        if !changes.lost.is_empty() {
            for job in self.shards.lose(&changes.lost, &mut self.windows) {
                self.robots.forget(&job);
            }
        }
        self.shards.gain(changes.gained, &mut self.windows, now);
        self.take_robots(changes.robots, now);
        let (leases, staging) = (&self.leases, &self.staging);
        let dropped = self.shards.hand_off(
            &mut self.windows,
            |in_shard| leases.any_host(in_shard) || staging.touches(in_shard),
            now,
        );
        for job in dropped {
            self.robots.forget(&job);
        }
        self.shards.renewed(&mut self.windows, now);
        self.shards
            .hosts_pending(changes.hosts, &mut self.windows, now);
        self.shards.claimed(changes.claimed);
        if let Some(counters) = changes.counters {
            let counters = self.shards.counted(PolledCounters {
                counters,
                unacked: changes.unacked,
                token,
            });
            self.progress.set_counters(counters);
            let idle = self.idle() && self.shards.settled() && self.finished().is_none();
            self.shards
                .watch_idle(idle, changes.pending_held, counters.pending, now);
        }
        self.shards.owned()
    }

    /// Whether the next shard poll should report every held shard again.
    pub fn take_reread(&mut self) -> bool {
        self.shards.take_reread()
    }

    /// robots.txt rules kept with gained shards (or recovered): obeyed until they expire.
    fn take_robots(&mut self, shared: Vec<SharedRobots>, now: Instant) {
        let around = Around {
            windows: &mut self.windows,
            admission: &self.admission,
            progress: &mut self.progress,
        };
        self.robots.take_shared(shared, around, now);
    }

    // --- the end: draining, finishing, counters ---

    /// Stop leasing new work (SIGINT/SIGTERM).
    pub fn drain(&mut self) {
        self.draining = true;
    }

    pub fn is_draining(&self) -> bool {
        self.draining
    }

    /// Whether the crawl is over (all durable work written). None while it goes on.
    pub fn finished(&self) -> Option<FinishReason> {
        if !(self.leases.is_empty() && self.staging.settled()) {
            return None;
        }
        if self.draining {
            return Some(FinishReason::Shutdown);
        }
        if self.limit_reached() {
            return Some(FinishReason::LimitReached);
        }
        // A shared crawl: counters read after this process's last commit say nothing is pending or unwritten.
        // Continuous crawling never completes: it waits for the next due URL.
        if self.revisits.is_none()
            && self.progress.counters().pending == 0
            && self.windows.drained()
            && self.shards.written_everywhere()
        {
            return Some(FinishReason::Completed);
        }
        None
    }

    /// Queued URLs (in the store), leases, known URLs and hosts, for the metrics.
    pub fn gauges(&self) -> (u64, u64, u64, u64) {
        (
            self.queued(),
            self.leases.len() as u64,
            self.progress.counters().known,
            self.windows.hosts().hosts() as u64,
        )
    }

    /// URLs waiting: pending in the store (leased ones aside) plus robots.txt and sitemap jobs.
    fn queued(&self) -> u64 {
        self.progress
            .queued(self.leases.pages(), self.windows.hosts().queued() as u64)
    }

    pub fn in_flight(&self) -> usize {
        self.leases.len()
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        let mut s = self.progress.snapshot(
            self.queued(),
            self.leases.len() as u64,
            self.windows.hosts().hosts() as u64,
        );
        let scheduled = self.progress.counters().scheduled;
        s.revisits = self.revisits.as_ref().map(|r| {
            let o = r.outlook();
            crate::protocol::RevisitStats {
                scheduled,
                next_due_ms: o.next_due_ms,
                due_within_hour: o.due_before,
            }
        });
        s
    }
}

#[cfg(test)]
mod tests;
