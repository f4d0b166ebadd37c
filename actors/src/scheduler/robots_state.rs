//! robots.txt state per authority (scheme, host, port), as the scheduler's gate sees it.

use crawl_core::canon;
use crawl_core::politeness::Gate;
use crawl_core::record::{DnsInfo, Reason};
use crawl_core::robots::Robots;
use foldhash::quality::RandomState;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

/// What is known of one authority's robots.txt.
#[derive(Debug, Clone)]
pub enum RobotsState {
    /// A fetch is queued or in flight; the authority's pages wait.
    Pending,
    /// Rules in force until `expires` (the cache lifetime, at most 24 h by default).
    Ready {
        rules: Arc<Robots>,
        expires: Instant,
    },
    /// Unavailable too many times: the authority's pages are recorded as failed (robots_unavailable).
    GaveUp {
        /// robots_unavailable, or dns / dns_polluted when the name never resolved.
        reason: Reason,
        dns: Option<DnsInfo>,
        detail: String,
    },
}

/// The table of authorities (looked up for every URL: a randomly seeded foldhash, as for the parser's link
/// dedup, instead of the default SipHash).
#[derive(Debug, Default)]
pub struct RobotsTable {
    states: HashMap<String, RobotsState, RandomState>,
    failures: HashMap<String, u32, RandomState>,
}

impl RobotsTable {
    /// The gate decision for a page: `None` when robots.txt must be fetched first.
    pub fn gate(&self, page_url: &str, now: Instant) -> Option<Gate> {
        // Canonical URLs are split without a parse; anything else is parsed.
        let parsed;
        let (key, path) = match crawl_core::urlparts::split(page_url) {
            Some(p) => (p.authority_key(), p.path_and_query),
            None => {
                parsed = match url::Url::parse(page_url) {
                    Ok(u) => u,
                    Err(_) => return Some(Gate::Go), // the fetcher records the invalid URL
                };
                (
                    canon::authority_key(&parsed),
                    canon::path_and_query(&parsed),
                )
            }
        };
        match self.states.get(&key) {
            None => None,
            Some(RobotsState::Pending) => Some(Gate::Block),
            Some(RobotsState::GaveUp { .. }) => Some(Gate::Drop),
            Some(RobotsState::Ready { expires, .. }) if *expires <= now => None,
            Some(RobotsState::Ready { rules, .. }) => Some(if rules.is_allowed(path) {
                Gate::Go
            } else {
                Gate::Drop
            }),
        }
    }

    /// Marks a fetch as started; false when one is already pending.
    pub fn start(&mut self, authority: &str) -> bool {
        match self.states.get(authority) {
            Some(RobotsState::Pending) => false,
            _ => {
                self.states
                    .insert(authority.to_owned(), RobotsState::Pending);
                true
            }
        }
    }

    /// True when rules for the authority are loaded and not expired.
    pub fn has_rules(&self, authority: &str, now: Instant) -> bool {
        matches!(self.states.get(authority), Some(RobotsState::Ready { expires, .. }) if *expires > now)
    }

    /// True while a fetch of the authority's robots.txt is pending.
    pub fn is_pending(&self, authority: &str) -> bool {
        matches!(self.states.get(authority), Some(RobotsState::Pending))
    }

    /// A fetch marked started will not happen here after all (its host went to another process): the next page of
    /// the authority asks for it again.
    pub fn forget_pending(&mut self, authority: &str) {
        if matches!(self.states.get(authority), Some(RobotsState::Pending)) {
            self.states.remove(authority);
        }
    }

    pub fn set(&mut self, authority: &str, state: RobotsState) {
        if matches!(state, RobotsState::Ready { .. }) {
            self.failures.remove(authority);
        }
        self.states.insert(authority.to_owned(), state);
    }

    /// Counts one unavailable answer and returns how many in a row.
    pub fn failed(&mut self, authority: &str) -> u32 {
        let n = self.failures.entry(authority.to_owned()).or_insert(0);
        *n += 1;
        *n
    }

    /// Why the page's authority was given up on, if it was: the reason, DNS evidence and detail for its records.
    pub fn gave_up(&self, page_url: &str) -> Option<(Reason, Option<DnsInfo>, String)> {
        let key = match crawl_core::urlparts::split(page_url) {
            Some(p) => p.authority_key(),
            None => canon::authority_key(&url::Url::parse(page_url).ok()?),
        };
        match self.states.get(&key)? {
            RobotsState::GaveUp {
                reason,
                dns,
                detail,
            } => Some((*reason, dns.clone(), detail.clone())),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn gate_follows_state() {
        let now = Instant::now();
        let mut t = RobotsTable::default();
        assert_eq!(t.gate("http://a.test/x", now), None);
        assert!(t.start("http://a.test:80"));
        assert!(!t.start("http://a.test:80"), "one fetch at a time");
        assert_eq!(t.gate("http://a.test/x", now), Some(Gate::Block));
        let rules = Arc::new(Robots::parse(
            b"User-agent: *\nDisallow: /private/\n",
            "crawl-engine/0.1",
        ));
        t.set(
            "http://a.test:80",
            RobotsState::Ready {
                rules,
                expires: now + Duration::from_secs(60),
            },
        );
        assert_eq!(t.gate("http://a.test/x", now), Some(Gate::Go));
        assert_eq!(t.gate("http://a.test/private/1", now), Some(Gate::Drop));
        assert_eq!(t.gate("https://a.test/x", now), None, "another authority");
        assert_eq!(
            t.gate("http://a.test/x", now + Duration::from_secs(61)),
            None,
            "expired: refetch"
        );
        assert_eq!(t.failed("http://b.test:80"), 1);
        assert_eq!(t.failed("http://b.test:80"), 2);
        t.set(
            "http://b.test:80",
            RobotsState::GaveUp {
                reason: Reason::RobotsUnavailable,
                dns: None,
                detail: "503".into(),
            },
        );
        assert_eq!(
            t.gave_up("http://b.test/y").map(|g| g.0),
            Some(Reason::RobotsUnavailable)
        );
        assert_eq!(t.gate("http://b.test/y", now), Some(Gate::Drop));
    }

    #[test]
    fn refetch_after_expiry_and_failures_reset_on_rules() {
        let now = Instant::now();
        let mut t = RobotsTable::default();
        let auth = "https://c.test:443";
        assert!(t.start(auth));
        assert_eq!(t.failed(auth), 1);
        assert_eq!(t.failed(auth), 2);
        assert!(!t.start(auth), "still pending while retried");
        t.set(
            auth,
            RobotsState::Ready {
                rules: Arc::new(Robots::allow_all()),
                expires: now + Duration::from_secs(1),
            },
        );
        assert_eq!(t.failed(auth), 1, "rules reset the failure count");
        assert_eq!(t.gate("https://c.test/p", now), Some(Gate::Go));
        assert_eq!(
            t.gate("https://c.test/p", now + Duration::from_secs(1)),
            None
        );
        assert!(t.start(auth), "an expired entry may be fetched again");
        assert_eq!(t.gate("https://c.test/p", now), Some(Gate::Block));
        assert!(t.gave_up("https://c.test/p").is_none());
        assert!(t.gave_up("not a url").is_none());
        assert_eq!(
            t.gate("not a url", now),
            Some(Gate::Go),
            "the fetcher records it"
        );
    }
}
