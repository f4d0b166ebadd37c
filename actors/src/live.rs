//! [`Live`]: a value shared by many actors and replaced whole by a config reload. Readers take a cheap snapshot
//! per use, so a reload applies from the next message and never half-way through one.

use std::sync::{Arc, RwLock};

/// A shared, replaceable value.
#[derive(Debug)]
pub struct Live<T>(Arc<RwLock<Arc<T>>>);

impl<T> Clone for Live<T> {
    fn clone(&self) -> Self {
        Live(Arc::clone(&self.0))
    }
}

impl<T> Live<T> {
    pub fn new(value: T) -> Live<T> {
        Live(Arc::new(RwLock::new(Arc::new(value))))
    }

    /// The current value.
    pub fn load(&self) -> Arc<T> {
        match self.0.read() {
            Ok(g) => Arc::clone(&g),
            // A writer never panics while holding the lock (it only swaps an Arc), but stay usable regardless.
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// Replaces the value for every holder.
    pub fn store(&self, value: T) {
        match self.0.write() {
            Ok(mut g) => *g = Arc::new(value),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(value),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_clone_sees_a_store_and_old_snapshots_stay_valid() {
        let a = Live::new(1);
        let b = a.clone();
        let snap = a.load();
        b.store(2);
        assert_eq!(*a.load(), 2);
        assert_eq!(*snap, 1);
    }
}
