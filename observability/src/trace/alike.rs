//! One child span in many traces, encoded once.

use super::{Stamp, TraceCtx, new_span_id, wire};

/// The same finished child span (a name and its times, no attributes) in several traces, encoded once for all of
/// them: a group commit's span in each of its records' traces. Each trace's span has an id of its own.
#[derive(Debug)]
pub struct Alike {
    name: &'static str,
    times: (Stamp, Stamp),
    /// The span encoded, once a sampled trace asked for it.
    template: Option<wire::Template>,
}

impl Alike {
    /// The child span `name` from `start` to `end`.
    pub fn new(name: &'static str, start: impl Into<Stamp>, end: impl Into<Stamp>) -> Alike {
        let start = start.into();
        Alike {
            name,
            times: (start, end.into().max(start)),
            template: None,
        }
    }

    /// Records the span in `ctx`'s trace (nothing when it is not exported).
    pub fn add(&mut self, ctx: &TraceCtx) {
        let Some(s) = ctx.sampled() else {
            return;
        };
        let (name, (start, end)) = (self.name, self.times);
        let template = self
            .template
            .get_or_insert_with(|| wire::Template::new(name, start.0, end.0));
        s.out
            .push_alike(template, (&s.trace_id, &new_span_id(), &s.root));
    }
}
