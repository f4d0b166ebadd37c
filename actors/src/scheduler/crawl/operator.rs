//! What operators set on the running crawl, as the scheduler obeys it: the crawl paused, hosts paused (a host on
//! every port through its politeness queue, a single `host:port` authority through the lease gate), a host's
//! politeness, and the drops of hosts' queues this process carries out. The state itself is the store's (read at
//! the start, after each change made through this process, and polled in a crawl shared by many processes); this
//! part turns each state it is given into host overrides, and tracks the drops under way.

use crawl_core::control::{Change, HostMatch, OperatorState, Requester};
use crawl_core::politeness::{HostId, HostOverride, HostQueues};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// A drop of a host's queue under way here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Dropping {
    /// When it was asked (the drop request's `since_ms`).
    pub requested_ms: u64,
    /// URLs recorded so far.
    pub dropped: u64,
}

/// The operator state in force here.
#[derive(Debug, Default)]
pub(super) struct Operator {
    state: OperatorState,
    /// The store's version of `state`; None until the first read.
    version: Option<u64>,
    /// Authorities and domains paused: a URL of one blocks its host's queue when it comes up.
    authorities: Vec<HostMatch>,
    /// Hosts whose queue a drop is taking, by name.
    dropping: BTreeMap<String, Dropping>,
    /// Drops finished here whose last records are staged, not committed yet.
    staged: Vec<Change>,
    /// Those whose records are in the commit in flight.
    committing: Vec<Change>,
    /// Drops finished here with every record durable, to be cleared in the store ([`Change::Dropped`]).
    done: Vec<Change>,
    /// Drops finished here by host, with when they were asked: not started again while the store still has them.
    finished: BTreeMap<String, u64>,
    /// The next instant (Unix ms) a politeness override lapses.
    next_lapse_ms: Option<u64>,
}

impl Operator {
    /// The state in force.
    pub fn state(&self) -> &OperatorState {
        &self.state
    }

    /// The store's version of the state in force.
    pub fn version(&self) -> Option<u64> {
        self.version
    }

    /// True while an operator paused the whole crawl.
    pub fn crawl_paused(&self) -> bool {
        self.state.crawl.is_some()
    }

    /// Takes a state read from the store (`version`), applying to the host queues what it changes. A version
    /// older than the one in force is ignored (an answer overtaken by a later one); returns whether it was taken.
    pub fn set(
        &mut self,
        version: u64,
        state: OperatorState,
        queues: &mut HostQueues,
        now: Instant,
        now_ms: u64,
    ) -> bool {
        if self.version.is_some_and(|v| version < v) {
            return false;
        }
        let before = std::mem::replace(&mut self.state, state);
        self.version = Some(version);
        // Host rules that changed, on every port: their overrides again.
        let names: BTreeSet<String> = before
            .hosts
            .keys()
            .chain(self.state.hosts.keys())
            .filter(|m| m.port().is_none() && !m.has_subdomains())
            .map(|m| m.host().to_owned())
            .collect();
        for name in names {
            let m = HostMatch::every_port(&name);
            if before.hosts.get(&m) != self.state.hosts.get(&m) {
                queues.set_override(&name, self.override_of(&name, now_ms), now);
            }
        }
        // Authorities paused alone, and domains (a host and every host under it): held at the lease gate; those no
        // longer paused let their hosts go again.
        let authorities: Vec<HostMatch> = self
            .state
            .hosts
            .iter()
            .filter(|(m, r)| (m.port().is_some() || m.has_subdomains()) && r.paused.is_some())
            .map(|(m, _)| m.clone())
            .collect();
        for gone in self.authorities.iter().filter(|m| !authorities.contains(m)) {
            if gone.has_subdomains() {
                for id in queues.hosts_named(|name| gone.matches(name, 0)) {
                    queues.unblock(id, now);
                }
            } else if let Some(id) = queues.find(gone.host()) {
                queues.unblock(id, now);
            }
        }
        self.authorities = authorities;
        self.next_lapse_ms = self.next_lapse(now_ms);
        // A drop the store cleared is forgotten.
        let asked: BTreeMap<&str, u64> = self.state.drops().map(|(m, t)| (m.host(), t)).collect();
        self.finished
            .retain(|h, t| asked.get(h.as_str()).is_some_and(|a| a <= t));
        true
    }

    /// The override of the host `name` at `now_ms`: its rule on every port (a politeness that lapsed left out).
    fn override_of(&self, name: &str, now_ms: u64) -> Option<HostOverride> {
        let rule = self.state.hosts.get(&HostMatch::every_port(name))?;
        let politeness = rule
            .politeness
            .as_ref()
            .filter(|p| p.until_ms.is_none_or(|u| now_ms < u));
        Some(HostOverride {
            paused: rule.paused.is_some(),
            delay: politeness.and_then(|p| p.delay()),
            concurrency: politeness.and_then(|p| p.concurrency),
        })
    }

    fn next_lapse(&self, now_ms: u64) -> Option<u64> {
        self.state
            .hosts
            .values()
            .filter_map(|r| r.politeness.as_ref()?.until_ms)
            .filter(|u| *u > now_ms)
            .min()
    }

    /// Lets politeness overrides that lapsed by `now_ms` go (the configured politeness applies again); returns
    /// how long until the next one lapses.
    pub fn lapse(
        &mut self,
        queues: &mut HostQueues,
        now: Instant,
        now_ms: u64,
    ) -> Option<Duration> {
        let at = self.next_lapse_ms?;
        if now_ms >= at {
            let lapsed: Vec<String> = self
                .state
                .hosts
                .iter()
                .filter(|(m, r)| {
                    m.port().is_none()
                        && r.politeness
                            .as_ref()
                            .and_then(|p| p.until_ms)
                            .is_some_and(|u| u <= now_ms)
                })
                .map(|(m, _)| m.host().to_owned())
                .collect();
            for name in lapsed {
                queues.set_override(&name, self.override_of(&name, now_ms), now);
            }
            self.next_lapse_ms = self.next_lapse(now_ms);
        }
        self.next_lapse_ms
            .map(|u| Duration::from_millis(u.saturating_sub(now_ms)))
    }

    /// True when `url` may not start: its authority is paused on its own, or its host's queue is being dropped.
    pub fn holds(&self, url: &str) -> bool {
        if self.authorities.is_empty() && self.dropping.is_empty() {
            return false;
        }
        url::Url::parse(url).is_ok_and(|u| {
            self.authorities.iter().any(|m| m.matches_url(&u))
                || u.host_str().is_some_and(|h| self.dropping.contains_key(h))
        })
    }

    /// True when something keeps URLs queued that would otherwise go: the crawl or a host paused, a drop under
    /// way (the crawl is not idle while its queues wait on an operator).
    pub fn holds_any(&self) -> bool {
        self.state.crawl.is_some()
            || !self.dropping.is_empty()
            || self.state.hosts.values().any(|r| r.paused.is_some())
    }

    /// Drops asked for that are not under way here yet, as `(host name, requested_ms)`.
    pub fn drops_to_start(&self) -> Vec<(String, u64)> {
        self.state
            .drops()
            .filter(|(m, t)| {
                self.dropping
                    .get(m.host())
                    .is_none_or(|d| d.requested_ms < *t)
                    && self.finished.get(m.host()).is_none_or(|f| f < t)
            })
            .map(|(m, t)| (m.host().to_owned(), t))
            .collect()
    }

    /// A drop of the queue of `host` starts here.
    pub fn start_drop(&mut self, host: &str, requested_ms: u64) {
        self.dropping.insert(
            host.to_owned(),
            Dropping {
                requested_ms,
                dropped: 0,
            },
        );
    }

    /// The hosts whose queues are being dropped here.
    pub fn dropping(&self) -> impl Iterator<Item = &str> {
        self.dropping.keys().map(String::as_str)
    }

    /// `n` more URLs of `host` recorded dropped.
    pub fn count_dropped(&mut self, host: &str, n: u64) {
        if let Some(d) = self.dropping.get_mut(host) {
            d.dropped += n;
        }
    }

    /// The drop of `host` is done (its queue read to the end): it is to be cleared in the store.
    pub fn finish_drop(
        &mut self,
        host: &str,
        queues: &mut HostQueues,
        id: Option<HostId>,
        now: Instant,
    ) {
        let Some(d) = self.dropping.remove(host) else {
            return;
        };
        tracing::info!(host = %host, dropped = d.dropped, "host queue dropped");
        if let Some(id) = id {
            queues.unblock(id, now);
        }
        self.finished.insert(host.to_owned(), d.requested_ms);
        self.staged.push(Change::Dropped {
            host: HostMatch::every_port(host),
            requested_ms: d.requested_ms,
            by: Requester::Process,
        });
    }

    /// The staged records went into the commit now in flight.
    pub fn committing(&mut self) {
        self.committing.append(&mut self.staged);
    }

    /// The commit in flight landed: the drops whose records it carried are done.
    pub fn committed(&mut self) {
        self.done.append(&mut self.committing);
    }

    /// Drops finished here with their records durable, for the store.
    pub fn take_done(&mut self) -> Vec<Change> {
        std::mem::take(&mut self.done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crawl_core::control::Requester;
    use crawl_core::frontier::Entry;
    use crawl_core::politeness::{Gate, PolitenessPolicy, Pop};

    fn api() -> Requester {
        Requester::Api {
            peer: "127.0.0.1:9".into(),
        }
    }

    fn state(changes: &[Change]) -> OperatorState {
        let mut s = OperatorState::default();
        for c in changes {
            s.apply(c);
        }
        s
    }

    fn h(s: &str) -> HostMatch {
        HostMatch::parse(s).unwrap()
    }

    fn queues() -> (HostQueues, HostId) {
        let mut q = HostQueues::new(PolitenessPolicy {
            min_delay: Duration::ZERO,
            ..PolitenessPolicy::default()
        });
        let a = q.host_id("a.test");
        (q, a)
    }

    fn ready(q: &mut HostQueues, now: Instant) -> bool {
        matches!(
            q.pop_ready(now, |_, _| Gate::Go, &mut Vec::new()),
            Pop::Ready(..)
        )
    }

    #[test]
    fn host_pauses_and_politeness_reach_the_queues_and_lapse() {
        let t0 = Instant::now();
        let (mut q, a) = queues();
        q.push(a, Entry::page("http://a.test/1", 0, None), t0);
        let mut op = Operator::default();
        let paused = state(&[Change::Pause {
            host: Some(h("a.test")),
            at_ms: 1,
            by: api(),
        }]);
        assert!(op.set(1, paused.clone(), &mut q, t0, 1_000));
        assert!(q.override_of(a).paused);
        assert!(!ready(&mut q, t0), "paused");
        assert!(
            !op.set(0, OperatorState::default(), &mut q, t0, 1_000),
            "an older version is ignored"
        );
        // Resumed, with a delay that lapses at 5 s.
        let polite = state(&[Change::Politeness {
            host: h("a.test"),
            delay_ms: Some(3_000),
            concurrency: None,
            until_ms: Some(5_000),
            at_ms: 2,
            by: api(),
        }]);
        assert!(op.set(2, polite, &mut q, t0, 1_000));
        let o = q.override_of(a);
        assert!(!o.paused && o.delay == Some(Duration::from_secs(3)));
        assert_eq!(op.lapse(&mut q, t0, 1_000), Some(Duration::from_secs(4)));
        assert_eq!(
            op.lapse(&mut q, t0, 5_000),
            None,
            "lapsed: nothing more to wait for"
        );
        assert_eq!(q.override_of(a), HostOverride::default());
        assert!(ready(&mut q, t0));
    }

    #[test]
    fn the_crawl_pause_and_authority_pauses() {
        let t0 = Instant::now();
        let (mut q, a) = queues();
        let mut op = Operator::default();
        let s = state(&[
            Change::Pause {
                host: None,
                at_ms: 1,
                by: api(),
            },
            Change::Pause {
                host: Some(h("a.test:8080")),
                at_ms: 1,
                by: api(),
            },
        ]);
        op.set(1, s, &mut q, t0, 0);
        assert!(op.crawl_paused());
        assert!(op.holds("http://a.test:8080/x") && op.holds_any());
        assert!(
            !op.holds("http://a.test/x"),
            "another authority of the host"
        );
        assert_eq!(
            q.override_of(a),
            HostOverride::default(),
            "the host's queue is not paused whole"
        );
        q.block(a);
        op.set(2, OperatorState::default(), &mut q, t0, 0);
        assert!(!op.crawl_paused() && !op.holds("http://a.test:8080/x") && !op.holds_any());
        assert!(!q.is_blocked(a), "resumed: its host goes again");
    }

    #[test]
    fn drops_start_once_and_are_cleared_when_done() {
        let t0 = Instant::now();
        let (mut q, a) = queues();
        let mut op = Operator::default();
        let s = state(&[Change::Drop {
            host: h("a.test"),
            at_ms: 7,
            by: api(),
        }]);
        op.set(1, s.clone(), &mut q, t0, 0);
        assert_eq!(op.drops_to_start(), [("a.test".to_owned(), 7)]);
        op.start_drop("a.test", 7);
        assert!(op.drops_to_start().is_empty() && op.dropping().eq(["a.test"]));
        assert!(op.holds("http://a.test/x") && !op.holds("http://b.test/x"));
        op.count_dropped("a.test", 3);
        q.block(a);
        op.finish_drop("a.test", &mut q, Some(a), t0);
        assert!(op.dropping().next().is_none() && !q.is_blocked(a));
        assert!(
            op.take_done().is_empty(),
            "not before its records are committed"
        );
        op.committing();
        assert!(op.take_done().is_empty(), "nor while they are");
        op.committed();
        let done = op.take_done();
        assert!(matches!(
            &done[..],
            [Change::Dropped {
                requested_ms: 7,
                ..
            }]
        ));
        assert!(
            op.drops_to_start().is_empty(),
            "not again while the store still has it"
        );
        let mut after = s;
        assert!(after.apply(&done[0]) && after.is_empty());
        op.set(2, after, &mut q, t0, 0);
        assert!(op.finished.is_empty());
    }
}
