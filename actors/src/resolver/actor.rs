//! The resolver actor: one per process, supervised; every host name the engine connects to goes through it.
//!
//! Order: static hosts, then the cache (TTL-clamped, negative caching), then one lookup per name at a time
//! (concurrent requests for a name wait for the same lookup). The detection context (bogus IPs and the addresses
//! learned by the NXDOMAIN-hijack probe) is ready before the first lookup runs. A panic inside a lookup is caught and
//! answered as an unresolved outcome; the actor is then restarted by actix's `Supervisor` with a fresh state.

use super::cache::DnsCache;
use super::doh::DohClient;
use super::logic::{DetectCtx, Outcome, Resolution, Source};
use super::lookup::{self, Settings};
use super::messages::{GetResolverStats, Resolve};
use super::stats::ResolverStats;
use actix::{
    Actor, ActorContext, ActorFutureExt, AsyncContext, Context, Handler, MessageResult,
    ResponseFuture, Supervised, WrapFuture,
};
use futures_util::FutureExt;
use futures_util::future::{BoxFuture, Shared};
use std::collections::HashMap;
use std::net::IpAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::oneshot;

type CtxFuture = Shared<BoxFuture<'static, Arc<DetectCtx>>>;

pub struct Resolver {
    settings: Arc<Settings>,
    base_ctx: DetectCtx,
    doh: Option<Arc<DohClient>>,
    ctx: CtxFuture,
    cache: DnsCache,
    inflight: HashMap<String, Vec<oneshot::Sender<Outcome>>>,
    stats: ResolverStats,
}

fn probe_ctx(settings: Arc<Settings>, base: DetectCtx) -> CtxFuture {
    async move {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0x5eed);
        let found = lookup::probe_hijack(&settings, seed).await;
        let mut ctx = base;
        ctx.hijack.extend(found);
        Arc::new(ctx)
    }
    .boxed()
    .shared()
}

/// RFC 6761: `localhost` and names under it are loopback, answered without any query.
pub fn is_localhost(name: &str) -> bool {
    name == "localhost" || name.ends_with(".localhost")
}

/// Lowercase, without a trailing dot.
pub fn normalize(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

impl Resolver {
    pub fn new(settings: Settings, ctx: DetectCtx, doh: Option<DohClient>) -> Resolver {
        let settings = Arc::new(settings);
        let cache = DnsCache::new(
            100_000,
            settings.min_ttl,
            settings.max_ttl,
            settings.negative_ttl,
        );
        Resolver {
            ctx: probe_ctx(settings.clone(), ctx.clone()),
            base_ctx: ctx,
            settings,
            doh: doh.map(Arc::new),
            cache,
            inflight: HashMap::new(),
            stats: ResolverStats::default(),
        }
    }

    fn record(&mut self, outcome: &Outcome) {
        let (source, what) = match outcome {
            Outcome::Resolved(r) => (r.source.as_str(), "resolved"),
            Outcome::NxDomain { .. } => ("lookup", "nxdomain"),
            Outcome::Unresolved { .. } => ("lookup", "unresolved"),
        };
        self.stats.lookup(source, what);
        let (polluted, rules) = match outcome {
            Outcome::Resolved(r) => (r.polluted, r.rules.as_slice()),
            Outcome::NxDomain { rules } => (!rules.is_empty(), rules.as_slice()),
            Outcome::Unresolved {
                polluted, rules, ..
            } => (*polluted, rules.as_slice()),
        };
        if polluted {
            for rule in rules {
                *self
                    .stats
                    .verdicts
                    .entry(rule.as_str().to_owned())
                    .or_insert(0) += 1;
            }
        }
    }
}

impl Actor for Resolver {
    type Context = Context<Self>;

    fn started(&mut self, _ctx: &mut Context<Self>) {
        // The hijack probe runs with the first lookup that needs DNS, not here: a crawl of IP-literal hosts sends
        // no DNS query at all.
    }
}

impl Supervised for Resolver {
    fn restarting(&mut self, _ctx: &mut Context<Self>) {
        tracing::warn!("resolver restarting");
        self.inflight.clear();
        self.ctx = probe_ctx(self.settings.clone(), self.base_ctx.clone());
    }
}

impl Handler<Resolve> for Resolver {
    type Result = ResponseFuture<Outcome>;

    fn handle(&mut self, msg: Resolve, ctx: &mut Context<Self>) -> Self::Result {
        let name = normalize(&msg.name);
        let builtin = is_localhost(&name).then(|| {
            vec![
                IpAddr::from([127, 0, 0, 1]),
                IpAddr::from([0u16, 0, 0, 0, 0, 0, 0, 1]),
            ]
        });
        if let Some(addrs) = self.settings.hosts.get(&name).cloned().or(builtin) {
            let outcome = Outcome::Resolved(Resolution {
                addrs,
                source: Source::Hosts,
                polluted: false,
                rules: Vec::new(),
                ttl: self.settings.max_ttl,
            });
            self.stats.lookup("hosts", "resolved");
            return Box::pin(async move { outcome });
        }
        let now = Instant::now();
        // The cache marks resolved answers with source Cache and their remaining TTL.
        if let Some(cached) = self.cache.get(&name, now) {
            self.record(&cached);
            return Box::pin(async move { cached });
        }
        let (tx, rx) = oneshot::channel();
        let first = !self.inflight.contains_key(&name);
        self.inflight.entry(name.clone()).or_default().push(tx);
        if first {
            let settings = self.settings.clone();
            let doh = self.doh.clone();
            let ctx_fut = self.ctx.clone();
            let lookup_name = name.clone();
            let fut = AssertUnwindSafe(async move {
                let dctx = ctx_fut.await;
                let hijack = dctx.hijack.len() as u64;
                let (outcome, sent) =
                    lookup::lookup(&settings, &dctx, doh.as_deref(), &lookup_name).await;
                (outcome, sent, hijack)
            })
            .catch_unwind();
            ctx.spawn(fut.into_actor(self).map(move |res, act, ctx| {
                let (outcome, panicked) = match res {
                    Ok((outcome, sent, hijack)) => {
                        act.stats.hijack_addresses = hijack;
                        act.stats.plain_queries += sent.plain;
                        act.stats.doh_queries += sent.doh;
                        (outcome, false)
                    }
                    Err(_) => (
                        Outcome::Unresolved {
                            polluted: false,
                            rules: Vec::new(),
                            detail: "resolver panicked".into(),
                        },
                        true,
                    ),
                };
                log_verdict(&name, &outcome);
                act.record(&outcome);
                let ttl = match &outcome {
                    Outcome::Resolved(r) => r.ttl,
                    _ => act.settings.negative_ttl,
                };
                if !panicked {
                    act.cache.put(&name, outcome.clone(), ttl, Instant::now());
                }
                for waiter in act.inflight.remove(&name).unwrap_or_default() {
                    let _ = waiter.send(outcome.clone());
                }
                if panicked {
                    tracing::error!(name, "resolver lookup panicked; restarting the resolver");
                    ctx.stop();
                }
            }));
        }
        Box::pin(async move {
            rx.await.unwrap_or_else(|_| Outcome::Unresolved {
                polluted: false,
                rules: Vec::new(),
                detail: "resolver restarted during the lookup".into(),
            })
        })
    }
}

fn log_verdict(name: &str, outcome: &Outcome) {
    match outcome {
        Outcome::Resolved(r) if r.polluted => tracing::warn!(
            name,
            rules = ?r.rules.iter().map(|x| x.as_str()).collect::<Vec<_>>(),
            source = r.source.as_str(),
            addresses = ?r.addrs,
            "dns answer polluted; using the clean answer"
        ),
        Outcome::Unresolved {
            polluted: true,
            rules,
            detail,
        } => tracing::warn!(
            name,
            rules = ?rules.iter().map(|x| x.as_str()).collect::<Vec<_>>(),
            detail,
            "dns answer polluted and no clean answer found"
        ),
        Outcome::NxDomain { rules } if !rules.is_empty() => tracing::warn!(
            name,
            rules = ?rules.iter().map(|x| x.as_str()).collect::<Vec<_>>(),
            "dns answer was an nxdomain hijack"
        ),
        _ => {}
    }
}

impl Handler<GetResolverStats> for Resolver {
    type Result = MessageResult<GetResolverStats>;

    fn handle(&mut self, _msg: GetResolverStats, _ctx: &mut Context<Self>) -> Self::Result {
        MessageResult(self.stats.clone())
    }
}
