//! The root supervisor: owns the fetchers (one per arbiter thread) and watches the parsers.
//!
//! A failed fetcher is restarted after a capped exponential backoff; the jobs it held are re-driven by the
//! scheduler (the one it panicked on with attempt + 1). A child failing more than `max_restarts` times within
//! `restart_window` escalates: the crawl stops with a fatal error and can be resumed after the cause is fixed.
//!
//! A child can also be stuck (its thread blocked or looping) without panicking. The scheduler notices when a lease's
//! deadline passes and sends [`LeaseExpired`]: the parser slot working on that job is replaced, or the fetcher the
//! job was leased to is probed and, when it does not answer within [`PROBE_TIMEOUT`], replaced by a fetcher on a new
//! arbiter thread (the blocked thread is abandoned). Both count as restarts and towards escalation. The jobs that
//! waited in a replaced parser's mailbox are handed to the scheduler, which queues them again without an attempt.

use crate::backoff::{RestartLog, restart_delay};
use crate::fetcher::Fetcher;
use crate::parser::pool::ParserPool;
use crate::protocol::{Abort, FetcherDown, FetcherUp, ParsesLost};
use crate::protocol::{ChildFailed, ChildId, CrawlFinished, LeaseExpired};
use crate::protocol::{CrawlSummary, SupervisorStats};
use crate::protocol::{Fetch, Ping};
use crate::scheduler::Scheduler;
use actix::{
    Actor, ActorFutureExt, Addr, Arbiter, ArbiterHandle, AsyncContext, Context, Handler,
    MailboxError, Recipient, WrapFuture,
};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a fetcher may take to answer a probe before it counts as stuck.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Builds fetcher `i`, given the supervisor's address.
pub type FetcherFactory = Arc<dyn Fn(usize, Recipient<ChildFailed>) -> Fetcher + Send + Sync>;

/// Restart policy.
#[derive(Debug, Clone)]
pub struct RestartPolicy {
    pub backoff_base: Duration,
    pub backoff_max: Duration,
    pub max_restarts: u32,
    pub window: Duration,
}

pub struct Supervisor {
    policy: RestartPolicy,
    arbiters: Vec<ArbiterHandle>,
    factory: FetcherFactory,
    scheduler: Option<Addr<Scheduler>>,
    logs: HashMap<ChildId, RestartLog>,
    stats: SupervisorStats,
    done: Option<tokio::sync::oneshot::Sender<CrawlSummary>>,
    /// The running fetchers, by index (None while one waits for its restart).
    fetchers: Vec<Option<Addr<Fetcher>>>,
    parsers: Option<ParserPool>,
    /// Fetchers being probed.
    probing: HashSet<usize>,
    /// Arbiters started to replace blocked ones.
    spare: Vec<Arbiter>,
}

impl Supervisor {
    pub fn new(
        policy: RestartPolicy,
        arbiters: Vec<ArbiterHandle>,
        factory: FetcherFactory,
        done: tokio::sync::oneshot::Sender<CrawlSummary>,
    ) -> Supervisor {
        Supervisor {
            policy,
            arbiters,
            factory,
            scheduler: None,
            logs: HashMap::new(),
            stats: SupervisorStats::default(),
            done: Some(done),
            fetchers: Vec::new(),
            parsers: None,
            probing: HashSet::new(),
            spare: Vec::new(),
        }
    }

    pub fn set_scheduler(&mut self, scheduler: Addr<Scheduler>) {
        self.scheduler = Some(scheduler);
    }

    /// The parser slots, so a stuck one can be replaced.
    pub fn set_parsers(&mut self, parsers: ParserPool) {
        self.parsers = Some(parsers);
    }

    /// Starts fetcher `i` on its arbiter and returns its recipient.
    pub fn start_fetcher(
        &mut self,
        i: usize,
        me: Recipient<ChildFailed>,
    ) -> Option<Recipient<Fetch>> {
        let arbiter = self.arbiters.get(i)?;
        let factory = self.factory.clone();
        let addr = Fetcher::start_in_arbiter(arbiter, move |_| factory(i, me));
        if self.fetchers.len() <= i {
            self.fetchers.resize(i + 1, None);
        }
        self.fetchers[i] = Some(addr.clone());
        Some(addr.recipient())
    }

    /// Counts a failure of `child` and escalates past the restart limit. Returns the failures within the window,
    /// or None when the crawl is being stopped (no restart then).
    fn record_failure(&mut self, child: ChildId, detail: &str) -> Option<u32> {
        let n = self
            .logs
            .entry(child)
            .or_default()
            .record(Instant::now(), self.policy.window);
        if n <= self.policy.max_restarts {
            return Some(n);
        }
        if !self.stats.escalated {
            tracing::error!(
                child = child.kind(),
                failures = n,
                "restart limit reached; escalating"
            );
            self.stats.escalated = true;
            if let Some(s) = &self.scheduler {
                s.do_send(Abort {
                    reason: format!(
                        "{} exceeded the restart limit (supervisor.max_restarts = {}): \
                         {} failures within {}s; last: {}",
                        child.kind(),
                        self.policy.max_restarts,
                        n,
                        self.policy.window.as_secs(),
                        detail
                    ),
                });
            }
        }
        None
    }

    /// Replaces parser slot `slot`, stuck on `msg.job`.
    fn replace_parser(&mut self, slot: usize, msg: &LeaseExpired) {
        let detail = format!("parser stuck on {}", msg.url);
        self.stats.stuck += 1;
        if self.record_failure(ChildId::Parser, &detail).is_none() {
            return;
        }
        let Some(pool) = &self.parsers else {
            return;
        };
        tracing::warn!(slot, url = %msg.url, "parser stuck past its lease deadline; replacing its thread");
        if let Some(waiting) = pool.replace(slot) {
            self.stats.restarts_parser += 1;
            crawl_observability::metrics::metrics().actor_restart("parser");
            if let (false, Some(s)) = (waiting.is_empty(), &self.scheduler) {
                s.do_send(ParsesLost { jobs: waiting });
            }
        }
    }

    /// Replaces fetcher `i`, whose thread did not answer a probe, with one on a new arbiter thread.
    fn replace_fetcher(&mut self, i: usize, url: &str, ctx: &mut Context<Self>) {
        let detail = format!(
            "fetcher {i} stuck (no answer within {} ms) on {url}",
            PROBE_TIMEOUT.as_millis()
        );
        self.stats.stuck += 1;
        self.fetchers[i] = None;
        if let Some(s) = &self.scheduler {
            // The expired job was re-driven by the scheduler already; the others the fetcher held are re-driven now.
            s.do_send(FetcherDown {
                index: i,
                panicked: None,
                detail: detail.clone(),
            });
        }
        if self.record_failure(ChildId::Fetcher(i), &detail).is_none() {
            return;
        }
        tracing::warn!(
            fetcher = i,
            url,
            "fetcher stuck past its lease deadline; replacing its thread"
        );
        let arbiter = Arbiter::new();
        if let Some(slot) = self.arbiters.get_mut(i) {
            *slot = arbiter.handle();
        }
        self.spare.push(arbiter);
        self.stats.restarts_fetcher += 1;
        crawl_observability::metrics::metrics().actor_restart("fetcher");
        if let (Some(fetcher), Some(s)) = (
            self.start_fetcher(i, ctx.address().recipient()),
            &self.scheduler,
        ) {
            s.do_send(FetcherUp { index: i, fetcher });
        }
    }
}

impl Actor for Supervisor {
    type Context = Context<Self>;

    fn stopped(&mut self, _ctx: &mut Context<Self>) {
        for a in self.spare.drain(..) {
            a.stop();
        }
    }
}

impl Handler<LeaseExpired> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: LeaseExpired, ctx: &mut Context<Self>) {
        if let Some(slot) = self.parsers.as_ref().and_then(|p| p.holder_of(msg.job)) {
            self.replace_parser(slot, &msg);
        }
        // The scheduler stops sending to the job's fetcher until it hears about it again: the probe answers (the
        // fetcher is given back) or the fetcher is replaced (the new one is given).
        let Some(i) = msg.fetcher else {
            tracing::debug!(url = %msg.url, "lease expired; no child holds the job");
            return;
        };
        let Some(Some(addr)) = self.fetchers.get(i).cloned() else {
            return;
        };
        if !self.probing.insert(i) {
            return;
        }
        let probe = addr.send(Ping).timeout(PROBE_TIMEOUT);
        ctx.spawn(probe.into_actor(self).map(move |res, act, ctx| {
            act.probing.remove(&i);
            let current = act.fetchers.get(i).and_then(Option::as_ref) == Some(&addr);
            match res {
                Ok(()) if current => {
                    tracing::debug!(fetcher = i, url = %msg.url, "lease expired; the fetcher answers");
                    if let Some(s) = &act.scheduler {
                        s.do_send(FetcherUp {
                            index: i,
                            fetcher: addr.clone().recipient(),
                        });
                    }
                }
                Err(MailboxError::Timeout) if current => act.replace_fetcher(i, &msg.url, ctx),
                // Replaced meanwhile, or stopped (its panic is handled through ChildFailed).
                Ok(()) | Err(_) => {}
            }
        }));
    }
}

impl Handler<ChildFailed> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: ChildFailed, ctx: &mut Context<Self>) {
        self.stats.panics += 1;
        let Some(n) = self.record_failure(msg.child, &msg.detail) else {
            return;
        };
        match msg.child {
            ChildId::Parser => {
                // The SyncArbiter has already built a fresh parser; the scheduler re-drives the job.
                self.stats.restarts_parser += 1;
                crawl_observability::metrics::metrics().actor_restart("parser");
            }
            ChildId::Fetcher(i) => {
                if let Some(slot) = self.fetchers.get_mut(i) {
                    *slot = None;
                }
                if let Some(s) = &self.scheduler {
                    s.do_send(FetcherDown {
                        index: i,
                        panicked: msg.job,
                        detail: msg.detail.clone(),
                    });
                }
                let delay = restart_delay(self.policy.backoff_base, self.policy.backoff_max, n);
                tracing::warn!(
                    fetcher = i,
                    restarts = n,
                    delay_ms = delay.as_millis() as u64,
                    "restarting fetcher"
                );
                ctx.run_later(delay, move |act, ctx| {
                    act.stats.restarts_fetcher += 1;
                    crawl_observability::metrics::metrics().actor_restart("fetcher");
                    if let (Some(fetcher), Some(s)) = (
                        act.start_fetcher(i, ctx.address().recipient()),
                        &act.scheduler,
                    ) {
                        s.do_send(FetcherUp { index: i, fetcher });
                    }
                });
            }
        }
    }
}

impl Handler<CrawlFinished> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: CrawlFinished, _ctx: &mut Context<Self>) {
        let mut stats = msg.stats;
        stats.restarts = self.stats.restarts_fetcher + self.stats.restarts_parser;
        if let Some(done) = self.done.take() {
            let _ = done.send(CrawlSummary {
                reason: msg.reason,
                stats,
                supervisor: self.stats.clone(),
            });
        }
    }
}
