//! The proxy-chain actor: owns every proxied connection. It routes a host to its candidate chains, picks one by the
//! selection policy among those whose breakers (chain and hops) allow it, opens the chain with per-phase deadlines,
//! and feeds the result back into the breakers and counters. Never a silent direct connection: direct happens only
//! when the route says so, or when no healthy chain is left and `fallback_direct` is on.

use super::breaker::Breaker;
use super::hop::ProxyStats;
use super::messages::{GetProxyStats, OpenChain, Opened, ProxyFailure};
use super::select::{ChainHealth, Route, Router, Selector};
use super::socks::{ChainError, Deadlines, HopSpec, Target, open_chain};
use crate::resolver::logic::Outcome;
use crate::resolver::messages::Resolve;
use actix::{
    Actor, ActorFutureExt, Context, Handler, MessageResult, Recipient, ResponseActFuture,
    Supervised, WrapFuture,
};
use crawl_core::config::{DIRECT, ProxyConfig, ResolveAt};
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

struct Chain {
    hops: Vec<HopSpec>,
    resolve: ResolveAt,
    breaker: Breaker,
    hop_breakers: Vec<Breaker>,
    faults: u64,
}

struct Health<'a>(&'a BTreeMap<String, Chain>);

impl ChainHealth for Health<'_> {
    fn healthy(&self, chain: &str, now: Instant) -> bool {
        self.0.get(chain).is_some_and(|c| {
            c.breaker.would_allow(now) && c.hop_breakers.iter().all(|b| b.would_allow(now))
        })
    }
    fn failures(&self, chain: &str) -> u64 {
        self.0.get(chain).map_or(0, |c| c.faults)
    }
}

pub struct ProxyChains {
    chains: BTreeMap<String, Chain>,
    router: Router,
    selector: Selector,
    deadlines: Deadlines,
    fallback_direct: bool,
    resolver: Option<Recipient<Resolve>>,
    stats: ProxyStats,
    config: ProxyConfig,
}

impl ProxyChains {
    pub fn new(config: &ProxyConfig, resolver: Option<Recipient<Resolve>>) -> ProxyChains {
        let chains = config
            .chains
            .iter()
            .map(|(name, c)| {
                let hops: Vec<HopSpec> = c
                    .hops
                    .iter()
                    .map(|h| HopSpec {
                        host: h.host.clone(),
                        port: h.port,
                        auth: match (&h.username, &h.password) {
                            (Some(u), Some(p)) => Some((u.clone(), p.expose().to_owned())),
                            _ => None,
                        },
                    })
                    .collect();
                let breaker = || Breaker::new(config.breaker_failures, config.breaker_cooldown);
                let chain = Chain {
                    hop_breakers: hops.iter().map(|_| breaker()).collect(),
                    hops,
                    resolve: c.resolve,
                    breaker: breaker(),
                    faults: 0,
                };
                (name.clone(), chain)
            })
            .collect();
        ProxyChains {
            chains,
            router: Router::new(config),
            selector: Selector::new(config.select),
            deadlines: Deadlines {
                connect: config.connect_timeout,
                greeting: config.greeting_timeout,
                auth: config.auth_timeout,
                connect_reply: config.connect_reply_timeout,
                chain: config.chain_timeout,
            },
            fallback_direct: config.fallback_direct,
            resolver,
            stats: ProxyStats::from_config(config),
            config: config.clone(),
        }
    }

    fn direct(&mut self, fallback: bool) -> Result<Opened, ProxyFailure> {
        self.stats.record_direct();
        Ok(Opened::Direct { fallback })
    }

    /// Feeds a chain attempt's result (None = the tunnel opened) into its breakers and counters.
    fn settle(&mut self, chain: &str, error: Option<&ChainError>) {
        let now = Instant::now();
        let Some(c) = self.chains.get_mut(chain) else {
            return;
        };
        match error {
            None => {
                c.breaker.success(now);
                for b in &mut c.hop_breakers {
                    b.success(now);
                }
                self.stats.record_connect(chain);
            }
            Some(e) if e.is_proxy_fault() => {
                c.faults += 1;
                c.breaker.failure(now);
                let kind = format!("{:?}", e.kind).to_ascii_lowercase();
                if let Some(b) = c.hop_breakers.get_mut(e.hop) {
                    b.failure(now);
                    self.stats.record_hop_fault(chain, e.hop, &kind);
                    self.stats
                        .record_hop_breaker(chain, e.hop, b.state(now).as_str());
                }
                self.stats.record_fault(chain, &kind);
                tracing::warn!(chain, hop = e.hop, fault = %kind, detail = %e.detail, breaker = c.breaker.state(now).as_str(), "proxy fault");
            }
            Some(_) => {
                // A target fault: the chain itself worked.
                c.breaker.success(now);
                self.stats.record_connect(chain);
            }
        }
        let state = c.breaker.state(now).as_str();
        self.stats.record_breaker(chain, state);
    }
}

impl Actor for ProxyChains {
    type Context = Context<Self>;
}

impl Supervised for ProxyChains {
    fn restarting(&mut self, _ctx: &mut Context<Self>) {
        tracing::warn!("proxy-chain actor restarting");
        let resolver = self.resolver.take();
        *self = ProxyChains::new(&self.config.clone(), resolver);
    }
}

async fn target_for(
    host: String,
    port: u16,
    resolve: ResolveAt,
    resolver: Option<Recipient<Resolve>>,
) -> Result<Target, String> {
    if let Ok(ip) = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    {
        return Ok(Target::Addr(SocketAddr::new(ip, port)));
    }
    match (resolve, resolver) {
        (ResolveAt::Local, Some(r)) => match r
            .send(Resolve {
                name: host.clone(),
                trace: crawl_observability::trace::TraceCtx::default(),
            })
            .await
        {
            Ok(Outcome::Resolved(res)) => res
                .addrs
                .first()
                .map(|ip| Target::Addr(SocketAddr::new(*ip, port)))
                .ok_or_else(|| format!("{host}: no address")),
            Ok(other) => Err(format!("{host}: {other:?}")),
            Err(e) => Err(format!("resolver unavailable: {e}")),
        },
        _ => Ok(Target::Name(host, port)),
    }
}

impl Handler<OpenChain> for ProxyChains {
    type Result = ResponseActFuture<Self, Result<Opened, ProxyFailure>>;

    fn handle(&mut self, msg: OpenChain, _ctx: &mut Context<Self>) -> Self::Result {
        let now = Instant::now();
        let candidates = match self.router.candidates(&msg.host) {
            Route::Direct => return Box::pin(actix::fut::ready(self.direct(false))),
            Route::Chains(c) => c,
        };
        let picked = {
            let health = Health(&self.chains);
            self.selector
                .pick_excluding(&msg.host, &candidates, &msg.tried, &health, now)
        };
        let name = match picked {
            Some(n) if n == DIRECT => return Box::pin(actix::fut::ready(self.direct(false))),
            Some(n) => n,
            None if self.fallback_direct => {
                tracing::warn!(host = %msg.host, "no healthy proxy chain; falling back to direct (fallback_direct = true)");
                return Box::pin(actix::fut::ready(self.direct(true)));
            }
            None => {
                let failure = ProxyFailure::NoChain {
                    host: msg.host.clone(),
                    tried: msg.tried.join(","),
                };
                return Box::pin(actix::fut::ready(Err(failure)));
            }
        };
        let Some(chain) = self.chains.get_mut(&name) else {
            let failure = ProxyFailure::NoChain {
                host: msg.host,
                tried: name,
            };
            return Box::pin(actix::fut::ready(Err(failure)));
        };
        // Takes the half-open probe slots (chain and hops) when a breaker is half-open.
        chain.breaker.allow(now);
        for b in &mut chain.hop_breakers {
            b.allow(now);
        }
        let hops = chain.hops.clone();
        let resolve = chain.resolve;
        let deadlines = self.deadlines;
        let resolver = self.resolver.clone();
        let (host, port) = (msg.host, msg.port);
        let fut = async move {
            let mut hops = hops;
            // The first hop given by name is resolved by the resolver actor like every other name.
            if let (Some(first), Some(r)) = (hops.first_mut(), resolver.as_ref())
                && first.host.parse::<IpAddr>().is_err()
            {
                match r
                    .send(Resolve {
                        name: first.host.clone(),
                        trace: crawl_observability::trace::TraceCtx::default(),
                    })
                    .await
                {
                    Ok(Outcome::Resolved(res)) if !res.addrs.is_empty() => {
                        first.host = res.addrs[0].to_string();
                    }
                    other => {
                        tracing::warn!(hop = %first, outcome = ?other.ok(), "proxy hop name not resolved")
                    }
                }
            }
            let target = target_for(host, port, resolve, resolver).await;
            match target {
                Ok(t) => Ok(open_chain(&hops, &t, &deadlines).await),
                Err(e) => Err(e),
            }
        };
        Box::pin(fut.into_actor(self).map(move |res, act, _ctx| match res {
            Err(detail) => {
                // The chain was never tried (the target name did not resolve): give back any probe slot.
                if let Some(c) = act.chains.get_mut(&name) {
                    let now = Instant::now();
                    c.breaker.cancel_probe(now);
                    for b in &mut c.hop_breakers {
                        b.cancel_probe(now);
                    }
                }
                Err(ProxyFailure::Target {
                    chain: name,
                    detail,
                })
            }
            Ok(Ok(stream)) => {
                act.settle(&name, None);
                Ok(Opened::Chain {
                    chain: name,
                    stream,
                })
            }
            Ok(Err(e)) => {
                act.settle(&name, Some(&e));
                if e.is_proxy_fault() {
                    Err(ProxyFailure::Fault {
                        chain: name,
                        detail: e.detail,
                    })
                } else {
                    Err(ProxyFailure::Target {
                        chain: name,
                        detail: e.detail,
                    })
                }
            }
        }))
    }
}

impl Handler<GetProxyStats> for ProxyChains {
    type Result = MessageResult<GetProxyStats>;

    fn handle(&mut self, _msg: GetProxyStats, _ctx: &mut Context<Self>) -> Self::Result {
        MessageResult(self.stats.clone())
    }
}

/// Chains configured (for `--check` and logs; credentials redacted).
pub fn describe(config: &ProxyConfig) -> BTreeMap<String, Vec<String>> {
    config
        .chains
        .iter()
        .map(|(n, c)| (n.clone(), c.hops.iter().map(|h| h.to_string()).collect()))
        .collect()
}
