//! The root supervisor: owns the fetchers (one per arbiter thread) and watches the parsers.
//!
//! A failed fetcher is restarted after a capped exponential backoff; the jobs it held are re-driven by the
//! scheduler (the one it panicked on with attempt + 1). A child failing more than `max_restarts` times within
//! `restart_window` escalates: the crawl stops with a fatal error and can be resumed after the cause is fixed.

use super::backoff::{RestartLog, restart_delay};
use super::messages::{ChildFailed, ChildId, CrawlFinished, GetSupervisorStats, SupervisorStats};
use crate::fetcher::Fetcher;
use crate::fetcher::messages::Fetch;
use crate::scheduler::Scheduler;
use crate::scheduler::crawl::FinishReason;
use crate::scheduler::messages::{Abort, FetcherDown, FetcherUp};
use actix::{Actor, Addr, ArbiterHandle, AsyncContext, Context, Handler, Recipient};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// How the crawl ended, handed to whoever started the tree.
#[derive(Debug, Clone)]
pub struct CrawlSummary {
    pub reason: FinishReason,
    pub stats: crate::scheduler::stats::Stats,
    pub supervisor: SupervisorStats,
}

pub struct Supervisor {
    policy: RestartPolicy,
    arbiters: Vec<ArbiterHandle>,
    factory: FetcherFactory,
    scheduler: Option<Addr<Scheduler>>,
    logs: HashMap<ChildId, RestartLog>,
    stats: SupervisorStats,
    done: Option<tokio::sync::oneshot::Sender<CrawlSummary>>,
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
        }
    }

    pub fn set_scheduler(&mut self, scheduler: Addr<Scheduler>) {
        self.scheduler = Some(scheduler);
    }

    /// Starts fetcher `i` on its arbiter and returns its recipient.
    pub fn start_fetcher(&self, i: usize, me: Recipient<ChildFailed>) -> Option<Recipient<Fetch>> {
        let arbiter = self.arbiters.get(i)?;
        let factory = self.factory.clone();
        Some(Fetcher::start_in_arbiter(arbiter, move |_| factory(i, me)).recipient())
    }
}

impl Actor for Supervisor {
    type Context = Context<Self>;
}

impl Handler<ChildFailed> for Supervisor {
    type Result = ();

    fn handle(&mut self, msg: ChildFailed, ctx: &mut Context<Self>) {
        self.stats.panics += 1;
        let n = self
            .logs
            .entry(msg.child)
            .or_default()
            .record(Instant::now(), self.policy.window);
        if n > self.policy.max_restarts {
            if !self.stats.escalated {
                tracing::error!(
                    child = msg.child.kind(),
                    failures = n,
                    "restart limit reached; escalating"
                );
                self.stats.escalated = true;
                if let Some(s) = &self.scheduler {
                    s.do_send(Abort {
                        reason: format!(
                            "{} exceeded the restart limit (supervisor.max_restarts = {}): \
                             {} failures within {}s; last: {}",
                            msg.child.kind(),
                            self.policy.max_restarts,
                            n,
                            self.policy.window.as_secs(),
                            msg.detail
                        ),
                    });
                }
            }
            return;
        }
        match msg.child {
            ChildId::Parser => {
                // The SyncArbiter has already built a fresh parser; the scheduler re-drives the job.
                self.stats.restarts_parser += 1;
                crawl_observability::metrics::metrics().actor_restart("parser");
            }
            ChildId::Fetcher(i) => {
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

impl Handler<GetSupervisorStats> for Supervisor {
    type Result = actix::MessageResult<GetSupervisorStats>;

    fn handle(&mut self, _msg: GetSupervisorStats, _ctx: &mut Context<Self>) -> Self::Result {
        actix::MessageResult(self.stats.clone())
    }
}
