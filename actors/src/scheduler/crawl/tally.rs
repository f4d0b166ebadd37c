//! Per-host counts for an operator's view of the hosts (`GET /v1/hosts`): URLs queued, as this process learns
//! them (from the store at the start and when it takes a shard over, then from its own commits), and the failed
//! and excluded records of this run by reason.

use crawl_core::frontier::Fp;
use crawl_core::frontier::fphash::FpMap;
use crawl_core::record::Reason;
use std::collections::BTreeMap;

#[derive(Debug, Default, Clone)]
struct Tally {
    queued: u64,
    errors: BTreeMap<&'static str, u64>,
}

/// The counts of every host this process knows.
#[derive(Debug, Default)]
pub(super) struct HostTally {
    hosts: FpMap<Fp, Tally>,
}

impl HostTally {
    /// `host` has `queued` URLs in the store (read at the start, or with its shard).
    pub fn set_queued(&mut self, host: Fp, queued: u64) {
        self.hosts.entry(host).or_default().queued = queued;
    }

    /// A URL of `host` was queued.
    pub fn queued(&mut self, host: Fp) {
        self.hosts.entry(host).or_default().queued += 1;
    }

    /// A URL of `host` left its queue (done, or dropped).
    pub fn done(&mut self, host: Fp) {
        if let Some(t) = self.hosts.get_mut(&host) {
            t.queued = t.queued.saturating_sub(1);
        }
    }

    /// A failed or excluded record of `host`.
    pub fn error(&mut self, host: Fp, reason: Reason) {
        *self
            .hosts
            .entry(host)
            .or_default()
            .errors
            .entry(reason.as_str())
            .or_insert(0) += 1;
    }

    /// URLs of `host` queued, as counted here.
    pub fn queued_of(&self, host: Fp) -> u64 {
        self.hosts.get(&host).map_or(0, |t| t.queued)
    }

    /// Failed and excluded records of `host` by reason.
    pub fn errors_of(&self, host: Fp) -> BTreeMap<&'static str, u64> {
        self.hosts
            .get(&host)
            .map(|t| t.errors.clone())
            .unwrap_or_default()
    }

    /// All failed and excluded records of `host`.
    pub fn error_count(&self, host: Fp) -> u64 {
        self.hosts.get(&host).map_or(0, |t| t.errors.values().sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crawl_core::frontier::host_fp;

    #[test]
    fn counts_queued_urls_and_errors_by_host() {
        let (a, b) = (host_fp("a.test"), host_fp("b.test"));
        let mut t = HostTally::default();
        t.set_queued(a, 3);
        t.queued(a);
        t.done(a);
        t.done(b);
        t.error(a, Reason::Timeout);
        t.error(a, Reason::Timeout);
        t.error(a, Reason::Robots);
        assert_eq!((t.queued_of(a), t.queued_of(b)), (3, 0));
        assert_eq!(t.error_count(a), 3);
        assert_eq!(t.errors_of(a).get("timeout"), Some(&2));
        assert!(t.errors_of(b).is_empty());
    }
}
