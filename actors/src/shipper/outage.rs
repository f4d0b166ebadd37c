//! How a failing sink logs: its first failure and every change of error at warn (setup problems at error), a
//! reminder every 30 s while it goes on, and its end with how long it lasted; not a line per retry. The retry
//! delay doubles from 100 ms up to the sink's `retry_max_ms`.

use std::time::{Duration, Instant};

/// How often a failure that goes on is logged again.
const REMIND_EVERY: Duration = Duration::from_secs(30);
const FIRST_DELAY: Duration = Duration::from_millis(100);

/// The failures of one sink since its last success.
#[derive(Debug)]
pub struct Outage {
    retry_max: Duration,
    since: Option<Instant>,
    last_logged: Option<Instant>,
    last_error: String,
    failures: u64,
    delay: Duration,
}

/// What to log about a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Say {
    /// The first failure, or another error than before.
    Started,
    /// The same failure goes on (a reminder).
    StillFailing,
    Quiet,
}

impl Outage {
    pub fn new(retry_max: Duration) -> Outage {
        Outage {
            retry_max: retry_max.max(FIRST_DELAY),
            since: None,
            last_logged: None,
            last_error: String::new(),
            failures: 0,
            delay: FIRST_DELAY,
        }
    }

    /// Takes a failure at `now`: what to log, and how long to wait before trying again.
    pub fn failed(&mut self, error: &str, now: Instant) -> (Say, Duration) {
        self.failures += 1;
        let delay = self.delay;
        self.delay = (self.delay * 2).min(self.retry_max);
        let say = if self.since.is_none() || error != self.last_error {
            self.since.get_or_insert(now);
            self.last_error = error.to_owned();
            Say::Started
        } else if self
            .last_logged
            .is_none_or(|t| now.duration_since(t) >= REMIND_EVERY)
        {
            Say::StillFailing
        } else {
            Say::Quiet
        };
        if say != Say::Quiet {
            self.last_logged = Some(now);
        }
        (say, delay)
    }

    /// Takes a success at `now`: how long the outage that it ends lasted, and its failures (None when there was none).
    pub fn succeeded(&mut self, now: Instant) -> Option<(Duration, u64)> {
        let since = self.since.take()?;
        let failures = std::mem::take(&mut self.failures);
        self.delay = FIRST_DELAY;
        self.last_logged = None;
        self.last_error.clear();
        Some((now.duration_since(since), failures))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_the_start_reminders_and_the_end_and_backs_off_to_the_cap() {
        let t0 = Instant::now();
        let mut o = Outage::new(Duration::from_millis(500));
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        assert_eq!(
            o.failed("down", at(0)),
            (Say::Started, Duration::from_millis(100))
        );
        assert_eq!(
            o.failed("down", at(100)),
            (Say::Quiet, Duration::from_millis(200))
        );
        assert_eq!(
            o.failed("down", at(300)),
            (Say::Quiet, Duration::from_millis(400))
        );
        assert_eq!(
            o.failed("down", at(700)),
            (Say::Quiet, Duration::from_millis(500))
        );
        assert_eq!(
            o.failed("refused", at(1200)).0,
            Say::Started,
            "another error"
        );
        assert_eq!(o.failed("refused", at(31_300)).0, Say::StillFailing);
        assert_eq!(o.failed("refused", at(31_800)).0, Say::Quiet);
        assert_eq!(o.succeeded(at(40_000)), Some((Duration::from_secs(40), 7)));
        assert_eq!(o.succeeded(at(41_000)), None);
        assert_eq!(
            o.failed("down", at(42_000)),
            (Say::Started, Duration::from_millis(100))
        );
    }
}
