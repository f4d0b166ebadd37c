//! The lease table: which jobs are out, with which fetcher, until when.

use crate::protocol::{Job, JobId};
use crawl_observability::trace::Trace;
use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct Lease {
    pub job: Job,
    /// The job's trace (its root span ends with the record, or when the lease is dropped); the job carries its
    /// context.
    pub trace: Trace,
    pub fetcher: Option<usize>,
    /// When the job must have come back (request timeout plus the parse budget).
    pub deadline: Instant,
}

#[derive(Debug)]
pub struct Leases {
    map: HashMap<JobId, Lease, foldhash::quality::RandomState>,
    /// The leases by deadline, so that finding the expired ones and the next deadline reads no more than those
    /// (every event asks).
    by_deadline: BTreeSet<(Instant, JobId)>,
    next: JobId,
    pages: u64,
    timeout: Duration,
}

impl Leases {
    pub fn new(timeout: Duration) -> Leases {
        Leases {
            map: HashMap::default(),
            by_deadline: BTreeSet::new(),
            next: 1,
            pages: 0,
            timeout,
        }
    }

    pub fn next_id(&mut self) -> JobId {
        let id = self.next;
        self.next += 1;
        id
    }

    pub fn insert(&mut self, job: Job, trace: Trace, now: Instant) {
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

    pub fn take(&mut self, id: JobId) -> Option<Lease> {
        let lease = self.map.remove(&id)?;
        self.by_deadline.remove(&(lease.deadline, id));
        if lease.job.entry.kind.is_fetched() {
            self.pages -= 1;
        }
        Some(lease)
    }

    pub fn assign(&mut self, id: JobId, fetcher: usize) {
        if let Some(l) = self.map.get_mut(&id) {
            l.fetcher = Some(fetcher);
        }
    }

    pub fn held_by(&self, fetcher: usize) -> Vec<JobId> {
        let mut v: Vec<JobId> = self
            .map
            .iter()
            .filter(|(_, l)| l.fetcher == Some(fetcher))
            .map(|(id, _)| *id)
            .collect();
        v.sort_unstable();
        v
    }

    /// Leases whose deadline has passed, oldest first.
    pub fn expired(&self, now: Instant) -> Vec<JobId> {
        self.by_deadline
            .iter()
            .take_while(|(d, _)| *d <= now)
            .map(|(_, id)| *id)
            .collect()
    }

    /// The earliest deadline.
    /// True when a lease is out for a host that satisfies `pred` (by host fingerprint).
    pub fn any_host(&self, pred: impl Fn(crawl_core::frontier::Fp) -> bool) -> bool {
        self.map.values().any(|l| pred(l.job.entry.host))
    }

    pub fn next_deadline(&self) -> Option<Instant> {
        self.by_deadline.first().map(|(d, _)| *d)
    }

    pub fn url_of(&self, id: JobId) -> Option<String> {
        self.map.get(&id).map(|l| l.job.entry.url.clone())
    }

    pub fn fetcher_of(&self, id: JobId) -> Option<usize> {
        self.map.get(&id).and_then(|l| l.fetcher)
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Page leases out (they count toward max_pages).
    pub fn pages(&self) -> u64 {
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
        assert!(l.expired(t0 + Duration::from_secs(9)).is_empty());
        assert_eq!(l.expired(t0 + Duration::from_secs(11)), vec![a, b]);
        assert_eq!(l.next_deadline(), Some(t0 + Duration::from_secs(10)));
        l.assign(b, 3);
        assert_eq!(l.held_by(3), vec![b]);
        assert!(l.take(a).is_some());
        assert!(l.take(a).is_none());
        assert_eq!(l.pages(), 1);
        // A taken lease no longer expires nor sets the next deadline.
        assert_eq!(l.expired(t0 + Duration::from_secs(11)), vec![b]);
        assert_eq!(l.next_deadline(), Some(t0 + Duration::from_secs(11)));
        assert!(l.take(b).is_some());
        assert_eq!(l.next_deadline(), None);
        assert!(l.expired(t0 + Duration::from_secs(60)).is_empty());
    }
}
