//! The scheduler's handling of a finished job: retries with backoff, panics (re-drive, poison), and page results
//! (records, redirects with loop and length limits, link admission). Robots and sitemap results are in
//! `crawl_robots.rs`.

use super::JobCtx;
use super::trace_metrics::host_group;
use super::*;
use crawl_core::backoff::Backoff;

impl Crawl {
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
            self.stats.stale_results += 1;
            return;
        };
        let (job, trace) = (lease.job, lease.trace);
        let (kind, url) = (job.entry.kind, job.entry.url.clone());
        let mut done = JobCtx {
            dns,
            trace: Some(trace),
            archive,
        };
        if let JobResult::FetchFailed { reason, .. } = &result {
            metrics().fetch_error(reason.as_str());
        }
        if let JobResult::Page(out) = &result
            && matches!(out.status, 403 | 429 | 503)
        {
            metrics().antibot(out.status, &host_group(&url));
        }
        self.dispatch_result(job, result, &mut done, now);
        // What the crawler saw is archived even when it makes no record (robots.txt, sitemaps, a retried answer).
        if let Some(archived) = done.archive.take() {
            self.staged_archive.push(ArchiveItem {
                record: None,
                archived,
            });
        }
        // A trace not taken by a record: the URL was queued again, or the job makes no record (robots, sitemap).
        if let Some(t) = done.trace.take() {
            if kind.is_fetched() {
                self.retry_traces.insert(url, t);
            } else {
                t.end(now);
            }
        }
    }

    pub(super) fn dispatch_result(
        &mut self,
        job: Job,
        result: JobResult,
        done: &mut JobCtx,
        now: Instant,
    ) {
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
            ) => {
                if retryable && job.entry.retries < self.settings.max_retries {
                    let wait = Backoff::uncapped(self.settings.retry_base).delay(job.entry.retries);
                    self.queues.release(
                        job.host,
                        now,
                        Feedback::Throttled {
                            retry_after: Some(wait),
                        },
                    );
                    self.share_pause(job.host, now);
                    self.retry(job.host, job.entry, now);
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
                    let latency = now.saturating_duration_since(job.started_at);
                    record.elapsed_ms = Some(latency.as_millis() as u64);
                    self.record_fetch(&job.entry, record, done, (latency, now));
                }
            }
            (_, other) => {
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
                self.record_job(&job.entry, record, done);
            }
        }
    }

    /// Records a fetch that took `latency` (an answer, or an error after the request started) and observes it in
    /// the latency histogram.
    fn record_fetch(
        &mut self,
        entry: &Entry,
        record: Record,
        done: &mut JobCtx,
        (latency, now): (Duration, Instant),
    ) {
        Self::observe_latency(&record, latency, done.trace.as_ref(), now);
        self.record_job(entry, record, done);
    }

    pub(super) fn retry(&mut self, host: HostId, mut entry: Entry, now: Instant) {
        entry.retries += 1;
        self.stats.retries += 1;
        metrics().retry();
        self.requeue(host, entry, now);
    }

    pub(super) fn on_panic(
        &mut self,
        job: Job,
        stage: &str,
        detail: &str,
        done: &mut JobCtx,
        now: Instant,
    ) {
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

    pub(super) fn on_page(&mut self, job: Job, out: PageOutcome, done: &mut JobCtx, now: Instant) {
        let entry = job.entry;
        let latency = out.elapsed;
        let throttled = out.status == 429 || out.status == 503;
        if throttled && entry.retries < self.settings.max_retries {
            self.queues.release(
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
        self.queues.release(job.host, now, feedback);
        if throttled {
            self.share_pause(job.host, now);
        }
        let mut record = Record {
            url: entry.url.clone(),
            outcome: Outcome::Fetched,
            reason: None,
            status: Some(out.status),
            depth: entry.depth,
            parent: entry.parent.clone(),
            redirect_to: None,
            content_type: out.content_type,
            content_length: Some(out.content_length),
            links: Some(out.links_found),
            fetched_at: now_rfc3339(),
            elapsed_ms: Some(out.elapsed_ms),
            attempts: entry.tries(),
            http_version: Some(out.http_version),
            noindex: out.noindex,
            error: None,
            dns: None,
            proxy: out.proxy,
            trace_id: None,
            record_id: None,
            title: out.title,
            digest: out.digest,
            links_dropped: Self::links_dropped(&entry.url, out.links_dropped, out.embeds_dropped),
            kind: None,
            warc: None,
        };
        if let Some((reason, detail)) = out.body_error {
            record.outcome = reason.outcome();
            record.reason = Some(reason);
            record.error = Some(detail);
            record.links = None;
            self.record_fetch(&entry, record, done, (latency, now));
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
                        self.record_fetch(&entry, record, done, (latency, now));
                        return;
                    }
                    if chain.len() as u32 > self.settings.max_redirects {
                        record.outcome = Outcome::Failed;
                        record.reason = Some(Reason::TooManyRedirects);
                        record.error = Some(format!(
                            "more than {} redirects",
                            self.settings.max_redirects
                        ));
                        self.record_fetch(&entry, record, done, (latency, now));
                        return;
                    }
                    self.record_fetch(&entry, record, done, (latency, now));
                    self.admit_target(target, &entry, chain);
                }
                Some(Err(detail)) => {
                    record.error = Some(detail);
                    self.record_fetch(&entry, record, done, (latency, now));
                }
                None => self.record_fetch(&entry, record, done, (latency, now)),
            }
            return;
        }
        self.record_fetch(&entry, record, done, (latency, now));
        if (200..300).contains(&out.status) {
            // Requisites first: a URL both linked and embedded is fetched once, as the page's requisite.
            for embed in out.embeds {
                self.admit_embed(embed, entry.depth, Some(&entry), Vec::new());
            }
            for link in out.links {
                self.admit(link, entry.depth + 1, Some(&entry), Vec::new());
            }
        }
    }
}
