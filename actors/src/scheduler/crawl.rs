//! The scheduler's state machine, without actix: leases, robots.txt state per authority, redirects, retries,
//! poison, link admission, records and group commits. The actor in `actor.rs` only moves messages in and out.

use super::robots_state::{RobotsState, RobotsTable};
use super::stats::Stats;
use crate::job::{FoundLink, Job, JobId, JobResult, PageOutcome, RobotsOutcome, SitemapOutcome};
use crawl_core::canon;
use crawl_core::frontier::{Entry, FrontierError, FrontierStore, JobKind, Recovered};
use crawl_core::politeness::{Feedback, Gate, HostId, HostQueues, Pop};
use crawl_core::record::{DnsInfo, Outcome, Reason, Record, now_rfc3339};
use crawl_core::scope::{ScopePolicy, ScopeVerdict};
use crawl_observability::KeyValue;
use crawl_observability::metrics::metrics;
use crawl_observability::redact::redact_url;
use crawl_observability::trace::{self, TraceCtx, wall};
use std::collections::{HashMap, HashSet, VecDeque};
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
}

/// Why the crawl ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    /// Nothing left to do.
    Completed,
    /// max_pages reached.
    LimitReached,
    /// SIGINT/SIGTERM: in-flight work finished (or the grace period ran out).
    Shutdown,
    /// A child failed too often or a store failed.
    Fatal(String),
}

#[derive(Debug)]
struct Lease {
    job: Job,
    fetcher: Option<usize>,
}

/// The scheduler's state.
pub struct Crawl {
    settings: CrawlSettings,
    scope: Arc<ScopePolicy>,
    store: Box<dyn FrontierStore>,
    queues: HostQueues,
    robots: RobotsTable,
    leases: HashMap<JobId, Lease>,
    next_job: JobId,
    next_entry_seq: u64,
    /// Records made but not committed yet: (sequence, JSONL line, trace).
    unsent: Vec<(u64, Vec<u8>, TraceCtx)>,
    written_upto: u64,
    committed_upto: u64,
    sitemaps_seen: HashSet<String>,
    pages_done: u64,
    page_leases: u64,
    draining: bool,
    stats: Stats,
    dropped: Vec<Entry>,
    /// DNS evidence of the job being handled, taken by the job's own record.
    pending_dns: Option<DnsInfo>,
    /// The trace of the job being handled, taken by the job's own record.
    pending_trace: Option<TraceCtx>,
    /// Traces of URLs queued again (retry, re-drive), continued by their next lease.
    retry_traces: HashMap<String, TraceCtx>,
    /// Traces of committed records on their way to the sink: (sequence, commit started, trace), in order.
    writing: VecDeque<(u64, Instant, TraceCtx)>,
    /// The scope changed in a reload: queued URLs are judged again when they come up.
    rescope: bool,
}

impl Crawl {
    /// Builds the state from what the store recovered. `jsonl_lines` is the number of complete lines in the JSONL.
    pub fn new(
        settings: CrawlSettings,
        scope: Arc<ScopePolicy>,
        queues: HostQueues,
        store: Box<dyn FrontierStore>,
        recovered: Recovered,
        jsonl_lines: u64,
        now: Instant,
    ) -> Crawl {
        let mut crawl = Crawl {
            settings,
            scope,
            store,
            queues,
            robots: RobotsTable::default(),
            leases: HashMap::new(),
            next_job: 1,
            next_entry_seq: recovered.pending.iter().map(|e| e.seq).max().unwrap_or(0) + 1,
            unsent: Vec::new(),
            written_upto: jsonl_lines,
            committed_upto: jsonl_lines,
            sitemaps_seen: HashSet::new(),
            pages_done: recovered.pages_fetched,
            page_leases: 0,
            draining: false,
            stats: Stats::default(),
            dropped: Vec::new(),
            pending_dns: None,
            pending_trace: None,
            retry_traces: HashMap::new(),
            writing: VecDeque::new(),
            rescope: false,
        };
        crawl.stats.resumed = recovered.pending.len() as u64;
        crawl.stats.known = recovered.known;
        for entry in recovered.pending {
            crawl.enqueue(entry, now);
        }
        crawl
    }

    /// Adds a seed (depth 0) unless it is known already. Returns true when it was new.
    pub fn add_seed(&mut self, url: &url::Url, now: Instant) -> bool {
        let link = FoundLink {
            url: url.as_str().to_owned(),
            host: canon::host_key(url).to_owned(),
            verdict: self.scope.check(url, 0),
        };
        self.admit(&link, 0, None, Vec::new(), now)
    }

    fn enqueue(&mut self, entry: Entry, now: Instant) {
        let host = match url::Url::parse(&entry.url) {
            Ok(u) => canon::host_key(&u).to_owned(),
            Err(_) => String::new(),
        };
        let id = self.queues.host_id(&host);
        self.queues.push(id, entry, now);
    }

    /// Admits a discovered URL: queues it when in scope, records it as excluded otherwise, ignores it when known.
    fn admit(
        &mut self,
        link: &FoundLink,
        depth: u32,
        parent: Option<&str>,
        chain: Vec<String>,
        now: Instant,
    ) -> bool {
        if self.store.is_known(&link.url) {
            return false;
        }
        let reason = match link.verdict {
            ScopeVerdict::InScope => None,
            ScopeVerdict::OutOfScope => Some(Reason::Scope),
            ScopeVerdict::Filtered => Some(Reason::Filter),
            ScopeVerdict::TooDeep => Some(Reason::Depth),
        };
        self.stats.known += 1;
        match reason {
            None => {
                let mut entry = Entry::page(link.url.clone(), depth, parent.map(str::to_owned));
                entry.redirect_chain = chain;
                entry.seq = self.next_entry_seq;
                self.next_entry_seq += 1;
                self.store.add(&entry);
                let host = self.queues.host_id(&link.host);
                self.queues.push(host, entry, now);
            }
            Some(reason) => {
                let record = Record::terminal(&link.url, depth, parent, reason, None);
                self.finish(record, false);
            }
        }
        true
    }

    fn finish(&mut self, record: Record, page_job: bool) {
        self.finish_traced(record, page_job, None);
    }

    /// Records a URL. A page job's record takes the job's trace; others get `trace` or a root span of their own.
    fn finish_traced(&mut self, mut record: Record, page_job: bool, trace: Option<TraceCtx>) {
        if page_job && record.dns.is_none() {
            record.dns = self.pending_dns.take();
        }
        let own = if page_job {
            self.pending_trace.take()
        } else {
            None
        };
        let trace = own.or(trace).unwrap_or_else(|| Self::record_trace(&record));
        record.trace_id = trace.trace_id();
        self.observe(&record, &trace);
        let line = record.to_line();
        self.stats.count(&record);
        let seq = self.store.finish(&record.url, line.clone(), page_job);
        if page_job {
            self.pages_done += 1;
        }
        self.unsent.push((seq, line, trace));
    }

    fn limit_reached(&self) -> bool {
        self.settings.max_pages > 0 && self.pages_done + self.page_leases >= self.settings.max_pages
    }

    /// Leases up to the free global capacity of ready jobs. Returns them and the instant to call again when some
    /// are waiting on politeness.
    pub fn next_jobs(&mut self, now: Instant) -> (Vec<Job>, Option<Instant>) {
        let mut jobs = Vec::new();
        let mut wake = None;
        while !self.draining
            && self.leases.len() < self.settings.concurrency
            && !self.limit_reached()
        {
            let mut need_robots: Vec<(HostId, String)> = Vec::new();
            let respect = self.settings.respect_robots;
            let robots = &mut self.robots;
            let pop = self.queues.pop_ready(
                now,
                |host, entry| {
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
                    if !self.still_in_scope(host, &entry, now) {
                        continue;
                    }
                    let id = self.next_job;
                    self.next_job += 1;
                    if entry.kind == JobKind::Page {
                        self.page_leases += 1;
                    }
                    let trace = self.lease_trace(host, &entry, now);
                    let job = Job {
                        id,
                        host,
                        entry,
                        started_at: now,
                        trace,
                    };
                    self.leases.insert(
                        id,
                        Lease {
                            job: job.clone(),
                            fetcher: None,
                        },
                    );
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
        (jobs, wake)
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
            self.finish_traced(record, false, Some(Self::dropped_trace(&entry, reason)));
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

    /// Remembers which fetcher holds a job.
    pub fn assign(&mut self, job: JobId, fetcher: usize) {
        if let Some(l) = self.leases.get_mut(&job) {
            l.fetcher = Some(fetcher);
        }
    }

    /// A fetcher died: every job it held is re-driven; the one it panicked on counts an attempt.
    pub fn fetcher_down(
        &mut self,
        fetcher: usize,
        panicked: Option<JobId>,
        detail: &str,
        now: Instant,
    ) {
        let lost: Vec<JobId> = self
            .leases
            .iter()
            .filter(|(_, l)| l.fetcher == Some(fetcher))
            .map(|(id, _)| *id)
            .collect();
        for id in lost {
            if Some(id) == panicked {
                self.job_done(
                    id,
                    JobResult::Panicked {
                        stage: "fetcher",
                        detail: detail.to_owned(),
                    },
                    now,
                );
            } else if let Some(lease) = self.take_lease(id) {
                self.queues
                    .release(lease.job.host, now, Feedback::NotStarted);
                if lease.job.entry.kind == JobKind::Page {
                    self.retry_traces
                        .insert(lease.job.entry.url.clone(), lease.job.trace.clone());
                }
                self.requeue(lease.job.entry, now);
            }
        }
    }

    fn take_lease(&mut self, id: JobId) -> Option<Lease> {
        let lease = self.leases.remove(&id)?;
        if lease.job.entry.kind == JobKind::Page {
            self.page_leases -= 1;
        }
        Some(lease)
    }

    fn requeue(&mut self, entry: Entry, now: Instant) {
        match entry.kind {
            JobKind::Page => {
                self.store.update(&entry);
                self.enqueue(entry, now);
            }
            JobKind::Robots | JobKind::Sitemap => {
                let host = match url::Url::parse(&entry.url) {
                    Ok(u) => self.queues.host_id(canon::host_key(&u)),
                    Err(_) => return,
                };
                self.queues.push_urgent(host, entry, now);
            }
        }
    }

    /// A config reload: the politeness policy applies from the next lease, the scope to links found from now on
    /// and to URLs still queued (judged again when they come up, and recorded excluded if they left the scope).
    pub fn reconfigure(
        &mut self,
        politeness: crawl_core::politeness::PolitenessPolicy,
        scope: Arc<ScopePolicy>,
    ) {
        self.queues.set_policy(politeness);
        if !Arc::ptr_eq(&self.scope, &scope) {
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
        let reason = match self.scope.check(&url, entry.depth) {
            ScopeVerdict::InScope => return true,
            ScopeVerdict::OutOfScope => Reason::Scope,
            ScopeVerdict::Filtered => Reason::Filter,
            ScopeVerdict::TooDeep => Reason::Depth,
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
        self.finish_traced(record, false, trace);
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
        self.store.staged() >= self.settings.commit_max_ops
    }

    pub fn has_staged(&self) -> bool {
        self.store.staged() > 0
    }

    /// Commits staged changes; returns the records that are now durable and must be written, in order.
    pub fn commit(&mut self) -> Result<Vec<(u64, Vec<u8>)>, FrontierError> {
        if self.store.staged() == 0 {
            return Ok(Vec::new());
        }
        let started = Instant::now();
        let info = self.store.commit()?;
        self.stats.commits += 1;
        tracing::trace!(
            added = info.added,
            finished = info.finished,
            trimmed = info.trimmed,
            "frontier committed"
        );
        let mut out = Vec::with_capacity(self.unsent.len());
        for (seq, line, trace) in std::mem::take(&mut self.unsent) {
            self.committed_upto = seq;
            self.writing.push_back((seq, started, trace));
            out.push((seq, line));
        }
        Ok(out)
    }

    /// The sink wrote records up to `seq`: their outbox copies can go at the next commit.
    pub fn written(&mut self, seq: u64) {
        if seq > self.written_upto {
            self.written_upto = seq;
            self.store.trim_outbox(seq);
        }
        self.end_written_traces(seq);
    }

    /// Whether the crawl is over (all durable work written). None while it goes on.
    pub fn finished(&self) -> Option<FinishReason> {
        let settled = self.leases.is_empty()
            && self.unsent.is_empty()
            && self.written_upto >= self.committed_upto
            && self.store.staged() == 0;
        if !settled {
            return None;
        }
        if self.draining {
            return Some(FinishReason::Shutdown);
        }
        if self.limit_reached() {
            return Some(FinishReason::LimitReached);
        }
        if self.queues.queued() == 0 {
            return Some(FinishReason::Completed);
        }
        None
    }

    /// Records committed but not yet written (for the final flush).
    pub fn pending_writes(&self) -> u64 {
        self.committed_upto.saturating_sub(self.written_upto)
    }

    /// Queued URLs, leases, known URLs and hosts, for the metrics.
    pub fn gauges(&self) -> (u64, u64, u64, u64) {
        (
            self.queues.queued() as u64,
            self.leases.len() as u64,
            self.stats.known,
            self.queues.hosts() as u64,
        )
    }

    pub fn in_flight(&self) -> usize {
        self.leases.len()
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        let mut s = self.stats.clone();
        s.queued = self.queues.queued() as u64;
        s.in_flight = self.leases.len() as u64;
        s.hosts = self.queues.hosts() as u64;
        s
    }
}

#[path = "crawl_results.rs"]
mod results;
#[path = "crawl_robots.rs"]
mod robots_jobs;
#[path = "crawl_trace.rs"]
mod trace_metrics;

#[cfg(test)]
#[path = "crawl_tests.rs"]
mod tests;
