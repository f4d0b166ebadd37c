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
    unsent: Vec<(u64, Vec<u8>)>,
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
    /// Traces of records not committed yet, by sequence.
    unsent_traces: Vec<(u64, TraceCtx)>,
    /// Traces of committed records on their way to the sink: (commit started, traces).
    writing: VecDeque<(Instant, Vec<(u64, TraceCtx)>)>,
    /// The scope changed in a reload: queued URLs are judged again when they come up.
    rescope: bool,
}

/// Root-span attributes of a job.
fn job_attributes(entry: &Entry) -> Vec<KeyValue> {
    vec![
        KeyValue::new("url.full", redact_url(&entry.url)),
        KeyValue::new(
            "crawl.kind",
            match entry.kind {
                JobKind::Page => "page",
                JobKind::Robots => "robots",
                JobKind::Sitemap => "sitemap",
            },
        ),
        KeyValue::new("crawl.depth", i64::from(entry.depth)),
    ]
}

/// The registrable domain of a URL's host (the IP for IP hosts), for per-site metric labels.
fn host_group(url: &str) -> String {
    let host = url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default();
    psl::domain_str(&host).map_or(host.clone(), str::to_owned)
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
            unsent_traces: Vec::new(),
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
        let trace = match own.or(trace) {
            Some(t) => t,
            None => {
                // A URL recorded without a lease (excluded, disallowed): a root span of its own.
                let now = std::time::SystemTime::now();
                trace::root(
                    "crawl.url",
                    now,
                    vec![
                        KeyValue::new("url.full", redact_url(&record.url)),
                        KeyValue::new("crawl.kind", "page"),
                        KeyValue::new("crawl.depth", i64::from(record.depth)),
                    ],
                )
            }
        };
        record.trace_id = trace.trace_id();
        self.observe(&record, &trace);
        let line = record.to_line();
        self.stats.count(&record);
        let seq = self.store.finish(&record.url, line.clone(), page_job);
        if page_job {
            self.pages_done += 1;
        }
        self.unsent.push((seq, line));
        self.unsent_traces.push((seq, trace));
    }

    /// Metrics and root-span attributes of a record.
    fn observe(&self, record: &Record, trace: &TraceCtx) {
        let m = metrics();
        let reason = record.reason.map_or("", Reason::as_str);
        m.record(record.outcome.as_str(), reason);
        if record.outcome == Outcome::Fetched
            && let Some(status) = record.status
        {
            m.response(status, record.content_length.unwrap_or(0));
        }
        if let Some(ms) = record.elapsed_ms {
            let exemplar = trace.is_sampled().then(|| trace.trace_id()).flatten();
            m.fetch_duration(record.outcome.as_str(), ms as f64 / 1000.0, exemplar);
        }
        if matches!(record.reason, Some(Reason::TooLarge | Reason::Decode)) {
            m.parse_failure(reason);
        }
        let mut attrs = vec![
            KeyValue::new("crawl.outcome", record.outcome.as_str()),
            KeyValue::new("crawl.attempt", i64::from(record.attempts)),
        ];
        if !reason.is_empty() {
            attrs.push(KeyValue::new("crawl.reason", reason));
        }
        if let Some(s) = record.status {
            attrs.push(KeyValue::new("http.response.status_code", i64::from(s)));
        }
        trace.set_attributes(attrs);
        if record.outcome == Outcome::Failed {
            trace.set_error(record.error.as_deref().unwrap_or(reason));
        }
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
                    let queued = wall(entry.queued_at.unwrap_or(now));
                    let trace = match self.retry_traces.remove(&entry.url) {
                        Some(t) => t,
                        None => trace::root("crawl.url", queued, job_attributes(&entry)),
                    };
                    let at = wall(now);
                    trace.span(
                        "frontier.wait",
                        queued,
                        at,
                        vec![KeyValue::new(
                            "crawl.host",
                            self.queues.host_name(host).to_owned(),
                        )],
                    );
                    if entry.kind == JobKind::Page {
                        let verdict = if respect { "allowed" } else { "not_checked" };
                        trace.span(
                            "robots.check",
                            at,
                            at,
                            vec![KeyValue::new("robots.verdict", verdict)],
                        );
                    }
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
            let now = std::time::SystemTime::now();
            let queued = entry.queued_at.map_or(now, wall);
            let t = trace::root("crawl.url", queued, job_attributes(&entry));
            t.span("frontier.wait", queued, now, Vec::new());
            let verdict = if reason == Reason::Robots {
                "disallowed"
            } else {
                "unavailable"
            };
            t.span(
                "robots.check",
                now,
                now,
                vec![KeyValue::new("robots.verdict", verdict)],
            );
            self.finish_traced(record, false, Some(t));
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

    /// A job ended, with how its host was resolved (for its record).
    pub fn job_done_with_dns(
        &mut self,
        id: JobId,
        result: JobResult,
        dns: Option<DnsInfo>,
        now: Instant,
    ) {
        self.pending_dns = dns;
        self.job_done(id, result, now);
        self.pending_dns = None;
    }

    /// A job ended. Results of leases no longer held (re-driven after a restart) are ignored.
    pub fn job_done(&mut self, id: JobId, result: JobResult, now: Instant) {
        let Some(lease) = self.take_lease(id) else {
            self.stats.stale_results += 1;
            return;
        };
        let job = lease.job;
        let (kind, url) = (job.entry.kind, job.entry.url.clone());
        self.pending_trace = Some(job.trace.clone());
        if let JobResult::FetchFailed { reason, .. } = &result {
            metrics().fetch_error(reason.as_str());
        }
        if let JobResult::Page(out) = &result
            && matches!(out.status, 403 | 429 | 503)
        {
            metrics().antibot(out.status, &host_group(&url));
        }
        self.dispatch_result(job, result, now);
        // A trace not taken by a record: the URL was queued again, or the job makes no record (robots, sitemap).
        if let Some(t) = self.pending_trace.take() {
            if kind == JobKind::Page {
                self.retry_traces.insert(url, t);
            } else {
                t.end(wall(now));
            }
        }
    }

    fn dispatch_result(&mut self, job: Job, result: JobResult, now: Instant) {
        match (job.entry.kind, result) {
            (_, JobResult::Panicked { stage, detail }) => self.on_panic(job, stage, &detail, now),
            (JobKind::Robots, result) => self.on_robots(job, result, now),
            (JobKind::Sitemap, result) => self.on_sitemap(job, result, now),
            (JobKind::Page, JobResult::Page(outcome)) => self.on_page(job, *outcome, now),
            (
                JobKind::Page,
                JobResult::FetchFailed {
                    reason,
                    detail,
                    retryable,
                },
            ) => {
                if retryable && job.entry.retries < self.settings.max_retries {
                    let wait = self
                        .settings
                        .retry_base
                        .saturating_mul(1 << job.entry.retries.min(16));
                    self.queues.release(
                        job.host,
                        now,
                        Feedback::Throttled {
                            retry_after: Some(wait),
                        },
                    );
                    self.retry(job.entry, now);
                } else {
                    self.queues.release(job.host, now, Feedback::Ok);
                    let e = &job.entry;
                    let mut record = Record::terminal(
                        &e.url,
                        e.depth,
                        e.parent.as_deref(),
                        reason,
                        Some(detail),
                    );
                    record.attempts = e.tries();
                    record.elapsed_ms =
                        Some(now.saturating_duration_since(job.started_at).as_millis() as u64);
                    self.finish(record, true);
                }
            }
            (JobKind::Page, other) => {
                self.queues.release(job.host, now, Feedback::Ok);
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
                self.finish(record, true);
            }
        }
    }

    fn retry(&mut self, mut entry: Entry, now: Instant) {
        entry.retries += 1;
        self.stats.retries += 1;
        metrics().retry();
        self.requeue(entry, now);
    }

    fn on_panic(&mut self, job: Job, stage: &str, detail: &str, now: Instant) {
        self.stats.panics += 1;
        let mut entry = job.entry;
        entry.attempt += 1;
        tracing::warn!(url = %entry.url, stage, attempt = entry.attempt, detail, "handler panicked; re-driving url");
        let poisoned = entry.attempt >= self.settings.max_attempts;
        if !(poisoned && entry.kind == JobKind::Robots) {
            // on_robots releases the host itself
            self.queues.release(job.host, now, Feedback::Ok);
        }
        if poisoned {
            if entry.kind == JobKind::Page {
                let mut record = Record::terminal(
                    &entry.url,
                    entry.depth,
                    entry.parent.as_deref(),
                    Reason::Poison,
                    Some(format!(
                        "{stage} panicked {} times: {detail}",
                        entry.attempt
                    )),
                );
                // `attempt` already counts this try
                record.attempts = entry.attempt + entry.retries;
                self.finish(record, true);
            } else if entry.kind == JobKind::Robots {
                self.on_robots(
                    Job { entry, ..job },
                    JobResult::Robots(RobotsOutcome::Unavailable {
                        detail: detail.to_owned(),
                    }),
                    now,
                );
            }
            return;
        }
        self.requeue(entry, now);
    }

    fn on_page(&mut self, job: Job, out: PageOutcome, now: Instant) {
        let entry = job.entry;
        let throttled = out.status == 429 || out.status == 503;
        if throttled && entry.retries < self.settings.max_retries {
            self.queues.release(
                job.host,
                now,
                Feedback::Throttled {
                    retry_after: out.retry_after,
                },
            );
            self.retry(entry, now);
            return;
        }
        let feedback = if throttled {
            Feedback::Throttled {
                retry_after: out.retry_after,
            }
        } else {
            Feedback::Ok
        };
        self.queues.release(job.host, now, feedback);
        let mut record = Record {
            url: entry.url.clone(),
            outcome: Outcome::Fetched,
            reason: None,
            status: Some(out.status),
            depth: entry.depth,
            parent: entry.parent.clone(),
            redirect_to: None,
            content_type: out.content_type.clone(),
            content_length: Some(out.content_length),
            links: Some(out.links_found),
            fetched_at: now_rfc3339(),
            elapsed_ms: Some(out.elapsed_ms),
            attempts: entry.tries(),
            http_version: Some(out.http_version.clone()),
            noindex: out.noindex,
            error: None,
            dns: None,
            proxy: out.proxy.clone(),
            trace_id: None,
        };
        if let Some((reason, detail)) = out.body_error {
            record.outcome = reason.outcome();
            record.reason = Some(reason);
            record.error = Some(detail);
            record.links = None;
            self.finish(record, true);
            return;
        }
        if (300..400).contains(&out.status) {
            match out.redirect_to {
                Some(Ok(target)) => {
                    record.redirect_to = Some(target.url.clone());
                    let mut chain = entry.redirect_chain.clone();
                    chain.push(entry.url.clone());
                    if chain.contains(&target.url) {
                        record.outcome = Outcome::Failed;
                        record.reason = Some(Reason::RedirectLoop);
                        record.error = Some(format!("redirect loop back to {}", target.url));
                        self.finish(record, true);
                        return;
                    }
                    if chain.len() as u32 > self.settings.max_redirects {
                        record.outcome = Outcome::Failed;
                        record.reason = Some(Reason::TooManyRedirects);
                        record.error = Some(format!(
                            "more than {} redirects",
                            self.settings.max_redirects
                        ));
                        self.finish(record, true);
                        return;
                    }
                    self.finish(record, true);
                    self.admit(&target, entry.depth, Some(&entry.url), chain, now);
                }
                Some(Err(detail)) => {
                    record.error = Some(detail);
                    self.finish(record, true);
                }
                None => self.finish(record, true),
            }
            return;
        }
        self.finish(record, true);
        if (200..300).contains(&out.status) {
            for link in &out.links {
                self.admit(link, entry.depth + 1, Some(&entry.url), Vec::new(), now);
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
        let traces = std::mem::take(&mut self.unsent_traces);
        if !traces.is_empty() {
            self.writing.push_back((started, traces));
        }
        tracing::trace!(
            added = info.added,
            finished = info.finished,
            trimmed = info.trimmed,
            "frontier committed"
        );
        let out = std::mem::take(&mut self.unsent);
        if let Some((seq, _)) = out.last() {
            self.committed_upto = *seq;
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

    /// Ends the traces of records now in the JSONL: an `output.write` span from the commit to the write.
    fn end_written_traces(&mut self, upto: u64) {
        let end = std::time::SystemTime::now();
        while let Some((started, traces)) = self.writing.front_mut() {
            let start = wall(*started);
            let mut rest = Vec::new();
            for (seq, t) in std::mem::take(traces) {
                if seq <= upto {
                    t.span(
                        "output.write",
                        start,
                        end,
                        vec![KeyValue::new(
                            "crawl.jsonl_line",
                            i64::try_from(seq).unwrap_or(i64::MAX),
                        )],
                    );
                    t.end(end);
                } else {
                    rest.push((seq, t));
                }
            }
            if rest.is_empty() {
                self.writing.pop_front();
            } else {
                *traces = rest;
                break;
            }
        }
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

#[path = "crawl_robots.rs"]
mod robots_jobs;

#[cfg(test)]
#[path = "crawl_tests.rs"]
mod tests;
