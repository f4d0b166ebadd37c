//! A fetcher's own copy of the resolver's recent answers. Every fetch of a named host asked the resolver actor on
//! its thread, a round trip between two threads for what is nearly always a cache hit there (+18 % of the CPU a
//! small page costs, against the same crawl by IP). A fetcher keeps the answers it was given until their TTL runs
//! out, or until the resolver is reconfigured (a reload clears its cache, and so every fetcher's copy), and serves
//! them as the resolver's cache would: source `cache` (or `hosts`), the same addresses and verdict, counted in the
//! same lookup counters and in the record's `dns` fields. Such an answer adds no `dns.resolve` span to the URL's
//! trace: it took no time and asked no one (the lookup that filled the copy has its span, in the trace of the URL
//! that asked). Only resolved answers are kept; failures and NXDOMAIN go to the resolver every time.

use super::logic::{Outcome, Source};
use super::stats::ResolverStats;
use crawl_core::record::DnsInfo;
use crawl_observability::metrics::{Counter, metrics};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Names a fetcher keeps at most; past that its copy starts again empty.
const MAX_NAMES: usize = 4_096;

/// What the resolver shares with every fetcher's copy: its generation (bumped by each reconfiguration) and the
/// answers the copies served, for the resolver's counters.
#[derive(Debug, Default)]
pub struct Shared {
    generation: AtomicU64,
    cache_hits: AtomicU64,
    hosts_hits: AtomicU64,
}

impl Shared {
    pub fn new() -> Arc<Shared> {
        Arc::new(Shared::default())
    }

    /// The resolver was reconfigured: every copy drops what it holds.
    pub fn invalidate(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Adds the answers the copies served to `stats`, as the resolver counts its own cache hits.
    pub fn add_hits(&self, stats: &mut ResolverStats) {
        for (n, source) in [
            (self.cache_hits.load(Ordering::Relaxed), Source::Cache),
            (self.hosts_hits.load(Ordering::Relaxed), Source::Hosts),
        ] {
            if n > 0 {
                *stats
                    .lookups
                    .entry(format!("{}/resolved", source.as_str()))
                    .or_insert(0) += n;
            }
        }
    }
}

struct Entry {
    generation: u64,
    expires: Instant,
    /// The answer as the resolver's cache serves it (source `cache`, or `hosts`).
    info: DnsInfo,
}

/// One fetcher's copy (on its own thread).
pub struct LocalAnswers {
    shared: Arc<Shared>,
    names: HashMap<String, Entry>,
    /// The lookup metric's counters of the answers a copy serves (`cache/resolved`, `hosts/resolved`).
    counters: [Counter; 2],
}

impl LocalAnswers {
    pub fn new(shared: Arc<Shared>) -> LocalAnswers {
        let m = metrics();
        LocalAnswers {
            shared,
            names: HashMap::new(),
            counters: [
                m.dns_lookup_counter(Source::Cache.as_str(), "resolved"),
                m.dns_lookup_counter(Source::Hosts.as_str(), "resolved"),
            ],
        }
    }

    /// The answer kept for `name` at `now`, counted as a lookup served from the cache (in the resolver's counters
    /// and the lookup metric); None when there is none, it expired or the resolver was reconfigured since.
    pub fn get(&mut self, name: &str, now: Instant) -> Option<DnsInfo> {
        let generation = self.generation();
        let e = self.names.get(name)?;
        if e.generation != generation || e.expires <= now {
            return None;
        }
        let (hits, counter) = if e.info.source == Source::Hosts.as_str() {
            (&self.shared.hosts_hits, &self.counters[1])
        } else {
            (&self.shared.cache_hits, &self.counters[0])
        };
        hits.fetch_add(1, Ordering::Relaxed);
        counter.inc();
        Some(e.info.clone())
    }

    /// The resolver's generation now: read before asking it, and given to [`LocalAnswers::put`] with its answer.
    pub fn generation(&self) -> u64 {
        self.shared.generation.load(Ordering::Acquire)
    }

    /// Keeps the resolver's answer for `name` (a resolved one) until its TTL runs out. `asked` is the generation
    /// read before the resolver was asked: the answer is kept under it, so that an answer of a resolver
    /// reconfigured since (maybe found with the settings of before) is never served.
    pub fn put(&mut self, name: &str, outcome: &Outcome, now: Instant, asked: u64) {
        let Outcome::Resolved(r) = outcome else {
            return;
        };
        if r.ttl.is_zero() {
            return;
        }
        if self.names.len() >= MAX_NAMES && !self.names.contains_key(name) {
            self.names.clear();
        }
        let mut kept = r.clone();
        if kept.source != Source::Hosts {
            kept.source = Source::Cache;
        }
        self.names.insert(
            name.to_owned(),
            Entry {
                generation: asked,
                expires: now + r.ttl,
                info: Outcome::Resolved(kept).dns_info(),
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolver::logic::{Resolution, Rule};
    use std::net::IpAddr;
    use std::time::Duration;

    fn resolved(source: Source, ttl: u64) -> Outcome {
        Outcome::Resolved(Resolution {
            addrs: vec![IpAddr::from([192, 0, 2, 7])],
            source,
            polluted: true,
            rules: vec![Rule::BogusIp],
            ttl: Duration::from_secs(ttl),
        })
    }

    #[test]
    fn an_answer_is_served_as_the_resolvers_cache_would_until_its_ttl_runs_out() {
        let shared = Shared::new();
        let mut a = LocalAnswers::new(shared.clone());
        let t0 = Instant::now();
        assert!(a.get("a.test", t0).is_none());
        a.put("a.test", &resolved(Source::Plain, 30), t0, 0);
        // The metric is the process's own: other tests may count in it too, never less.
        let counted = metrics().dns_lookup_counter("cache", "resolved").get();
        let info = a.get("a.test", t0 + Duration::from_secs(29)).unwrap();
        assert_eq!(info.source, "cache");
        assert!(info.polluted);
        assert_eq!(info.addresses, ["192.0.2.7"]);
        assert_eq!(info.rules, ["bogus_ip"]);
        assert!(metrics().dns_lookup_counter("cache", "resolved").get() > counted);
        assert!(a.get("a.test", t0 + Duration::from_secs(30)).is_none());
        assert!(a.get("b.test", t0).is_none());
        let mut stats = ResolverStats::default();
        shared.add_hits(&mut stats);
        assert_eq!(stats.lookups.get("cache/resolved"), Some(&1));
    }

    #[test]
    fn hosts_answers_stay_hosts_and_failures_are_not_kept() {
        let shared = Shared::new();
        let mut a = LocalAnswers::new(shared.clone());
        let t0 = Instant::now();
        a.put("h.test", &resolved(Source::Hosts, 60), t0, 0);
        a.put("gone.test", &Outcome::NxDomain { rules: Vec::new() }, t0, 0);
        a.put(
            "down.test",
            &Outcome::Unresolved {
                polluted: false,
                rules: Vec::new(),
                detail: "timeout".into(),
            },
            t0,
            0,
        );
        a.put("zero.test", &resolved(Source::Doh, 0), t0, 0);
        assert_eq!(a.get("h.test", t0).unwrap().source, "hosts");
        assert!(a.get("gone.test", t0).is_none());
        assert!(a.get("down.test", t0).is_none());
        assert!(a.get("zero.test", t0).is_none());
        let mut stats = ResolverStats::default();
        stats.lookup("hosts", "resolved");
        shared.add_hits(&mut stats);
        assert_eq!(stats.lookups.get("hosts/resolved"), Some(&2));
        assert_eq!(stats.lookups.get("cache/resolved"), None);
    }

    #[test]
    fn a_reconfigured_resolver_empties_every_copy_and_its_older_answers_are_not_kept() {
        let shared = Shared::new();
        let (mut a, mut b) = (
            LocalAnswers::new(shared.clone()),
            LocalAnswers::new(shared.clone()),
        );
        let t0 = Instant::now();
        a.put("a.test", &resolved(Source::Plain, 300), t0, 0);
        b.put("a.test", &resolved(Source::Plain, 300), t0, 0);
        let asked = a.generation();
        shared.invalidate();
        assert!(a.get("a.test", t0).is_none());
        assert!(b.get("a.test", t0).is_none());
        // An answer asked for before the reconfiguration and given after it is not kept.
        a.put("a.test", &resolved(Source::Plain, 300), t0, asked);
        assert!(a.get("a.test", t0).is_none());
        // Answers asked for after it are kept again.
        a.put("a.test", &resolved(Source::Plain, 300), t0, a.generation());
        assert!(a.get("a.test", t0).is_some());
    }

    #[test]
    fn a_copy_holds_a_bounded_number_of_names() {
        let mut a = LocalAnswers::new(Shared::new());
        let t0 = Instant::now();
        for i in 0..MAX_NAMES + 10 {
            a.put(&format!("n{i}.test"), &resolved(Source::Plain, 300), t0, 0);
            assert!(a.names.len() <= MAX_NAMES);
        }
        assert!(a.get(&format!("n{}.test", MAX_NAMES + 9), t0).is_some());
    }
}
