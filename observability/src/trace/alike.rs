//! One child span in many traces.

use super::{Stamp, TraceCtx};

/// The same finished child span (a name and its times, no attributes) in several traces: a group commit's span in
/// each of its records' traces. Each trace's span has an id of its own.
#[derive(Debug)]
pub struct Alike {
    name: &'static str,
    times: (Stamp, Stamp),
}

impl Alike {
    /// The child span `name` from `start` to `end`.
    pub fn new(name: &'static str, start: impl Into<Stamp>, end: impl Into<Stamp>) -> Alike {
        let start = start.into();
        Alike {
            name,
            times: (start, end.into().max(start)),
        }
    }

    /// Records the span in `ctx`'s trace (nothing when it is not exported).
    pub fn add(&mut self, ctx: &TraceCtx) {
        let (start, end) = self.times;
        ctx.span(self.name, start, end, &[]);
    }
}
