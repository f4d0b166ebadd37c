//! The jobs out: which jobs are leased, with which fetcher, until when; the traces of URLs queued again (retry,
//! re-drive), continued by their next lease; and the fetchers set aside after an expired lease.

use crate::protocol::{Job, JobId};
use crawl_observability::trace::Trace;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::{Duration, Instant};

#[derive(Debug)]
pub(super) struct Lease {
    pub job: Job,
    /// The job's trace (its root span ends with the record, or when the lease is dropped); the job carries its
    /// context.
    pub trace: Trace,
    pub fetcher: Option<usize>,
    /// When the job must have come back (request timeout plus the parse budget).
    pub deadline: Instant,
}

/// A lease whose deadline passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Expired {
    pub id: JobId,
    pub fetcher: Option<usize>,
    /// Queued behind the stuck job on a fetcher already set aside: re-driven without an attempt.
    pub behind_stuck: bool,
}

#[derive(Debug)]
pub(super) struct Leases {
    map: HashMap<JobId, Lease, foldhash::quality::RandomState>,
    /// The leases by deadline, so that finding the expired ones and the next deadline reads no more than those
    /// (every event asks).
    by_deadline: BTreeSet<(Instant, JobId)>,
    next: JobId,
    pages: u64,
    timeout: Duration,
    /// Traces of URLs queued again (retry, re-drive), continued by their next lease.
    retry_traces: HashMap<String, Trace>,
    /// Fetchers that held an expired lease and are not used until the supervisor reports on them.
    suspect: HashSet<usize>,
}

impl Leases {
    pub(super) fn new(timeout: Duration) -> Leases {
        Leases {
            map: HashMap::default(),
            by_deadline: BTreeSet::new(),
            next: 1,
            pages: 0,
            timeout,
            retry_traces: HashMap::new(),
            suspect: HashSet::new(),
        }
    }

    pub(super) fn next_id(&mut self) -> JobId {
        let id = self.next;
        self.next += 1;
        id
    }

    pub(super) fn insert(&mut self, job: Job, trace: Trace, now: Instant) {
        if job.entry.kind.is_fetched() {
            self.pages += 1;
        }
        let deadline = now + self.timeout;
        self.by_deadline.insert((deadline, job.id));
        if let Some(old) = self.map.insert(
            job.id,
            Lease {
                job,
                trace,
                fetcher: None,
                deadline,
            },
        ) {
            self.by_deadline.remove(&(old.deadline, old.job.id));
        }
    }

    pub(super) fn take(&mut self, id: JobId) -> Option<Lease> {
        let lease = self.map.remove(&id)?;
        self.by_deadline.remove(&(lease.deadline, id));
        if lease.job.entry.kind.is_fetched() {
            self.pages -= 1;
        }
        Some(lease)
    }

    pub(super) fn assign(&mut self, id: JobId, fetcher: usize) {
        if let Some(l) = self.map.get_mut(&id) {
            l.fetcher = Some(fetcher);
        }
    }

    pub(super) fn held_by(&self, fetcher: usize) -> Vec<JobId> {
        let mut v: Vec<JobId> = self
            .map
            .iter()
            .filter(|(_, l)| l.fetcher == Some(fetcher))
            .map(|(id, _)| *id)
            .collect();
        v.sort_unstable();
        v
    }

    /// Leases whose deadline has passed, oldest first. The fetcher of each is set aside ([`is_suspect`]) and
    /// the later ones it held are said to be behind the stuck one.
    ///
    /// [`is_suspect`]: Self::is_suspect
    pub(super) fn expire(&mut self, now: Instant) -> Vec<Expired> {
        let mut out = Vec::new();
        for (d, id) in &self.by_deadline {
            if *d > now {
                break;
            }
            let fetcher = self.map.get(id).and_then(|l| l.fetcher);
            let behind_stuck = match fetcher {
                Some(f) => !self.suspect.insert(f),
                None => false,
            };
            out.push(Expired {
                id: *id,
                fetcher,
                behind_stuck,
            });
        }
        out
    }

    /// A fetcher answered again or was replaced: it may take jobs.
    pub(super) fn fetcher_back(&mut self, fetcher: usize) {
        self.suspect.remove(&fetcher);
    }

    /// Whether a fetcher is set aside after an expired lease.
    pub(super) fn is_suspect(&self, fetcher: usize) -> bool {
        self.suspect.contains(&fetcher)
    }

    /// Keeps the trace of a URL queued again, for its next lease.
    pub(super) fn park_trace(&mut self, url: String, trace: Trace) {
        self.retry_traces.insert(url, trace);
    }

    /// The trace of an earlier try of a URL, if it was queued again.
    pub(super) fn resume_trace(&mut self, url: &str) -> Option<Trace> {
        // Retried URLs are few: the map is nearly always empty, and an empty map still hashes the key.
        if self.retry_traces.is_empty() {
            None
        } else {
            self.retry_traces.remove(url)
        }
    }

    /// Takes a job's lease to queue its URL again (its trace is kept for the next lease). None when the job is not
    /// leased (done, or re-driven already).
    pub(super) fn take_for_redrive(&mut self, id: JobId) -> Option<Job> {
        let lease = self.take(id)?;
        if lease.job.entry.kind.is_fetched() {
            self.park_trace(lease.job.entry.url.clone(), lease.trace);
        }
        Some(lease.job)
    }

    /// True when a lease is out for a host that satisfies `pred` (by host fingerprint).
    pub(super) fn any_host(&self, pred: impl Fn(crawl_core::frontier::Fp) -> bool) -> bool {
        self.map.values().any(|l| pred(l.job.entry.host))
    }

    /// The earliest deadline.
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.by_deadline.first().map(|(d, _)| *d)
    }

    pub(super) fn url_of(&self, id: JobId) -> Option<String> {
        self.map.get(&id).map(|l| l.job.entry.url.clone())
    }

    pub(super) fn len(&self) -> usize {
        self.map.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Page leases out (they count toward max_pages).
    pub(super) fn pages(&self) -> u64 {
        self.pages
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crawl_core::frontier::Entry;

    fn job(id: JobId, now: Instant) -> Job {
        Job {
            id,
            host: 0,
            entry: Entry::page(format!("http://a/{id}"), 0, None),
            started_at: now,
            trace: Default::default(),
            gate: None,
        }
    }

    fn ids(e: Vec<Expired>) -> Vec<JobId> {
        e.into_iter().map(|e| e.id).collect()
    }

    #[test]
    fn deadlines_expire_in_order() {
        let t0 = Instant::now();
        let mut l = Leases::new(Duration::from_secs(10));
        let a = l.next_id();
        l.insert(job(a, t0), Trace::default(), t0);
        let b = l.next_id();
        l.insert(
            job(b, t0 + Duration::from_secs(1)),
            Trace::default(),
            t0 + Duration::from_secs(1),
        );
        assert_eq!(l.pages(), 2);
        assert!(l.expire(t0 + Duration::from_secs(9)).is_empty());
        assert_eq!(ids(l.expire(t0 + Duration::from_secs(11))), vec![a, b]);
        assert_eq!(l.next_deadline(), Some(t0 + Duration::from_secs(10)));
        l.assign(b, 3);
        assert_eq!(l.held_by(3), vec![b]);
        assert!(l.take(a).is_some());
        assert!(l.take(a).is_none());
        assert_eq!(l.pages(), 1);
        // A taken lease no longer expires nor sets the next deadline.
        assert_eq!(ids(l.expire(t0 + Duration::from_secs(11))), vec![b]);
        assert_eq!(l.next_deadline(), Some(t0 + Duration::from_secs(11)));
        assert!(l.take(b).is_some());
        assert_eq!(l.next_deadline(), None);
        assert!(l.expire(t0 + Duration::from_secs(60)).is_empty());
    }

    #[test]
    fn the_first_expired_lease_of_a_fetcher_sets_it_aside_and_the_rest_are_behind_it() {
        let t0 = Instant::now();
        let mut l = Leases::new(Duration::from_secs(5));
        let mut out = Vec::new();
        for (k, fetcher) in [Some(0), Some(0), None, Some(1)].into_iter().enumerate() {
            let id = l.next_id();
            let at = t0 + Duration::from_millis(k as u64);
            l.insert(job(id, at), Trace::default(), at);
            if let Some(f) = fetcher {
                l.assign(id, f);
            }
            out.push(id);
        }
        assert!(!l.is_suspect(0));
        let expired = l.expire(t0 + Duration::from_millis(5002));
        assert_eq!(
            expired,
            vec![
                Expired {
                    id: out[0],
                    fetcher: Some(0),
                    behind_stuck: false
                },
                Expired {
                    id: out[1],
                    fetcher: Some(0),
                    behind_stuck: true
                },
                Expired {
                    id: out[2],
                    fetcher: None,
                    behind_stuck: false
                },
            ]
        );
        assert!(l.is_suspect(0) && !l.is_suspect(1));
        // Still suspect at the next check: the fourth job on fetcher 1 sets that one aside.
        let later = l.expire(t0 + Duration::from_millis(5003));
        assert_eq!(later.len(), 4);
        assert!(
            later[0].behind_stuck,
            "fetcher 0 stays aside until it is back"
        );
        assert!(!later[3].behind_stuck && l.is_suspect(1));
        l.fetcher_back(0);
        assert!(!l.is_suspect(0));
    }

    #[test]
    fn a_redriven_page_keeps_its_trace_for_the_next_lease() {
        let t0 = Instant::now();
        let mut l = Leases::new(Duration::from_secs(5));
        assert!(l.resume_trace("http://a/1").is_none());
        let id = l.next_id();
        l.insert(job(id, t0), Trace::default(), t0);
        assert_eq!(l.url_of(id).as_deref(), Some("http://a/1"));
        let job = l.take_for_redrive(id).expect("leased");
        assert_eq!(job.id, id);
        assert!(l.take_for_redrive(id).is_none(), "re-driven once");
        assert_eq!((l.len(), l.pages()), (0, 0));
        assert!(l.resume_trace("http://a/2").is_none());
        assert!(l.resume_trace("http://a/1").is_some());
        assert!(
            l.resume_trace("http://a/1").is_none(),
            "taken by the next lease"
        );
        let mut robots = job;
        robots.entry.kind = crawl_core::frontier::JobKind::Robots;
        let id = l.next_id();
        robots.id = id;
        l.insert(robots, Trace::default(), t0);
        assert_eq!(l.pages(), 0, "a robots.txt job is no page");
        assert!(l.take_for_redrive(id).is_some());
        assert!(
            l.resume_trace("http://a/1").is_none(),
            "only fetched kinds keep their trace"
        );
    }
}
