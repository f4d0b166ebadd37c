//! Builds the actor tree from a validated config: recovers the frontier, repairs and catches up the JSONL, then
//! starts the sink, the scheduler, the parsers, the fetchers and the root supervisor that watches them.
//!
//! ```text
//! Supervisor ─┬─ Scheduler (frontier, robots, politeness)       system arbiter
//!             ├─ Fetcher × N                                      one arbiter thread each
//!             ├─ Parser × M                                       one SyncArbiter thread each
//!             └─ Sink (JSONL)                                     its own arbiter thread
//! ```

use crate::fatal::{FatalReceiver, FatalSender};
use crate::faults::Faults;
use crate::fetcher::http::{HttpClient, HttpSettings, NameLookup};
use crate::parser::Parser;
use crate::parser::logic::ParseSettings;
use crate::parser::pool::{ParserFactory, ParserPool};
pub use crate::reconfigure::{Prepared, Reconfigurer};
use crate::resolver::logic::Outcome;
use crate::resolver::messages::Resolve;
use crate::scheduler::Scheduler;
use crate::scheduler::crawl::{Crawl, CrawlSettings};
use crate::sink::Sink;
use crate::sink::actor::write_lines;
use crate::store::StoreActor;
use crate::supervisor::error::TreeError;
use crate::supervisor::{CrawlSummary, FetcherFactory, RestartPolicy, Supervisor};
use actix::{Actor, Addr, Arbiter, AsyncContext, Context, SyncArbiter};
use crawl_core::config::{Config, FrontierBackend};
use crawl_core::frontier::{FrontierError, FrontierStore, Resume};
use crawl_core::politeness::{HostQueues, PolitenessPolicy};
use crawl_core::scope::ScopePolicy;
use crawl_core::traps::{TrapRules, current_year};
use crawl_output::jsonl::JsonlWriter;
use crawl_store_embedded::{DirLock, EmbeddedFrontier, process_id};
use crawl_store_redis::{RedisFrontier, RedisSettings};
use std::sync::Arc;
use std::time::Instant;

/// A running tree.
pub struct Tree {
    pub supervisor: Addr<Supervisor>,
    pub scheduler: Addr<Scheduler>,
    pub resolver: Addr<crate::resolver::Resolver>,
    /// The proxy-chain actor, when chains are configured.
    pub proxy: Option<Addr<crate::proxy::actor::ProxyChains>>,
    /// Applies config reloads to the running actors.
    pub reconfigurer: Reconfigurer,
    /// Resolves when the crawl ends.
    pub done: tokio::sync::oneshot::Receiver<CrawlSummary>,
    /// Causes that end the process (a panic in the scheduler, the sink or the frontier store); wait on it
    /// alongside `done`.
    pub fatal: FatalReceiver,
    fatal_tx: FatalSender,
    /// The parser slots.
    pub parsers: ParserPool,
    /// What recovery found.
    pub recovery: RecoveryReport,
    pub stopper: TreeStopper,
}

impl Tree {
    /// A sender of causes that end the process, for actors that own a [`crate::fatal::PanicGuard`].
    pub fn fatal_sender(&self) -> FatalSender {
        self.fatal_tx.clone()
    }
}

/// Stops the tree's arbiter threads (after the crawl ended).
pub struct TreeStopper {
    arbiters: Vec<Arbiter>,
}

impl TreeStopper {
    pub fn stop(self) {
        for a in self.arbiters {
            a.stop();
        }
    }
}

/// What startup recovery did.
#[derive(Debug, Clone, Default)]
pub struct RecoveryReport {
    pub fresh: bool,
    pub pending: u64,
    pub known: u64,
    pub jsonl_lines: u64,
    pub repaired_bytes: u64,
    pub rewritten: u64,
}

fn workers(configured: u32) -> usize {
    if configured > 0 {
        configured as usize
    } else {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
    }
}

/// Settings of the HTTP client, from the config.
pub fn http_settings(config: &Config) -> HttpSettings {
    HttpSettings {
        user_agent: config.crawl.user_agent.clone(),
        connect_timeout: config.fetch.connect_timeout,
        header_timeout: config.fetch.header_timeout,
        idle_timeout: config.fetch.idle_timeout,
        total_timeout: config.fetch.request_timeout,
        max_body_bytes: config.fetch.max_body_bytes,
        http2: config.fetch.http2,
        allow_private_networks: config.security.allow_private_networks,
        allow_cidrs: config.security.allow_cidrs.clone(),
        attempt_delay: crate::fetcher::dial::ATTEMPT_DELAY,
        pool_idle_timeout: config.fetch.pool_idle_timeout,
        // Every request a host may have in flight can leave its connection for the next one: a smaller idle limit
        // closes the surplus after each burst and opens it again (a TCP handshake per few pages). 0 keeps none.
        pool_max_idle_per_host: match config.fetch.pool_max_idle_per_host {
            0 => 0,
            n => n.max(config.politeness.per_host_concurrency as usize),
        },
        extra_roots: Vec::new(),
        keep_request_headers: config.output.warc_dir.is_some(),
        lookup: None,
        proxy: None,
        credentials: config.fetch.credentials.clone(),
    }
}

/// The frontier store the config names, recovered, and the JSONL opened where the store says it stands (the
/// records it lacks are written by the caller).
fn open_frontier(
    config: &Config,
    lock: Option<DirLock>,
) -> Result<(Box<dyn FrontierStore>, Resume, JsonlWriter), TreeError> {
    let dir = &config.frontier.data_dir;
    let lock = match lock {
        Some(l) => l,
        None => DirLock::acquire(dir).map_err(FrontierError::from)?,
    };
    match config.frontier.backend {
        FrontierBackend::Embedded => {
            let mut store = EmbeddedFrontier::open_locked(dir, lock)?;
            let mut recovered = store.recover()?;
            // Only the JSONL's tail beyond the last checkpoint is read; a fresh frontier reads the file whole.
            let writer = JsonlWriter::open_at(&config.output.jsonl, recovered.checkpoint)?;
            if recovered.fresh {
                store.set_next_record(writer.lines() + 1);
                recovered.next_record = writer.lines() + 1;
            }
            Ok((Box::new(store), recovered, writer))
        }
        FrontierBackend::Redis => {
            // This process's lock and identity are in data_dir; the frontier is in Redis.
            let pid = process_id(dir).map_err(FrontierError::from)?;
            let r = &config.frontier.redis;
            let settings = RedisSettings {
                urls: r.urls.iter().map(|u| u.expose().to_owned()).collect(),
                cluster: r.cluster,
                crawl: r.crawl.clone(),
                shards: r.shards,
                lease_ms: u64::try_from(r.lease.as_millis()).unwrap_or(u64::MAX),
                max_outage_ms: u64::try_from(r.max_outage.as_millis()).unwrap_or(u64::MAX),
                recrawl_after_s: r.recrawl_after.as_secs(),
                spool: Some(dir.join("spool")),
            };
            let mut store = RedisFrontier::open(settings, &pid)?.with_lock(lock);
            let checkpoint = store.checkpoint()?;
            let writer = JsonlWriter::open_at(&config.output.jsonl, checkpoint)?;
            store.set_jsonl_lines(writer.lines());
            let recovered = store.recover()?;
            Ok((Box::new(store), recovered, writer))
        }
    }
}

/// Starts the tree. Must run inside an actix `System`.
pub fn start(config: &Config, faults: Faults, http: HttpSettings) -> Result<Tree, TreeError> {
    start_locked(config, faults, http, None)
}

/// [`start`] with the data_dir's lock already taken by the caller (None: taken here).
pub fn start_locked(
    config: &Config,
    faults: Faults,
    http: HttpSettings,
    lock: Option<DirLock>,
) -> Result<Tree, TreeError> {
    let now = Instant::now();
    let (store, mut recovered, mut writer) = open_frontier(config, lock)?;
    let mut report = RecoveryReport {
        fresh: recovered.fresh,
        pending: recovered.counters.pending,
        known: recovered.counters.known,
        jsonl_lines: writer.lines(),
        repaired_bytes: writer.repaired_bytes(),
        rewritten: 0,
    };
    // Records committed before a crash but not in the file yet: write them now, exactly once.
    let outbox = std::mem::take(&mut recovered.outbox);
    let before = writer.lines();
    let jsonl = write_lines(&mut writer, &outbox).map_err(|e| {
        FrontierError::Store(format!(
            "{e}; the output file {} does not match the frontier in {} (was it truncated or replaced?)",
            config.output.jsonl.display(),
            config.frontier.data_dir.display()
        ))
    })?;
    report.rewritten = writer.lines() - before;
    if report.repaired_bytes > 0 || report.rewritten > 0 || !recovered.fresh {
        tracing::info!(
            pending = report.pending,
            known = report.known,
            jsonl_lines = report.jsonl_lines,
            repaired_bytes = report.repaired_bytes,
            rewritten = report.rewritten,
            "resuming crawl"
        );
    }

    let archive =
        crate::store::archive::Archive::open(config, recovered.archive_checkpoint.as_deref())?;
    let scope = scope_policy(config);
    let policy = politeness_policy(config);
    let settings = CrawlSettings {
        max_pages: config.crawl.max_pages,
        concurrency: config.fetch.concurrency as usize,
        respect_robots: config.crawl.respect_robots,
        robots_cache: config.crawl.robots_cache,
        robots_retry: config.crawl.robots_retry,
        robots_max_attempts: config.crawl.robots_max_attempts,
        follow_sitemaps: config.crawl.follow_sitemaps,
        sitemap_max_depth: config.crawl.sitemap_max_depth,
        max_retries: config.fetch.max_retries,
        retry_base: config.fetch.retry_base,
        max_attempts: config.supervisor.max_attempts,
        max_redirects: config.fetch.max_redirects,
        commit_max_ops: config.frontier.commit_max_ops,
        lease_timeout: config.fetch.request_timeout + config.supervisor.parse_budget,
        window: config.frontier.host_window,
    };
    let mut crawl = Crawl::new(
        settings,
        scope.clone(),
        HostQueues::new(policy).with_window(config.frontier.host_window),
        recovered,
        jsonl,
        now,
    );
    if let Some(gate) = store.shard_gate() {
        crawl = crawl.with_shards(gate);
        if config.frontier.backend == FrontierBackend::Redis
            && !config.frontier.redis.recrawl_after.is_zero()
        {
            crawl = crawl.with_recrawl();
        }
    }
    for seed in &config.crawl.seeds {
        crawl.add_seed(seed);
    }
    // The store moves to a thread of its own: commits and reads never block the scheduler. A panic there ends
    // the process (everything committed stays); the same command resumes.
    let (fatal_tx, fatal_rx) = crate::fatal::channel();
    let store_cell = std::sync::Mutex::new(Some((store, archive)));
    let (store_faults, store_fatal) = (faults.clone(), fatal_tx.clone());
    let store_addr = SyncArbiter::start(1, move || {
        let s = store_cell.lock().ok().and_then(|mut g| g.take());
        let guard = store_fatal.guard("store");
        match s {
            Some((s, archive)) => {
                StoreActor::new(s, store_faults.clone(), guard).with_archive(archive)
            }
            None => StoreActor::closed(guard),
        }
    });

    // The resolver: one supervised actor on its own thread; fetchers and their connectors ask it.
    let resolver_arbiter = Arbiter::new();
    let resolver_parts = crate::resolver::setup::build(config)?;
    let resolver_bogus = resolver_parts.ctx.bogus.clone();
    let resolver_faults = faults.clone();
    // What the resolver shares with the fetchers' copies of its answers.
    let copies = crate::resolver::local::Shared::new();
    let copies_r = copies.clone();
    let resolver = actix::Supervisor::start_in_arbiter(&resolver_arbiter.handle(), move |_| {
        crate::resolver::Resolver::new(
            resolver_parts.settings,
            resolver_parts.ctx,
            resolver_parts.doh,
        )
        .with_faults(resolver_faults)
        .with_local(copies.clone())
    });
    let resolve_r: actix::Recipient<Resolve> = resolver.clone().recipient();
    let mut http = http;
    let lookup_r = resolve_r.clone();
    http.lookup = Some(NameLookup(Arc::new(move |name: String| {
        let r = lookup_r.clone();
        Box::pin(async move {
            match r
                .send(Resolve {
                    name,
                    // The fetcher resolved the name just before (its trace has the dns.resolve span); this
                    // lookup of the connector is a cache hit and adds no span.
                    trace: crawl_observability::trace::TraceCtx::default(),
                })
                .await
            {
                Ok(Outcome::Resolved(res)) => Ok(res.addrs),
                Ok(Outcome::NxDomain { .. }) => Err("nxdomain".to_owned()),
                Ok(Outcome::Unresolved { detail, .. }) => Err(detail),
                Err(e) => Err(format!("resolver unavailable: {e}")),
            }
        })
    })));

    // The proxy-chain actor, when chains are configured: every proxied connection goes through it.
    let mut proxy_addr = None;
    if config.proxy.enabled() {
        let pcfg = config.proxy.clone();
        let presolver = resolve_r.clone();
        let proxy_faults = faults.clone();
        let proxy_guard = config.security.guard();
        let proxy = actix::Supervisor::start_in_arbiter(&resolver_arbiter.handle(), move |_| {
            crate::proxy::actor::ProxyChains::new(&pcfg, Some(presolver))
                .with_faults(proxy_faults)
                .with_guard(proxy_guard.clone())
        });
        http.proxy = Some(crate::fetcher::http::ProxyHandle(proxy.clone().recipient()));
        proxy_addr = Some(proxy);
    }

    let n_fetchers = workers(config.fetch.fetchers);
    let mut clients = Vec::with_capacity(n_fetchers);
    for _ in 0..n_fetchers {
        clients.push(HttpClient::new(http.clone()).map_err(|e| TreeError::Http(e.to_string()))?);
    }
    let parse_settings = crate::live::Live::new(parse_settings(config, scope));
    let live_parse = parse_settings.clone();
    let live_clients = clients.clone();
    let restart = RestartPolicy {
        backoff_base: config.supervisor.backoff_base,
        backoff_max: config.supervisor.backoff_max,
        max_restarts: config.supervisor.max_restarts,
        window: config.supervisor.restart_window,
    };
    let parser_threads = workers(config.parser.threads);
    let commit_interval = config.frontier.commit_interval;

    let arbiters: Vec<Arbiter> = (0..n_fetchers).map(|_| Arbiter::new()).collect();
    let sink_arbiter = Arbiter::new();
    let (sink_faults, sink_guard) = (faults.clone(), fatal_tx.guard("sink"));
    let sink = Sink::start_in_arbiter(&sink_arbiter.handle(), move |_| {
        Sink::new(writer, sink_faults, sink_guard)
    });
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    let handles = arbiters.iter().map(|a| a.handle()).collect::<Vec<_>>();

    // Both contexts exist before either actor runs, so each side can hold the other's address.
    let sup_ctx = Context::<Supervisor>::new();
    let sup = sup_ctx.address();
    let sched_ctx = Context::<Scheduler>::new();
    let me = sched_ctx.address();
    let pool_restarts = Arc::new(crate::parser::actor::PoolRestarts::new(
        config.supervisor.backoff_base,
        config.supervisor.backoff_max,
    ));
    let faults_sched = faults.clone();
    let (ps, pf, sched_r, sup_r) = (
        parse_settings,
        faults.clone(),
        me.clone().recipient(),
        sup.clone().recipient(),
    );
    let parser_factory: ParserFactory = Arc::new(move |busy| {
        Parser::new(
            ps.clone(),
            sched_r.clone(),
            sup_r.clone(),
            pf.clone(),
            pool_restarts.clone(),
            busy,
        )
    });
    let parsers = ParserPool::start(parser_threads, parser_factory);
    let (parser_r, sched_r) = (parsers.clone(), me.clone().recipient());
    let factory: FetcherFactory = Arc::new(move |i, sup_r| {
        crate::fetcher::Fetcher::new(
            i,
            clients[i % clients.len()].clone(),
            parser_r.clone(),
            sched_r.clone(),
            sup_r,
            faults.clone(),
            Some((resolve_r.clone(), copies_r.clone())),
        )
    });
    let mut supervisor = Supervisor::new(restart, handles, factory, done_tx);
    supervisor.set_scheduler(me.clone());
    supervisor.set_parsers(parsers.clone());
    let fetchers: Vec<_> = (0..n_fetchers)
        .filter_map(|i| supervisor.start_fetcher(i, sup.clone().recipient()))
        .collect();
    sched_ctx.run(
        Scheduler::new(
            crawl,
            fetchers,
            crate::scheduler::actor::Durable {
                sink,
                store: store_addr,
            },
            sup.clone().recipient(),
            commit_interval,
            faults_sched,
            fatal_tx.guard("scheduler"),
        )
        .with_lease_expired(sup.clone().recipient()),
    );
    sup_ctx.run(supervisor);
    let mut arbiters = arbiters;
    arbiters.push(sink_arbiter);
    arbiters.push(resolver_arbiter);
    let reconfigurer = Reconfigurer::new(
        me.clone(),
        resolver.clone(),
        proxy_addr.clone(),
        live_parse,
        live_clients,
        resolver_bogus,
    );
    Ok(Tree {
        supervisor: sup,
        scheduler: me,
        resolver,
        proxy: proxy_addr,
        reconfigurer,
        done: done_rx,
        fatal: fatal_rx,
        fatal_tx,
        parsers,
        recovery: report,
        stopper: TreeStopper { arbiters },
    })
}

/// The scope of a config, with its trap rules (calendar windows around the current year).
pub fn scope_policy(config: &Config) -> Arc<ScopePolicy> {
    Arc::new(
        ScopePolicy::new(
            config.crawl.scope,
            &config.crawl.seeds,
            config.crawl.include.clone(),
            config.crawl.exclude.clone(),
            config.crawl.max_depth,
        )
        .with_traps(TrapRules::new(&config.traps, current_year())),
    )
}

/// The politeness policy of a config.
pub fn politeness_policy(config: &Config) -> PolitenessPolicy {
    PolitenessPolicy {
        per_host_concurrency: config.politeness.per_host_concurrency,
        min_delay: config.politeness.min_delay,
        honour_crawl_delay: config.politeness.honour_crawl_delay,
        max_crawl_delay: config.politeness.max_crawl_delay,
        backoff_base: config.politeness.backoff_base,
        backoff_max: config.politeness.backoff_max,
    }
}

/// The scope of page requisites (`crawl.embeds_scope`), or `None` when they are not fetched. The crawl's exclude
/// patterns apply to them too; its include patterns, which say which pages to crawl, do not.
pub fn embeds_policy(config: &Config) -> Option<Arc<ScopePolicy>> {
    config.crawl.embeds.then(|| {
        Arc::new(ScopePolicy::new(
            config.crawl.embeds_scope,
            &config.crawl.seeds,
            Vec::new(),
            config.crawl.exclude.clone(),
            config.crawl.max_depth,
        ))
    })
}

pub(crate) fn parse_settings(config: &Config, scope: Arc<ScopePolicy>) -> ParseSettings {
    ParseSettings {
        scope,
        user_agent: config.crawl.user_agent.clone(),
        max_body_bytes: config.fetch.max_body_bytes,
        sitemap_max_bytes: config.crawl.sitemap_max_bytes,
        sitemap_max_urls: config.crawl.sitemap_max_urls,
        archive_level: config
            .output
            .warc_dir
            .as_ref()
            .map(|_| crate::parser::archive::ARCHIVE_LEVEL),
        max_links_per_page: config.parser.max_links_per_page,
        inline_max_bytes: config.parser.inline_max_bytes,
        embeds: embeds_policy(config),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_connections_kept_cover_the_requests_a_host_may_have_in_flight() {
        let idle = |text: &str| {
            let config = Config::from_str(text, "t.toml").expect("valid");
            http_settings(&config).pool_max_idle_per_host
        };
        assert_eq!(idle("[politeness]\nper_host_concurrency = 64\n"), 64);
        assert_eq!(idle("[politeness]\nper_host_concurrency = 2\n"), 8);
        let set = "[politeness]\nper_host_concurrency = 64\n[fetch]\npool_max_idle_per_host = ";
        assert_eq!(idle(&format!("{set}8\n")), 64);
        assert_eq!(idle(&format!("{set}100\n")), 100);
        // 0: no connection is kept.
        assert_eq!(idle(&format!("{set}0\n")), 0);
    }
}
