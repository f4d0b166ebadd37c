//! The fetcher actor: runs many fetches at once on its arbiter's thread and hands each answer to the parser: a
//! small page to a parser of its own, on this thread (no hand-over to a parser thread and back), anything else to
//! the parser threads.
//!
//! Politeness is not here: the scheduler decides what may start, so restarting a fetcher never bursts a host.
//! A panic inside a fetch is caught; the fetcher tells the supervisor which job it held and stops, the supervisor
//! re-drives its jobs through the scheduler and starts a new fetcher after a backoff.

use super::connector::{ConnProbe, with_gate, with_probe};
use super::error::FetchError;
use super::http::HttpClient;
use crate::faults::{Faults, Stage};
use crate::job::panic_text;
use crate::parser::pool::ParserPool;
use crate::protocol::JobDone;
use crate::protocol::JobId;
use crate::protocol::Parse;
use crate::protocol::RawResponse;
use crate::protocol::{ChildFailed, ChildId};
use crate::protocol::{Fetch, Ping};
use crate::protocol::{Job, JobResult};
use crate::resolver::local::{LocalAnswers, Shared};
use crate::resolver::logic::Outcome;
use crate::resolver::messages::Resolve;
use actix::{Actor, ActorContext, AsyncContext, Context, Handler, Recipient, WeakAddr};
use crawl_core::frontier::JobKind;
use crawl_core::record::DnsInfo;
use crawl_core::record::Reason;
use crawl_core::robots::MAX_ROBOTS_REDIRECTS;
use futures_util::FutureExt;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::rc::Rc;
use std::sync::Arc;
use tokio::task::AbortHandle;

/// The fetcher's tasks still running, by job: aborted when the fetcher stops.
type Running = Rc<RefCell<BTreeMap<JobId, AbortHandle>>>;

/// One fetcher.
///
/// Each fetch runs as a task of its own on the fetcher's thread, not as a future spawned into the actor's context:
/// actix polls every future of a context whenever any of them is woken, so with dozens of fetches in flight each
/// readiness event polled them all (about nine polls a fetch where three do). A task is polled only when its own
/// socket or timer wakes it. The tasks end with the fetcher: they are aborted when it stops.
pub struct Fetcher {
    index: usize,
    /// The resolver and this fetcher's copy of its answers; None when names are not resolved (tests).
    dns: Option<Rc<Dns>>,
    /// Shared by this fetcher's fetches (a count of this thread's, where cloning the client took one atomic
    /// count for each of its parts a fetch, and made each fetch's future the client's 440 bytes larger).
    client: Rc<HttpClient>,
    /// Where a finished fetch goes, shared with the fetches' tasks.
    deliver: Rc<Deliver>,
    /// The fetches in flight, by job (ids rise, so a B-tree appends), to abort when the fetcher stops.
    running: Running,
    supervisor: Recipient<ChildFailed>,
    faults: Faults,
}

/// The resolver actor (on its own thread), and the answers it gave this fetcher, kept until their TTL runs out
/// ([`crate::resolver::local`]): a fetch of a known name does not wait for another thread.
struct Dns {
    resolver: Recipient<Resolve>,
    answers: RefCell<LocalAnswers>,
}

/// What a fetch's task hands its result to.
struct Deliver {
    parser: ParserPool,
    /// Parses small pages on this fetcher's thread; the rest go to `parser`.
    inline: crate::parser::Parser,
    scheduler: Recipient<JobDone>,
}

impl Deliver {
    fn step(&self, step: Step) {
        match step {
            Step::Parse(p) => {
                if let Some(p) = self.inline.try_inline(*p) {
                    self.parser.send(p);
                }
            }
            Step::Done(d) => self.scheduler.do_send(d),
        }
    }
}

/// A fetch's task caught a panic: the fetcher reports it and stops.
#[derive(actix::Message)]
#[rtype(result = "()")]
struct JobPanicked {
    job: JobId,
    url: String,
    detail: String,
}

impl Fetcher {
    pub fn new(
        index: usize,
        client: HttpClient,
        parser: ParserPool,
        scheduler: Recipient<JobDone>,
        supervisor: Recipient<ChildFailed>,
        faults: Faults,
        resolver: Option<(Recipient<Resolve>, Arc<Shared>)>,
    ) -> Fetcher {
        Fetcher {
            index,
            dns: resolver.map(|(resolver, shared)| {
                Rc::new(Dns {
                    resolver,
                    answers: RefCell::new(LocalAnswers::new(shared)),
                })
            }),
            client: Rc::new(client),
            deliver: Rc::new(Deliver {
                inline: parser.inline_parser(),
                parser,
                scheduler,
            }),
            running: Rc::default(),
            supervisor,
            faults,
        }
    }
}

impl Actor for Fetcher {
    type Context = Context<Self>;

    fn started(&mut self, _ctx: &mut Context<Self>) {
        tracing::debug!(fetcher = self.index, "fetcher started");
    }

    fn stopped(&mut self, _ctx: &mut Context<Self>) {
        // A stopped fetcher's jobs are re-driven by the scheduler: none of them may go on here.
        for (_, task) in std::mem::take(&mut *self.running.borrow_mut()) {
            task.abort();
        }
    }
}

/// What a fetch leads to. One lives per request, moved once: a `JobDone` is sent as it is (boxing it would cost an
/// allocation per failed request to save stack bytes nobody keeps).
#[allow(clippy::large_enum_variant)]
enum Step {
    Parse(Box<Parse>),
    Done(JobDone),
}

/// Resolves the job's host through the resolver actor (IP literals and a missing resolver skip this). An error is
/// the job's result: NXDOMAIN is final, no clean answer is retried (the URL waits).
///
/// The answer is awaited for at most `deadline` (the request's total deadline): a resolver that never answers (its
/// thread blocked) fails the job with a retryable DNS error instead of holding it forever.
async fn resolve_host(
    dns: Option<&Dns>,
    url: &url::Url,
    trace: &crawl_observability::trace::TraceCtx,
    deadline: std::time::Duration,
) -> Result<Option<DnsInfo>, (JobResult, Option<DnsInfo>)> {
    let (Some(dns), Some(url::Host::Domain(name))) = (dns, url.host()) else {
        return Ok(None);
    };
    let now = std::time::Instant::now();
    // An answer from the fetcher's copy took no time and asked no one: it adds no span (the lookup that filled the
    // copy has its span, in the trace of the URL that asked; this URL's record says where its answer came from).
    if let Some(info) = dns.answers.borrow_mut().get(name, now) {
        return Ok(Some(info));
    }
    let asked = dns.answers.borrow().generation();
    let ask = dns.resolver.send(Resolve {
        name: name.to_owned(),
        trace: *trace,
    });
    let outcome = match tokio::time::timeout(deadline, ask).await {
        Ok(Ok(o)) => o,
        Err(_) => {
            let result = JobResult::FetchFailed {
                reason: Reason::Dns,
                detail: format!(
                    "{name}: no answer from the resolver within {} ms",
                    deadline.as_millis()
                ),
                retryable: true,
            };
            return Err((result, None));
        }
        Ok(Err(e)) => {
            let result = JobResult::FetchFailed {
                reason: Reason::Dns,
                detail: format!("resolver unavailable: {e}"),
                retryable: true,
            };
            return Err((result, None));
        }
    };
    dns.answers
        .borrow_mut()
        .put(name, &outcome, std::time::Instant::now(), asked);
    let info = outcome.dns_info();
    match outcome {
        Outcome::Resolved(_) => Ok(Some(info)),
        Outcome::NxDomain { rules } => {
            let detail = if rules.is_empty() {
                format!("{name}: nxdomain")
            } else {
                format!("{name}: nxdomain (hijacked answer dropped)")
            };
            let result = JobResult::FetchFailed {
                reason: Reason::Dns,
                detail,
                retryable: false,
            };
            Err((result, Some(info)))
        }
        Outcome::Unresolved {
            polluted, detail, ..
        } => {
            let reason = if polluted {
                Reason::DnsPolluted
            } else {
                Reason::Dns
            };
            let result = JobResult::FetchFailed {
                reason,
                detail: format!("{name}: {detail}"),
                retryable: true,
            };
            Err((result, Some(info)))
        }
    }
}

async fn run_job(client: Rc<HttpClient>, job: Job, faults: Faults, dns: Option<Rc<Dns>>) -> Step {
    faults.hit(Stage::Fetcher, &job.entry.url);
    let url = match crawl_core::urlparts::parse(&job.entry.url) {
        Ok(u) => u,
        Err(e) => {
            return Step::Done(JobDone {
                job: job.id,
                url: job.entry.url,
                result: FetchError::InvalidUrl(e.to_string()).into_result(),
                dns: None,
                archive: None,
            });
        }
    };
    let deadline = client.settings().total_timeout;
    let dns = match resolve_host(dns.as_deref(), &url, &job.trace, deadline).await {
        Ok(dns) => dns,
        Err((result, dns)) => {
            return Step::Done(JobDone {
                job: job.id,
                url: job.entry.url,
                result,
                dns,
                archive: None,
            });
        }
    };
    if job.gate.as_ref().is_some_and(|g| !g.is_open()) {
        // The shard's lease ran out while the job waited: another process may be crawling the host now.
        return Step::Done(JobDone {
            job: job.id,
            url: job.entry.url,
            result: JobResult::NotStarted,
            dns,
            archive: None,
        });
    }
    let page_url =
        (!matches!(job.entry.kind, JobKind::Robots | JobKind::Sitemap)).then(|| url.clone());
    // The request's future is made where it is awaited (a few KiB: every move of it is a copy).
    let (kind, referer, client) = (job.entry.kind, job.entry.parent.as_deref(), &*client);
    let validators = conditional_on(&job.entry);
    let fetch = move || async move {
        match kind {
            JobKind::Robots => get_following(client, url, MAX_ROBOTS_REDIRECTS).await,
            // Only pages, robots.txt and sitemaps are ever leased; excluded kinds are recorded without a fetch.
            _ => client.get_conditional(&url, referer, validators).await,
        }
    };
    let result = fetch().await;
    match result {
        Ok(response) => Step::Parse(Box::new(Parse {
            job,
            response,
            page_url,
            dns,
        })),
        // The answer went past max_body_bytes: the parser records it too large (and archives what was read).
        Err(FetchError::TooLarge {
            partial: Some(response),
            ..
        }) => Step::Parse(Box::new(Parse {
            job,
            response: *response,
            page_url,
            dns,
        })),
        // A failure, or a connection that refused to send because the host's lease ran out after the start check
        // above (nothing went out: not started).
        Err(e) => Step::Done(JobDone {
            job: job.id,
            url: job.entry.url,
            result: e.into_result(),
            dns,
            archive: None,
        }),
    }
}

/// The validators a job's request carries: those of its URL's last fetch, for a revisit of a page, a requisite or
/// a sitemap. A page that redirects is fetched once (its target is a job of its own, with its own prior), so the
/// validators only ever go to the URL they belong to.
///
/// robots.txt is always fetched in full: its job's result has no way to say "the rules you had still hold", and
/// a 304 would leave the host without rules.
fn conditional_on(entry: &crawl_core::frontier::Entry) -> Option<&crawl_core::recrawl::Validators> {
    if entry.kind == JobKind::Robots {
        return None;
    }
    entry
        .prior
        .as_deref()
        .map(|p| &p.validators)
        .filter(|v| !v.is_empty())
}

/// GET that follows up to `max` redirects (robots.txt, RFC 9309 2.3.1.2).
async fn get_following(
    client: &HttpClient,
    mut url: url::Url,
    max: u32,
) -> Result<RawResponse, FetchError> {
    let mut hops = 0;
    loop {
        let resp = client.get(&url, None).await?;
        if !(300..400).contains(&resp.status) || hops >= max {
            return Ok(resp);
        }
        let next = resp
            .headers
            .get(http::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|loc| url.join(loc).ok());
        match next {
            Some(n) => url = n,
            None => return Ok(resp),
        }
        hops += 1;
    }
}

impl Handler<Fetch> for Fetcher {
    type Result = ();

    fn handle(&mut self, msg: Fetch, ctx: &mut Context<Self>) {
        let id = msg.job.id;
        let url = msg.job.entry.url.clone();
        let probe = msg
            .job
            .trace
            .is_sampled()
            .then(|| ConnProbe::new(msg.job.trace));
        let gate = msg.job.gate.clone();
        let (deliver, running, me) = (
            self.deliver.clone(),
            self.running.clone(),
            ctx.address().downgrade(),
        );
        let job = run_job(
            self.client.clone(),
            msg.job,
            self.faults.clone(),
            self.dns.clone(),
        );
        // The fetch and the hand-over of its end, under one containment; boxed at once: the future is kilobytes,
        // and the task would otherwise be moved whole twice.
        let fut = Box::pin(AssertUnwindSafe(async move { deliver.step(job.await) }).catch_unwind());
        // For an exported trace the connectors add their spans (connect, TLS, first byte) through the probe, in
        // the task's scope (around the boxed future: a pointer, not the request's future, is wrapped and moved);
        // for the others nothing is measured.
        // In a crawl shared by many processes, the connections it opens check the host's lease at each write.
        let task = match (probe, gate) {
            (Some(probe), Some(gate)) => spawn_job(
                with_gate(gate, with_probe(probe, fut)),
                id,
                running,
                me,
                url,
            ),
            (Some(probe), None) => spawn_job(with_probe(probe, fut), id, running, me, url),
            (None, Some(gate)) => spawn_job(with_gate(gate, fut), id, running, me, url),
            (None, None) => spawn_job(fut, id, running, me, url),
        };
        self.running.borrow_mut().insert(id, task.abort_handle());
    }
}

/// Runs a job's future (the fetch and the hand-over of its end, its panic caught) as a task of the fetcher's
/// thread: it leaves the fetcher's running set when it ends, and a panic is reported to the fetcher.
fn spawn_job(
    fut: impl Future<Output = std::thread::Result<()>> + 'static,
    id: JobId,
    running: Running,
    me: WeakAddr<Fetcher>,
    url: String,
) -> tokio::task::JoinHandle<()> {
    tokio::task::spawn_local(async move {
        let res = fut.await;
        running.borrow_mut().remove(&id);
        if let Err(payload) = res {
            let detail = panic_text(payload.as_ref());
            if let Some(me) = me.upgrade() {
                me.do_send(JobPanicked {
                    job: id,
                    url,
                    detail,
                });
            }
        }
    })
}

impl Handler<JobPanicked> for Fetcher {
    type Result = ();

    fn handle(&mut self, msg: JobPanicked, ctx: &mut Context<Self>) {
        tracing::error!(
            fetcher = self.index,
            url = msg.url,
            detail = msg.detail,
            "fetcher panicked; stopping it"
        );
        self.supervisor.do_send(ChildFailed {
            child: ChildId::Fetcher(self.index),
            job: Some(msg.job),
            detail: msg.detail,
        });
        ctx.stop();
    }
}

impl Handler<Ping> for Fetcher {
    type Result = ();

    fn handle(&mut self, _msg: Ping, _ctx: &mut Context<Self>) {}
}

#[cfg(test)]
mod conditional_tests;
#[cfg(test)]
mod tests;
