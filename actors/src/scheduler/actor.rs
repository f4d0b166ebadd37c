//! The scheduler actor: actix glue around [`Crawl`]. It leases ready jobs to fetchers (round-robin), takes their
//! results, sends window refills and group commits (every `commit_interval`, or `commit_max_ops` changes) to the
//! store actor, then sends the committed records to the sink and checkpoints the JSONL once they are written.
//! Leases whose deadline passes are re-driven.

use super::crawl::{Crawl, RefillRequest};
use super::messages::{
    AddUrls, Drain, GetHost, GetHosts, GetStats, GetStatus, Operate, Reconfigure,
};
use crate::fatal::PanicGuard;
use crate::faults::{Faults, Stage};
use crate::protocol::Fetch;
use crate::protocol::FinishReason;
use crate::protocol::Stats;
use crate::protocol::WriteRecords;
use crate::protocol::{Abort, FetcherDown, FetcherUp, JobDone, ParsesLost};
use crate::protocol::{ControlError, HostView, StatusView, UrlAnswer};
use crate::protocol::{CrawlFinished, LeaseExpired};
use crate::sink::Sink;
use crate::store::StoreActor;
use crate::store::messages::{
    ApplyHints, ApplyOperator, Commit, NextUrls, PollShards, PromoteDue, ReadOperator, ReadOutlook,
    Refetch,
};
use actix::{
    Actor, ActorFutureExt, Addr, AsyncContext, Context, Handler, MessageResult, Recipient,
    ResponseActFuture, ResponseFuture, SpawnHandle, WrapFuture,
};
use crawl_core::outage::{Outage, Report};
use crawl_observability::metrics::metrics;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How often a sharded crawl asks the store about shard ownership and the crawl's counters.
const SHARD_POLL: Duration = Duration::from_millis(200);

/// How often continuous crawling asks the store for revisits that came due (and hands it sitemap hints).
const PROMOTE_EVERY: Duration = Duration::from_secs(1);
/// Revisits queued per request to the store.
const PROMOTE_MAX: usize = 1024;
/// How often continuous crawling reads the schedule's outlook (for the progress line and metrics).
const OUTLOOK_EVERY: Duration = Duration::from_secs(5);
/// How often the schedule's outlook is logged.
const OUTLOOK_LOG_EVERY: Duration = Duration::from_secs(60);
/// Revisits counted ahead, at most: the count is read every few seconds, so it stops where it has said enough
/// (the progress line shows a capped count as it is).
const OUTLOOK_CAP: u64 = 100_000;

/// How often the operator state is looked at: read again from the store in a crawl shared by many processes
/// (another process may have changed it), politeness overrides that lapsed let go, drops done cleared.
const OPERATOR_TICK: Duration = Duration::from_secs(1);

/// How long a window waits before asking an unreachable Redis again.
const REFILL_RETRY: Duration = Duration::from_millis(500);

/// Where durable work goes: the frontier store and the JSONL sink.
pub struct Durable {
    pub sink: Addr<Sink>,
    pub store: Addr<StoreActor>,
}

pub struct Scheduler {
    crawl: Crawl,
    fetchers: Vec<Option<Recipient<Fetch>>>,
    next_fetcher: usize,
    sink: Addr<Sink>,
    store: Addr<StoreActor>,
    supervisor: Recipient<CrawlFinished>,
    /// Told about leases whose deadline passed, to replace the stuck child.
    stuck: Option<Recipient<LeaseExpired>>,
    commit_interval: Duration,
    commit_timer: Option<SpawnHandle>,
    deadline_timer: Option<(Instant, SpawnHandle)>,
    wake: Option<(Instant, SpawnHandle)>,
    writes_in_flight: usize,
    forced: Option<FinishReason>,
    reported: bool,
    /// A shard poll is out.
    polling: bool,
    /// A request for due revisits is out.
    promoting: bool,
    /// When the schedule's outlook was last logged.
    outlook_logged: Option<Instant>,
    /// Shard polls failing in a row (Redis down): logged when they start, every half minute, and when they end.
    poll_outage: Outage,
    /// Operators' URL adds waiting for their answers, by token.
    adds: HashMap<u64, tokio::sync::oneshot::Sender<Vec<UrlAnswer>>>,
    next_add: u64,
    /// A read of the operator state is out.
    reading_operator: bool,
    faults: Faults,
    /// Ends the process when this actor panics.
    _guard: PanicGuard,
}

impl Scheduler {
    pub fn new(
        crawl: Crawl,
        fetchers: Vec<Recipient<Fetch>>,
        Durable { sink, store }: Durable,
        supervisor: Recipient<CrawlFinished>,
        commit_interval: Duration,
        faults: Faults,
        guard: PanicGuard,
    ) -> Scheduler {
        Scheduler {
            crawl,
            fetchers: fetchers.into_iter().map(Some).collect(),
            next_fetcher: 0,
            sink,
            store,
            supervisor,
            stuck: None,
            commit_interval,
            commit_timer: None,
            deadline_timer: None,
            wake: None,
            writes_in_flight: 0,
            forced: None,
            reported: false,
            polling: false,
            promoting: false,
            outlook_logged: None,
            poll_outage: Outage::default(),
            adds: HashMap::new(),
            next_add: 0,
            reading_operator: false,
            faults,
            _guard: guard,
        }
    }

    /// Where to report leases whose deadline passed.
    pub fn with_lease_expired(mut self, to: Recipient<LeaseExpired>) -> Scheduler {
        self.stuck = Some(to);
        self
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

    /// Sends the window refills the crawl asks for; each answer comes back through [`Crawl::filled`].
    fn refill(&mut self, ctx: &mut Context<Self>) {
        for req in self.crawl.take_refills() {
            self.crawl.store_request();
            let fut = self.store.send(NextUrls {
                host: req.host,
                after: req.refill.after,
                max: req.refill.max,
                subject: String::new(),
            });
            let sent = Instant::now();
            ctx.spawn(fut.into_actor(self).map(move |res, act, ctx| {
                let ok = matches!(res, Ok(Ok(_)));
                metrics().store_request("next_urls", sent.elapsed().as_secs_f64(), ok);
                act.on_filled(req, res, ctx);
            }));
        }
    }

    fn on_filled(
        &mut self,
        req: RefillRequest,
        res: Result<
            Result<Vec<crawl_core::frontier::Entry>, crawl_core::frontier::FrontierError>,
            actix::MailboxError,
        >,
        ctx: &mut Context<Self>,
    ) {
        let res =
            res.unwrap_or_else(|e| Err(crawl_core::frontier::FrontierError::Gone(e.to_string())));
        if let Err(e @ crawl_core::frontier::FrontierError::Redis { .. }) = res {
            // Redis is unreachable: the window asks again a little later (commits wait for it meanwhile).
            tracing::debug!(error = %e, "window refill failed; asking again");
            ctx.run_later(REFILL_RETRY, move |act, ctx| {
                let _ = act.crawl.filled(req, Err(e), Instant::now());
                act.after(ctx);
            });
            return;
        }
        if let Err(e) = self.crawl.filled(req, res, Instant::now()) {
            tracing::error!(error = %e, "frontier read failed; stopping");
            self.fatal(format!("frontier read failed: {e}"));
        }
        self.after(ctx);
    }

    fn fatal(&mut self, reason: String) {
        self.crawl.drain();
        if !matches!(self.forced, Some(FinishReason::Fatal(_))) {
            self.forced = Some(FinishReason::Fatal(reason));
        }
    }

    /// Re-drives leases whose deadline passed and keeps a timer on the next deadline.
    fn check_deadlines(&mut self, ctx: &mut Context<Self>) {
        let now = Instant::now();
        for (job, fetcher, url) in self.crawl.expire_leases(now) {
            // No new jobs for that fetcher until the supervisor gives it back (FetcherUp).
            if let Some(slot) = fetcher.and_then(|i| self.fetchers.get_mut(i)) {
                *slot = None;
            }
            if let Some(to) = &self.stuck {
                to.do_send(LeaseExpired { job, fetcher, url });
            }
        }
        let Some(at) = self.crawl.next_deadline() else {
            return;
        };
        if self.deadline_timer.as_ref().is_some_and(|(t, _)| *t <= at) {
            return;
        }
        if let Some((_, h)) = self.deadline_timer.take() {
            ctx.cancel_future(h);
        }
        let h = ctx.run_later(at.saturating_duration_since(now), |act, ctx| {
            act.deadline_timer = None;
            act.check_deadlines(ctx);
            act.after(ctx);
        });
        self.deadline_timer = Some((at, h));
    }

    fn pump(&mut self, ctx: &mut Context<Self>) {
        if self.forced.is_some() || !self.fetchers.iter().any(Option::is_some) {
            self.refill(ctx);
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
        self.refill(ctx);
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
        let Some(batch) = self.crawl.take_commit(Instant::now()) else {
            return;
        };
        self.crawl.store_request();
        let archive = self.crawl.take_archive();
        let fut = self.store.send(Commit { batch, archive });
        let sent = Instant::now();
        ctx.spawn(fut.into_actor(self).map(move |res, act, ctx| {
            let res = res
                .unwrap_or_else(|e| Err(crawl_core::frontier::FrontierError::Gone(e.to_string())));
            metrics().store_request("commit", sent.elapsed().as_secs_f64(), res.is_ok());
            if let Ok(c) = &res
                && !c.fenced_records.is_empty()
            {
                metrics().fenced(c.fenced_records.len() as u64);
            }
            match act.crawl.commit_done(res, Instant::now()) {
                Ok(lines) => act.write(lines, ctx),
                Err(e @ crawl_core::frontier::FrontierError::Unreachable { .. }) => {
                    tracing::error!(error = %e, "redis out of reach past max_outage_ms; stopping");
                    act.fatal(e.to_string());
                }
                Err(e) => {
                    tracing::error!(error = %e, "frontier commit failed; stopping");
                    act.fatal(format!("frontier commit failed: {e}"));
                }
            }
            act.after(ctx);
        }));
    }

    /// Asks the store what changed in shard ownership (one request at a time).
    fn poll_shards(&mut self, ctx: &mut Context<Self>) {
        if self.polling {
            return;
        }
        self.polling = true;
        self.crawl.store_request();
        let fut = self.store.send(PollShards {
            reread: self.crawl.take_reread(),
        });
        let sent = Instant::now();
        let token = self.crawl.poll_token();
        ctx.spawn(fut.into_actor(self).map(move |res, act, ctx| {
            act.polling = false;
            let ok = matches!(res, Ok(Ok(_)));
            metrics().store_request("poll", sent.elapsed().as_secs_f64(), ok);
            match res {
                Ok(Ok(changes)) => {
                    act.poll_went_through();
                    let (gained, lost) = (changes.gained.len() as u64, changes.lost.len() as u64);
                    metrics().shard_leases(changes.leases_renewed, changes.leases_lost);
                    metrics().spooled(changes.spooled);
                    let owned = act.crawl.shards_changed(changes, token, Instant::now());
                    metrics().shards(owned, gained, lost);
                }
                Ok(Err(e @ crawl_core::frontier::FrontierError::Lost(_))) => {
                    tracing::error!(error = %e, "the crawl's data is gone from redis; stopping");
                    act.fatal(e.to_string());
                }
                Ok(Err(e @ crawl_core::frontier::FrontierError::Unreachable { .. })) => {
                    tracing::error!(error = %e, "redis out of reach past max_outage_ms; stopping");
                    act.fatal(e.to_string());
                }
                Ok(Err(e)) => act.poll_failed(&e),
                Err(e) => act.poll_failed(&format!("store unavailable: {e}")),
            }
            act.after(ctx);
        }));
    }

    /// Continuous crawling: asks the store to queue the revisits due now (one request at a time; again at once
    /// while it finds a full batch), and hands it the sitemap hints waiting.
    fn promote(&mut self, ctx: &mut Context<Self>) {
        if self.promoting || self.crawl.is_draining() || self.forced.is_some() {
            return;
        }
        let now_ms = wall_ms();
        if let Some((hints, policy)) = self.crawl.take_hints() {
            self.crawl.store_request();
            let n = hints.len();
            let fut = self.store.send(ApplyHints {
                hints,
                policy,
                now_ms,
            });
            ctx.spawn(fut.into_actor(self).map(move |res, _act, _ctx| match res {
                Ok(Ok(h)) => {
                    for a in &h.anomalies {
                        crawl_observability::metrics::metrics().recrawl_anomaly(a.as_str());
                    }
                    tracing::debug!(hints = n, moved = h.moved, "sitemap hints applied");
                }
                Ok(Err(e)) => tracing::warn!(error = %e, "sitemap hints not applied"),
                Err(e) => tracing::warn!(error = %e, "sitemap hints not applied"),
            }));
        }
        self.promoting = true;
        self.crawl.store_request();
        let fut = self.store.send(PromoteDue {
            now_ms,
            max: PROMOTE_MAX,
        });
        let sent = Instant::now();
        ctx.spawn(fut.into_actor(self).map(move |res, act, ctx| {
            act.promoting = false;
            let ok = matches!(res, Ok(Ok(_)));
            metrics().store_request("promote", sent.elapsed().as_secs_f64(), ok);
            match res {
                Ok(Ok(added)) => {
                    let full = added.len() >= PROMOTE_MAX;
                    if !added.is_empty() {
                        tracing::debug!(revisits = added.len(), "revisits due queued");
                    }
                    act.crawl.promoted(added, Instant::now());
                    if full {
                        ctx.run_later(Duration::ZERO, |act, ctx| act.promote(ctx));
                    }
                }
                Ok(Err(e @ crawl_core::frontier::FrontierError::Redis { .. })) => {
                    tracing::debug!(error = %e, "revisits not queued; asking again");
                }
                Ok(Err(e)) => {
                    tracing::error!(error = %e, "revisit schedule read failed; stopping");
                    act.fatal(format!("revisit schedule read failed: {e}"));
                }
                Err(e) => act.fatal(format!("store unavailable: {e}")),
            }
            act.after(ctx);
        }));
    }

    /// Continuous crawling: reads when the next revisit is due and how many are due within the hour, for the
    /// progress line and the metrics; logs it every minute.
    fn read_outlook(&mut self, ctx: &mut Context<Self>) {
        self.crawl.store_request();
        let fut = self.store.send(ReadOutlook {
            horizon_ms: wall_ms() + 3_600_000,
            cap: OUTLOOK_CAP,
        });
        ctx.spawn(fut.into_actor(self).map(|res, act, _ctx| {
            let Ok(Ok(outlook)) = res else {
                return;
            };
            act.crawl.set_outlook(outlook);
            let now = Instant::now();
            if act
                .outlook_logged
                .is_none_or(|t| now.duration_since(t) >= OUTLOOK_LOG_EVERY)
            {
                act.outlook_logged = Some(now);
                let s = act.crawl.stats();
                let r = s.revisits.unwrap_or_default();
                let next_due_at = outlook
                    .next_due_ms
                    .map(crawl_core::recrawl::rfc3339_ms)
                    .unwrap_or_else(|| "-".to_owned());
                tracing::info!(
                    scheduled = r.scheduled,
                    next_due_at = %next_due_at,
                    due_within_hour = outlook.due_before,
                    queued = s.queued,
                    in_flight = s.in_flight,
                    "revisit schedule"
                );
            }
        }));
    }

    /// The operator state: read again in a crawl shared by many processes, lapsed politeness let go, finished
    /// drops cleared in the store.
    fn operator_tick(&mut self, ctx: &mut Context<Self>) {
        let (now, now_ms) = (Instant::now(), wall_ms());
        self.crawl.operator_lapse(now, now_ms);
        for change in self.crawl.take_operator_done() {
            self.operate(change, ctx);
        }
        if !self.crawl.is_sharded() || self.reading_operator {
            return;
        }
        self.reading_operator = true;
        self.crawl.store_request();
        let fut = self.store.send(ReadOperator);
        ctx.spawn(fut.into_actor(self).map(|res, act, ctx| {
            act.reading_operator = false;
            match res {
                Ok(Ok((version, state))) => {
                    if act
                        .crawl
                        .operator_state(version, state, Instant::now(), wall_ms())
                    {
                        act.after(ctx);
                    }
                }
                Ok(Err(e)) => tracing::debug!(error = %e, "operator state not read; asking again"),
                Err(e) => tracing::debug!(error = %e, "operator state not read; asking again"),
            }
        }));
    }

    /// Applies an operator's change through the store (made by this process: a finished drop), then obeys it.
    fn operate(&mut self, change: crawl_core::control::Change, ctx: &mut Context<Self>) {
        self.crawl.store_request();
        let fut = self.store.send(ApplyOperator { change });
        ctx.spawn(fut.into_actor(self).map(|res, act, ctx| match res {
            Ok(Ok((_, version, state))) => {
                act.crawl
                    .operator_state(version, state, Instant::now(), wall_ms());
                act.after(ctx);
            }
            Ok(Err(e)) => tracing::warn!(error = %e, "operator state not updated"),
            Err(e) => tracing::warn!(error = %e, "operator state not updated"),
        }));
    }

    /// Answers operators' URL adds that are durable, and asks the store to queue known ones again (`force`).
    fn answer_adds(&mut self, ctx: &mut Context<Self>) {
        for (token, answers) in self.crawl.take_add_answers() {
            if let Some(tx) = self.adds.remove(&token) {
                let _ = tx.send(answers);
            }
        }
        for (token, urls) in self.crawl.take_refetch() {
            self.crawl.store_request();
            let fut = self.store.send(Refetch { urls });
            ctx.spawn(fut.into_actor(self).map(move |res, act, ctx| {
                let res = res.unwrap_or_else(|e| {
                    Err(crawl_core::frontier::FrontierError::Gone(e.to_string()))
                });
                act.crawl.refetched(token, res, Instant::now());
                act.after(ctx);
            }));
        }
    }

    /// A shard poll went through: the end of an outage is logged.
    fn poll_went_through(&mut self) {
        if let Some(r) = self.poll_outage.succeeded(Instant::now()) {
            tracing::info!(
                failed_ms = r.lasted.as_millis() as u64,
                failures = r.failures,
                "shard poll works again"
            );
        }
    }

    /// A shard poll failed (it is sent again): logged when the failures start and every half minute after.
    fn poll_failed(&mut self, error: &dyn std::fmt::Display) {
        match self.poll_outage.failed(Instant::now()) {
            Some(Report::First) => tracing::warn!(%error, "shard poll failed; retrying"),
            Some(Report::Still {
                for_how_long,
                failures,
            }) => tracing::warn!(
                %error,
                failing_s = for_how_long.as_secs(),
                failures,
                "shard poll still failing; retrying"
            ),
            None => {}
        }
    }

    /// Sends committed records to the sink.
    fn write(&mut self, lines: Vec<(u64, Vec<u8>)>, ctx: &mut Context<Self>) {
        if lines.is_empty() {
            return;
        }
        self.writes_in_flight += 1;
        let fut = self.sink.send(WriteRecords { lines });
        ctx.spawn(fut.into_actor(self).map(|res, act, ctx| {
            act.writes_in_flight -= 1;
            match res {
                Ok(Ok(cp)) => act.crawl.written(cp),
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
        self.answer_adds(ctx);
        let (queued, in_flight, known, hosts) = self.crawl.gauges();
        crawl_observability::metrics::metrics().frontier(queued, in_flight, known, hosts);
        self.check_deadlines(ctx);
        if self.crawl.commit_due()
            || ((self.forced.is_some() || self.crawl.is_draining()) && self.crawl.has_staged())
        {
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
            Some(r)
                if self.writes_in_flight == 0
                    && !self.crawl.has_staged()
                    && !self.crawl.committing() =>
            {
                Some(r.clone())
            }
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
        if self.crawl.is_sharded() {
            // A crawl shared by many processes: shard ownership and the crawl's counters come from the store.
            self.poll_shards(ctx);
            ctx.run_interval(SHARD_POLL, |act, ctx| act.poll_shards(ctx));
        }
        ctx.run_interval(OPERATOR_TICK, |act, ctx| {
            act.operator_tick(ctx);
            act.after(ctx);
        });
        if self.crawl.revisits() {
            self.promote(ctx);
            self.read_outlook(ctx);
            ctx.run_interval(PROMOTE_EVERY, |act, ctx| act.promote(ctx));
            ctx.run_interval(OUTLOOK_EVERY, |act, ctx| act.read_outlook(ctx));
        }
        self.after(ctx);
    }
}

impl Handler<JobDone> for Scheduler {
    type Result = ();

    fn handle(&mut self, msg: JobDone, ctx: &mut Context<Self>) {
        self.faults.hit(Stage::Scheduler, &msg.url);
        self.crawl
            .job_done_archived(msg.job, msg.result, msg.dns, msg.archive, Instant::now());
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

impl Handler<ParsesLost> for Scheduler {
    type Result = ();

    fn handle(&mut self, msg: ParsesLost, ctx: &mut Context<Self>) {
        self.crawl.parses_lost(&msg.jobs, Instant::now());
        self.after(ctx);
    }
}

impl Handler<FetcherUp> for Scheduler {
    type Result = ();

    fn handle(&mut self, msg: FetcherUp, ctx: &mut Context<Self>) {
        if let Some(slot) = self.fetchers.get_mut(msg.index) {
            *slot = Some(msg.fetcher);
        }
        self.crawl.fetcher_back(msg.index);
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
        // The first fatal cause is the one reported; later ones are consequences.
        self.fatal(msg.reason);
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

impl Handler<Operate> for Scheduler {
    type Result = ResponseActFuture<Self, Result<bool, ControlError>>;

    fn handle(&mut self, msg: Operate, _ctx: &mut Context<Self>) -> Self::Result {
        let change = msg.change;
        tracing::info!(
            by = %change.by(),
            target = %change.host().map_or_else(|| "crawl".to_owned(), ToString::to_string),
            change = change.name(),
            "operator change"
        );
        self.crawl.store_request();
        let fut = self.store.send(ApplyOperator { change });
        Box::pin(fut.into_actor(self).map(|res, act, ctx| match res {
            Ok(Ok((changed, version, state))) => {
                act.crawl
                    .operator_state(version, state, Instant::now(), wall_ms());
                act.after(ctx);
                Ok(changed)
            }
            Ok(Err(e)) => Err(ControlError::Store(e.to_string())),
            Err(_) => Err(ControlError::Ended),
        }))
    }
}

impl Handler<AddUrls> for Scheduler {
    type Result = ResponseFuture<Result<Vec<UrlAnswer>, ControlError>>;

    fn handle(&mut self, msg: AddUrls, ctx: &mut Context<Self>) -> Self::Result {
        let (tx, rx) = tokio::sync::oneshot::channel();
        if self.forced.is_some() || self.crawl.is_draining() {
            return Box::pin(async { Err(ControlError::Ended) });
        }
        let token = self.next_add;
        self.next_add += 1;
        self.adds.insert(token, tx);
        tracing::info!(
            urls = msg.req.urls.len(),
            depth = msg.req.depth,
            force = msg.req.force,
            "operator adds urls"
        );
        self.crawl.add_urls(token, msg.req, Instant::now());
        self.after(ctx);
        Box::pin(async move { rx.await.map_err(|_| ControlError::Ended) })
    }
}

impl Handler<GetHosts> for Scheduler {
    type Result = MessageResult<GetHosts>;

    fn handle(&mut self, msg: GetHosts, _ctx: &mut Context<Self>) -> Self::Result {
        let views: Vec<HostView> = self.crawl.host_views(msg.sort, msg.limit, Instant::now());
        MessageResult(views)
    }
}

impl Handler<GetHost> for Scheduler {
    type Result = MessageResult<GetHost>;

    fn handle(&mut self, msg: GetHost, _ctx: &mut Context<Self>) -> Self::Result {
        MessageResult(self.crawl.host_view(&msg.name, Instant::now()))
    }
}

impl Handler<GetStatus> for Scheduler {
    type Result = MessageResult<GetStatus>;

    fn handle(&mut self, _msg: GetStatus, _ctx: &mut Context<Self>) -> Self::Result {
        let v: StatusView = self.crawl.status_view();
        MessageResult(v)
    }
}

impl Handler<Reconfigure> for Scheduler {
    type Result = ();

    fn handle(&mut self, msg: Reconfigure, ctx: &mut Context<Self>) {
        self.crawl.reconfigure(msg.politeness, msg.scope);
        if let Some(n) = msg.concurrency {
            self.crawl.set_concurrency(n);
        }
        if let Some(recrawl) = &msg.recrawl {
            self.crawl.reconfigure_revisits(recrawl);
        }
        self.after(ctx);
    }
}

/// Now, as Unix ms.
fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
