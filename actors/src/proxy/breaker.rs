//! Circuit breaker for one proxy hop or chain (docs/PROXY.md), as pure logic over explicit
//! instants: `failures` proxy faults in a row open it; after `cooldown` it is half-open and lets
//! exactly one probe connection through; the probe's success closes it, its failure re-opens it
//! for a new cooldown. Target faults are not reported here.

use std::fmt;
use std::time::{Duration, Instant};

/// What a breaker currently allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    /// Connections flow.
    Closed,
    /// No connections until `until`.
    Open { until: Instant },
    /// The cooldown has passed: one probe may go (or is in flight).
    HalfOpen,
}

impl BreakerState {
    /// `closed`, `open` or `half-open` (for metrics and logs).
    pub fn as_str(self) -> &'static str {
        match self {
            BreakerState::Closed => "closed",
            BreakerState::Open { .. } => "open",
            BreakerState::HalfOpen => "half-open",
        }
    }
}

impl fmt::Display for BreakerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Inner {
    Closed,
    /// Open until the instant; half-open once it has passed (no probe taken yet).
    Open(Instant),
    /// Half-open with the probe in flight.
    Probing,
}

/// One breaker. Reports from connections that started before it opened (a success or
/// failure arriving while it is open) are ignored: only the probe decides.
#[derive(Debug, Clone)]
pub struct Breaker {
    threshold: u32,
    cooldown: Duration,
    consecutive: u32,
    inner: Inner,
}

impl Breaker {
    /// Opens after `failures` consecutive proxy faults (0 is treated as 1) for `cooldown`.
    pub fn new(failures: u32, cooldown: Duration) -> Self {
        Self {
            threshold: failures.max(1),
            cooldown,
            consecutive: 0,
            inner: Inner::Closed,
        }
    }

    /// Adopts new settings keeping the state: an open breaker stays open until its cooldown ends, a closed one keeps
    /// its run of failures (and opens on the next one if the run already reaches the new threshold).
    pub fn set_policy(&mut self, failures: u32, cooldown: Duration) {
        self.threshold = failures.max(1);
        self.cooldown = cooldown;
    }

    /// The state at `now`.
    pub fn state(&self, now: Instant) -> BreakerState {
        match self.inner {
            Inner::Closed => BreakerState::Closed,
            Inner::Open(until) if now < until => BreakerState::Open { until },
            Inner::Open(_) | Inner::Probing => BreakerState::HalfOpen,
        }
    }

    /// Whether a connection may start now, taking the half-open probe if this is it.
    pub fn allow(&mut self, now: Instant) -> bool {
        match self.inner {
            Inner::Closed => true,
            Inner::Open(until) if now < until => false,
            Inner::Open(_) => {
                self.inner = Inner::Probing;
                true
            }
            Inner::Probing => false,
        }
    }

    /// Whether [`Breaker::allow`] would say yes at `now`, without taking the probe (for
    /// choosing among chains before committing to one).
    pub fn would_allow(&self, now: Instant) -> bool {
        match self.inner {
            Inner::Closed => true,
            Inner::Open(until) => now >= until,
            Inner::Probing => false,
        }
    }

    /// A connection through it succeeded.
    pub fn success(&mut self, _now: Instant) {
        match self.inner {
            Inner::Closed | Inner::Probing => {
                self.consecutive = 0;
                self.inner = Inner::Closed;
            }
            Inner::Open(_) => {}
        }
    }

    /// A connection through it failed with a proxy fault.
    pub fn failure(&mut self, now: Instant) {
        match self.inner {
            Inner::Closed => {
                self.consecutive = self.consecutive.saturating_add(1);
                if self.consecutive >= self.threshold {
                    self.open(now);
                }
            }
            Inner::Probing => self.open(now),
            Inner::Open(_) => {}
        }
    }

    /// The probe ended without a verdict (e.g. the request was cancelled): the next
    /// [`Breaker::allow`] may send another probe.
    pub fn cancel_probe(&mut self, now: Instant) {
        if self.inner == Inner::Probing {
            self.inner = Inner::Open(now);
        }
    }

    /// Proxy faults in a row since the last success (0 while open or probing, see `state`).
    pub fn consecutive_failures(&self) -> u32 {
        self.consecutive
    }

    fn open(&mut self, now: Instant) {
        self.consecutive = 0;
        self.inner = Inner::Open(now.checked_add(self.cooldown).unwrap_or(now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COOL: Duration = Duration::from_secs(30);

    fn secs(t0: Instant, s: u64) -> Instant {
        t0 + Duration::from_secs(s)
    }

    #[test]
    fn opens_after_consecutive_failures_only() {
        let t0 = Instant::now();
        let mut b = Breaker::new(3, COOL);
        assert_eq!(b.state(t0), BreakerState::Closed);
        b.failure(t0);
        b.failure(t0);
        assert_eq!(b.consecutive_failures(), 2);
        // A success in between resets the run.
        b.success(t0);
        assert_eq!(b.consecutive_failures(), 0);
        b.failure(t0);
        b.failure(t0);
        assert!(b.allow(t0));
        assert_eq!(b.state(t0), BreakerState::Closed);
        b.failure(secs(t0, 1));
        assert_eq!(
            b.state(secs(t0, 1)),
            BreakerState::Open {
                until: secs(t0, 31)
            }
        );
        assert!(!b.allow(secs(t0, 1)));
        assert!(!b.would_allow(secs(t0, 30)));
        assert!(!b.allow(secs(t0, 30)));
        assert_eq!(b.state(secs(t0, 1)).as_str(), "open");
    }

    #[test]
    fn half_open_lets_exactly_one_probe_and_success_closes() {
        let t0 = Instant::now();
        let mut b = Breaker::new(1, COOL);
        b.failure(t0);
        let later = secs(t0, 30);
        assert_eq!(b.state(later), BreakerState::HalfOpen);
        assert!(b.would_allow(later));
        assert!(b.would_allow(later), "would_allow takes nothing");
        assert!(b.allow(later), "the probe");
        assert_eq!(b.state(later), BreakerState::HalfOpen);
        for s in [30, 31, 1000] {
            assert!(!b.allow(secs(t0, s)), "no second probe at {s}s");
            assert!(!b.would_allow(secs(t0, s)));
        }
        b.success(secs(t0, 32));
        assert_eq!(b.state(secs(t0, 32)), BreakerState::Closed);
        assert!(b.allow(secs(t0, 32)) && b.allow(secs(t0, 32)));
        assert_eq!(BreakerState::Closed.to_string(), "closed");
    }

    #[test]
    fn failed_probe_reopens_for_a_new_cooldown() {
        let t0 = Instant::now();
        let mut b = Breaker::new(2, COOL);
        b.failure(t0);
        b.failure(t0);
        assert!(b.allow(secs(t0, 40)));
        b.failure(secs(t0, 41));
        assert_eq!(
            b.state(secs(t0, 41)),
            BreakerState::Open {
                until: secs(t0, 71)
            }
        );
        assert!(!b.allow(secs(t0, 70)));
        assert!(b.allow(secs(t0, 71)), "next probe after the new cooldown");
        assert_eq!(b.state(secs(t0, 71)).as_str(), "half-open");
    }

    #[test]
    fn late_reports_while_open_are_ignored() {
        let t0 = Instant::now();
        let mut b = Breaker::new(1, COOL);
        b.failure(t0);
        b.success(secs(t0, 1));
        b.failure(secs(t0, 2));
        assert_eq!(
            b.state(secs(t0, 2)),
            BreakerState::Open {
                until: secs(t0, 30)
            },
            "neither closed nor extended"
        );
    }

    #[test]
    fn cancelled_probe_frees_the_slot() {
        let t0 = Instant::now();
        let mut b = Breaker::new(1, COOL);
        b.failure(t0);
        assert!(b.allow(secs(t0, 30)));
        assert!(!b.allow(secs(t0, 31)));
        b.cancel_probe(secs(t0, 31));
        assert_eq!(b.state(secs(t0, 31)), BreakerState::HalfOpen);
        assert!(b.allow(secs(t0, 31)));
        // Cancelling when no probe is out changes nothing.
        let mut closed = Breaker::new(1, COOL);
        closed.cancel_probe(t0);
        assert_eq!(closed.state(t0), BreakerState::Closed);
    }

    #[test]
    fn new_policy_keeps_the_state() {
        let t0 = Instant::now();
        let mut open = Breaker::new(1, COOL);
        open.failure(t0);
        open.set_policy(5, Duration::from_secs(600));
        assert_eq!(
            open.state(secs(t0, 1)),
            BreakerState::Open {
                until: secs(t0, 30)
            },
            "the running cooldown is kept"
        );
        assert!(open.allow(secs(t0, 30)));
        open.failure(secs(t0, 31));
        assert_eq!(
            open.state(secs(t0, 32)),
            BreakerState::Open {
                until: secs(t0, 631)
            },
            "the next cooldown is the new one"
        );
        let mut closed = Breaker::new(5, COOL);
        closed.failure(t0);
        closed.failure(t0);
        closed.set_policy(2, COOL);
        assert_eq!(closed.consecutive_failures(), 2);
        assert_eq!(closed.state(t0), BreakerState::Closed);
        closed.failure(t0);
        assert_eq!(closed.state(t0).as_str(), "open");
    }

    #[test]
    fn zero_threshold_and_zero_cooldown() {
        let t0 = Instant::now();
        let mut b = Breaker::new(0, Duration::ZERO);
        b.failure(t0);
        assert_eq!(b.state(t0), BreakerState::HalfOpen, "opened, cooldown over");
        assert!(b.allow(t0));
        assert!(!b.allow(t0));
        b.failure(t0);
        assert!(b.allow(t0));
    }
}
