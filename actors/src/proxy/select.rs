//! Which chain a connection to a host goes through (docs/PROXY.md), as pure logic: host globs
//! ([`matches`]), the rules in order then the default ([`Router`]), and the selection policies
//! over the healthy candidates ([`Selector`]: round-robin, least-failures, sticky).
//!
//! `direct` may appear among a rule's chain names; it is the last resort of that rule, picked
//! only when no listed chain is healthy and untried. The global `fallback_direct` is the
//! caller's business: `pick` returning `None` means "no chain left".

use std::collections::HashMap;
use std::time::Instant;

use crawl_core::config::{DIRECT, ProxyConfig, SelectPolicy};

/// Most hosts remembered by the sticky policy; beyond it an arbitrary entry is forgotten.
pub const STICKY_CAPACITY: usize = 65_536;

/// Whether `host` matches the glob `pattern`: `*` matches any run of characters (dots
/// included, possibly none), everything else matches itself ASCII-case-insensitively. So
/// `*.example.org` matches `a.example.org` and `a.b.example.org` but not `example.org`. A
/// trailing dot and IPv6 brackets are ignored on both sides.
pub fn matches(pattern: &str, host: &str) -> bool {
    let p = normalise(pattern).as_bytes();
    let h = normalise(host).as_bytes();
    let (mut pi, mut hi) = (0, 0);
    // Position of the last `*` seen and where in the host its current match ends.
    let mut star: Option<(usize, usize)> = None;
    while hi < h.len() {
        match p.get(pi) {
            Some(b'*') => {
                star = Some((pi, hi));
                pi += 1;
            }
            Some(c) if c.eq_ignore_ascii_case(&h[hi]) => {
                pi += 1;
                hi += 1;
            }
            _ => match star {
                // Let the last `*` swallow one more character and retry after it.
                Some((s, end)) => {
                    star = Some((s, end + 1));
                    pi = s + 1;
                    hi = end + 1;
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

fn normalise(s: &str) -> &str {
    let s = s.strip_suffix('.').unwrap_or(s);
    match s.strip_prefix('[').and_then(|x| x.strip_suffix(']')) {
        Some(inner) => inner,
        None => s,
    }
}

/// Where a host's connections may go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// No proxy.
    Direct,
    /// These chains, in configured order, without duplicates; may end with `direct` as the
    /// rule's last resort.
    Chains(Vec<String>),
}

impl Route {
    fn of(names: &[String]) -> Route {
        if names.iter().all(|n| n == DIRECT) {
            return Route::Direct;
        }
        let mut chains: Vec<String> = Vec::with_capacity(names.len());
        for n in names {
            if !chains.contains(n) {
                chains.push(n.clone());
            }
        }
        Route::Chains(chains)
    }
}

/// The `[[proxy.rules]]` in order, then `proxy.default`.
#[derive(Debug, Clone)]
pub struct Router {
    rules: Vec<(Vec<String>, Route)>,
    default: Route,
}

impl Router {
    pub fn new(config: &ProxyConfig) -> Self {
        Self {
            rules: config
                .rules
                .iter()
                .map(|r| (r.hosts.clone(), Route::of(&r.use_)))
                .collect(),
            default: Route::of(&config.default),
        }
    }

    /// The route of the first rule with a pattern matching `host`, else the default.
    pub fn candidates(&self, host: &str) -> Route {
        self.rules
            .iter()
            .find(|(patterns, _)| patterns.iter().any(|p| matches(p, host)))
            .map_or(&self.default, |(_, route)| route)
            .clone()
    }
}

/// Per-chain health as the selector sees it.
pub trait ChainHealth {
    /// Whether a connection through `chain` may start at `now` (its breakers allow it).
    fn healthy(&self, chain: &str, now: Instant) -> bool;
    /// Proxy faults recorded against `chain` (for least-failures).
    fn failures(&self, _chain: &str) -> u64 {
        0
    }
}

/// A closure `(chain, now) -> healthy` is a health source with no failure counts.
impl<F: Fn(&str, Instant) -> bool> ChainHealth for F {
    fn healthy(&self, chain: &str, now: Instant) -> bool {
        self(chain, now)
    }
}

/// Applies the selection policy; keeps the round-robin cursors and the sticky choices.
#[derive(Debug, Clone)]
pub struct Selector {
    policy: SelectPolicy,
    /// Next start position per candidate list.
    cursors: HashMap<Vec<String>, usize>,
    /// Lowercase host -> its chain (sticky).
    sticky: HashMap<String, String>,
}

impl Selector {
    pub fn new(policy: SelectPolicy) -> Self {
        Self {
            policy,
            cursors: HashMap::new(),
            sticky: HashMap::new(),
        }
    }

    pub fn policy(&self) -> SelectPolicy {
        self.policy
    }

    /// The chain for a new connection to `host`, or `None` when no candidate is healthy.
    pub fn pick(
        &mut self,
        host: &str,
        candidates: &[String],
        health: &impl ChainHealth,
        now: Instant,
    ) -> Option<String> {
        self.pick_excluding(host, candidates, &[], health, now)
    }

    /// Like [`Selector::pick`] but never one of `tried` (a retry on another chain).
    pub fn pick_excluding(
        &mut self,
        host: &str,
        candidates: &[String],
        tried: &[String],
        health: &impl ChainHealth,
        now: Instant,
    ) -> Option<String> {
        let usable = |c: &String| c != DIRECT && !tried.contains(c) && health.healthy(c, now);
        if !candidates.iter().any(usable) {
            let direct = DIRECT.to_owned();
            return (candidates.contains(&direct) && !tried.contains(&direct)).then_some(direct);
        }
        let n = candidates.len();
        let cursor = self.cursors.entry(candidates.to_vec()).or_insert(0);
        let start = *cursor % n;
        let rotation = (0..n).map(|i| (start + i) % n);
        let key = host.to_ascii_lowercase();
        let chosen = match self.policy {
            SelectPolicy::RoundRobin => {
                let i = rotation.clone().find(|&i| usable(&candidates[i]))?;
                *cursor = i + 1;
                candidates[i].clone()
            }
            SelectPolicy::LeastFailures => {
                let i = rotation
                    .filter(|&i| usable(&candidates[i]))
                    .min_by_key(|&i| health.failures(&candidates[i]))?;
                // Ties go to the first in rotation order; moving the start spreads them.
                *cursor = start + 1;
                candidates[i].clone()
            }
            SelectPolicy::Sticky => {
                if let Some(c) = self.sticky.get(&key).filter(|c| usable(c)) {
                    return Some(c.clone());
                }
                let i = rotation.clone().find(|&i| usable(&candidates[i]))?;
                *cursor = i + 1;
                candidates[i].clone()
            }
        };
        if self.policy == SelectPolicy::Sticky {
            if self.sticky.len() >= STICKY_CAPACITY && !self.sticky.contains_key(&key) {
                let victim = self.sticky.keys().next().cloned();
                if let Some(v) = victim {
                    self.sticky.remove(&v);
                }
            }
            self.sticky.insert(key, chosen.clone());
        }
        Some(chosen)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, HashSet};

    use crawl_core::config::Config;

    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    /// Health from a set of down chains and failure counts.
    #[derive(Default)]
    struct Health {
        down: HashSet<String>,
        failures: HashMap<String, u64>,
    }

    impl Health {
        fn down(chains: &[&str]) -> Self {
            Self {
                down: chains.iter().map(|s| (*s).to_owned()).collect(),
                failures: HashMap::new(),
            }
        }
    }

    impl ChainHealth for Health {
        fn healthy(&self, chain: &str, _now: Instant) -> bool {
            !self.down.contains(chain)
        }
        fn failures(&self, chain: &str) -> u64 {
            self.failures.get(chain).copied().unwrap_or(0)
        }
    }

    #[test]
    fn glob_matching() {
        let yes = [
            ("*.example.org", "a.example.org"),
            ("*.example.org", "a.b.example.org"),
            ("*.Example.ORG", "WWW.example.org"),
            ("example.org", "EXAMPLE.org."),
            ("*", "anything.at.all"),
            ("*", ""),
            ("a*c", "abbbc"),
            ("a*c", "ac"),
            ("*b*", "abc"),
            ("10.0.*", "10.0.3.4"),
            ("[::1]", "[::1]"),
            ("::1", "[::1]"),
            ("*.example.*", "www.example.co.uk"),
            ("**.x", "a.x"),
            ("a*a*a", "aaaaa"),
        ];
        for (p, h) in yes {
            assert!(matches(p, h), "{p} should match {h}");
        }
        let no = [
            ("*.example.org", "example.org"),
            ("*.example.org", "badexample.org"),
            ("*.example.org", "a.example.org.evil"),
            ("example.org", "www.example.org"),
            ("a*c", "abcd"),
            ("a*a*a", "aa"),
            ("", "a"),
            ("10.0.*", "10.1.0.1"),
        ];
        for (p, h) in no {
            assert!(!matches(p, h), "{p} should not match {h}");
        }
        // Long inputs stay cheap and correct.
        let host = format!("{}b", "a".repeat(2000));
        assert!(!matches("*a*a*a*a*c", &host));
        assert!(matches("*a*a*a*a*b", &host));
    }

    fn config(text: &str) -> ProxyConfig {
        Config::from_str(text, "t.toml").expect("valid").proxy
    }

    const CHAINS: &str = "[proxy.chains.eu]\nhops = [\"socks5://127.0.0.1:1\"]\n\
        [proxy.chains.us]\nhops = [\"socks5://127.0.0.1:2\"]\n";

    #[test]
    fn router_uses_rules_in_order_then_default() {
        let text = format!(
            "[proxy]\ndefault = [\"us\", \"us\"]\n{CHAINS}\
             [[proxy.rules]]\nhosts = [\"*.internal.example\", \"internal.example\"]\nuse = \"direct\"\n\
             [[proxy.rules]]\nhosts = [\"*.example\"]\nuse = [\"eu\", \"direct\"]\n\
             [[proxy.rules]]\nhosts = [\"a.example\"]\nuse = \"us\"\n"
        );
        let r = Router::new(&config(&text));
        assert_eq!(r.candidates("x.internal.example"), Route::Direct);
        assert_eq!(r.candidates("Internal.Example"), Route::Direct);
        assert_eq!(
            r.candidates("a.example"),
            Route::Chains(names(&["eu", "direct"])),
            "the earlier rule wins"
        );
        assert_eq!(
            r.candidates("example.net"),
            Route::Chains(names(&["us"])),
            "default, deduplicated"
        );
        let plain = Router::new(&ProxyConfig::default());
        assert_eq!(plain.candidates("a.example"), Route::Direct);
    }

    #[test]
    fn round_robin_rotates_over_healthy_chains() {
        let t = Instant::now();
        let mut s = Selector::new(SelectPolicy::RoundRobin);
        let c = names(&["a", "b", "c"]);
        let all = Health::default();
        let picks: Vec<String> = (0..6)
            .filter_map(|_| s.pick("h.example", &c, &all, t))
            .collect();
        assert_eq!(picks, names(&["a", "b", "c", "a", "b", "c"]));
        let b_down = Health::down(&["b"]);
        let picks: Vec<String> = (0..4)
            .filter_map(|_| s.pick("h.example", &c, &b_down, t))
            .collect();
        assert_eq!(picks, names(&["a", "c", "a", "c"]));
        assert_eq!(s.pick("h", &c, &Health::down(&["a", "b", "c"]), t), None);
        assert_eq!(s.policy(), SelectPolicy::RoundRobin);
    }

    #[test]
    fn retries_exclude_tried_chains() {
        let t = Instant::now();
        let mut s = Selector::new(SelectPolicy::RoundRobin);
        let c = names(&["a", "b"]);
        let all = Health::default();
        assert_eq!(s.pick("h", &c, &all, t).as_deref(), Some("a"));
        let tried = names(&["a"]);
        assert_eq!(
            s.pick_excluding("h", &c, &tried, &all, t).as_deref(),
            Some("b")
        );
        let tried = names(&["a", "b"]);
        assert_eq!(s.pick_excluding("h", &c, &tried, &all, t), None);
    }

    #[test]
    fn direct_is_the_last_resort_of_its_rule() {
        let t = Instant::now();
        let mut s = Selector::new(SelectPolicy::RoundRobin);
        let c = names(&["direct", "eu"]);
        let all = Health::default();
        for _ in 0..3 {
            assert_eq!(s.pick("h", &c, &all, t).as_deref(), Some("eu"));
        }
        let eu_down = Health::down(&["eu"]);
        assert_eq!(s.pick("h", &c, &eu_down, t).as_deref(), Some("direct"));
        let tried = names(&["eu"]);
        assert_eq!(
            s.pick_excluding("h", &c, &tried, &all, t).as_deref(),
            Some("direct")
        );
        let tried = names(&["eu", "direct"]);
        assert_eq!(s.pick_excluding("h", &c, &tried, &all, t), None);
        // Without `direct` listed there is no silent direct connection.
        assert_eq!(s.pick("h", &names(&["eu"]), &eu_down, t), None);
    }

    #[test]
    fn least_failures_prefers_the_healthiest_and_spreads_ties() {
        let t = Instant::now();
        let mut s = Selector::new(SelectPolicy::LeastFailures);
        let c = names(&["a", "b", "c"]);
        let mut h = Health::default();
        h.failures.insert("a".into(), 5);
        h.failures.insert("b".into(), 1);
        h.failures.insert("c".into(), 3);
        for _ in 0..4 {
            assert_eq!(s.pick("x", &c, &h, t).as_deref(), Some("b"));
        }
        h.down.insert("b".into());
        assert_eq!(s.pick("x", &c, &h, t).as_deref(), Some("c"));
        let tried = names(&["c"]);
        assert_eq!(
            s.pick_excluding("x", &c, &tried, &h, t).as_deref(),
            Some("a")
        );
        // Equal counts: every chain gets its turn.
        let even = Health::default();
        let mut s = Selector::new(SelectPolicy::LeastFailures);
        let picks: HashSet<String> = (0..3).filter_map(|_| s.pick("x", &c, &even, t)).collect();
        assert_eq!(picks.len(), 3);
    }

    #[test]
    fn sticky_keeps_a_host_on_its_chain_while_healthy() {
        let t = Instant::now();
        let mut s = Selector::new(SelectPolicy::Sticky);
        let c = names(&["a", "b"]);
        let all = Health::default();
        let first = s.pick("one.example", &c, &all, t).expect("a chain");
        let other = s.pick("two.example", &c, &all, t).expect("a chain");
        assert_ne!(first, other, "new hosts are spread");
        for _ in 0..5 {
            assert_eq!(s.pick("ONE.example", &c, &all, t), Some(first.clone()));
            assert_eq!(s.pick("two.example", &c, &all, t), Some(other.clone()));
        }
        // Its chain goes down: the host moves, and stays on the new chain afterwards.
        let down = Health::down(&[first.as_str()]);
        let moved = s.pick("one.example", &c, &down, t).expect("a chain");
        assert_eq!(moved, other);
        assert_eq!(s.pick("one.example", &c, &all, t), Some(moved.clone()));
        // A retry excluding the sticky chain moves it too.
        let tried = vec![moved.clone()];
        let retry = s
            .pick_excluding("one.example", &c, &tried, &all, t)
            .expect("a chain");
        assert_ne!(retry, moved);
        assert_eq!(s.pick("one.example", &c, &all, t), Some(retry));
    }

    #[test]
    fn closures_are_health_sources() {
        let t = Instant::now();
        let mut s = Selector::new(SelectPolicy::RoundRobin);
        let only_b = |chain: &str, _now: Instant| chain == "b";
        let c = names(&["a", "b"]);
        assert_eq!(s.pick("h", &c, &only_b, t).as_deref(), Some("b"));
        assert_eq!(only_b.failures("b"), 0);
        assert_eq!(s.pick("h", &[], &only_b, t), None);
    }

    #[test]
    fn sticky_memory_is_bounded() {
        let t = Instant::now();
        let mut s = Selector::new(SelectPolicy::Sticky);
        let c = names(&["a"]);
        let all = Health::default();
        for i in 0..STICKY_CAPACITY + 10 {
            assert!(s.pick(&format!("h{i}.example"), &c, &all, t).is_some());
        }
        assert_eq!(s.sticky.len(), STICKY_CAPACITY);
    }
}
