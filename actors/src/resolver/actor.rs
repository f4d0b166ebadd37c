//! The resolver actor: one per process, supervised; every host name the engine connects to goes through it.
//!
//! Order: static hosts, then the cache (TTL-clamped, negative caching), then one lookup per name at a time
//! (concurrent requests for a name wait for the same lookup). The detection context (bogus IPs and the addresses
//! learned by the NXDOMAIN-hijack probe) is ready before the first lookup runs. A panic inside a lookup is caught and
//! answered as an unresolved outcome; the actor is then restarted by actix's `Supervisor`, which reuses this value:
//! the settings (the latest [`Reconfigure`]d ones) stay, the lookups in flight and the probe start afresh.
//!
//! Every `Resolve` adds a `dns.resolve` span to the asking URL's trace, from the message to the answer. The
//! summary counters ([`ResolverStats`]) and the Prometheus counters are updated together, in [`Resolver::record`].

use super::cache::DnsCache;
use super::doh::DohClient;
use super::logic::{DetectCtx, Outcome, Resolution, Rule, Source};
use super::lookup::{self, Settings};
use super::messages::{GetResolverStats, Reconfigure, Resolve};
use super::setup::Parts;
use super::stats::ResolverStats;
use crate::faults::{Faults, Stage};
use actix::{
    Actor, ActorContext, ActorFutureExt, AsyncContext, Context, Handler, MessageResult,
    ResponseFuture, Supervised, WrapFuture,
};
use crawl_observability::Attr;
use crawl_observability::metrics::metrics;
use crawl_observability::trace::ChildSpan;
use futures_util::FutureExt;
use futures_util::future::{BoxFuture, Shared};
use std::collections::HashMap;
use std::net::IpAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::oneshot;

type CtxFuture = Shared<BoxFuture<'static, Arc<DetectCtx>>>;

/// Most names the cache holds.
const CACHE_CAPACITY: usize = 100_000;

pub struct Resolver {
    settings: Arc<Settings>,
    base_ctx: DetectCtx,
    doh: Option<Arc<DohClient>>,
    ctx: CtxFuture,
    cache: DnsCache,
    /// Bumped by every [`Reconfigure`]: a lookup started under an older generation answers its waiters but is
    /// not cached, and requests arriving after the reload do not join it.
    generation: u64,
    /// Waiters by (generation, name) of the lookup they wait for.
    inflight: HashMap<(u64, String), Vec<oneshot::Sender<Outcome>>>,
    stats: ResolverStats,
    /// Fault injection (tests): panic or freeze on a name.
    faults: Faults,
    /// Shared with the fetchers' copies of its answers ([`super::local`]).
    local: Arc<super::local::Shared>,
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

fn new_cache(s: &Settings) -> DnsCache {
    DnsCache::new(CACHE_CAPACITY, s.min_ttl, s.max_ttl, s.negative_ttl)
}

/// RFC 6761: `localhost` and names under it are loopback, answered without any query.
pub fn is_localhost(name: &str) -> bool {
    name == "localhost" || name.ends_with(".localhost")
}

/// Lowercase, without a trailing dot.
pub fn normalize(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// The `source` and `outcome` labels of an answer, shared by the summary counters, the metric and the span.
/// `cached` marks a negative answer taken from the cache (a resolved one already carries source `cache`).
pub fn labels(outcome: &Outcome, cached: bool) -> (&'static str, &'static str) {
    let negative = if cached { "cache" } else { "lookup" };
    match outcome {
        Outcome::Resolved(r) => (r.source.as_str(), "resolved"),
        Outcome::NxDomain { .. } => (negative, "nxdomain"),
        Outcome::Unresolved { .. } => (negative, "failed"),
    }
}

/// Whether an answer counts as polluted (an NXDOMAIN with rules is a hijack), and the rules that fired.
fn verdict(outcome: &Outcome) -> (bool, &[Rule]) {
    match outcome {
        Outcome::Resolved(r) => (r.polluted, r.rules.as_slice()),
        Outcome::NxDomain { rules } => (!rules.is_empty(), rules.as_slice()),
        Outcome::Unresolved {
            polluted, rules, ..
        } => (*polluted, rules.as_slice()),
    }
}

/// The rules of a polluted answer that is to be counted: one that came over the network now, not one the cache
/// serves again (its verdict was counted when it was asked).
pub(super) fn new_verdict(outcome: &Outcome, cached: bool) -> Option<&[Rule]> {
    let (polluted, rules) = verdict(outcome);
    let network = !cached && !matches!(outcome, Outcome::Resolved(r) if r.source == Source::Cache);
    (polluted && network).then_some(rules)
}

/// `items` written one after another into one string, comma-separated (not each into a string of its own first).
fn join<T: std::fmt::Display>(items: &[T]) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(16 * items.len());
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        // Writing into a String cannot fail.
        let _ = write!(out, "{item}");
    }
    out
}

/// Ends a `dns.resolve` span with the answer's attributes (error status when no answer was found); `dns.source`
/// tells an answer from `resolver.hosts` or a cache (which took no time and asked no one) from a lookup.
fn end_span(mut span: ChildSpan, outcome: &Outcome, cached: bool) {
    if !span.is_recording() {
        return;
    }
    let (source, what) = labels(outcome, cached);
    let (polluted, rules) = verdict(outcome);
    span.set(Attr::new("dns.source", source));
    span.set(Attr::new("dns.outcome", what));
    span.set(Attr::new("dns.polluted", polluted));
    if !rules.is_empty() {
        span.set(Attr::new("dns.rules", &join(rules)));
    }
    let addrs = outcome.addrs();
    if !addrs.is_empty() {
        span.set(Attr::new("dns.addresses", &join(addrs)));
    }
    if let Outcome::Unresolved { detail, .. } = outcome {
        span.set_error(detail);
    }
    span.end();
}

impl Resolver {
    pub fn new(settings: Settings, ctx: DetectCtx, doh: Option<DohClient>) -> Resolver {
        let settings = Arc::new(settings);
        Resolver {
            ctx: probe_ctx(settings.clone(), ctx.clone()),
            cache: new_cache(&settings),
            base_ctx: ctx,
            settings,
            doh: doh.map(Arc::new),
            generation: 0,
            inflight: HashMap::new(),
            stats: ResolverStats::default(),
            faults: Faults::default(),
            local: super::local::Shared::new(),
        }
    }

    /// Shares this resolver's generation and counters with the fetchers' copies of its answers.
    pub fn with_local(mut self, local: Arc<super::local::Shared>) -> Resolver {
        self.local = local;
        self
    }

    /// Sets the fault-injection hook (tests); kept across restarts.
    pub fn with_faults(mut self, faults: Faults) -> Resolver {
        self.faults = faults;
        self
    }

    /// Counts one answer in the summary counters and the metrics alike. A pollution verdict is counted when its
    /// answer came over the network, once: a verdict served again from the cache is not, so polluted answers
    /// never outnumber network lookups.
    fn record(&mut self, outcome: &Outcome, cached: bool) {
        let (source, what) = labels(outcome, cached);
        self.stats.lookup(source, what);
        metrics().dns_lookup(source, what);
        if let Some(rules) = new_verdict(outcome, cached) {
            self.stats.polluted += 1;
            for rule in rules {
                *self
                    .stats
                    .verdicts
                    .entry(rule.as_str().to_owned())
                    .or_insert(0) += 1;
            }
            metrics().dns_polluted(rules.iter().map(|r| r.as_str()));
        }
    }

    /// Swaps in new parts: the next lookup uses them, the cache starts empty, the hijack probe runs again.
    fn apply(&mut self, parts: Parts) {
        let settings = Arc::new(parts.settings);
        self.generation = self.generation.wrapping_add(1);
        self.local.invalidate();
        self.ctx = probe_ctx(settings.clone(), parts.ctx.clone());
        self.cache = new_cache(&settings);
        self.base_ctx = parts.ctx;
        self.doh = parts.doh.map(Arc::new);
        self.settings = settings;
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
        metrics().actor_restart("resolver");
        self.inflight.clear();
        self.ctx = probe_ctx(self.settings.clone(), self.base_ctx.clone());
    }
}

impl Handler<Resolve> for Resolver {
    type Result = ResponseFuture<Outcome>;

    fn handle(&mut self, msg: Resolve, ctx: &mut Context<Self>) -> Self::Result {
        if !self.faults.is_empty() {
            let (faults, name) = (self.faults.clone(), msg.name.clone());
            if let Err(payload) =
                std::panic::catch_unwind(move || faults.hit(Stage::Resolver, &name))
            {
                let detail = crate::job::panic_text(payload.as_ref());
                tracing::error!(name = %msg.name, detail, "resolver panicked; restarting the resolver");
                ctx.stop();
                let outcome = Outcome::Unresolved {
                    polluted: false,
                    rules: Vec::new(),
                    detail: format!("resolver panicked: {detail}"),
                };
                return Box::pin(async move { outcome });
            }
        }
        let name = normalize(&msg.name);
        let span = msg
            .trace
            .start("dns.resolve", &[Attr::new("dns.name", &name)]);
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
            self.record(&outcome, false);
            end_span(span, &outcome, false);
            return Box::pin(async move { outcome });
        }
        let now = Instant::now();
        // The cache marks resolved answers with source Cache and their remaining TTL.
        if let Some(cached) = self.cache.get(&name, now) {
            self.record(&cached, true);
            end_span(span, &cached, true);
            return Box::pin(async move { cached });
        }
        let (tx, rx) = oneshot::channel();
        let key = (self.generation, name);
        let first = !self.inflight.contains_key(&key);
        self.inflight.entry(key.clone()).or_default().push(tx);
        if first {
            let settings = self.settings.clone();
            let doh = self.doh.clone();
            let ctx_fut = self.ctx.clone();
            let lookup_name = key.1.clone();
            let fut = AssertUnwindSafe(async move {
                let dctx = ctx_fut.await;
                let hijack = dctx.hijack.len() as u64;
                let (outcome, sent) =
                    lookup::lookup(&settings, &dctx, doh.as_deref(), &lookup_name).await;
                (outcome, sent, hijack)
            })
            .catch_unwind();
            ctx.spawn(fut.into_actor(self).map(move |res, act, ctx| {
                let (generation, name) = &key;
                let current = *generation == act.generation;
                let (outcome, panicked) = match res {
                    Ok((outcome, sent, hijack)) => {
                        if current {
                            act.stats.hijack_addresses = hijack;
                        }
                        act.stats.plain_queries += sent.plain();
                        act.stats.doh_queries += sent.doh();
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
                log_verdict(name, &outcome);
                act.record(&outcome, false);
                let ttl = match &outcome {
                    Outcome::Resolved(r) => r.ttl,
                    _ => act.settings.negative_ttl,
                };
                // An answer found with the settings of before a reload is not cached under the new ones.
                if !panicked && current {
                    act.cache.put(name, outcome.clone(), ttl, Instant::now());
                }
                for waiter in act.inflight.remove(&key).unwrap_or_default() {
                    let _ = waiter.send(outcome.clone());
                }
                if panicked {
                    tracing::error!(
                        name = %key.1,
                        "resolver lookup panicked; restarting the resolver"
                    );
                    ctx.stop();
                }
            }));
        }
        Box::pin(async move {
            let outcome = rx.await.unwrap_or_else(|_| Outcome::Unresolved {
                polluted: false,
                rules: Vec::new(),
                detail: "resolver restarted during the lookup".into(),
            });
            end_span(span, &outcome, false);
            outcome
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
        let mut stats = self.stats.clone();
        self.local.add_hits(&mut stats);
        MessageResult(stats)
    }
}

impl Handler<Reconfigure> for Resolver {
    type Result = ();

    fn handle(&mut self, msg: Reconfigure, _ctx: &mut Context<Self>) -> Self::Result {
        let running = self.inflight.len();
        self.apply(msg.parts);
        let s = &self.settings;
        tracing::info!(
            mode = ?s.mode,
            nameservers = ?s.nameservers,
            hosts = s.hosts.len(),
            bogus_entries = self.base_ctx.bogus.len(),
            doh = ?self.doh.as_deref().map(DohClient::endpoint_labels).unwrap_or_default(),
            timeout_ms = s.timeout.as_millis() as u64,
            hold_on_ms = s.hold_on.as_millis() as u64,
            attempts = s.attempts,
            min_ttl_s = s.min_ttl.as_secs(),
            max_ttl_s = s.max_ttl.as_secs(),
            negative_ttl_s = s.negative_ttl.as_secs(),
            hijack_probe = s.hijack_probe,
            lookups_running = running,
            "resolver reconfigured"
        );
    }
}

#[cfg(test)]
mod tests;
