//! What operators set on a running crawl — the whole crawl paused, hosts paused, per-host politeness with an
//! expiry — as the stores keep it (durably; in Redis mode with the host's shard) and the scheduler obeys it.
//! Pure: every time is given.

use super::{HostMatch, Requester};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// A pause: since when, and who asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pause {
    /// Unix ms.
    pub since_ms: u64,
    pub by: Requester,
}

/// Politeness an operator set for a host, instead of `[politeness]`'s.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolitenessOverride {
    /// Delay between two requests' starts; None = the configured one.
    pub delay_ms: Option<u64>,
    /// Requests at a time; None = the configured `per_host_concurrency`.
    pub concurrency: Option<u32>,
    /// When it lapses (Unix ms); None = until changed.
    pub until_ms: Option<u64>,
    /// Unix ms.
    pub since_ms: u64,
    pub by: Requester,
}

impl PolitenessOverride {
    /// The delay, when set.
    pub fn delay(&self) -> Option<Duration> {
        self.delay_ms.map(Duration::from_millis)
    }

    fn live(&self, now_ms: u64) -> bool {
        self.until_ms.is_none_or(|u| now_ms < u)
    }
}

/// What operators set on one host (or one authority of it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostRule {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<Pause>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub politeness: Option<PolitenessOverride>,
    /// Its queue is to be dropped (every queued URL recorded `excluded`, reason `operator`) by the process that
    /// crawls the host; cleared by [`Change::Dropped`] once done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drop: Option<Pause>,
}

impl HostRule {
    /// True when it sets nothing (and can be forgotten).
    pub fn is_empty(&self) -> bool {
        self.paused.is_none() && self.politeness.is_none() && self.drop.is_none()
    }
}

/// One operator action on the state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Change {
    /// Pause the crawl (`host` None) or a host.
    Pause {
        host: Option<HostMatch>,
        at_ms: u64,
        by: Requester,
    },
    /// Resume the crawl (`host` None) or a host.
    Resume {
        host: Option<HostMatch>,
        at_ms: u64,
        by: Requester,
    },
    /// Set a host's politeness (`delay_ms` and `concurrency` None together: back to the configured one).
    Politeness {
        host: HostMatch,
        delay_ms: Option<u64>,
        concurrency: Option<u32>,
        until_ms: Option<u64>,
        at_ms: u64,
        by: Requester,
    },
    /// Drop a host's queue: every URL queued for it is recorded `excluded` (reason `operator`) by the process that
    /// crawls it.
    Drop {
        host: HostMatch,
        at_ms: u64,
        by: Requester,
    },
    /// The queue of `host` was dropped as asked at `requested_ms` (the [`Pause::since_ms`] of its drop): the
    /// request is cleared, unless a newer one came since.
    Dropped {
        host: HostMatch,
        requested_ms: u64,
        by: Requester,
    },
}

impl Change {
    /// The host it is about; None for the whole crawl.
    pub fn host(&self) -> Option<&HostMatch> {
        match self {
            Change::Pause { host, .. } | Change::Resume { host, .. } => host.as_ref(),
            Change::Politeness { host, .. }
            | Change::Drop { host, .. }
            | Change::Dropped { host, .. } => Some(host),
        }
    }

    /// Its name, for logs.
    pub fn name(&self) -> &'static str {
        match self {
            Change::Pause { .. } => "pause",
            Change::Resume { .. } => "resume",
            Change::Politeness { .. } => "politeness",
            Change::Drop { .. } => "drop",
            Change::Dropped { .. } => "dropped",
        }
    }

    /// Who asked.
    pub fn by(&self) -> &Requester {
        match self {
            Change::Pause { by, .. }
            | Change::Resume { by, .. }
            | Change::Politeness { by, .. }
            | Change::Drop { by, .. }
            | Change::Dropped { by, .. } => by,
        }
    }
}

/// Everything operators set on a crawl.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperatorState {
    /// The whole crawl paused: nothing new is requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crawl: Option<Pause>,
    /// By host (every port) or authority (`host:port`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub hosts: BTreeMap<HostMatch, HostRule>,
}

impl OperatorState {
    /// Applies `change`; true when the state changed (pausing a paused host again does not).
    pub fn apply(&mut self, change: &Change) -> bool {
        match change {
            Change::Pause {
                host: None,
                at_ms,
                by,
            } => {
                if self.crawl.is_some() {
                    return false;
                }
                self.crawl = Some(Pause {
                    since_ms: *at_ms,
                    by: by.clone(),
                });
                true
            }
            Change::Resume { host: None, .. } => self.crawl.take().is_some(),
            Change::Pause {
                host: Some(h),
                at_ms,
                by,
            } => {
                let rule = self.hosts.entry(h.clone()).or_default();
                if rule.paused.is_some() {
                    return false;
                }
                rule.paused = Some(Pause {
                    since_ms: *at_ms,
                    by: by.clone(),
                });
                true
            }
            Change::Resume { host: Some(h), .. } => {
                let changed = self
                    .hosts
                    .get_mut(h)
                    .is_some_and(|r| r.paused.take().is_some());
                self.forget_empty(h);
                changed
            }
            Change::Politeness {
                host,
                delay_ms,
                concurrency,
                until_ms,
                at_ms,
                by,
            } => {
                let new =
                    (delay_ms.is_some() || concurrency.is_some()).then(|| PolitenessOverride {
                        delay_ms: *delay_ms,
                        concurrency: *concurrency,
                        until_ms: *until_ms,
                        since_ms: *at_ms,
                        by: by.clone(),
                    });
                let rule = self.hosts.entry(host.clone()).or_default();
                let changed = rule.politeness != new;
                rule.politeness = new;
                self.forget_empty(host);
                changed
            }
            Change::Drop { host, at_ms, by } => {
                let rule = self.hosts.entry(host.clone()).or_default();
                if rule.drop.is_some() {
                    return false;
                }
                rule.drop = Some(Pause {
                    since_ms: *at_ms,
                    by: by.clone(),
                });
                true
            }
            Change::Dropped {
                host, requested_ms, ..
            } => {
                let changed = self
                    .hosts
                    .get_mut(host)
                    .is_some_and(|r| r.drop.take_if(|d| d.since_ms <= *requested_ms).is_some());
                self.forget_empty(host);
                changed
            }
        }
    }

    /// The hosts whose queues are to be dropped, with when each was asked.
    pub fn drops(&self) -> impl Iterator<Item = (&HostMatch, u64)> {
        self.hosts
            .iter()
            .filter_map(|(h, r)| r.drop.as_ref().map(|d| (h, d.since_ms)))
    }

    fn forget_empty(&mut self, h: &HostMatch) {
        if self.hosts.get(h).is_some_and(HostRule::is_empty) {
            self.hosts.remove(h);
        }
    }

    /// Why a URL of `host` on `port` may not start now: the crawl's pause, else its authority's, else its host's.
    pub fn pause_of(&self, host: &str, port: u16) -> Option<&Pause> {
        self.crawl.as_ref().or_else(|| {
            self.rules_of(host, port)
                .into_iter()
                .find_map(|(_, r)| r.paused.as_ref())
        })
    }

    /// The politeness an operator set for `host` on `port` and still in force at `now_ms`: its authority's, else
    /// its host's.
    pub fn politeness_of(&self, host: &str, port: u16, now_ms: u64) -> Option<&PolitenessOverride> {
        self.rules_of(host, port)
            .into_iter()
            .find_map(|(_, r)| r.politeness.as_ref().filter(|p| p.live(now_ms)))
    }

    /// The rules that apply to `host` on `port`: its authority's, its host's, then those of the domains above it
    /// (`*.example.org`), nearest first.
    fn rules_of(&self, host: &str, port: u16) -> Vec<(&HostMatch, &HostRule)> {
        let mut v: Vec<_> = self
            .hosts
            .range(HostMatch::every_port(host)..)
            .take_while(|(m, _)| m.host() == host)
            .filter(|(m, _)| m.matches(host, port))
            .collect();
        v.sort_by_key(|(m, _)| (m.port().is_none(), m.has_subdomains()));
        let mut rest = host;
        while let Some((_, parent)) = rest.split_once('.') {
            if let Some((m, r)) = self.hosts.get_key_value(&HostMatch::domain(parent)) {
                v.push((m, r));
            }
            rest = parent;
        }
        v
    }

    /// Drops politeness overrides that lapsed by `now_ms`; true when any did.
    pub fn expire(&mut self, now_ms: u64) -> bool {
        let mut lapsed = Vec::new();
        for (h, r) in &mut self.hosts {
            if r.politeness.as_ref().is_some_and(|p| !p.live(now_ms)) {
                r.politeness = None;
                lapsed.push(h.clone());
            }
        }
        for h in &lapsed {
            self.forget_empty(h);
        }
        !lapsed.is_empty()
    }

    /// True when nothing is set.
    pub fn is_empty(&self) -> bool {
        self.crawl.is_none() && self.hosts.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api() -> Requester {
        Requester::Api {
            peer: "127.0.0.1:1".into(),
        }
    }

    fn h(s: &str) -> HostMatch {
        HostMatch::parse(s).unwrap()
    }

    #[test]
    fn pauses_of_the_crawl_a_host_and_an_authority() {
        let mut s = OperatorState::default();
        assert!(s.pause_of("a.example", 80).is_none());
        let pause = |host: Option<&str>| Change::Pause {
            host: host.map(h),
            at_ms: 5,
            by: api(),
        };
        let resume = |host: Option<&str>| Change::Resume {
            host: host.map(h),
            at_ms: 6,
            by: api(),
        };
        assert!(s.apply(&pause(Some("a.example:8080"))));
        assert!(!s.apply(&pause(Some("a.example:8080"))), "already paused");
        assert!(s.pause_of("a.example", 8080).is_some());
        assert!(s.pause_of("a.example", 80).is_none(), "another authority");
        assert!(s.apply(&pause(Some("a.example"))));
        assert!(s.pause_of("a.example", 80).is_some());
        assert!(s.pause_of("b.example", 80).is_none());
        assert!(s.apply(&resume(Some("a.example"))));
        assert!(s.pause_of("a.example", 80).is_none());
        assert!(
            s.pause_of("a.example", 8080).is_some(),
            "the authority's own pause stays"
        );
        assert!(s.apply(&pause(None)));
        assert_eq!(s.pause_of("b.example", 443).map(|p| p.since_ms), Some(5));
        assert!(s.apply(&resume(None)) && !s.apply(&resume(None)));
        assert!(s.apply(&resume(Some("a.example:8080"))));
        assert!(s.is_empty(), "{s:?}");
    }

    #[test]
    fn a_domain_pause_holds_every_host_under_it() {
        let mut s = OperatorState::default();
        assert!(s.apply(&Change::Pause {
            host: Some(h("*.example.org")),
            at_ms: 1,
            by: api(),
        }));
        for host in ["example.org", "www.example.org", "a.b.example.org"] {
            assert!(s.pause_of(host, 443).is_some(), "{host}");
        }
        assert!(s.pause_of("example.com", 443).is_none());
        assert!(s.pause_of("notexample.org", 443).is_none());
        assert!(s.apply(&Change::Resume {
            host: Some(h("*.example.org")),
            at_ms: 2,
            by: api(),
        }));
        assert!(s.pause_of("www.example.org", 443).is_none() && s.is_empty());
    }

    #[test]
    fn politeness_prefers_the_authority_and_lapses() {
        let mut s = OperatorState::default();
        let set = |host: &str, delay: Option<u64>, until: Option<u64>| Change::Politeness {
            host: h(host),
            delay_ms: delay,
            concurrency: Some(1),
            until_ms: until,
            at_ms: 1,
            by: api(),
        };
        assert!(s.apply(&set("a.example", Some(2_000), None)));
        assert!(s.apply(&set("a.example:81", Some(9_000), Some(100))));
        assert_eq!(
            s.politeness_of("a.example", 81, 50)
                .and_then(|p| p.delay_ms),
            Some(9_000)
        );
        assert_eq!(
            s.politeness_of("a.example", 80, 50)
                .and_then(|p| p.delay_ms),
            Some(2_000)
        );
        // Lapsed: the host's applies to the authority again.
        assert_eq!(
            s.politeness_of("a.example", 81, 100)
                .and_then(|p| p.delay_ms),
            Some(2_000)
        );
        assert!(s.expire(100) && !s.expire(100));
        assert!(!s.hosts.contains_key(&h("a.example:81")));
        // Both None: back to the configured politeness.
        let clear = Change::Politeness {
            host: h("a.example"),
            delay_ms: None,
            concurrency: None,
            until_ms: None,
            at_ms: 2,
            by: api(),
        };
        assert!(s.apply(&clear) && s.is_empty());
    }

    #[test]
    fn a_drop_is_cleared_once_done_unless_asked_again() {
        let mut s = OperatorState::default();
        let drop = |at_ms| Change::Drop {
            host: h("a.example"),
            at_ms,
            by: api(),
        };
        let dropped = |requested_ms| Change::Dropped {
            host: h("a.example"),
            requested_ms,
            by: Requester::Process,
        };
        assert!(s.apply(&drop(10)) && !s.apply(&drop(11)));
        assert_eq!(
            s.drops()
                .map(|(h, t)| (h.to_string(), t))
                .collect::<Vec<_>>(),
            [("a.example".to_owned(), 10)]
        );
        assert!(!s.apply(&dropped(9)), "done for an older request");
        assert!(s.apply(&dropped(10)) && s.is_empty());
        assert!(!s.apply(&dropped(10)));
    }

    #[test]
    fn round_trips_through_json() {
        let mut s = OperatorState::default();
        s.apply(&Change::Pause {
            host: Some(h("[::1]:81")),
            at_ms: 7,
            by: Requester::Alert {
                alert: "A".into(),
                fingerprint: "f".into(),
            },
        });
        s.apply(&Change::Pause {
            host: None,
            at_ms: 8,
            by: api(),
        });
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<OperatorState>(&json).unwrap(), s);
        assert_eq!(
            serde_json::from_str::<OperatorState>("{}").unwrap(),
            OperatorState::default()
        );
    }
}
