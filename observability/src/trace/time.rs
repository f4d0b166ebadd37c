//! Span times: nanoseconds since the Unix epoch, as OTLP carries them, measured with the monotonic clock against
//! one anchor (so that a span never ends before it starts when the wall clock is stepped).

use std::hash::{Hash as _, Hasher};
use std::sync::LazyLock;
use std::time::{Duration, Instant, SystemTime};

/// The moment every span time is measured from.
pub(super) struct Anchor {
    /// As an `Instant`.
    pub(super) instant: Instant,
    /// As the wall-clock time.
    wall: SystemTime,
    /// The wall-clock time in nanoseconds since the Unix epoch.
    unix_ns: u64,
    /// `instant`'s clock reading in nanoseconds ([`clock_nanos`]), when this platform's `Instant` gives it and
    /// gave it right for the checks of [`read_checked`]; None: times are converted by subtracting instants.
    clock_ns: Option<u64>,
}

pub(super) static ANCHOR: LazyLock<Anchor> = LazyLock::new(|| {
    let instant = Instant::now();
    let wall = SystemTime::now();
    Anchor {
        instant,
        wall,
        unix_ns: unix_nanos(wall),
        clock_ns: read_checked(instant),
    }
});

/// The value `Instant`'s `Hash` feeds a hasher: its clock reading, seconds (an `i64`) then nanoseconds (a `u32`),
/// as std's unix `Instant` hashes itself. Anything else fed to it (another platform's `Instant`, a later std's)
/// leaves it unread.
#[derive(Default)]
struct Reading {
    secs: Option<i64>,
    nanos: Option<u32>,
    other: bool,
}

impl Hasher for Reading {
    fn finish(&self) -> u64 {
        0
    }

    fn write(&mut self, _: &[u8]) {
        self.other = true;
    }

    fn write_i64(&mut self, v: i64) {
        match (self.secs, self.nanos) {
            (None, None) => self.secs = Some(v),
            _ => self.other = true,
        }
    }

    fn write_u32(&mut self, v: u32) {
        match (self.secs, self.nanos) {
            (Some(_), None) => self.nanos = Some(v),
            _ => self.other = true,
        }
    }
}

/// An instant's clock reading in nanoseconds, read through its `Hash` (see [`Reading`]): the only way to an
/// `Instant`'s value without a subtraction of two instants (`checked_duration_since`, then a `Duration` to
/// nanoseconds: some 70 instructions, at every span time). Only used once [`read_checked`] found it right.
fn clock_nanos(at: Instant) -> Option<u64> {
    let mut r = Reading::default();
    at.hash(&mut r);
    match r {
        Reading {
            secs: Some(secs),
            nanos: Some(nanos),
            other: false,
        } if nanos < 1_000_000_000 => u64::try_from(secs)
            .ok()?
            .checked_mul(1_000_000_000)?
            .checked_add(u64::from(nanos)),
        _ => None,
    }
}

/// `anchor`'s clock reading, if readings of instants are what subtracting them says: an instant a known
/// duration later reads that much more, and one taken now reads what has elapsed since `anchor` (to within the
/// time the checks take). None otherwise, and every conversion subtracts instants.
fn read_checked(anchor: Instant) -> Option<u64> {
    let at = clock_nanos(anchor)?;
    let step = Duration::new(86_400, 123_456_789);
    let later = clock_nanos(anchor.checked_add(step)?)?;
    let now = Instant::now();
    let elapsed = nanos(now.duration_since(anchor));
    let read = clock_nanos(now)?.checked_sub(at)?;
    (later.checked_sub(at)? == nanos(step) && read == elapsed).then_some(at)
}

/// The wall-clock time of a monotonic instant (spans need wall-clock times; the engine measures with `Instant`).
pub fn wall(at: Instant) -> SystemTime {
    let (i0, s0) = (ANCHOR.instant, ANCHOR.wall);
    if at >= i0 {
        s0 + (at - i0)
    } else {
        s0.checked_sub(i0 - at).unwrap_or(s0)
    }
}

/// Nanoseconds since the Unix epoch (0 before it).
pub(super) fn unix_nanos(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH).map_or(0, nanos)
}

/// A duration in nanoseconds, saturating (in 64-bit steps: `as_nanos` goes through 128 bits).
fn nanos(d: Duration) -> u64 {
    d.as_secs()
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::from(d.subsec_nanos()))
}

/// A span's start or end as OTLP carries it: nanoseconds since the Unix epoch. Made from an `Instant` (what the
/// engine measures with) in one step, where going through [`wall`] and then the epoch took two conversions of
/// the platform's time type; the same value as that way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Stamp(pub(super) u64);

impl Stamp {
    /// Now.
    pub fn now() -> Stamp {
        Stamp::from(Instant::now())
    }

    /// The stamp of a clock reading of `clock` nanoseconds, against the anchor's (`anchor_clock`).
    fn of_reading(anchor: &Anchor, anchor_clock: u64, clock: u64) -> Stamp {
        Stamp(match clock.checked_sub(anchor_clock) {
            Some(d) => anchor.unix_ns.saturating_add(d),
            None => anchor.unix_ns.saturating_sub(anchor_clock - clock),
        })
    }

    /// The stamp of `at` from its distance to the anchor.
    fn by_subtraction(anchor: &Anchor, at: Instant) -> Stamp {
        let (i0, ns0) = (anchor.instant, anchor.unix_ns);
        match at.checked_duration_since(i0) {
            Some(d) => Stamp(ns0.saturating_add(nanos(d))),
            None => Stamp(ns0.saturating_sub(nanos(i0.duration_since(at)))),
        }
    }

    /// The wall-clock time, as the SDK's spans take it.
    pub fn system_time(self) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_nanos(self.0)
    }

    /// Nanoseconds since the Unix epoch.
    pub fn unix_nanos(self) -> u64 {
        self.0
    }

    /// The stamp of `nanos` since the Unix epoch (what [`unix_nanos`](Self::unix_nanos) gave).
    pub fn from_unix_nanos(nanos: u64) -> Stamp {
        Stamp(nanos)
    }
}

impl std::ops::Add<Duration> for Stamp {
    type Output = Stamp;

    /// `d` later (saturating): a span measured as offsets from one instant converts that instant once.
    fn add(self, d: Duration) -> Stamp {
        Stamp(self.0.saturating_add(nanos(d)))
    }
}

impl From<Instant> for Stamp {
    fn from(at: Instant) -> Stamp {
        let anchor = &*ANCHOR;
        if let Some(anchor_clock) = anchor.clock_ns
            && let Some(clock) = clock_nanos(at)
        {
            return Stamp::of_reading(anchor, anchor_clock, clock);
        }
        Stamp::by_subtraction(anchor, at)
    }
}

impl From<SystemTime> for Stamp {
    fn from(t: SystemTime) -> Stamp {
        Stamp(unix_nanos(t))
    }
}

#[cfg(test)]
mod tests;
