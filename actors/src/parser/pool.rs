//! The parser pool: one single-thread `SyncArbiter` per slot, so a parser thread that is stuck (blocked or
//! looping) can be told apart from the others and replaced. A shared pool of threads could not be: its threads take
//! work from one queue and have no address of their own.
//!
//! Fetchers hand responses to the slots round-robin. Each slot records the job its parser is working on and the
//! jobs waiting in its mailbox, so the supervisor can tell which slot holds an expired lease and swap in a fresh
//! thread; the stuck thread is left behind (a thread cannot be killed) and whatever it answers later is ignored by
//! the scheduler. The jobs that waited behind it are handed back with the replacement, to be queued again at once
//! (their responses went with the old mailbox).

use super::Parser;
use crate::protocol::JobId;
use crate::protocol::Parse;
use actix::{Addr, SyncArbiter};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Debug, Default)]
struct SlotJobs {
    current: Option<JobId>,
    /// Sent to the slot, not started yet (mailbox order).
    waiting: VecDeque<JobId>,
}

/// The job a parser is working on and the jobs waiting for it, shared between the parser and the pool.
#[derive(Debug, Default)]
pub struct Busy(Mutex<SlotJobs>);

impl Busy {
    fn lock(&self) -> MutexGuard<'_, SlotJobs> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `job` was sent to the parser's mailbox.
    fn queued(&self, job: JobId) {
        self.lock().waiting.push_back(job);
    }

    /// The parser starts working on `job`.
    pub fn start(&self, job: JobId) {
        let mut jobs = self.lock();
        jobs.current = Some(job);
        // Mailboxes are FIFO: the job is at the front unless it was sent around the pool.
        if jobs.waiting.front() == Some(&job) {
            jobs.waiting.pop_front();
        } else if let Some(i) = jobs.waiting.iter().position(|j| *j == job) {
            jobs.waiting.remove(i);
        }
    }

    /// The parser is done with its job.
    pub fn clear(&self) {
        self.lock().current = None;
    }

    pub fn current(&self) -> Option<JobId> {
        self.lock().current
    }

    /// The jobs sent to the parser and not started.
    pub fn waiting(&self) -> Vec<JobId> {
        self.lock().waiting.iter().copied().collect()
    }
}

/// Builds the parser of a slot, given the slot's [`Busy`].
pub type ParserFactory = Arc<dyn Fn(Arc<Busy>) -> Parser + Send + Sync>;

struct Slot {
    addr: Addr<Parser>,
    busy: Arc<Busy>,
}

struct Inner {
    slots: Mutex<Vec<Slot>>,
    next: AtomicUsize,
    factory: ParserFactory,
}

/// The parser slots. Cheap to clone; every clone sees replacements at once.
#[derive(Clone)]
pub struct ParserPool {
    inner: Arc<Inner>,
}

fn start_slot(factory: &ParserFactory) -> Slot {
    let busy = Arc::new(Busy::default());
    let (f, b) = (factory.clone(), busy.clone());
    // One thread per slot; the SyncArbiter rebuilds the slot's parser (same Busy) after a caught panic.
    let addr = SyncArbiter::start(1, move || f(b.clone()));
    Slot { addr, busy }
}

impl ParserPool {
    /// Starts `threads` slots (at least one). Must run inside an actix `System`.
    pub fn start(threads: usize, factory: ParserFactory) -> ParserPool {
        let slots = (0..threads.max(1)).map(|_| start_slot(&factory)).collect();
        ParserPool {
            inner: Arc::new(Inner {
                slots: Mutex::new(slots),
                next: AtomicUsize::new(0),
                factory,
            }),
        }
    }

    fn slots(&self) -> MutexGuard<'_, Vec<Slot>> {
        self.inner.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A parser like the slots' ones, for a fetcher to parse small pages on its own thread
    /// ([`Parser::try_inline`]).
    pub fn inline_parser(&self) -> Parser {
        (self.inner.factory)(Arc::new(Busy::default()))
    }

    /// Number of slots.
    pub fn len(&self) -> usize {
        self.slots().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Hands a response to the next slot, round-robin.
    pub fn send(&self, msg: Parse) {
        let addr = {
            let slots = self.slots();
            if slots.is_empty() {
                return;
            }
            let i = self.inner.next.fetch_add(1, Ordering::Relaxed) % slots.len();
            // Noted while the slots are locked: a replacement of this slot either sees the job or happens first
            // (and then the job goes to the fresh thread).
            slots[i].busy.queued(msg.job.id);
            slots[i].addr.clone()
        };
        addr.do_send(msg);
    }

    /// The slot whose parser is working on `job`.
    pub fn holder_of(&self, job: JobId) -> Option<usize> {
        self.slots()
            .iter()
            .position(|s| s.busy.current() == Some(job))
    }

    /// Replaces slot `i` with a fresh parser thread; the old thread is abandoned. Returns the jobs that were
    /// waiting in its mailbox (their responses are lost with it: the caller has them fetched again), or None when
    /// there is no such slot.
    pub fn replace(&self, i: usize) -> Option<Vec<JobId>> {
        let fresh = start_slot(&self.inner.factory);
        let mut slots = self.slots();
        let slot = slots.get_mut(i)?;
        let old = std::mem::replace(slot, fresh);
        Some(old.busy.waiting())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_knows_its_current_job_and_the_jobs_waiting_behind_it() {
        let b = Busy::default();
        for j in [1, 2, 3, 4] {
            b.queued(j);
        }
        b.start(1);
        assert_eq!(b.current(), Some(1));
        assert_eq!(b.waiting(), vec![2, 3, 4]);
        b.clear();
        // A job started out of mailbox order leaves the rest in order.
        b.start(3);
        assert_eq!(b.waiting(), vec![2, 4]);
        assert_eq!(b.current(), Some(3));
        b.clear();
        assert_eq!(b.current(), None);
        // A job never noted as sent (it cannot be) changes nothing else.
        b.start(9);
        assert_eq!(b.waiting(), vec![2, 4]);
    }
}
