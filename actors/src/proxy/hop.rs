//! Proxy counters for the metrics (docs/PROXY.md): per chain and per hop of each chain, the
//! connects, the faults by kind name and the breaker state; plus direct connects. Plain data
//! with record methods; hops are labelled by their redacted form (`socks5://***@host:port`).

use std::collections::BTreeMap;

use crawl_core::config::ProxyConfig;

/// Counters of one hop (or of a whole chain).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counters {
    /// Connections established through it.
    pub connects: u64,
    /// Faults by kind name (e.g. `connect_refused`, `timeout_greeting`, `reply_02`).
    pub faults: BTreeMap<String, u64>,
    /// `closed`, `open` or `half-open`.
    pub breaker: String,
}

impl Default for Counters {
    fn default() -> Self {
        Self {
            connects: 0,
            faults: BTreeMap::new(),
            breaker: "closed".to_owned(),
        }
    }
}

impl Counters {
    /// Faults of every kind.
    pub fn total_faults(&self) -> u64 {
        self.faults.values().sum()
    }

    fn fault(&mut self, kind: &str) {
        match self.faults.get_mut(kind) {
            Some(n) => *n = n.saturating_add(1),
            None => {
                self.faults.insert(kind.to_owned(), 1);
            }
        }
    }
}

/// One hop's counters within a chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HopStats {
    /// The hop as displayed: `socks5://***@host:port` or `socks5://host:port`.
    pub label: String,
    pub counters: Counters,
}

/// One chain's counters and its hops', in connection order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChainStats {
    pub counters: Counters,
    pub hops: Vec<HopStats>,
}

/// Every chain's counters, by chain name.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProxyStats {
    chains: BTreeMap<String, ChainStats>,
    /// Connections made without a proxy (rule, default or fallback `direct`).
    pub direct_connects: u64,
}

impl ProxyStats {
    pub fn new() -> Self {
        Self::default()
    }

    /// Every configured chain and hop with zero counters, so that they all show in metrics.
    pub fn from_config(config: &ProxyConfig) -> Self {
        let chains = config
            .chains
            .iter()
            .map(|(name, chain)| {
                let hops = chain
                    .hops
                    .iter()
                    .map(|h| HopStats {
                        label: h.to_string(),
                        counters: Counters::default(),
                    })
                    .collect();
                let stats = ChainStats {
                    counters: Counters::default(),
                    hops,
                };
                (name.clone(), stats)
            })
            .collect();
        Self {
            chains,
            direct_connects: 0,
        }
    }

    /// The counters after a reconfigure to `config`: the chains named in `keep` (unchanged name and hops) keep
    /// theirs, every other configured chain starts at zero, chains no longer configured are dropped. Direct
    /// connects are kept.
    pub fn reconfigured(mut self, config: &ProxyConfig, keep: &[&str]) -> Self {
        let mut fresh = Self::from_config(config);
        for name in keep {
            if let (Some(old), Some(slot)) =
                (self.chains.remove(*name), fresh.chains.get_mut(*name))
            {
                *slot = old;
            }
        }
        fresh.direct_connects = self.direct_connects;
        fresh
    }

    /// One chain's counters.
    pub fn chain(&self, name: &str) -> Option<&ChainStats> {
        self.chains.get(name)
    }

    /// One hop's counters (`index` 0 = the first hop).
    pub fn hop(&self, chain: &str, index: usize) -> Option<&HopStats> {
        self.chains.get(chain)?.hops.get(index)
    }

    /// All chains by name.
    pub fn chains(&self) -> impl Iterator<Item = (&str, &ChainStats)> {
        self.chains.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// A chain opened end to end: counts for the chain and each of its hops.
    pub fn record_connect(&mut self, chain: &str) {
        let c = self.chain_mut(chain);
        c.counters.connects = c.counters.connects.saturating_add(1);
        for h in &mut c.hops {
            h.counters.connects = h.counters.connects.saturating_add(1);
        }
    }

    /// A proxy fault of `kind` on the chain.
    pub fn record_fault(&mut self, chain: &str, kind: &str) {
        self.chain_mut(chain).counters.fault(kind);
    }

    /// The chain's breaker changed to `state`.
    pub fn record_breaker(&mut self, chain: &str, state: &str) {
        self.chain_mut(chain).counters.breaker = state.to_owned();
    }

    /// A proxy fault of `kind` at hop `index` of the chain.
    pub fn record_hop_fault(&mut self, chain: &str, index: usize, kind: &str) {
        self.hop_mut(chain, index).counters.fault(kind);
    }

    /// The breaker of hop `index` of the chain changed to `state`.
    pub fn record_hop_breaker(&mut self, chain: &str, index: usize, state: &str) {
        self.hop_mut(chain, index).counters.breaker = state.to_owned();
    }

    /// A connection made without a proxy.
    pub fn record_direct(&mut self) {
        self.direct_connects = self.direct_connects.saturating_add(1);
    }

    /// Connections through any chain.
    pub fn total_connects(&self) -> u64 {
        self.chains.values().map(|c| c.counters.connects).sum()
    }

    fn chain_mut(&mut self, chain: &str) -> &mut ChainStats {
        self.chains.entry(chain.to_owned()).or_default()
    }

    /// The hop, created (labelled `hop <n>`, 1-based) when the chain was not configured.
    fn hop_mut(&mut self, chain: &str, index: usize) -> &mut HopStats {
        let hops = &mut self.chain_mut(chain).hops;
        while hops.len() <= index {
            let label = format!("hop {}", hops.len() + 1);
            hops.push(HopStats {
                label,
                counters: Counters::default(),
            });
        }
        &mut hops[index]
    }
}

#[cfg(test)]
mod tests {
    use crawl_core::config::Config;

    use super::*;

    fn two_chains() -> ProxyConfig {
        let text = "[proxy.chains.eu]\n\
            hops = [\"socks5://alice:hunter2@127.0.0.1:1080\", \"socks5://127.0.0.1:1081\"]\n\
            [proxy.chains.us]\nhops = [\"socks5://[::1]:9050\"]\n";
        Config::from_str(text, "t.toml").expect("valid").proxy
    }

    #[test]
    fn configured_chains_start_at_zero_with_redacted_labels() {
        let s = ProxyStats::from_config(&two_chains());
        let names: Vec<&str> = s.chains().map(|(n, _)| n).collect();
        assert_eq!(names, ["eu", "us"]);
        let eu = s.chain("eu").expect("eu");
        assert_eq!(eu.counters, Counters::default());
        assert_eq!(eu.counters.breaker, "closed");
        let labels: Vec<&str> = eu.hops.iter().map(|h| h.label.as_str()).collect();
        assert_eq!(
            labels,
            ["socks5://***@127.0.0.1:1080", "socks5://127.0.0.1:1081"]
        );
        assert!(!format!("{s:?}").contains("hunter2"));
        assert_eq!(
            s.hop("us", 0).map(|h| h.label.as_str()),
            Some("socks5://[::1]:9050")
        );
        assert!(s.hop("us", 1).is_none() && s.chain("asia").is_none());
        assert_eq!((s.total_connects(), s.direct_connects), (0, 0));
    }

    #[test]
    fn connects_faults_and_breakers_are_counted() {
        let mut s = ProxyStats::from_config(&two_chains());
        s.record_connect("eu");
        s.record_connect("eu");
        s.record_connect("us");
        s.record_direct();
        s.record_fault("eu", "timeout_connect_reply");
        s.record_fault("eu", "timeout_connect_reply");
        s.record_fault("eu", "reply_01");
        s.record_hop_fault("eu", 1, "reply_01");
        s.record_breaker("eu", "open");
        s.record_hop_breaker("eu", 1, "half-open");

        let eu = s.chain("eu").expect("eu");
        assert_eq!(eu.counters.connects, 2);
        assert_eq!(
            eu.hops[0].counters.connects, 2,
            "every hop of an opened chain"
        );
        assert_eq!(eu.hops[1].counters.connects, 2);
        assert_eq!(eu.counters.faults["timeout_connect_reply"], 2);
        assert_eq!(eu.counters.faults["reply_01"], 1);
        assert_eq!(eu.counters.total_faults(), 3);
        assert_eq!(eu.counters.breaker, "open");
        let hop1 = &eu.hops[1].counters;
        assert_eq!(
            (hop1.total_faults(), hop1.breaker.as_str()),
            (1, "half-open")
        );
        assert_eq!(eu.hops[0].counters.total_faults(), 0);
        assert_eq!(eu.hops[0].counters.breaker, "closed");
        assert_eq!(s.total_connects(), 3);
        assert_eq!(s.direct_connects, 1);
    }

    #[test]
    fn reconfigure_keeps_only_unchanged_chains() {
        let mut s = ProxyStats::from_config(&two_chains());
        s.record_connect("eu");
        s.record_connect("us");
        s.record_breaker("eu", "open");
        s.record_direct();
        let text = "[proxy.chains.eu]\n\
            hops = [\"socks5://alice:hunter2@127.0.0.1:1080\", \"socks5://127.0.0.1:1081\"]\n\
            [proxy.chains.asia]\nhops = [\"socks5://127.0.0.1:7000\"]\n";
        let config = Config::from_str(text, "t.toml").expect("valid").proxy;
        let s = s.reconfigured(&config, &["eu"]);
        let names: Vec<&str> = s.chains().map(|(n, _)| n).collect();
        assert_eq!(names, ["asia", "eu"]);
        let eu = s.chain("eu").expect("eu");
        assert_eq!(
            (eu.counters.connects, eu.counters.breaker.as_str()),
            (1, "open")
        );
        assert_eq!(s.chain("asia").map(|c| c.counters.connects), Some(0));
        assert_eq!(s.direct_connects, 1);
    }

    #[test]
    fn unknown_chains_and_hops_are_created_on_demand() {
        let mut s = ProxyStats::new();
        s.record_hop_fault("x", 2, "auth_failed");
        let x = s.chain("x").expect("x");
        let labels: Vec<&str> = x.hops.iter().map(|h| h.label.as_str()).collect();
        assert_eq!(labels, ["hop 1", "hop 2", "hop 3"]);
        assert_eq!(x.hops[2].counters.faults["auth_failed"], 1);
        s.record_connect("y");
        assert_eq!(s.chain("y").map(|c| c.counters.connects), Some(1));
    }
}
