//! The parser actor: CPU-bound decoding and parsing on a `SyncArbiter` thread pool, off the async threads. A
//! fetcher keeps a parser of its own for small pages ([`Parser::try_inline`]), parsed on its thread.
//!
//! A panic while parsing is caught: the job goes back to the scheduler as `Panicked` (it re-drives the URL with
//! attempt + 1), the supervisor is told, and the actor is stopped, which makes the `SyncArbiter` build a fresh one.
//! Each parser runs on a thread of its own ([`super::pool`]) and marks the job it works on, so a stuck thread can be
//! found and replaced.

use super::logic::{Inline, ParseSettings, process_at, process_inline, version_attr};
use super::pool::Busy;
use crate::backoff::restart_delay;
use crate::faults::{Faults, Mode, Stage};
use crate::job::panic_text;
use crate::protocol::JobResult;
use crate::protocol::Parse;
use crate::protocol::{ChildFailed, ChildId};
use crate::protocol::{Job, JobDone};
use actix::{Actor, ActorContext, Handler, Recipient, SyncContext};
use crawl_observability::Attr;
use crawl_observability::trace::Stamp;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// One parser thread's actor.
pub struct Parser {
    settings: crate::live::Live<ParseSettings>,
    scheduler: Recipient<JobDone>,
    supervisor: Recipient<ChildFailed>,
    faults: Faults,
    restarts: Arc<PoolRestarts>,
    busy: Arc<Busy>,
}

/// Restart bookkeeping shared by the parsers of one pool: panics in a row (reset by a clean parse) and the
/// backoff a freshly built parser waits before it takes work.
#[derive(Debug)]
pub struct PoolRestarts {
    in_a_row: AtomicU32,
    base: Duration,
    max: Duration,
}

impl PoolRestarts {
    pub fn new(base: Duration, max: Duration) -> PoolRestarts {
        PoolRestarts {
            in_a_row: AtomicU32::new(0),
            base,
            max,
        }
    }

    /// How long a parser built after the latest panic waits before taking work.
    pub fn delay(&self) -> Duration {
        match self.in_a_row.load(Ordering::Relaxed) {
            0 => Duration::ZERO,
            n => restart_delay(self.base, self.max, n),
        }
    }
}

impl Parser {
    pub fn new(
        settings: crate::live::Live<ParseSettings>,
        scheduler: Recipient<JobDone>,
        supervisor: Recipient<ChildFailed>,
        faults: Faults,
        restarts: Arc<PoolRestarts>,
        busy: Arc<Busy>,
    ) -> Parser {
        Parser {
            settings,
            scheduler,
            supervisor,
            faults,
            restarts,
            busy,
        }
    }
}

impl Actor for Parser {
    type Context = SyncContext<Self>;

    fn started(&mut self, _ctx: &mut SyncContext<Self>) {
        // A parser rebuilt after a panic waits out the backoff on its own thread; the pool's other threads go on.
        let delay = self.restarts.delay();
        if !delay.is_zero() {
            tracing::info!(
                delay_ms = delay.as_millis() as u64,
                "parser restarting after backoff"
            );
            std::thread::sleep(delay);
        }
    }
}

/// What the parser saw of a response before handling it, for the `http.body` span.
struct BodySeen {
    wire_bytes: usize,
    version: http::Version,
    timings: crate::protocol::Timings,
}

impl BodySeen {
    fn of(response: &crate::protocol::RawResponse) -> BodySeen {
        BodySeen {
            wire_bytes: response.body.len(),
            version: response.version,
            timings: response.timings,
        }
    }
}

/// The `http.body` span (from the fetcher's timings) and the `parse` span of an exported trace.
fn record_spans(
    trace: &crawl_observability::trace::TraceCtx,
    body: &BodySeen,
    result: &std::thread::Result<JobResult>,
    parse_start: Stamp,
    parse_end: Stamp,
) {
    let page = match result {
        Ok(JobResult::Page(p)) => Some(p),
        _ => None,
    };
    if let Some(started) = body.timings.started {
        // One conversion of the start instant; the ends are offsets from it.
        let started = Stamp::from(started);
        let (from, to) = (started + body.timings.headers, started + body.timings.total);
        let size =
            crawl_observability::keyed_i64!("http.response.body.size", body.wire_bytes as i64);
        let version = version_attr(body.version);
        match page {
            Some(p) => {
                let decoded = i64::try_from(p.content_length).unwrap_or(i64::MAX);
                let decoded = crawl_observability::keyed_i64!("crawl.decoded_bytes", decoded);
                trace.span("http.body", from, to, &[size, version, decoded]);
            }
            None => trace.span("http.body", from, to, &[size, version]),
        }
    }
    match (result, page) {
        (_, Some(p)) => {
            let links = [
                crawl_observability::keyed_i64!("crawl.links_found", i64::from(p.links_found)),
                crawl_observability::keyed_i64!("crawl.links_followed", p.links.len() as i64),
                Attr::new("crawl.noindex", true),
            ];
            // The flag only when set (the usual page is indexable).
            let n = if p.noindex { 3 } else { 2 };
            trace.span("parse", parse_start, parse_end, &links[..n]);
        }
        (Ok(_), None) => trace.span("parse", parse_start, parse_end, &[]),
        (Err(_), None) => {
            trace.failed_span("parse", parse_start, parse_end, &[], "parser panicked")
        }
    }
}

impl Parser {
    /// Parses `msg` on the calling thread (a fetcher's) when it is a page small enough for it
    /// ([`process_inline`]), and sends the job's end to the scheduler (a panic also to the supervisor, as a
    /// parser's); returns the message untouched otherwise, for the parser threads. A URL marked to freeze the
    /// parser (a test hook) always goes to the parser threads, whose stuck threads are replaced.
    pub fn try_inline(&self, msg: Parse) -> Option<Parse> {
        let settings = self.settings.load();
        let settings = settings.as_ref();
        if settings.inline_max_bytes == 0
            || self.faults.matches(Stage::Parser, &msg.job.entry.url) == Some(Mode::Freeze)
        {
            return Some(msg);
        }
        let Parse {
            job,
            response,
            page_url,
            dns,
        } = msg;
        let seen = BodySeen::of(&response);
        // On the clock of the trace's other spans (the engine's monotonic one), not the wall clock.
        let parse_start = Stamp::now();
        let result = self.contained(&job, || process_inline(settings, &job, response, page_url));
        let result = match result {
            Ok(Inline::Done(r)) => Ok(r),
            Ok(Inline::Declined(back)) => {
                let (response, page_url) = *back;
                return Some(Parse {
                    job,
                    response,
                    page_url,
                    dns,
                });
            }
            Err(payload) => Err(payload),
        };
        self.conclude(job, dns, result, None, &seen, parse_start);
        None
    }

    /// Runs `work` for `job` with a parser's containment: the fault hook first (a test hook), then the work, any
    /// panic caught. The same on a parser thread and on a fetcher's.
    fn contained<T>(&self, job: &Job, work: impl FnOnce() -> T) -> std::thread::Result<T> {
        catch_unwind(AssertUnwindSafe(|| {
            self.faults.hit(Stage::Parser, &job.entry.url);
            work()
        }))
    }

    /// Records the spans of a parse that ended and sends the job's end to the scheduler; a panic is logged and
    /// told to the supervisor too. Returns whether the parse panicked.
    fn conclude(
        &self,
        job: Job,
        dns: Option<crawl_core::record::DnsInfo>,
        result: std::thread::Result<JobResult>,
        archive: Option<Box<crate::protocol::Archived>>,
        seen: &BodySeen,
        parse_start: Stamp,
    ) -> bool {
        if job.trace.is_sampled() {
            let parse_end = Stamp::now();
            record_spans(&job.trace, seen, &result, parse_start, parse_end);
        }
        let id = job.id;
        match result {
            Ok(result) => {
                self.scheduler.do_send(JobDone {
                    job: id,
                    url: job.entry.url,
                    result,
                    dns,
                    archive,
                });
                false
            }
            Err(payload) => {
                let detail = panic_text(payload.as_ref());
                tracing::error!(url = %job.entry.url, detail, "parser panicked; restarting it");
                self.scheduler.do_send(JobDone {
                    job: id,
                    url: job.entry.url.clone(),
                    result: JobResult::Panicked {
                        stage: "parser",
                        detail: detail.clone(),
                    },
                    dns: None,
                    archive: None,
                });
                self.supervisor.do_send(ChildFailed {
                    child: ChildId::Parser,
                    job: Some(id),
                    detail,
                });
                true
            }
        }
    }
}

impl Handler<Parse> for Parser {
    type Result = ();

    fn handle(&mut self, msg: Parse, ctx: &mut SyncContext<Self>) {
        let Parse {
            job,
            response,
            page_url,
            dns,
        } = msg;
        self.busy.start(job.id);
        let settings = self.settings.load();
        let settings = settings.as_ref();
        let seen = BodySeen::of(&response);
        // On the clock of the trace's other spans (the engine's monotonic one), not the wall clock.
        let parse_start = Stamp::now();
        let result = self.contained(&job, || {
            let prepared = settings
                .archive_level
                .and_then(|level| super::archive::prepare(&job, &response, level));
            let result = process_at(settings, &job, response, page_url);
            let archive = prepared.map(|p| Box::new(super::archive::archived(p, &result)));
            (result, archive)
        });
        let (result, archive) = match result {
            Ok((r, a)) => (Ok(r), a),
            Err(p) => (Err(p), None),
        };
        self.busy.clear();
        if self.conclude(job, dns, result, archive, &seen, parse_start) {
            self.restarts.in_a_row.fetch_add(1, Ordering::Relaxed);
            ctx.stop();
        } else {
            self.restarts.in_a_row.store(0, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod inline_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_backoff_grows_with_panics_in_a_row_and_resets() {
        let r = PoolRestarts::new(Duration::from_millis(100), Duration::from_secs(1));
        assert_eq!(r.delay(), Duration::ZERO);
        r.in_a_row.fetch_add(1, Ordering::Relaxed);
        assert_eq!(r.delay(), Duration::from_millis(100));
        r.in_a_row.fetch_add(2, Ordering::Relaxed);
        assert_eq!(r.delay(), Duration::from_millis(400));
        r.in_a_row.fetch_add(10, Ordering::Relaxed);
        assert_eq!(r.delay(), Duration::from_secs(1), "capped");
        r.in_a_row.store(0, Ordering::Relaxed);
        assert_eq!(r.delay(), Duration::ZERO);
    }
}
