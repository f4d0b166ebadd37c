//! The parser pool: one single-thread `SyncArbiter` per slot, so a parser thread that is stuck (blocked or
//! looping) can be told apart from the others and replaced. A shared pool of threads could not be: its threads take
//! work from one queue and have no address of their own.
//!
//! Fetchers hand responses to the slots round-robin. Each slot records the job its parser is working on, so the
//! supervisor can tell which slot holds an expired lease and swap in a fresh thread; the stuck thread is left
//! behind (a thread cannot be killed) and whatever it answers later is ignored by the scheduler.

use super::Parser;
use crate::protocol::JobId;
use crate::protocol::Parse;
use actix::{Addr, SyncArbiter};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// The job a parser is working on, shared between the parser and the pool.
#[derive(Debug, Default)]
pub struct Busy(Mutex<Option<JobId>>);

impl Busy {
    fn lock(&self) -> MutexGuard<'_, Option<JobId>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The parser starts working on `job`.
    pub fn start(&self, job: JobId) {
        *self.lock() = Some(job);
    }

    /// The parser is done with its job.
    pub fn clear(&self) {
        *self.lock() = None;
    }

    pub fn current(&self) -> Option<JobId> {
        *self.lock()
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

    /// Replaces slot `i` with a fresh parser thread; the old thread is abandoned (responses queued behind it are
    /// lost and their leases expire in turn). False when there is no such slot.
    pub fn replace(&self, i: usize) -> bool {
        let fresh = start_slot(&self.inner.factory);
        let mut slots = self.slots();
        match slots.get_mut(i) {
            Some(slot) => {
                *slot = fresh;
                true
            }
            None => false,
        }
    }
}
