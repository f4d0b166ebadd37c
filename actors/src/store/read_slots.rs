//! A bound on the reads that wait in the store actor's mailbox for callers who give up after a timeout (the control
//! API's views): the store serves one request at a time and a commit may wait for Redis for minutes, so a caller
//! that keeps asking must not fill the mailbox. A read takes a [`ReadSlot`] and carries it in its message; the slot
//! is free again once the store handled the message or dropped it (actix drops a message whose caller stopped
//! waiting when it comes up), not when the caller stopped waiting.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// At most `max` reads in the store's mailbox at a time. Clones share the count.
#[derive(Debug, Clone)]
pub struct ReadSlots {
    taken: Arc<AtomicUsize>,
    max: usize,
}

/// One read waiting for the store; frees its slot when dropped.
#[derive(Debug)]
pub struct ReadSlot {
    taken: Arc<AtomicUsize>,
}

impl ReadSlots {
    pub fn new(max: usize) -> ReadSlots {
        ReadSlots {
            taken: Arc::new(AtomicUsize::new(0)),
            max,
        }
    }

    /// A slot, or None when `max` reads are waiting already.
    pub fn take(&self) -> Option<ReadSlot> {
        self.taken
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .ok()
            .map(|_| ReadSlot {
                taken: self.taken.clone(),
            })
    }

    /// Reads waiting now.
    pub fn waiting(&self) -> usize {
        self.taken.load(Ordering::Acquire)
    }
}

impl Drop for ReadSlot {
    fn drop(&mut self) {
        self.taken.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_max_slots_and_a_dropped_one_is_free_again() {
        let slots = ReadSlots::new(2);
        let a = slots.take().expect("first");
        let b = slots.clone().take().expect("second, through a clone");
        assert!(slots.take().is_none(), "full");
        assert_eq!(slots.waiting(), 2);
        drop(a);
        let c = slots.take().expect("free again");
        drop((b, c));
        assert_eq!(slots.waiting(), 0);
        assert!(ReadSlots::new(0).take().is_none());
    }
}
