//! Test stand-ins for the scheduler and the supervisor: an actor that records the job ends and child failures it
//! is sent, and a wait for a condition on what it recorded.

use crate::protocol::{ChildFailed, JobDone};
use actix::{Actor, Addr, Context, Handler};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the stand-ins received.
#[derive(Default)]
pub(crate) struct Seen {
    pub done: Vec<JobDone>,
    pub failed: Vec<ChildFailed>,
}

pub(crate) struct Recorder(Arc<Mutex<Seen>>);

impl Recorder {
    /// A started recorder and what it records. Must run inside an actix `System`.
    pub(crate) fn start_new() -> (Addr<Recorder>, Arc<Mutex<Seen>>) {
        let seen = Arc::new(Mutex::new(Seen::default()));
        (Recorder(seen.clone()).start(), seen)
    }
}

impl Actor for Recorder {
    type Context = Context<Self>;
}

impl Handler<JobDone> for Recorder {
    type Result = ();
    fn handle(&mut self, msg: JobDone, _ctx: &mut Context<Self>) {
        self.0.lock().unwrap().done.push(msg);
    }
}

impl Handler<ChildFailed> for Recorder {
    type Result = ();
    fn handle(&mut self, msg: ChildFailed, _ctx: &mut Context<Self>) {
        self.0.lock().unwrap().failed.push(msg);
    }
}

/// Waits until `done` holds, checking every 10 ms for at most five seconds; whether it held.
pub(crate) async fn until(done: impl Fn() -> bool) -> bool {
    for _ in 0..500 {
        if done() {
            return true;
        }
        actix_rt::time::sleep(Duration::from_millis(10)).await;
    }
    done()
}
