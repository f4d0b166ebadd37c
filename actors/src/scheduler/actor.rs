//! The scheduler actor: actix glue around [`Crawl`]. It leases ready jobs to fetchers (round-robin), takes their
//! results, group-commits the frontier every `commit_interval` (or `commit_max_ops` changes), then sends the
//! committed records to the sink and trims the outbox once they are written.

use super::crawl::{Crawl, FinishReason};
use super::messages::{Abort, Drain, FetcherDown, FetcherUp, GetStats, JobDone, Reconfigure};
use super::stats::Stats;
use crate::fetcher::messages::Fetch;
use crate::sink::Sink;
use crate::sink::messages::WriteRecords;
use crate::supervisor::messages::CrawlFinished;
use actix::{
    Actor, ActorFutureExt, Addr, AsyncContext, Context, Handler, MessageResult, Recipient,
    SpawnHandle, WrapFuture,
};
use std::time::{Duration, Instant};

pub struct Scheduler {
    crawl: Crawl,
    fetchers: Vec<Option<Recipient<Fetch>>>,
    next_fetcher: usize,
    sink: Addr<Sink>,
    supervisor: Recipient<CrawlFinished>,
    commit_interval: Duration,
    commit_timer: Option<SpawnHandle>,
    wake: Option<(Instant, SpawnHandle)>,
    writes_in_flight: usize,
    forced: Option<FinishReason>,
    reported: bool,
}

impl Scheduler {
    pub fn new(
        crawl: Crawl,
        fetchers: Vec<Recipient<Fetch>>,
        sink: Addr<Sink>,
        supervisor: Recipient<CrawlFinished>,
        commit_interval: Duration,
    ) -> Scheduler {
        Scheduler {
            crawl,
            fetchers: fetchers.into_iter().map(Some).collect(),
            next_fetcher: 0,
            sink,
            supervisor,
            commit_interval,
            commit_timer: None,
            wake: None,
            writes_in_flight: 0,
            forced: None,
            reported: false,
        }
    }

    fn pick_fetcher(&mut self) -> Option<(usize, Recipient<Fetch>)> {
        let n = self.fetchers.len();
        for k in 0..n {
            let i = (self.next_fetcher + k) % n;
            if let Some(f) = &self.fetchers[i] {
                self.next_fetcher = (i + 1) % n;
                return Some((i, f.clone()));
            }
        }
        None
    }

    fn pump(&mut self, ctx: &mut Context<Self>) {
        if self.forced.is_some() || !self.fetchers.iter().any(Option::is_some) {
            return;
        }
        let now = Instant::now();
        let (jobs, wake) = self.crawl.next_jobs(now);
        for job in jobs {
            // A live fetcher exists (checked above) and none can die between here and the send.
            if let Some((i, f)) = self.pick_fetcher() {
                self.crawl.assign(job.id, i);
                f.do_send(Fetch { job });
            }
        }
        if let Some(at) = wake {
            let earlier = self.wake.as_ref().is_none_or(|(t, _)| at < *t);
            if earlier {
                if let Some((_, h)) = self.wake.take() {
                    ctx.cancel_future(h);
                }
                let delay = at.saturating_duration_since(now);
                let h = ctx.run_later(delay, |act, ctx| {
                    act.wake = None;
                    act.after(ctx);
                });
                self.wake = Some((at, h));
            }
        }
    }

    fn commit_now(&mut self, ctx: &mut Context<Self>) {
        if let Some(h) = self.commit_timer.take() {
            ctx.cancel_future(h);
        }
        let lines = match self.crawl.commit() {
            Ok(lines) => lines,
            Err(e) => {
                tracing::error!(error = %e, "frontier commit failed; stopping");
                self.forced = Some(FinishReason::Fatal(format!("frontier commit failed: {e}")));
                return;
            }
        };
        if lines.is_empty() {
            return;
        }
        self.writes_in_flight += 1;
        let fut = self.sink.send(WriteRecords { lines });
        ctx.spawn(fut.into_actor(self).map(|res, act, ctx| {
            act.writes_in_flight -= 1;
            match res {
                Ok(Ok(cp)) => act.crawl.written(cp.lines),
                Ok(Err(e)) => {
                    tracing::error!(error = %e, "output write failed; stopping");
                    act.forced = Some(FinishReason::Fatal(format!("output write failed: {e}")));
                }
                Err(e) => {
                    act.forced = Some(FinishReason::Fatal(format!("sink unavailable: {e}")));
                }
            }
            act.after(ctx);
        }));
    }

    /// Runs after every event: start what may start, commit when due, report the end.
    fn after(&mut self, ctx: &mut Context<Self>) {
        self.pump(ctx);
        let (queued, in_flight, known, hosts) = self.crawl.gauges();
        crawl_observability::metrics::metrics().frontier(queued, in_flight, known, hosts);
        if self.crawl.commit_due() || (self.forced.is_some() && self.crawl.has_staged()) {
            self.commit_now(ctx);
        } else if self.crawl.has_staged() && self.commit_timer.is_none() {
            self.commit_timer = Some(ctx.run_later(self.commit_interval, |act, ctx| {
                act.commit_timer = None;
                act.commit_now(ctx);
                act.after(ctx);
            }));
        }
        if self.reported {
            return;
        }
        let reason = match &self.forced {
            Some(r) if self.writes_in_flight == 0 && !self.crawl.has_staged() => Some(r.clone()),
            Some(_) => None,
            None => self.crawl.finished(),
        };
        if let Some(reason) = reason {
            self.reported = true;
            let stats = self.crawl.stats();
            tracing::info!(reason = ?reason, fetched = stats.fetched, failed = stats.failed, excluded = stats.excluded, "crawl finished");
            self.supervisor.do_send(CrawlFinished { reason, stats });
        }
    }
}

impl Actor for Scheduler {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.after(ctx);
    }
}

impl Handler<JobDone> for Scheduler {
    type Result = ();

    fn handle(&mut self, msg: JobDone, ctx: &mut Context<Self>) {
        self.crawl
            .job_done_with_dns(msg.job, msg.result, msg.dns, Instant::now());
        self.after(ctx);
    }
}

impl Handler<FetcherDown> for Scheduler {
    type Result = ();

    fn handle(&mut self, msg: FetcherDown, ctx: &mut Context<Self>) {
        if let Some(slot) = self.fetchers.get_mut(msg.index) {
            *slot = None;
        }
        self.crawl
            .fetcher_down(msg.index, msg.panicked, &msg.detail, Instant::now());
        self.after(ctx);
    }
}

impl Handler<FetcherUp> for Scheduler {
    type Result = ();

    fn handle(&mut self, msg: FetcherUp, ctx: &mut Context<Self>) {
        if let Some(slot) = self.fetchers.get_mut(msg.index) {
            *slot = Some(msg.fetcher);
        }
        self.after(ctx);
    }
}

impl Handler<Drain> for Scheduler {
    type Result = ();

    fn handle(&mut self, msg: Drain, ctx: &mut Context<Self>) {
        if self.crawl.is_draining() {
            return;
        }
        tracing::info!(
            in_flight = self.crawl.in_flight(),
            grace_ms = msg.grace.as_millis() as u64,
            "draining"
        );
        self.crawl.drain();
        ctx.run_later(msg.grace, |act, ctx| {
            if !act.reported {
                tracing::warn!(
                    in_flight = act.crawl.in_flight(),
                    "grace period over; in-flight urls stay queued"
                );
                act.forced = Some(FinishReason::Shutdown);
                act.after(ctx);
            }
        });
        self.after(ctx);
    }
}

impl Handler<Abort> for Scheduler {
    type Result = ();

    fn handle(&mut self, msg: Abort, ctx: &mut Context<Self>) {
        self.crawl.drain();
        // The first fatal cause is the one reported; later ones are consequences.
        if !matches!(self.forced, Some(FinishReason::Fatal(_))) {
            self.forced = Some(FinishReason::Fatal(msg.reason));
        }
        self.after(ctx);
    }
}

impl Handler<GetStats> for Scheduler {
    type Result = MessageResult<GetStats>;

    fn handle(&mut self, _msg: GetStats, _ctx: &mut Context<Self>) -> Self::Result {
        let s: Stats = self.crawl.stats();
        MessageResult(s)
    }
}

impl Handler<Reconfigure> for Scheduler {
    type Result = ();

    fn handle(&mut self, msg: Reconfigure, ctx: &mut Context<Self>) {
        self.crawl.reconfigure(msg.politeness, msg.scope);
        self.after(ctx);
    }
}
