//! Restart delays (the core [`crawl_core::backoff::Backoff`]) and escalation bookkeeping, as plain logic.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Delay before the n-th restart (n = 1 for the first) within the window: base * 2^(n-1), capped at max.
pub fn restart_delay(base: Duration, max: Duration, n: u32) -> Duration {
    crawl_core::backoff::Backoff::new(base, max).delay(n.saturating_sub(1))
}

/// Restarts of one child within a sliding window.
#[derive(Debug, Default)]
pub struct RestartLog {
    times: VecDeque<Instant>,
}

impl RestartLog {
    /// Records a failure at `now` and returns how many fall within `window` (this one included).
    pub fn record(&mut self, now: Instant, window: Duration) -> u32 {
        while let Some(t) = self.times.front() {
            if now.saturating_duration_since(*t) > window {
                self.times.pop_front();
            } else {
                break;
            }
        }
        self.times.push_back(now);
        self.times.len() as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_and_cap() {
        let base = Duration::from_millis(100);
        let max = Duration::from_secs(30);
        let got: Vec<u64> = (1..=11)
            .map(|n| restart_delay(base, max, n).as_millis() as u64)
            .collect();
        assert_eq!(
            got,
            [
                100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000, 30000
            ]
        );
        assert_eq!(restart_delay(base, max, 0), base);
        assert_eq!(restart_delay(base, max, u32::MAX), max);
    }

    #[test]
    fn window_forgets_old_restarts() {
        let t0 = Instant::now();
        let w = Duration::from_secs(60);
        let mut log = RestartLog::default();
        assert_eq!(log.record(t0, w), 1);
        assert_eq!(log.record(t0 + Duration::from_secs(30), w), 2);
        assert_eq!(
            log.record(t0 + Duration::from_secs(61), w),
            2,
            "the first fell out of the window"
        );
        assert_eq!(log.record(t0 + Duration::from_secs(200), w), 1);
    }
}
