//! The parser actor: CPU-bound decoding and parsing on a `SyncArbiter` thread pool, off the async threads.
//!
//! A panic while parsing is caught: the job goes back to the scheduler as `Panicked` (it re-drives the URL with
//! attempt + 1), the supervisor is told, and the actor is stopped, which makes the `SyncArbiter` build a fresh one.

use super::logic::{ParseSettings, process};
use super::messages::Parse;
use crate::job::{Faults, JobResult, panic_text};
use crate::scheduler::messages::JobDone;
use crate::supervisor::messages::{ChildFailed, ChildId};
use actix::{Actor, ActorContext, Handler, Recipient, SyncContext};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

/// One parser thread's actor.
pub struct Parser {
    settings: Arc<ParseSettings>,
    scheduler: Recipient<JobDone>,
    supervisor: Recipient<ChildFailed>,
    faults: Arc<Faults>,
}

impl Parser {
    pub fn new(
        settings: Arc<ParseSettings>,
        scheduler: Recipient<JobDone>,
        supervisor: Recipient<ChildFailed>,
        faults: Arc<Faults>,
    ) -> Parser {
        Parser {
            settings,
            scheduler,
            supervisor,
            faults,
        }
    }
}

impl Actor for Parser {
    type Context = SyncContext<Self>;
}

impl Handler<Parse> for Parser {
    type Result = ();

    fn handle(&mut self, msg: Parse, ctx: &mut SyncContext<Self>) {
        let Parse { job, response } = msg;
        let id = job.id;
        let settings = &self.settings;
        let faults = &self.faults;
        let result = catch_unwind(AssertUnwindSafe(|| {
            Faults::maybe_panic(&faults.panic_in_parser, &job.entry.url);
            process(settings, &job, response)
        }));
        match result {
            Ok(result) => self.scheduler.do_send(JobDone { job: id, result }),
            Err(payload) => {
                let detail = panic_text(payload.as_ref());
                tracing::error!(url = %job.entry.url, detail, "parser panicked; restarting it");
                self.scheduler.do_send(JobDone {
                    job: id,
                    result: JobResult::Panicked {
                        stage: "parser",
                        detail: detail.clone(),
                    },
                });
                self.supervisor.do_send(ChildFailed {
                    child: ChildId::Parser,
                    job: Some(id),
                    detail,
                });
                ctx.stop();
            }
        }
    }
}
