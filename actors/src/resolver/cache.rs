//! The resolver's verdict cache: one [`Outcome`] per name for its (clamped) TTL, negative
//! results (NXDOMAIN, failures) for `negative_ttl`, bounded by a capacity. Time is passed in
//! explicitly so the behaviour is testable without sleeping.
//!
//! Names are keyed lowercase without trailing dots. An index ordered by expiry makes both
//! "drop the expired" and "evict the soonest to expire" a pop from its front.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use super::logic::{Outcome, Source};

#[derive(Debug, Clone)]
struct Entry {
    outcome: Outcome,
    expires: Instant,
    /// Insertion sequence number, the expiry index's tie-breaker.
    seq: u64,
}

/// Cached outcomes by name.
#[derive(Debug, Clone)]
pub struct DnsCache {
    entries: HashMap<String, Entry>,
    by_expiry: BTreeSet<(Instant, u64, String)>,
    capacity: usize,
    min_ttl: Duration,
    max_ttl: Duration,
    negative_ttl: Duration,
    next_seq: u64,
}

/// The cache key of a name: lowercase, trailing dots removed.
pub fn cache_key(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

impl DnsCache {
    /// A cache of at most `capacity` names (0 disables caching). Positive TTLs are clamped to
    /// `min_ttl..=max_ttl` (`max_ttl` wins if they cross); NXDOMAIN and unresolved outcomes are
    /// kept for `negative_ttl`.
    pub fn new(
        capacity: usize,
        min_ttl: Duration,
        max_ttl: Duration,
        negative_ttl: Duration,
    ) -> DnsCache {
        DnsCache {
            entries: HashMap::new(),
            by_expiry: BTreeSet::new(),
            capacity,
            min_ttl,
            max_ttl,
            negative_ttl,
            next_seq: 0,
        }
    }

    /// The cached outcome for `name` if it has not expired at `now`. A resolved outcome comes
    /// back with source [`Source::Cache`] and its remaining lifetime as TTL.
    pub fn get(&self, name: &str, now: Instant) -> Option<Outcome> {
        let entry = self.entries.get(&cache_key(name))?;
        let remaining = entry.expires.checked_duration_since(now)?;
        if remaining.is_zero() {
            return None;
        }
        let mut outcome = entry.outcome.clone();
        if let Outcome::Resolved(r) = &mut outcome {
            r.source = Source::Cache;
            r.ttl = remaining;
        }
        Some(outcome)
    }

    /// How long `outcome` would be kept when its answer's TTL is `ttl`.
    pub fn lifetime(&self, outcome: &Outcome, ttl: Duration) -> Duration {
        match outcome {
            Outcome::Resolved(_) => ttl.max(self.min_ttl).min(self.max_ttl),
            Outcome::NxDomain { .. } | Outcome::Unresolved { .. } => self.negative_ttl,
        }
    }

    /// Stores `outcome` for `name`, replacing any previous entry. When the cache is full,
    /// expired entries go first, then the ones that expire soonest. A zero lifetime (or one
    /// that would overflow the clock) stores nothing.
    pub fn put(&mut self, name: &str, outcome: Outcome, ttl: Duration, now: Instant) {
        let key = cache_key(name);
        self.remove(&key);
        let lifetime = self.lifetime(&outcome, ttl);
        if self.capacity == 0 || lifetime.is_zero() {
            return;
        }
        let Some(expires) = now.checked_add(lifetime) else {
            return;
        };
        if self.entries.len() >= self.capacity {
            self.purge_expired(now);
        }
        while self.entries.len() >= self.capacity {
            let Some((_, _, victim)) = self.by_expiry.pop_first() else {
                break;
            };
            self.entries.remove(&victim);
        }
        let seq = self.next_seq;
        self.next_seq = self.next_seq.wrapping_add(1);
        self.by_expiry.insert((expires, seq, key.clone()));
        self.entries.insert(
            key,
            Entry {
                outcome,
                expires,
                seq,
            },
        );
    }

    /// Forgets `name`; true if it was cached.
    pub fn remove(&mut self, name: &str) -> bool {
        let key = cache_key(name);
        match self.entries.remove(&key) {
            Some(old) => {
                self.by_expiry.remove(&(old.expires, old.seq, key));
                true
            }
            None => false,
        }
    }

    /// Drops every entry expired at `now`, returning how many.
    pub fn purge_expired(&mut self, now: Instant) -> usize {
        let mut dropped = 0;
        while let Some((expires, _, _)) = self.by_expiry.first() {
            if *expires > now {
                break;
            }
            if let Some((_, _, key)) = self.by_expiry.pop_first() {
                self.entries.remove(&key);
                dropped += 1;
            }
        }
        dropped
    }

    /// Number of entries held (expired ones included until purged or evicted).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolver::logic::{Resolution, Rule};
    use std::net::IpAddr;

    const S: fn(u64) -> Duration = Duration::from_secs;

    fn cache() -> DnsCache {
        DnsCache::new(100, S(30), S(3_600), S(60))
    }

    fn resolved(ip: &str) -> Outcome {
        let addr: IpAddr = ip.parse().expect("ip");
        Outcome::Resolved(Resolution {
            addrs: vec![addr],
            source: Source::Plain,
            polluted: false,
            rules: vec![],
            ttl: S(300),
        })
    }

    fn addr(o: &Option<Outcome>) -> Option<String> {
        o.as_ref()
            .and_then(|o| o.addrs().first().map(ToString::to_string))
    }

    #[test]
    fn hit_until_expiry_then_a_changed_answer_is_picked_up() {
        let t0 = Instant::now();
        let mut c = cache();
        c.put("Example.COM.", resolved("192.0.2.1"), S(300), t0);
        assert_eq!(c.len(), 1);
        let hit = c.get("example.com", t0 + S(10));
        match &hit {
            Some(Outcome::Resolved(r)) => {
                assert_eq!(r.source, Source::Cache);
                assert_eq!(r.ttl, S(290));
            }
            other => panic!("{other:?}"),
        }
        // The name now resolves differently, but the cached answer stands until it expires.
        assert_eq!(
            addr(&c.get("EXAMPLE.com.", t0 + S(299))).as_deref(),
            Some("192.0.2.1")
        );
        assert!(
            c.get("example.com", t0 + S(300)).is_none(),
            "expired at its deadline"
        );
        c.put("example.com", resolved("192.0.2.2"), S(300), t0 + S(300));
        assert_eq!(
            addr(&c.get("example.com", t0 + S(301))).as_deref(),
            Some("192.0.2.2")
        );
        assert_eq!(c.len(), 1);
        assert!(c.get("other.example", t0).is_none());
    }

    #[test]
    fn positive_ttls_are_clamped() {
        let t0 = Instant::now();
        let mut c = cache();
        c.put("short.example", resolved("192.0.2.1"), S(1), t0);
        c.put("zero.example", resolved("192.0.2.1"), Duration::ZERO, t0);
        c.put("long.example", resolved("192.0.2.1"), S(1_000_000), t0);
        assert!(
            c.get("short.example", t0 + S(29)).is_some(),
            "raised to min_ttl"
        );
        assert!(c.get("short.example", t0 + S(30)).is_none());
        assert!(c.get("zero.example", t0 + S(29)).is_some());
        assert!(c.get("long.example", t0 + S(3_599)).is_some());
        assert!(
            c.get("long.example", t0 + S(3_600)).is_none(),
            "cut to max_ttl"
        );
        assert_eq!(c.lifetime(&resolved("192.0.2.1"), S(100)), S(100));
        // Crossed clamps: max wins.
        let odd = DnsCache::new(10, S(100), S(50), S(5));
        assert_eq!(odd.lifetime(&resolved("192.0.2.1"), S(10)), S(50));
    }

    #[test]
    fn negative_outcomes_use_negative_ttl() {
        let t0 = Instant::now();
        let mut c = cache();
        let nx = Outcome::NxDomain {
            rules: vec![Rule::NxdomainHijack],
        };
        let failed = Outcome::Unresolved {
            polluted: true,
            rules: vec![Rule::BogusIp],
            detail: "no usable address".into(),
        };
        c.put("gone.example", nx.clone(), S(86_400), t0);
        c.put("broken.example", failed.clone(), Duration::ZERO, t0);
        assert_eq!(c.get("gone.example", t0 + S(59)), Some(nx));
        assert_eq!(c.get("broken.example", t0 + S(59)), Some(failed));
        assert!(c.get("gone.example", t0 + S(60)).is_none());
        assert!(c.get("broken.example", t0 + S(61)).is_none());

        let mut none = DnsCache::new(10, S(30), S(60), Duration::ZERO);
        none.put(
            "gone.example",
            Outcome::NxDomain { rules: vec![] },
            S(60),
            t0,
        );
        assert!(none.is_empty(), "negative caching disabled");
    }

    #[test]
    fn capacity_evicts_expired_first_then_soonest_to_expire() {
        let t0 = Instant::now();
        let mut c = DnsCache::new(3, S(1), S(1_000), S(60));
        c.put("a.example", resolved("192.0.2.1"), S(500), t0);
        c.put("b.example", resolved("192.0.2.2"), S(10), t0);
        c.put("c.example", resolved("192.0.2.3"), S(200), t0);
        assert_eq!(c.len(), 3);
        // At t0+20, b has expired: it goes, the others stay.
        c.put("d.example", resolved("192.0.2.4"), S(900), t0 + S(20));
        assert_eq!(c.len(), 3);
        for live in ["a.example", "c.example", "d.example"] {
            assert!(c.get(live, t0 + S(20)).is_some(), "{live}");
        }
        // Nothing expired: the soonest to expire (c, at t0+200) is evicted.
        c.put("e.example", resolved("192.0.2.5"), S(900), t0 + S(30));
        assert_eq!(c.len(), 3);
        assert!(c.get("c.example", t0 + S(30)).is_none());
        for live in ["a.example", "d.example", "e.example"] {
            assert!(c.get(live, t0 + S(30)).is_some(), "{live}");
        }
        // Replacing an existing name never evicts another.
        c.put("a.example", resolved("192.0.2.9"), S(5), t0 + S(30));
        assert_eq!(c.len(), 3);
        assert!(c.get("d.example", t0 + S(31)).is_some());
        assert_eq!(
            addr(&c.get("a.example", t0 + S(31))).as_deref(),
            Some("192.0.2.9")
        );

        let mut off = DnsCache::new(0, S(1), S(10), S(10));
        off.put("a.example", resolved("192.0.2.1"), S(5), t0);
        assert!(off.is_empty() && off.get("a.example", t0).is_none());
    }

    #[test]
    fn purge_and_remove() {
        let t0 = Instant::now();
        let mut c = cache();
        c.put("a.example", resolved("192.0.2.1"), S(40), t0);
        c.put("b.example", resolved("192.0.2.2"), S(80), t0);
        assert_eq!(c.purge_expired(t0 + S(50)), 1);
        assert_eq!(c.len(), 1);
        assert!(c.remove("B.example."));
        assert!(!c.remove("b.example"));
        assert!(c.is_empty());
    }
}
