//! The site's clock in changing mode: what "now" is for the change schedules, the validators and the sitemaps.
//!
//! A test drives a manual clock ([`SiteClock::manual`], then [`SiteClock::advance`] or [`SiteClock::set_ms`]);
//! the `testsite` binary runs an accelerated one ([`SiteClock::scaled`]: `time_scale` site seconds per real
//! second). Site time is Unix time in milliseconds; it runs ahead of the real clock when `time_scale > 1`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[derive(Debug)]
enum Kind {
    Manual(AtomicU64),
    Scaled {
        start_ms: u64,
        real_start: Instant,
        real_start_unix_ms: u64,
        scale: f64,
    },
}

/// A shared clock; clones see the same time.
#[derive(Debug, Clone)]
pub struct SiteClock {
    kind: Arc<Kind>,
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl SiteClock {
    /// A clock that stands at `start_ms` (Unix ms) until it is advanced.
    pub fn manual(start_ms: u64) -> Self {
        Self {
            kind: Arc::new(Kind::Manual(AtomicU64::new(start_ms))),
        }
    }

    /// A clock that starts at `start_ms` now and runs `time_scale` site seconds per real second (a scale that is
    /// not finite or not positive counts as 1).
    pub fn scaled(start_ms: u64, time_scale: f64) -> Self {
        let scale = if time_scale.is_finite() && time_scale > 0.0 {
            time_scale
        } else {
            1.0
        };
        Self {
            kind: Arc::new(Kind::Scaled {
                start_ms,
                real_start: Instant::now(),
                real_start_unix_ms: unix_ms(SystemTime::now()),
                scale,
            }),
        }
    }

    /// Site time, Unix ms.
    pub fn now_ms(&self) -> u64 {
        match &*self.kind {
            Kind::Manual(t) => t.load(Ordering::SeqCst),
            Kind::Scaled {
                start_ms,
                real_start,
                scale,
                ..
            } => start_ms
                .saturating_add((real_start.elapsed().as_secs_f64() * scale * 1000.0) as u64),
        }
    }

    /// Site time, whole Unix seconds (rounded down).
    pub fn now_s(&self) -> u64 {
        self.now_ms() / 1000
    }

    /// Moves a manual clock forward by `d`; returns false (and does nothing) on a scaled clock.
    pub fn advance(&self, d: Duration) -> bool {
        match &*self.kind {
            Kind::Manual(t) => {
                let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
                let _ = t.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| {
                    Some(v.saturating_add(ms))
                });
                true
            }
            Kind::Scaled { .. } => false,
        }
    }

    /// Sets a manual clock to `ms` (Unix ms, may go back); returns false (and does nothing) on a scaled clock.
    pub fn set_ms(&self, ms: u64) -> bool {
        match &*self.kind {
            Kind::Manual(t) => {
                t.store(ms, Ordering::SeqCst);
                true
            }
            Kind::Scaled { .. } => false,
        }
    }

    /// Site seconds per real second (1 for a manual clock, whose time the test moves).
    pub fn time_scale(&self) -> f64 {
        match &*self.kind {
            Kind::Manual(_) => 1.0,
            Kind::Scaled { scale, .. } => *scale,
        }
    }

    /// The site time at real Unix time `real_ms` (a crawler's fetch time as it recorded it). A manual clock has no
    /// relation to real time and answers `real_ms` unchanged.
    pub fn site_ms_at(&self, real_ms: u64) -> u64 {
        match &*self.kind {
            Kind::Manual(_) => real_ms,
            Kind::Scaled {
                start_ms,
                real_start_unix_ms,
                scale,
                ..
            } => {
                let dt = real_ms as f64 - *real_start_unix_ms as f64;
                let site = *start_ms as f64 + dt * scale;
                if site <= 0.0 { 0 } else { site as u64 }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told_and_clones_share_it() {
        let c = SiteClock::manual(5_000);
        let d = c.clone();
        assert_eq!(c.now_s(), 5);
        assert!(d.advance(Duration::from_millis(2_500)));
        assert_eq!(c.now_ms(), 7_500);
        assert!(c.set_ms(1_000));
        assert_eq!(d.now_ms(), 1_000);
        assert_eq!(c.site_ms_at(42), 42);
    }

    #[test]
    fn scaled_clock_runs_faster_and_maps_real_times() {
        let c = SiteClock::scaled(1_000_000, 100.0);
        assert!(!c.advance(Duration::from_secs(1)));
        assert!(!c.set_ms(0));
        let before = c.now_ms();
        std::thread::sleep(Duration::from_millis(30));
        let after = c.now_ms();
        // 30 real ms are at least 3 site seconds
        assert!(after - before >= 3_000, "{before} {after}");
        let real_now = unix_ms(SystemTime::now());
        let mapped = c.site_ms_at(real_now);
        assert!(
            mapped.abs_diff(c.now_ms()) < 2_000,
            "{mapped} {}",
            c.now_ms()
        );
        assert_eq!(SiteClock::scaled(0, f64::NAN).time_scale(), 1.0);
    }
}
