//! The proxy-chain actor: owns every proxied connection. It routes a host to its candidate chains, picks one by the
//! selection policy among those whose breakers (chain and hops) allow it, opens the chain with per-phase deadlines,
//! and feeds the result back into the breakers and counters. Never a silent direct connection: direct happens only
//! when the route says so, or when no healthy chain is left and `fallback_direct` is on.
//!
//! Every `OpenChain` adds a `proxy.connect` span to the asking URL's trace and passes that trace on to the
//! `Resolve`s it sends. The summary counters ([`ProxyStats`]) and the Prometheus counters are updated together, in
//! `settle`. [`Reconfigure`] swaps the config live, keeping the breakers of unchanged chains.

use super::breaker::{Breaker, BreakerState};
use super::hop::ProxyStats;
use super::messages::{GetProxyStats, OpenChain, Opened, ProxyFailure, Reconfigure};
use super::select::{ChainHealth, Route, Router, Selector};
use super::socks::{ChainError, Deadlines, HopSpec, Target, open_chain};
use crate::faults::{Faults, Stage};
use crate::resolver::logic::Outcome;
use crate::resolver::messages::Resolve;
use actix::{
    Actor, ActorFutureExt, Context, Handler, MessageResult, Recipient, ResponseActFuture,
    Supervised, WrapFuture,
};
use crawl_core::config::{ChainConfig, DIRECT, ProxyConfig, ResolveAt};
use crawl_core::netguard::NetGuard;
use crawl_observability::Attr;
use crawl_observability::metrics::metrics;
use crawl_observability::trace::{ChildSpan, TraceCtx};
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

struct Chain {
    hops: Vec<HopSpec>,
    resolve: ResolveAt,
    breaker: Breaker,
    hop_breakers: Vec<Breaker>,
    faults: u64,
    /// Which build of the chain this is: an attempt settles only into the chain it started on (a reconfigure may
    /// have replaced it meanwhile).
    generation: u64,
}

fn hop_specs(c: &ChainConfig) -> Vec<HopSpec> {
    c.hops
        .iter()
        .map(|h| HopSpec {
            host: h.host.clone(),
            port: h.port,
            auth: match (&h.username, &h.password) {
                (Some(u), Some(p)) => Some((u.clone(), p.expose().to_owned())),
                _ => None,
            },
        })
        .collect()
}

impl Chain {
    /// A chain with closed breakers.
    fn new(hops: Vec<HopSpec>, resolve: ResolveAt, config: &ProxyConfig, generation: u64) -> Chain {
        let breaker = || Breaker::new(config.breaker_failures, config.breaker_cooldown);
        Chain {
            hop_breakers: hops.iter().map(|_| breaker()).collect(),
            hops,
            resolve,
            breaker: breaker(),
            faults: 0,
            generation,
        }
    }
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
    /// The config in use (the latest [`Reconfigure`]d one): a restart rebuilds from it.
    config: ProxyConfig,
    /// The generation of the chains built last.
    generation: u64,
    /// Fault injection (tests): panic or freeze on a target host.
    fault_hook: Faults,
    /// The SSRF guard on the addresses this actor chooses: the hops given by IP or resolved here, and a target
    /// resolved here (`resolve = "local"`). A target the last hop resolves is out of its sight.
    guard: NetGuard,
}

/// Why a chain was not even tried.
enum NotTried {
    /// The target name did not resolve (`resolve = "local"`).
    Unresolved(String),
    /// The guard refused a hop or the locally resolved target.
    Refused { host: String, addr: IpAddr },
}

fn deadlines(config: &ProxyConfig) -> Deadlines {
    Deadlines {
        connect: config.connect_timeout,
        greeting: config.greeting_timeout,
        auth: config.auth_timeout,
        connect_reply: config.connect_reply_timeout,
        chain: config.chain_timeout,
    }
}

/// The fault kind name of the counters, metrics, logs and spans (e.g. `timeout_greeting`).
fn fault_kind(e: &ChainError) -> String {
    e.kind.as_str().to_owned()
}

/// Whether a breaker state counts as open for the `crawl_proxy_breaker_open` gauge (half-open does: the chain
/// takes no traffic but its probe).
fn breaker_open(state: BreakerState) -> bool {
    !matches!(state, BreakerState::Closed)
}

/// Ends a `proxy.connect` span that failed.
fn failed(mut span: ChildSpan, kind: &str, error: &str) {
    span.set(Attr::new("proxy.result", "fault"));
    span.set(Attr::new("proxy.fault", kind));
    span.set_error(error);
    span.end();
}

impl ProxyChains {
    pub fn new(config: &ProxyConfig, resolver: Option<Recipient<Resolve>>) -> ProxyChains {
        Self::build(config, resolver, 0)
    }

    fn build(
        config: &ProxyConfig,
        resolver: Option<Recipient<Resolve>>,
        generation: u64,
    ) -> ProxyChains {
        let chains: BTreeMap<String, Chain> = config
            .chains
            .iter()
            .map(|(name, c)| {
                let chain = Chain::new(hop_specs(c), c.resolve, config, generation);
                (name.clone(), chain)
            })
            .collect();
        // Every chain's series (connects, faults by kind, breaker) exist from the start.
        for name in chains.keys() {
            metrics().proxy_chain(name);
        }
        ProxyChains {
            chains,
            router: Router::new(config),
            selector: Selector::new(config.select),
            deadlines: deadlines(config),
            fallback_direct: config.fallback_direct,
            resolver,
            stats: ProxyStats::from_config(config),
            config: config.clone(),
            generation,
            fault_hook: Faults::default(),
            guard: NetGuard::new(true, Vec::new()),
        }
    }

    /// Sets the SSRF guard (the engine's `[security]`; without it only never-dialed addresses are refused); kept
    /// across restarts and reloads.
    pub fn with_guard(mut self, guard: NetGuard) -> ProxyChains {
        self.guard = guard;
        self
    }

    /// Sets the fault-injection hook (tests); kept across restarts.
    pub fn with_faults(mut self, faults: Faults) -> ProxyChains {
        self.fault_hook = faults;
        self
    }

    fn direct(&mut self, mut span: ChildSpan, fallback: bool) -> Result<Opened, ProxyFailure> {
        self.stats.record_direct();
        span.set(Attr::new("proxy.chain", DIRECT));
        span.set(Attr::new("proxy.hops", 0_i64));
        span.set(Attr::new("proxy.result", "direct"));
        span.end();
        Ok(Opened::Direct { fallback })
    }

    /// The chain `name` if it is still the build `generation`.
    fn current(&mut self, name: &str, generation: u64) -> Option<&mut Chain> {
        self.chains
            .get_mut(name)
            .filter(|c| c.generation == generation)
    }

    /// Feeds a chain attempt's result (None = the tunnel opened) into its breakers, counters and metrics.
    fn settle(&mut self, chain: &str, generation: u64, error: Option<&ChainError>) {
        let now = Instant::now();
        let Some(c) = self
            .chains
            .get_mut(chain)
            .filter(|c| c.generation == generation)
        else {
            tracing::debug!(
                chain,
                "proxy chain reconfigured while a connection opened; result not counted"
            );
            return;
        };
        match error {
            None => {
                c.breaker.success(now);
                for b in &mut c.hop_breakers {
                    b.success(now);
                }
                self.stats.record_connect(chain);
                metrics().proxy_connect(chain, true);
            }
            Some(e) if e.is_proxy_fault() => {
                c.faults += 1;
                c.breaker.failure(now);
                let kind = fault_kind(e);
                if let Some(b) = c.hop_breakers.get_mut(e.hop) {
                    b.failure(now);
                    self.stats.record_hop_fault(chain, e.hop, &kind);
                    self.stats
                        .record_hop_breaker(chain, e.hop, b.state(now).as_str());
                }
                self.stats.record_fault(chain, &kind);
                metrics().proxy_connect(chain, false);
                metrics().proxy_fault(chain, &kind);
                tracing::warn!(chain, hop = e.hop, fault = %kind, detail = %e.detail, breaker = c.breaker.state(now).as_str(), "proxy fault");
            }
            Some(_) => {
                // A target fault: the chain itself worked.
                c.breaker.success(now);
                self.stats.record_connect(chain);
                metrics().proxy_connect(chain, true);
            }
        }
        let state = c.breaker.state(now);
        self.stats.record_breaker(chain, state.as_str());
        metrics().proxy_breaker(chain, breaker_open(state));
    }

    /// Applies a new config; see [`Reconfigure`].
    fn reconfigure(&mut self, config: ProxyConfig) {
        self.generation += 1;
        let generation = self.generation;
        let mut old = std::mem::take(&mut self.chains);
        let (mut kept, mut added, mut changed) = (Vec::new(), Vec::new(), Vec::new());
        for (name, c) in &config.chains {
            let hops = hop_specs(c);
            let chain = match old.remove(name) {
                Some(mut prev) if prev.hops == hops => {
                    prev.resolve = c.resolve;
                    prev.breaker
                        .set_policy(config.breaker_failures, config.breaker_cooldown);
                    for b in &mut prev.hop_breakers {
                        b.set_policy(config.breaker_failures, config.breaker_cooldown);
                    }
                    kept.push(name.as_str());
                    prev
                }
                previous => {
                    if previous.is_some() {
                        changed.push(name.as_str());
                    } else {
                        added.push(name.as_str());
                    }
                    metrics().proxy_chain(name);
                    Chain::new(hops, c.resolve, &config, generation)
                }
            };
            self.chains.insert(name.clone(), chain);
        }
        let removed: Vec<&str> = old.keys().map(String::as_str).collect();
        for name in &removed {
            metrics().proxy_breaker(name, false);
        }
        self.stats = std::mem::take(&mut self.stats).reconfigured(&config, &kept);
        self.router = Router::new(&config);
        self.selector = Selector::new(config.select);
        self.deadlines = deadlines(&config);
        self.fallback_direct = config.fallback_direct;
        tracing::info!(
            chains = ?config.chains.keys().collect::<Vec<_>>(),
            kept = ?kept,
            added = ?added,
            changed = ?changed,
            removed = ?removed,
            rules = config.rules.len(),
            default = ?config.default,
            select = ?config.select,
            fallback_direct = config.fallback_direct,
            breaker_failures = config.breaker_failures,
            breaker_cooldown_ms = config.breaker_cooldown.as_millis() as u64,
            chain_timeout_ms = config.chain_timeout.as_millis() as u64,
            "proxy reconfigured"
        );
        self.config = config;
    }
}

impl Actor for ProxyChains {
    type Context = Context<Self>;
}

impl Supervised for ProxyChains {
    fn restarting(&mut self, _ctx: &mut Context<Self>) {
        tracing::warn!("proxy-chain actor restarting");
        metrics().actor_restart("proxy");
        let resolver = self.resolver.take();
        let generation = self.generation + 1;
        let hook = std::mem::take(&mut self.fault_hook);
        let guard = std::mem::take(&mut self.guard);
        *self = ProxyChains::build(&self.config.clone(), resolver, generation)
            .with_faults(hook)
            .with_guard(guard);
    }
}

/// The guard on an address this actor is about to hand to a chain (a debug log when refused).
fn guarded(guard: &NetGuard, host: &str, addr: IpAddr) -> Result<(), NotTried> {
    guard.check(addr).map_err(|refused| {
        tracing::debug!(host, addr = %addr, class = refused.0.as_str(), "guard refused address");
        NotTried::Refused {
            host: host.to_owned(),
            addr,
        }
    })
}

async fn target_for(
    host: String,
    port: u16,
    resolve: ResolveAt,
    resolver: Option<Recipient<Resolve>>,
    trace: TraceCtx,
    guard: &NetGuard,
) -> Result<Target, NotTried> {
    if let Ok(ip) = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    {
        guarded(guard, &host, ip)?;
        return Ok(Target::Addr(SocketAddr::new(ip, port)));
    }
    match (resolve, resolver) {
        (ResolveAt::Local, Some(r)) => match r
            .send(Resolve {
                name: host.clone(),
                trace,
            })
            .await
        {
            Ok(Outcome::Resolved(res)) => {
                // The first address the guard allows; none allowed: refused as the first one.
                match res.addrs.iter().find(|ip| guard.allows(**ip)) {
                    Some(ip) => Ok(Target::Addr(SocketAddr::new(*ip, port))),
                    None => match res.addrs.first() {
                        Some(first) => {
                            Err(guarded(guard, &host, *first).err().unwrap_or_else(|| {
                                NotTried::Unresolved(format!("{host}: no address"))
                            }))
                        }
                        None => Err(NotTried::Unresolved(format!("{host}: no address"))),
                    },
                }
            }
            Ok(other) => Err(NotTried::Unresolved(format!("{host}: {other:?}"))),
            Err(e) => Err(NotTried::Unresolved(format!("resolver unavailable: {e}"))),
        },
        _ => Ok(Target::Name(host, port)),
    }
}

impl Handler<OpenChain> for ProxyChains {
    type Result = ResponseActFuture<Self, Result<Opened, ProxyFailure>>;

    fn handle(&mut self, msg: OpenChain, ctx: &mut Context<Self>) -> Self::Result {
        if !self.fault_hook.is_empty() {
            let (hook, host) = (self.fault_hook.clone(), msg.host.clone());
            if let Err(payload) = std::panic::catch_unwind(move || hook.hit(Stage::Proxy, &host)) {
                let detail = crate::job::panic_text(payload.as_ref());
                tracing::error!(host = %msg.host, detail, "proxy-chain actor panicked; restarting it");
                actix::ActorContext::stop(ctx);
                return Box::pin(actix::fut::ready(Err(ProxyFailure::Panicked { detail })));
            }
        }
        let now = Instant::now();
        let mut span = msg.trace.start("proxy.connect", &[]);
        let candidates = match self.router.candidates(&msg.host) {
            Route::Direct => return Box::pin(actix::fut::ready(self.direct(span, false))),
            Route::Chains(c) => c,
        };
        let picked = {
            let health = Health(&self.chains);
            self.selector
                .pick_excluding(&msg.host, &candidates, &msg.tried, &health, now)
        };
        let name = match picked {
            Some(n) if n == DIRECT => return Box::pin(actix::fut::ready(self.direct(span, false))),
            Some(n) => n,
            None if self.fallback_direct => {
                tracing::warn!(host = %msg.host, "no healthy proxy chain; falling back to direct (fallback_direct = true)");
                return Box::pin(actix::fut::ready(self.direct(span, true)));
            }
            None => {
                let failure = ProxyFailure::NoChain {
                    host: msg.host.clone(),
                    tried: msg.tried.join(","),
                };
                failed(span, "no_chain", &failure.to_string());
                return Box::pin(actix::fut::ready(Err(failure)));
            }
        };
        let Some(chain) = self.chains.get_mut(&name) else {
            let failure = ProxyFailure::NoChain {
                host: msg.host,
                tried: name,
            };
            failed(span, "no_chain", &failure.to_string());
            return Box::pin(actix::fut::ready(Err(failure)));
        };
        span.set(Attr::new("proxy.chain", &name));
        span.set(Attr::new(
            "proxy.hops",
            i64::try_from(chain.hops.len()).unwrap_or(i64::MAX),
        ));
        // Takes the half-open probe slots (chain and hops) when a breaker is half-open.
        chain.breaker.allow(now);
        for b in &mut chain.hop_breakers {
            b.allow(now);
        }
        let hops = chain.hops.clone();
        let resolve = chain.resolve;
        let generation = chain.generation;
        let deadlines = self.deadlines;
        let resolver = self.resolver.clone();
        let guard = self.guard.clone();
        let (host, port, trace) = (msg.host, msg.port, msg.trace);
        let fut = async move {
            let mut hops = hops;
            // The first hop given by name is resolved by the resolver actor like every other name.
            if let (Some(first), Some(r)) = (hops.first_mut(), resolver.as_ref())
                && first.host.parse::<IpAddr>().is_err()
            {
                match r
                    .send(Resolve {
                        name: first.host.clone(),
                        trace,
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
            // The hops are the operator's configuration, not something a crawled page chose: a local Tor or SOCKS
            // daemon on loopback is used as configured. The guard judges the target only.
            let target = target_for(host, port, resolve, resolver, trace, &guard).await?;
            Ok(open_chain(&hops, &target, &deadlines).await)
        };
        Box::pin(fut.into_actor(self).map(move |res, act, _ctx| match res {
            Err(not_tried) => {
                // The chain was never tried (the target name did not resolve, or the guard refused an address):
                // give back any probe slot.
                if let Some(c) = act.current(&name, generation) {
                    let now = Instant::now();
                    c.breaker.cancel_probe(now);
                    for b in &mut c.hop_breakers {
                        b.cancel_probe(now);
                    }
                }
                match not_tried {
                    NotTried::Unresolved(detail) => {
                        failed(span, "target_unresolved", &detail);
                        Err(ProxyFailure::Target {
                            chain: name,
                            detail,
                        })
                    }
                    NotTried::Refused { host, addr } => {
                        let failure = ProxyFailure::Refused { host, addr };
                        failed(span, "private_network", &failure.to_string());
                        Err(failure)
                    }
                }
            }
            Ok(Ok(stream)) => {
                act.settle(&name, generation, None);
                span.set(Attr::new("proxy.result", "ok"));
                span.end();
                Ok(Opened::Chain {
                    chain: name,
                    stream,
                })
            }
            Ok(Err(e)) => {
                act.settle(&name, generation, Some(&e));
                failed(span, &fault_kind(&e), &e.detail);
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

impl Handler<Reconfigure> for ProxyChains {
    type Result = ();

    fn handle(&mut self, msg: Reconfigure, _ctx: &mut Context<Self>) -> Self::Result {
        self.reconfigure(msg.config);
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

#[cfg(test)]
mod tests;

#[cfg(test)]
mod guard_tests;
