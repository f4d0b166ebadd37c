//! The scheduler's state machine, without actix: host windows over the store, leases with deadlines, robots.txt
//! state per authority, redirects, retries, poison, link admission, records and group commits. The actor in
//! `actor.rs` only moves messages in and out: it sends the batches this state hands it ([`Crawl::take_commit`]) and
//! the window refills ([`Crawl::take_refills`]) to the store actor and feeds the answers back.

use super::leases::Leases;
use super::records::RecordLog;
use super::robots_state::{RobotsState, RobotsTable};
use crate::protocol::Stats;
use crate::protocol::{
    ArchiveItem, Archived, FinishReason, FoundLink, Job, JobId, JobResult, PageOutcome,
    RobotsOutcome, SitemapOutcome, StartGate,
};
use crawl_core::canon;
use crawl_core::frontier::window::{Refill, Window};
use crawl_core::frontier::{
    Batch, Committed, Counters, Discovered, Entry, Finished, Fp, FrontierError, JobKind,
    RECORDS_HOST, Resume, ShardChanges, ShardGate, SharedRobots, host_fp,
};
use crawl_core::output::JsonlCheckpoint;
use crawl_core::politeness::{Feedback, Gate, HostId, HostQueues, Pop};
use crawl_core::record::{DnsInfo, Outcome, Reason, Record, now_rfc3339};
use crawl_core::scope::{ScopePolicy, ScopeVerdict};
use crawl_core::traps::Budgets;
use crawl_observability::Attr;
use crawl_observability::metrics::metrics;
use crawl_observability::redact::redact_url;
use crawl_observability::trace::{self, Stamp, Trace, wall};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// Which window a refill is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowId {
    Host(HostId),
    /// The records queue (links recorded without a fetch).
    Records,
}

/// A refill to send to the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefillRequest {
    pub window: WindowId,
    pub host: Fp,
    pub refill: Refill,
}

/// What a finished job carries to its record: how its host was resolved and its trace. Whatever the record does
/// not take (the URL was queued again, or the job makes no record) is dealt with by [`Crawl::job_done`].
#[derive(Debug, Default)]
pub(super) struct JobCtx {
    pub dns: Option<DnsInfo>,
    pub trace: Option<Trace>,
    /// The fetch, for the archive: bound to the job's record when one is made.
    pub archive: Option<Box<Archived>>,
}

/// The commit in flight: what to do once it is durable.
#[derive(Debug, Default)]
struct InFlight {
    started: Option<Instant>,
    finished: Vec<Finished>,
    /// Hosts whose robots.txt rules the commit carries (a shard is handed over only once they are stored).
    robots: Vec<Fp>,
}

/// The scheduler's state.
pub struct Crawl {
    settings: CrawlSettings,
    scope: Arc<ScopePolicy>,
    /// URLs admitted per host and per URL pattern (`traps.max_urls_per_host`, `traps.max_urls_per_pattern`).
    budgets: Budgets,
    queues: HostQueues,
    /// The records queue: links recorded without a fetch, read from the store a window at a time.
    excluded: Window,
    robots: RobotsTable,
    leases: Leases,
    records: RecordLog,
    staged: Batch,
    /// Fetches to archive with the next commit.
    staged_archive: Vec<ArchiveItem>,
    in_flight: Option<InFlight>,
    refills_out: usize,
    /// The store's counters as of the last commit.
    counters: Counters,
    sitemaps_seen: HashSet<String>,
    pages_done: u64,
    draining: bool,
    stats: Stats,
    dropped: Vec<Entry>,
    /// Traces of URLs queued again (retry, re-drive), continued by their next lease.
    retry_traces: HashMap<String, Trace>,
    /// The scope changed in a reload: queued URLs are judged again when they come up.
    rescope: bool,
    /// Fetchers that held an expired lease and are not used until the supervisor reports on them.
    suspect: HashSet<usize>,
    /// With a store shared by many processes: which hosts this one may crawl (None: every host).
    shards: Option<Arc<dyn ShardGate>>,
    /// Hosts blocked because their shard's lease ran out on the local clock (unblocked when it is renewed).
    shard_blocked: HashSet<HostId>,
    /// Shards being handed over to a peer (their hosts detached).
    handing: HashSet<u32>,
    /// Records of the whole crawl committed and not yet written anywhere, as of the last shard poll (None before
    /// the first): a shared crawl is not over while one may still have to be written.
    unacked: Option<u64>,
    /// The store took over records of a stopped process: they come out with the next commit, due even when
    /// nothing else is staged.
    claims_waiting: bool,
    /// Idle-while-pending watch of a shared crawl (see `shards::IdleWatch`).
    idle: shards::IdleWatch,
    /// Commits completed so far, and how many had completed when the shard poll whose counters the crawl holds
    /// was sent: a shared crawl is declared over only on counters read after its own last commit.
    commits_done: u64,
    counters_after: Option<u64>,
    /// Records carry a crawl-wide `record_id` (a crawl shared by many processes).
    record_ids: bool,
    /// A URL may be crawled again (recrawl): its record id also names the queueing it answers.
    recrawl: bool,
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
        let mut excluded = Window::complete();
        let mut queues = queues;
        let mut budgets = Budgets::new(scope.traps().config());
        for h in &resume.hosts {
            if h.fp == RECORDS_HOST {
                excluded = Window::unloaded();
            } else {
                queues.resume_host(&h.name, now);
                budgets.resume(&h.name, h.pending);
            }
        }
        let mut stats = Stats {
            resumed: resume.counters.pending,
            known: resume.counters.known,
            ..Stats::default()
        };
        stats.resumed = resume.counters.pending;
        let moved = resume.checkpoint != Some(jsonl);
        let mut crawl = Crawl {
            leases: Leases::new(settings.lease_timeout),
            records: RecordLog::new(resume.next_record, jsonl.lines, moved.then_some(jsonl)),
            settings,
            scope,
            budgets,
            queues,
            excluded,
            robots: RobotsTable::default(),
            staged: Batch::default(),
            staged_archive: Vec::new(),
            in_flight: None,
            refills_out: 0,
            counters: resume.counters,
            sitemaps_seen: HashSet::new(),
            pages_done: resume.counters.pages_fetched,
            draining: false,
            stats,
            dropped: Vec::new(),
            retry_traces: HashMap::new(),
            rescope: false,
            suspect: HashSet::new(),
            shards: None,
            shard_blocked: HashSet::new(),
            handing: HashSet::new(),
            unacked: None,
            claims_waiting: false,
            idle: shards::IdleWatch::default(),
            commits_done: 0,
            counters_after: None,
            record_ids: false,
            recrawl: false,
        };
        crawl.take_robots(resume.robots, now);
        crawl
    }

    /// Adds a seed (depth 0); the store drops it when it is known already.
    pub fn add_seed(&mut self, url: &url::Url) {
        let link = FoundLink {
            url: url.as_str().to_owned(),
            host: canon::host_key(url).to_owned(),
            verdict: self.scope.check(url, 0),
        };
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
        self.screen_traps(&mut link, depth);
        let kind = JobKind::from_verdict(link.verdict);
        self.stage_discovered(link, depth, parent, chain, kind);
    }

    /// Stages a discovered URL to be queued (or recorded) as `kind`.
    pub(super) fn stage_discovered(
        &mut self,
        link: FoundLink,
        depth: u32,
        parent: Option<&Entry>,
        chain: Vec<String>,
        kind: JobKind,
    ) {
        self.staged.discovered.push(Discovered {
            url: link.url,
            host: link.host,
            depth,
            parent: parent.map(|p| (p.id, p.url.clone())),
            redirect_chain: chain,
            kind,
        });
    }

    /// Records a leased page job's URL: the record takes the job's DNS evidence and trace from `done`.
    fn record_job(&mut self, entry: &Entry, mut record: Record, done: &mut JobCtx) {
        if record.dns.is_none() {
            record.dns = done.dns.take();
        }
        let trace = done.trace.take();
        let seq = self.record(entry, record, true, trace);
        if let Some(archived) = done.archive.take() {
            self.staged_archive.push(ArchiveItem {
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
        mut record: Record,
        page_job: bool,
        trace: Option<Trace>,
    ) -> u64 {
        Self::mark_kind(entry, &mut record);
        let mut trace = trace.unwrap_or_else(|| Self::record_trace(&record));
        record.trace_id = trace.trace_id();
        if self.record_ids {
            let fp = crawl_core::frontier::url_fp(&entry.url);
            record.record_id = Some(if self.recrawl {
                format!("{fp:016x}-{:x}", entry.seq)
            } else {
                format!("{fp:016x}")
            });
        }
        self.observe(&record, &mut trace);
        let line = record.to_line();
        self.stats.count(&record);
        let seq = self.records.stage(trace);
        self.staged.records.push((seq, line));
        self.staged.finished.push(Finished {
            id: entry.id,
            host: entry.host,
            key: entry.key(),
            fetched_page: page_job,
        });
        if page_job {
            self.pages_done += 1;
        }
        seq
    }

    /// Back-pressure: while a commit is in flight and twice `commit_max_ops` changes wait behind it, no new job
    /// starts, so what waits for the store (and the memory it takes) stays bounded however fast pages come in.
    fn backlogged(&self) -> bool {
        self.in_flight.is_some() && self.staged.len() >= 2 * self.settings.commit_max_ops
    }

    fn limit_reached(&self) -> bool {
        self.settings.max_pages > 0
            && self.pages_done + self.leases.pages() >= self.settings.max_pages
    }

    /// Leases up to the free global capacity of ready jobs. Returns them and the instant to call again when some
    /// are waiting on politeness.
    pub fn next_jobs(&mut self, now: Instant) -> (Vec<Job>, Option<Instant>) {
        self.record_excluded();
        if (self.draining || self.limit_reached()) && self.queues.queued() > 0 {
            // No new lease will start: the windows' URLs stay in the store, their memory goes.
            self.queues.release_windows();
        }
        let mut jobs = Vec::new();
        let mut wake = None;
        while !self.draining
            && self.leases.len() < self.settings.concurrency
            && !self.limit_reached()
            && !self.backlogged()
        {
            let mut need_robots: Vec<(HostId, String)> = Vec::new();
            let respect = self.settings.respect_robots;
            let robots = &mut self.robots;
            let shards = &self.shards;
            let shard_blocked = &mut self.shard_blocked;
            let pop = self.queues.pop_ready(
                now,
                |host, entry| {
                    if let Some(g) = shards
                        && !g.may_start(entry.host)
                    {
                        // The shard's lease ran out on the local clock: no request starts until it is renewed.
                        shard_blocked.insert(host);
                        return Gate::Block;
                    }
                    if !respect {
                        return Gate::Go;
                    }
                    match robots.gate(&entry.url, now) {
                        Some(g) => g,
                        None => {
                            if let Ok(u) = url::Url::parse(&entry.url) {
                                need_robots.push((host, canon::authority_key(&u)));
                            }
                            Gate::Block
                        }
                    }
                },
                &mut self.dropped,
            );
            let asked_robots = !need_robots.is_empty();
            for (host, authority) in need_robots {
                self.request_robots(host, &authority, now);
            }
            self.record_dropped();
            match pop {
                Pop::Ready(host, entry) => {
                    if !entry.kind.is_fetched() && !self.may_start(host) {
                        // Urgent jobs pass the page gate: their shard is checked here.
                        self.queues.release(host, now, Feedback::NotStarted);
                        self.hold_urgent(host, entry, now);
                        continue;
                    }
                    if !self.still_in_scope(host, &entry, now) {
                        continue;
                    }
                    let id = self.leases.next_id();
                    let trace = self.lease_trace(host, &entry, now);
                    let gate = self
                        .shards
                        .as_ref()
                        .map(|g| StartGate::new(g.clone(), self.queues.host_fp(host)));
                    let job = Job {
                        id,
                        host,
                        entry,
                        started_at: now,
                        trace: trace.ctx(),
                        gate,
                    };
                    self.leases.insert(job.clone(), trace, now);
                    jobs.push(job);
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

    /// A safety net: when nothing is out and no window accounts for the URLs the store holds, read every queue
    /// again from its start. Never needed when the windows' bookkeeping is right; it keeps a crawl from stalling
    /// when it is not.
    fn heal(&mut self, now: Instant) {
        // In a sharded crawl the pending count is the whole crawl's: other processes hold the rest (see
        // `shards::watch_idle` for its own safety net).
        if self.shards.is_none() && self.counters.pending > 0 && self.idle() {
            tracing::warn!(
                pending = self.counters.pending,
                "pending urls outside every window; reading the queues again"
            );
            self.queues.rescan_all(now);
            self.excluded.rescan();
        }
    }

    /// True when nothing is out, staged, being read or queued here, every window has read its whole queue, and
    /// leasing goes on (not draining, no limit reached): whatever the store still holds as pending, no window
    /// accounts for.
    fn idle(&self) -> bool {
        self.leases.is_empty()
            && self.in_flight.is_none()
            && self.staged.is_empty()
            && self.refills_out == 0
            && self.queues.queued() == 0
            && !self.queues.store_has_more()
            && !self.excluded.has_more()
            && !self.draining
            && !self.limit_reached()
    }

    /// Records the links of the records queue (excluded without a fetch) that are in memory.
    fn record_excluded(&mut self) {
        while let Some(entry) = self.excluded.pop() {
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

    fn record_dropped(&mut self) {
        for entry in std::mem::take(&mut self.dropped) {
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
            let trace = Self::dropped_trace(&entry, reason);
            self.record(&entry, record, false, Some(trace));
        }
    }

    pub(super) fn request_robots(&mut self, host: HostId, authority: &str, now: Instant) {
        if !self.robots.start(authority) {
            return;
        }
        let mut entry = Entry::page(format!("{authority}/robots.txt"), 0, None);
        entry.kind = JobKind::Robots;
        self.queues.push_urgent(host, entry, now);
    }

    pub(super) fn requeue(&mut self, host: HostId, entry: Entry, now: Instant) {
        match entry.kind {
            JobKind::Page | JobKind::Embed => {
                self.staged.updates.push(entry.clone());
                self.queues.push(host, entry, now);
            }
            JobKind::Robots | JobKind::Sitemap => self.queues.push_urgent(host, entry, now),
            _ => {}
        }
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
            self.queues.set_policy(politeness);
        }
        if let Some(scope) = scope
            && !Arc::ptr_eq(&self.scope, &scope)
        {
            self.scope = scope;
            self.rescope = true;
        }
    }

    /// After a scope reload: whether a queued page URL is still in scope; records it excluded if not.
    fn still_in_scope(&mut self, host: HostId, entry: &Entry, now: Instant) -> bool {
        if !self.rescope || entry.kind != JobKind::Page {
            return true;
        }
        let Ok(url) = url::Url::parse(&entry.url) else {
            return true;
        };
        let Some(reason) = self.scope.check(&url, entry.depth).reason() else {
            return true;
        };
        self.queues.release(host, now, Feedback::NotStarted);
        let record = Record::terminal(
            &entry.url,
            entry.depth,
            entry.parent.as_deref(),
            reason,
            Some("left the scope in a config reload".to_owned()),
        );
        let trace = self.retry_traces.remove(&entry.url);
        self.record(entry, record, false, trace);
        false
    }

    /// Stop leasing new work (SIGINT/SIGTERM).
    pub fn drain(&mut self) {
        self.draining = true;
    }

    pub fn is_draining(&self) -> bool {
        self.draining
    }

    /// True when the store should commit now rather than at the end of the window.
    pub fn commit_due(&self) -> bool {
        self.staged.len() >= self.settings.commit_max_ops
    }

    pub fn has_staged(&self) -> bool {
        !self.staged.is_empty()
            || !self.staged_archive.is_empty()
            || self.records.has_checkpoint()
            || self.claims_waiting
    }

    pub fn committing(&self) -> bool {
        self.in_flight.is_some()
    }

    /// The sink wrote records up to `cp.lines`: their outbox copies can go at the next commit.
    pub fn written(&mut self, cp: JsonlCheckpoint) {
        self.records.written(cp);
        self.end_written_traces(cp.lines);
    }

    /// Whether the crawl is over (all durable work written). None while it goes on.
    pub fn finished(&self) -> Option<FinishReason> {
        let settled = self.leases.is_empty()
            && self.staged.is_empty()
            && self.staged_archive.is_empty()
            && self.in_flight.is_none()
            && self.records.settled()
            && !self.records.has_checkpoint();
        if !settled {
            return None;
        }
        if self.draining {
            return Some(FinishReason::Shutdown);
        }
        if self.limit_reached() {
            return Some(FinishReason::LimitReached);
        }
        // A shared crawl: counters read after this process's last commit say nothing is pending or unwritten.
        let written_everywhere = self.shards.is_none()
            || (self.unacked == Some(0) && self.counters_after == Some(self.commits_done));
        if self.counters.pending == 0
            && self.queues.queued() == 0
            && self.refills_out == 0
            && written_everywhere
        {
            return Some(FinishReason::Completed);
        }
        None
    }

    /// Records committed but not yet written (for the final flush).
    pub fn pending_writes(&self) -> u64 {
        self.records.pending_writes()
    }

    /// Queued URLs (in the store), leases, known URLs and hosts, for the metrics.
    pub fn gauges(&self) -> (u64, u64, u64, u64) {
        (
            self.queued(),
            self.leases.len() as u64,
            self.counters.known,
            self.queues.hosts() as u64,
        )
    }

    /// URLs waiting: pending in the store (leased ones aside) plus robots.txt and sitemap jobs.
    fn queued(&self) -> u64 {
        self.counters
            .pending
            .saturating_sub(self.leases.pages())
            .max(self.queues.queued() as u64)
    }

    pub fn in_flight(&self) -> usize {
        self.leases.len()
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        let mut s = self.stats.clone();
        s.queued = self.queued();
        s.in_flight = self.leases.len() as u64;
        s.hosts = self.queues.hosts() as u64;
        s.known = self.counters.known;
        s.total_done = self.counters.done;
        s.total_fetched = self.counters.pages_fetched;
        s
    }
}

mod embeds;
mod fetchers;
mod results;
mod robots_jobs;
mod shards;
mod store_io;
mod trace_metrics;
mod traps;

#[cfg(test)]
mod tests;
