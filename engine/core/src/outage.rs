//! What to log about a request that fails again and again (Redis down: the store's requests, the lease rounds, the
//! shard polls): the first failure, a reminder now and then while it lasts, and its end, instead of a line at every
//! attempt.

use std::time::{Duration, Instant};

/// How often a failure that goes on is logged again.
pub const REMIND_EVERY: Duration = Duration::from_secs(30);

/// Failures in a row of one kind of request.
#[derive(Debug, Default)]
pub struct Outage {
    /// When the first failure of this run was seen, and when it was last logged.
    since: Option<(Instant, Instant)>,
    /// Failures since the first.
    failures: u64,
}

/// What a failure should log.
#[derive(Debug, PartialEq, Eq)]
pub enum Report {
    /// The first failure after a success (or at start).
    First,
    /// A reminder: failing for `for_how_long`, `failures` attempts in all.
    Still {
        for_how_long: Duration,
        failures: u64,
    },
}

/// What the first success after failures should log.
#[derive(Debug, PartialEq, Eq)]
pub struct Recovered {
    pub lasted: Duration,
    pub failures: u64,
}

impl Outage {
    /// A failure at `now`: what to log, if anything.
    pub fn failed(&mut self, now: Instant) -> Option<Report> {
        self.failures += 1;
        match &mut self.since {
            None => {
                self.since = Some((now, now));
                Some(Report::First)
            }
            Some((first, logged)) if now.saturating_duration_since(*logged) >= REMIND_EVERY => {
                *logged = now;
                Some(Report::Still {
                    for_how_long: now.saturating_duration_since(*first),
                    failures: self.failures,
                })
            }
            Some(_) => None,
        }
    }

    /// When the failures began (None: the last attempt went through).
    pub fn since(&self) -> Option<Instant> {
        self.since.map(|(first, _)| first)
    }

    /// A success at `now`: the outage it ends, if there was one.
    pub fn succeeded(&mut self, now: Instant) -> Option<Recovered> {
        let (first, _) = self.since.take()?;
        let failures = std::mem::take(&mut self.failures);
        Some(Recovered {
            lasted: now.saturating_duration_since(first),
            failures,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outage_logs_its_start_a_reminder_every_thirty_seconds_and_its_end() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut o = Outage::default();
        assert_eq!(o.succeeded(at(0)), None, "no outage, nothing to report");
        assert_eq!(o.failed(at(0)), Some(Report::First));
        assert_eq!(o.since(), Some(at(0)));
        // One attempt every 200 ms: silent until 30 s after the first line.
        for ms in (200..30_000).step_by(200) {
            assert_eq!(o.failed(at(ms)), None, "at {ms} ms");
        }
        assert_eq!(
            o.failed(at(30_000)),
            Some(Report::Still {
                for_how_long: Duration::from_secs(30),
                failures: 151
            })
        );
        assert_eq!(o.failed(at(59_800)), None);
        assert_eq!(
            o.failed(at(60_000)),
            Some(Report::Still {
                for_how_long: Duration::from_secs(60),
                failures: 153
            })
        );
        assert_eq!(
            o.succeeded(at(61_000)),
            Some(Recovered {
                lasted: Duration::from_secs(61),
                failures: 153
            })
        );
        assert_eq!(o.succeeded(at(61_200)), None, "reported once");
        assert_eq!(o.since(), None);
        // The next outage is new: its first failure is logged, and counted from one.
        assert_eq!(o.failed(at(70_000)), Some(Report::First));
        assert_eq!(
            o.succeeded(at(70_200)),
            Some(Recovered {
                lasted: Duration::from_millis(200),
                failures: 1
            })
        );
    }
}
