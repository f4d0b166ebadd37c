//! Exponential backoff, the one policy every retry in the crawler uses: child restarts, politeness pauses after
//! 429/503, fetch retries and robots.txt retries.

use std::time::Duration;

/// `base * 2^n` for the n-th retry (n = 0 for the first), capped at `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub base: Duration,
    pub max: Duration,
}

impl Backoff {
    pub const fn new(base: Duration, max: Duration) -> Backoff {
        Backoff { base, max }
    }

    /// Without a cap (a retry count that is itself bounded keeps it finite).
    pub const fn uncapped(base: Duration) -> Backoff {
        Backoff {
            base,
            max: Duration::MAX,
        }
    }

    /// The delay before retry `n` (0-based): base, 2·base, 4·base, … up to `max`.
    pub fn delay(&self, n: u32) -> Duration {
        let factor = 1u32 << n.min(20);
        self.base.saturating_mul(factor).min(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_from_base_and_caps() {
        let b = Backoff::new(Duration::from_millis(100), Duration::from_secs(30));
        let got: Vec<u64> = (0..11).map(|n| b.delay(n).as_millis() as u64).collect();
        assert_eq!(
            got,
            [
                100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000, 30000
            ]
        );
        assert_eq!(b.delay(u32::MAX), Duration::from_secs(30));
        let u = Backoff::uncapped(Duration::from_secs(1));
        assert_eq!(u.delay(3), Duration::from_secs(8));
        assert_eq!(u.delay(u32::MAX), Duration::from_secs(1 << 20));
    }
}
