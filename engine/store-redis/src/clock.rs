//! The lease clock: milliseconds on a clock that keeps counting while the machine is suspended.
//!
//! A lease granted by Redis runs in real time on the server. A process whose machine was suspended must not believe
//! it still holds a lease that ran out meanwhile, so local lease deadlines are measured on `CLOCK_BOOTTIME` (which,
//! unlike `CLOCK_MONOTONIC`, includes time spent suspended). Where that clock is unavailable, `/proc/uptime` (the
//! same clock, in centiseconds) is used, and failing that the monotonic clock of the standard library.

use std::sync::OnceLock;
use std::time::Instant;

/// Milliseconds since an arbitrary origin (the machine's boot when `CLOCK_BOOTTIME` is readable).
pub fn now_ms() -> u64 {
    if let Ok(ts) = rustix::time::clock_gettime_dynamic(rustix::time::DynamicClockId::Boottime) {
        let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
        let nanos = u64::try_from(ts.tv_nsec).unwrap_or(0);
        return secs.saturating_mul(1000).saturating_add(nanos / 1_000_000);
    }
    if let Some(ms) = proc_uptime_ms() {
        return ms;
    }
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    let origin = ORIGIN.get_or_init(Instant::now);
    u64::try_from(origin.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// The first field of `/proc/uptime` (seconds since boot, suspend included) in milliseconds.
fn proc_uptime_ms() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/uptime").ok()?;
    parse_uptime(&text)
}

fn parse_uptime(text: &str) -> Option<u64> {
    let first = text.split_whitespace().next()?;
    let (whole, frac) = first.split_once('.').unwrap_or((first, "0"));
    let secs: u64 = whole.parse().ok()?;
    let mut frac_ms = 0u64;
    let mut scale = 100u64;
    for c in frac.chars().take(3) {
        frac_ms += u64::from(c.to_digit(10)?) * scale;
        scale /= 10;
    }
    Some(secs.saturating_mul(1000).saturating_add(frac_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_moves_forward() {
        let a = now_ms();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let b = now_ms();
        assert!(b >= a + 15, "{a} -> {b}");
    }

    #[test]
    fn uptime_text_is_parsed_to_milliseconds() {
        assert_eq!(parse_uptime("12345.67 54321.00\n"), Some(12_345_670));
        assert_eq!(parse_uptime("7 1"), Some(7000));
        assert_eq!(parse_uptime(""), None);
        assert_eq!(parse_uptime("x.5 1"), None);
    }
}
