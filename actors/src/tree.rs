//! Builds the actor tree from a validated config: recovers the frontier, repairs and catches up the JSONL, then
//! starts the store, the sink, the resolver, the proxy-chain actor, the scheduler, the parsers, the fetchers and the
//! root supervisor that watches them.
//!
//! ```text
//! Supervisor ─┬─ Scheduler (frontier, robots, politeness)       system arbiter
//!             ├─ Fetcher × N                                      one arbiter thread each
//!             ├─ Parser × M                                       one SyncArbiter thread each
//!             └─ Sink (JSONL)                                     its own arbiter thread
//! Store (frontier commits, WARC)                                  a SyncArbiter thread
//! Resolver, ProxyChains                                           one arbiter thread, restarted by actix
//! ```
//!
//! The running [`Tree`] is all that its owner sees of the actors: it waits for the [`Ending`], reads the counters
//! and asks for a drain through a [`Control`], reloads the config through the [`Reconfigurer`], and reads the
//! resolver's and the proxy actor's counters for the summary.

mod error;
mod peers;
mod reconfigure;
mod settings;

pub use crate::faults::Faults;
pub use crate::proxy::hop::ProxyStats;
pub use crate::resolver::stats::ResolverStats;
pub use error::TreeError;
use peers::Peers;
pub use reconfigure::{Prepared, Reconfigurer};
use settings::{http_settings, parse_settings, politeness_policy, scope_policy};

use crate::fatal::{FatalReceiver, FatalSender};
use crate::fetcher::dial::NameLookup;
use crate::fetcher::error::LookupError;
use crate::fetcher::http::HttpClient;
use crate::parser::Parser;
use crate::parser::pool::{ParserFactory, ParserPool};
use crate::protocol::{AddUrls, ControlError, HostSort, HostView, StatusView, UrlAnswer};
use crate::protocol::{CrawlSummary, Stats};
use crate::proxy::actor::ProxyChains;
use crate::proxy::messages::GetProxyStats;
use crate::resolver::Resolver;
use crate::resolver::logic::Outcome;
use crate::resolver::messages::{GetResolverStats, Resolve};
use crate::scheduler::Scheduler;
use crate::scheduler::crawl::{Crawl, CrawlSettings};
use crate::scheduler::messages::{Drain, GetHost, GetHosts, GetStats, GetStatus, Operate};
use crate::sink::Sink;
use crate::sink::actor::write_lines;
use crate::store::StoreActor;
use crate::supervisor::{FetcherFactory, RestartPolicy, Supervisor};
use actix::{Actor, Addr, Arbiter, AsyncContext, Context, SyncArbiter};
use crawl_core::config::{Config, FrontierBackend};
use crawl_core::frontier::{FrontierError, FrontierStore, Resume};
use crawl_core::ownership::CrawlId;
use crawl_core::politeness::HostQueues;
use crawl_output::jsonl::JsonlWriter;
use crawl_store_embedded::{DirLock, EmbeddedFrontier, process_id};
use crawl_store_redis::{RedisFrontier, RedisSettings};
use rustls::pki_types::CertificateDer;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A running tree: what its owner (the binary) may ask of the actors, and nothing more.
pub struct Tree {
    control: Control,
    resolver: Addr<Resolver>,
    /// The proxy-chain actor, when chains are configured.
    proxy: Option<Addr<ProxyChains>>,
    reconfigurer: Reconfigurer,
    /// Resolves when the crawl ends.
    done: tokio::sync::oneshot::Receiver<CrawlSummary>,
    /// Causes that end the process (a panic in the scheduler, the sink or the frontier store).
    fatal: FatalReceiver,
    /// Held while the tree runs, so that `fatal` is never closed before the crawl ends.
    _fatal_tx: FatalSender,
    arbiters: Vec<Arbiter>,
    /// The `[[sinks]]`, when any is configured.
    shippers: Option<crate::shipper::Shippers>,
}

/// How a running tree ended.
#[derive(Debug)]
pub enum Ending {
    /// The crawl finished (completed, limit reached, drained after a signal, or stopped by the supervisor on a fatal
    /// error), with its counters.
    Finished(Box<CrawlSummary>),
    /// A cause that ends the process at once: a panic in the scheduler, the sink or the frontier store.
    Fatal(String),
    /// The tree stopped without a summary.
    Lost,
}

impl Tree {
    /// Waits for the crawl to end. A fatal cause wins over a summary that arrives at the same time.
    pub async fn ended(&mut self) -> Ending {
        tokio::select! {
            biased;
            cause = self.fatal.recv() => {
                Ending::Fatal(cause.unwrap_or_else(|| "the actor tree failed".to_owned()))
            }
            done = &mut self.done => match done {
                Ok(summary) => Ending::Finished(Box::new(summary)),
                Err(_) => Ending::Lost,
            },
        }
    }

    /// A handle on the crawl for other tasks and threads (progress, signals).
    pub fn control(&self) -> Control {
        self.control.clone()
    }

    /// Applies config reloads to the running actors.
    pub fn reconfigurer(&self) -> Reconfigurer {
        self.reconfigurer.clone()
    }

    /// The resolver's counters; the defaults when it does not answer within `timeout` (its thread may be blocked).
    pub async fn resolver_stats(&self, timeout: Duration) -> ResolverStats {
        self.resolver
            .send(GetResolverStats)
            .timeout(timeout)
            .await
            .unwrap_or_default()
    }

    /// The proxy-chain actor's counters: None without chains, or when it does not answer within `timeout`.
    pub async fn proxy_stats(&self, timeout: Duration) -> Option<ProxyStats> {
        match &self.proxy {
            Some(p) => p.send(GetProxyStats).timeout(timeout).await.ok(),
            None => None,
        }
    }

    /// The sinks' states now (empty without sinks).
    pub fn sinks(&self) -> Vec<crate::shipper::SinkView> {
        self.shippers
            .as_ref()
            .map(|s| s.views())
            .unwrap_or_default()
    }

    /// After the crawl ended: lets the sinks deliver what is left for up to `limit`, and returns those still
    /// behind then (their checkpoints keep the rest for the next run).
    pub async fn finish_sinks(&mut self, limit: Duration) -> Vec<crate::shipper::SinkView> {
        match self.shippers.as_mut() {
            Some(s) => s.finish(limit).await,
            None => Vec::new(),
        }
    }

    /// Stops the tree's arbiter threads (after the crawl ended).
    pub fn stop(self) {
        for a in self.arbiters {
            a.stop();
        }
        if let Some(s) = self.shippers {
            s.stop();
        }
    }
}

/// What other tasks and threads may do to a running crawl: read its counters, ask it to drain, and steer it
/// (the control API: pauses, politeness, queue drops, URLs added, views of hosts). In a crawl shared by many
/// processes, its views name the processes (read from the store, never through the scheduler).
#[derive(Clone)]
pub struct Control {
    scheduler: Addr<Scheduler>,
    /// This process among the others, when the store is shared.
    peers: Option<Peers>,
    /// The `[[sinks]]`' states.
    sinks: Vec<Arc<crate::shipper::SinkState>>,
}

/// How long a view of the crawl may take: the scheduler answers from its own state, between two events.
const VIEW_TIMEOUT: Duration = Duration::from_secs(5);
/// How long an operator's change may take: a write to the store, then the scheduler's turn.
const CHANGE_TIMEOUT: Duration = Duration::from_secs(15);
/// How long added URLs may wait for the group commit that makes them durable (and a re-fetch after it).
const ADD_TIMEOUT: Duration = Duration::from_secs(60);

fn control_error(e: actix::MailboxError) -> ControlError {
    match e {
        actix::MailboxError::Timeout => ControlError::Busy,
        actix::MailboxError::Closed => ControlError::Ended,
    }
}

impl Control {
    /// This process's id in the store, when the store is shared by many processes (the id the other processes
    /// and [`HostView::owner`] know it by).
    pub fn process_id(&self) -> Option<&str> {
        self.peers.as_ref().map(Peers::me)
    }

    /// What the crawl is doing; in a crawl shared by many processes, with every live process (read from the store
    /// meanwhile, within a few seconds, or said unknown).
    pub async fn status(&self) -> Result<StatusView, ControlError> {
        let view = self.scheduler.send(GetStatus).timeout(VIEW_TIMEOUT);
        let mut view = match &self.peers {
            None => view.await.map_err(control_error)?,
            Some(peers) => {
                let (view, processes) = tokio::join!(view, peers.processes());
                let mut view = view.map_err(control_error)?;
                view.processes = processes;
                view
            }
        };
        view.sinks = self.sinks.iter().map(|s| s.view()).collect();
        Ok(view)
    }

    /// The hosts the crawl knows, sorted by `sort`, at most `limit`; with their owners in a crawl shared by many
    /// processes, when known.
    pub async fn hosts(&self, sort: HostSort, limit: usize) -> Result<Vec<HostView>, ControlError> {
        let mut views = self
            .scheduler
            .send(GetHosts { sort, limit })
            .timeout(VIEW_TIMEOUT)
            .await
            .map_err(control_error)?;
        if let Some(peers) = &self.peers {
            peers.owners(&mut views).await;
        }
        Ok(views)
    }

    /// One host (its name as URLs carry it); None when the crawl does not know it. In a crawl shared by many
    /// processes, with its owner when known, and also a host only another process met (the store says whether
    /// the crawl knows it).
    pub async fn host(&self, name: String) -> Result<Option<HostView>, ControlError> {
        let view = self
            .scheduler
            .send(GetHost { name })
            .timeout(VIEW_TIMEOUT)
            .await
            .map_err(control_error)?;
        match (&self.peers, view) {
            (Some(peers), Some(view)) => peers.host(view).await,
            (_, view) => Ok(view),
        }
    }

    /// Applies an operator's change durably, then the crawl obeys it (in a crawl shared by many processes, every
    /// process does within about a second). Answers whether the state changed.
    pub async fn operate(&self, change: crawl_core::control::Change) -> Result<bool, ControlError> {
        self.scheduler
            .send(Operate { change })
            .timeout(CHANGE_TIMEOUT)
            .await
            .map_err(control_error)?
    }

    /// Adds URLs; answered once the ones queued are durable.
    pub async fn add_urls(&self, req: AddUrls) -> Result<Vec<UrlAnswer>, ControlError> {
        self.scheduler
            .send(crate::scheduler::messages::AddUrls { req })
            .timeout(ADD_TIMEOUT)
            .await
            .map_err(control_error)?
    }

    /// The crawl's counters; None once the scheduler is gone.
    pub async fn stats(&self) -> Option<Stats> {
        self.scheduler.send(GetStats).await.ok()
    }

    /// Stop taking work, finish what is in flight within `grace`, commit and finish.
    pub fn drain(&self, grace: Duration) {
        self.scheduler.do_send(Drain { grace });
    }

    /// Whether the scheduler still runs (false once its actor is gone, after a panic say).
    pub fn is_running(&self) -> bool {
        self.scheduler.connected()
    }
}

/// The proxy chains a config names, each with its hops in order (passwords hidden), by name.
pub fn proxy_chains(config: &Config) -> std::collections::BTreeMap<String, Vec<String>> {
    crate::proxy::actor::describe(&config.proxy)
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

/// An opened frontier store, recovered, with the JSONL, and this process's id in the store when it is shared.
type Opened = (Box<dyn FrontierStore>, Resume, JsonlWriter, Option<String>);

/// The frontier store the config names, recovered, and the JSONL opened where the store says it stands (the
/// records it lacks are written by the caller).
fn open_frontier(config: &Config, lock: DirLock) -> Result<Opened, TreeError> {
    let dir = &config.frontier.data_dir;
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
            Ok((Box::new(store), recovered, writer, None))
        }
        FrontierBackend::Redis => {
            // This process's lock and identity are in data_dir; the frontier is in Redis.
            let pid = process_id(dir).map_err(FrontierError::from)?;
            let settings = redis_settings(config);
            let mut store = RedisFrontier::open(settings, &pid)?.with_lock(lock);
            let checkpoint = store.checkpoint()?;
            let writer = JsonlWriter::open_at(&config.output.jsonl, checkpoint)?;
            store.set_jsonl_lines(writer.lines());
            let recovered = store.recover()?;
            Ok((Box::new(store), recovered, writer, Some(pid)))
        }
    }
}

/// The Redis store's settings from the config, as a run opens the store (its spool in the data_dir).
pub fn redis_settings(config: &Config) -> RedisSettings {
    let r = &config.frontier.redis;
    RedisSettings {
        urls: r.urls.iter().map(|u| u.expose().to_owned()).collect(),
        cluster: r.cluster,
        crawl: r.crawl.clone(),
        shards: r.shards,
        lease_ms: u64::try_from(r.lease.as_millis()).unwrap_or(u64::MAX),
        max_outage_ms: u64::try_from(r.max_outage.as_millis()).unwrap_or(u64::MAX),
        recrawl_after_s: r.recrawl_after.as_secs(),
        spool: Some(config.frontier.data_dir.join("spool")),
        sentinels: r.sentinels.iter().map(|u| u.expose().to_owned()).collect(),
        master: r.master.clone().unwrap_or_default(),
        sentinel_password: r.sentinel_password.as_ref().map(|p| p.expose().to_owned()),
        password: r.password.as_ref().map(|p| p.expose().to_owned()),
        replicas_ack: r.replicas_ack(),
        replicas_ack_timeout_ms: u64::try_from(r.replicas_ack_timeout.as_millis())
            .unwrap_or(u64::MAX),
    }
}

/// Connects every `[[sinks]]` entry as a run would and lets go (`--check`): the errors of those that could not.
pub fn probe_sinks(config: &Config) -> Vec<crawl_sinks::SinkError> {
    crate::shipper::probe(config)
}

/// Starts the tree. Must run inside an actix `System`. `lock` is the data_dir's lock, taken by the caller when it
/// claimed the crawl's outputs for `crawl` (whose id the WARC files carry); `extra_roots` are trusted by the HTTP
/// client besides the webpki roots.
pub fn start(
    config: &Config,
    faults: Faults,
    extra_roots: Vec<CertificateDer<'static>>,
    lock: DirLock,
    crawl: &CrawlId,
) -> Result<Tree, TreeError> {
    let now = Instant::now();
    let (mut store, mut recovered, mut writer, process_id) = open_frontier(config, lock)?;
    let (jsonl_lines, repaired_bytes) = (writer.lines(), writer.repaired_bytes());
    // Records committed before a crash but not in the file yet: write them now, exactly once.
    let outbox = std::mem::take(&mut recovered.outbox);
    let before = writer.lines();
    let jsonl = write_lines(&mut writer, &outbox).map_err(|source| TreeError::Outbox {
        jsonl: config.output.jsonl.display().to_string(),
        data_dir: config.frontier.data_dir.display().to_string(),
        source,
    })?;
    let rewritten = writer.lines() - before;
    if repaired_bytes > 0 || rewritten > 0 || !recovered.fresh {
        tracing::info!(
            pending = recovered.counters.pending,
            known = recovered.counters.known,
            jsonl_lines,
            repaired_bytes,
            rewritten,
            "resuming crawl"
        );
    }

    let mut archive = crate::store::archive::Archive::open(
        config,
        recovered.archive_checkpoint.as_deref(),
        crawl,
    )?;
    // The file the archive resumed was closed (an object store sink copies closed files): the new one is made the
    // committed file before the first fetch, so a restart never appends to the closed one.
    if let Some(cp) = archive.as_mut().and_then(|a| a.take_opening_checkpoint()) {
        store.commit(crawl_core::frontier::Batch {
            archive_checkpoint: Some(cp),
            ..Default::default()
        })?;
    }
    let progress = crate::protocol::OutputProgress::new(jsonl);
    if let Some(a) = &archive {
        progress
            .warc_file
            .send_replace(Some(a.current_file().to_owned()));
    }
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
    }
    if config.recrawl.enabled {
        crawl = crawl.with_revisits(&config.recrawl);
    }
    // What operators set (pauses above all) holds from the first lease on, also after a restart.
    let (version, operator) = store.operator_state()?;
    if !operator.is_empty() {
        tracing::info!(
            crawl_paused = operator.crawl.is_some(),
            host_rules = operator.hosts.len(),
            "operator state resumed"
        );
    }
    let wall_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    crawl.operator_state(version, operator, now, wall_ms);
    for seed in &config.crawl.seeds {
        crawl.add_seed(seed);
    }
    // The store moves to a thread of its own: commits and reads never block the scheduler. A panic there ends
    // the process (everything committed stays); the same command resumes.
    let (fatal_tx, fatal_rx) = crate::fatal::channel();
    // The sinks connect before anything is fetched: one that cannot start stops the crawl with its error.
    let backpressure =
        crate::protocol::Backpressure::new(config.sinks.iter().map(|s| s.name.clone()));
    let shippers = crate::shipper::Shippers::start(config, &progress, &backpressure, &fatal_tx)?;
    if shippers.is_some() {
        crawl = crawl.with_backpressure(backpressure);
    }
    let store_cell = std::sync::Mutex::new(Some((store, archive)));
    let warc_progress = progress.warc_file.clone();
    let (store_faults, store_fatal) = (faults.clone(), fatal_tx.clone());
    let store_addr = SyncArbiter::start(1, move || {
        let s = store_cell.lock().ok().and_then(|mut g| g.take());
        let guard = store_fatal.guard("store");
        match s {
            Some((s, archive)) => StoreActor::new(s, store_faults.clone(), guard)
                .with_archive(archive)
                .with_warc_progress(warc_progress.clone()),
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
        Resolver::new(
            resolver_parts.settings,
            resolver_parts.ctx,
            resolver_parts.doh,
        )
        .with_faults(resolver_faults)
        .with_local(copies.clone())
    });
    let resolve_r: actix::Recipient<Resolve> = resolver.clone().recipient();
    let mut http = http_settings(config);
    http.extra_roots = extra_roots;
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
                Ok(Outcome::NxDomain { .. }) => Err(LookupError::NxDomain),
                Ok(Outcome::Unresolved { detail, .. }) => Err(LookupError::Unresolved(detail)),
                Err(e) => Err(LookupError::Unavailable(e)),
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
            ProxyChains::new(&pcfg, Some(presolver))
                .with_faults(proxy_faults)
                .with_guard(proxy_guard.clone())
        });
        http.proxy = Some(crate::fetcher::http::ProxyHandle(proxy.clone().recipient()));
        proxy_addr = Some(proxy);
    }

    let n_fetchers = workers(config.fetch.fetchers);
    let mut clients = Vec::with_capacity(n_fetchers);
    for _ in 0..n_fetchers {
        clients.push(HttpClient::new(http.clone())?);
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
    let jsonl_progress = progress.jsonl.clone();
    let (sink_faults, sink_guard) = (faults.clone(), fatal_tx.guard("sink"));
    let sink = Sink::start_in_arbiter(&sink_arbiter.handle(), move |_| {
        Sink::new(writer, sink_faults, sink_guard).with_progress(jsonl_progress)
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
                store: store_addr.clone(),
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
        control: Control {
            scheduler: me,
            peers: process_id.map(|id| Peers::new(store_addr, id)),
            sinks: shippers.as_ref().map(|s| s.states()).unwrap_or_default(),
        },
        resolver,
        proxy: proxy_addr,
        reconfigurer,
        done: done_rx,
        fatal: fatal_rx,
        _fatal_tx: fatal_tx,
        arbiters,
        shippers,
    })
}
