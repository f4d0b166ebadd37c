//! The leases fetchers hold: which fetcher has a job, a fetcher that died (its jobs re-driven, the one it panicked
//! on counting an attempt), and leases whose deadline passed (a stuck parser or a lost message).

use super::*;

impl Crawl {
    /// A fetcher answered again or was replaced: it may take jobs.
    pub fn fetcher_back(&mut self, fetcher: usize) {
        self.suspect.remove(&fetcher);
    }

    /// Whether a fetcher is set aside after an expired lease.
    pub fn is_suspect(&self, fetcher: usize) -> bool {
        self.suspect.contains(&fetcher)
    }

    /// Remembers which fetcher holds a job.
    pub fn assign(&mut self, job: JobId, fetcher: usize) {
        self.leases.assign(job, fetcher);
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
        let Some(lease) = self.leases.take(id) else {
            return false;
        };
        self.queues
            .release(lease.job.host, now, Feedback::NotStarted);
        if lease.job.entry.kind.is_fetched() {
            self.retry_traces
                .insert(lease.job.entry.url.clone(), lease.trace);
        }
        self.requeue(lease.job.host, lease.job.entry, now);
        true
    }

    /// Leases whose deadline passed: each is re-driven with one more attempt (poisoned after max_attempts), as
    /// if its handler had panicked. Returns the jobs and the fetchers that held them, so the stuck child can be
    /// replaced.
    pub fn expire_leases(&mut self, now: Instant) -> Vec<(JobId, Option<usize>, String)> {
        let mut out = Vec::new();
        for id in self.leases.expired(now) {
            let fetcher = self.leases.fetcher_of(id);
            if let Some(f) = fetcher
                && self.suspect.contains(&f)
            {
                // Queued behind the stuck job on a fetcher already reported: re-driven without an attempt.
                self.redrive(id, now);
                continue;
            }
            if let Some(f) = fetcher {
                self.suspect.insert(f);
            }
            let url = self.lease_url(id).unwrap_or_default();
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
            out.push((id, fetcher, url));
        }
        out
    }

    fn lease_url(&self, id: JobId) -> Option<String> {
        self.leases.url_of(id)
    }

    /// The earliest lease deadline.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.leases.next_deadline()
    }
}
