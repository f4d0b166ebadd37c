//! How often a latency bucket takes a new exemplar. A histogram keeps one exemplar a bucket, the last, and a
//! scrape reads only that one: at thousands of pages a second, storing every sample's trace id (a hash-map insert
//! under the histogram's lock) was work that the next sample undid. A bucket takes an exemplar at most once every
//! [`EXEMPLAR_EVERY`]; a bucket that sees fewer samples (the slow ones, which exemplars are for) takes each one.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How often a bucket takes a new exemplar at most.
pub const EXEMPLAR_EVERY: Duration = Duration::from_secs(1);

/// When each bucket of one histogram last took an exemplar.
#[derive(Clone, Debug)]
pub(crate) struct ExemplarGate {
    /// The histogram's upper bounds (the last bucket, +Inf, is implied).
    bounds: &'static [f64],
    anchor: Instant,
    /// Per bucket: milliseconds from `anchor` to its last exemplar, plus one (0: none yet).
    last_ms: Arc<[AtomicU64]>,
}

impl ExemplarGate {
    pub(crate) fn new(bounds: &'static [f64], anchor: Instant) -> ExemplarGate {
        ExemplarGate {
            bounds,
            anchor,
            last_ms: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Whether a sample of `value` observed at `now` carries its exemplar: the first of its bucket, or the first
    /// once [`EXEMPLAR_EVERY`] has passed since the bucket's last. (Two threads in the same millisecond may both
    /// pass: the histogram keeps one of them.)
    pub(crate) fn admits(&self, value: f64, now: Instant) -> bool {
        // The histogram's bucket: the first bound at or above the value (NaN counts in the first).
        let bucket = self.bounds.partition_point(|b| *b < value);
        let Some(last) = self.last_ms.get(bucket) else {
            return true;
        };
        let at = u64::try_from(now.saturating_duration_since(self.anchor).as_millis())
            .unwrap_or(u64::MAX - 1)
            + 1;
        let prev = last.load(Ordering::Relaxed);
        let every = EXEMPLAR_EVERY.as_millis() as u64;
        if prev != 0 && at < prev.saturating_add(every) {
            return false;
        }
        last.store(at, Ordering::Relaxed);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUNDS: [f64; 3] = [0.01, 0.1, 1.0];

    #[test]
    fn a_bucket_takes_an_exemplar_once_a_period_and_each_bucket_its_own() {
        let t0 = Instant::now();
        let gate = ExemplarGate::new(&BOUNDS, t0);
        let ms = |n: u64| t0 + Duration::from_millis(n);
        assert!(gate.admits(0.05, ms(0)), "the bucket's first sample");
        assert!(
            !gate.admits(0.06, ms(10)),
            "the same bucket within the period"
        );
        assert!(
            !gate.admits(0.1, ms(999)),
            "a value on the bound is in that bucket"
        );
        assert!(
            gate.admits(0.5, ms(10)),
            "another bucket has its own period"
        );
        assert!(gate.admits(7.0, ms(10)), "and so has +Inf");
        assert!(!gate.admits(9.0, ms(500)));
        assert!(
            gate.admits(0.05, ms(1000)),
            "a period after the bucket's last"
        );
        assert!(!gate.admits(0.05, ms(1500)));
        assert!(gate.admits(0.05, ms(2000)));
        assert!(
            gate.admits(f64::NAN, ms(0)),
            "NaN counts in the first bucket"
        );
        assert!(!gate.admits(0.001, ms(1)));
    }

    #[test]
    fn an_instant_before_the_anchor_counts_as_the_anchor() {
        let anchor = Instant::now() + Duration::from_secs(5);
        let gate = ExemplarGate::new(&BOUNDS, anchor);
        assert!(gate.admits(0.05, Instant::now()));
        assert!(!gate.admits(0.05, anchor + Duration::from_millis(999)));
        assert!(gate.admits(0.05, anchor + Duration::from_millis(1000)));
    }
}
