use super::*;

#[test]
fn wall_clock_keeps_order() {
    let a = Instant::now();
    let b = a + Duration::from_millis(1500);
    let d = wall(b).duration_since(wall(a)).expect("ordered");
    assert_eq!(d, Duration::from_millis(1500));
}

#[test]
fn a_stamp_from_an_instant_is_its_wall_clock_time() {
    let now = Instant::now();
    let anchor = ANCHOR.instant;
    let mut instants = vec![
        now,
        anchor,
        now + Duration::from_nanos(1),
        now + Duration::from_secs(86_400),
    ];
    // Before the anchor (a URL queued before the first trace), where the platform allows it.
    instants.extend(anchor.checked_sub(Duration::from_millis(2_500)));
    instants.extend(anchor.checked_sub(Duration::from_nanos(7)));
    for at in instants {
        assert_eq!(Stamp::from(at).unix_nanos(), unix_nanos(wall(at)), "{at:?}");
        assert_eq!(Stamp::from(at), Stamp::from(wall(at)));
    }
    assert!(Stamp::from(now) < Stamp::from(now + Duration::from_nanos(1)));
    let system = Stamp::from(SystemTime::now());
    let mono = Stamp::now();
    assert!(mono.unix_nanos().abs_diff(system.unix_nanos()) < 1_000_000_000);
    assert_eq!(
        Stamp::from(SystemTime::UNIX_EPOCH - Duration::from_secs(1)).unix_nanos(),
        0
    );
}

/// Where an instant's clock reading is read through its `Hash` (std's unix `Instant`; checked on Linux, where the
/// engine runs), a stamp made from it is the stamp made by subtracting instants, to the nanosecond, on either
/// side of the anchor and across the nanoseconds' carry.
#[test]
fn a_stamp_from_a_clock_reading_is_the_stamp_of_a_subtraction() {
    #[cfg(target_os = "linux")]
    assert!(
        ANCHOR.clock_ns.is_some(),
        "an instant's reading is not what it was checked to be"
    );
    let anchor = ANCHOR.instant;
    let now = Instant::now();
    let offsets = [
        0,
        1,
        7,
        999_999_999,
        1_000_000_000,
        1_000_000_001,
        2_500_000_000,
        86_400_123_456_789,
    ];
    for base in [anchor, now] {
        for ns in offsets {
            let d = Duration::from_nanos(ns);
            for at in [base.checked_add(d), base.checked_sub(d)]
                .into_iter()
                .flatten()
            {
                assert_eq!(
                    Stamp::from(at),
                    Stamp::by_subtraction(&ANCHOR, at),
                    "{ns} ns from {base:?}"
                );
            }
        }
    }
    assert!(Stamp::now() >= Stamp::from(now));
}

/// A reading is taken only from seconds then nanoseconds, fed once each: another order, another width or
/// anything more leaves it unread.
#[test]
fn a_reading_is_only_seconds_then_nanoseconds() {
    let read = |feed: &dyn Fn(&mut Reading)| {
        let mut r = Reading::default();
        feed(&mut r);
        (r.secs, r.nanos, r.other)
    };
    assert_eq!(
        read(&|r| {
            r.write_i64(5);
            r.write_u32(7);
        }),
        (Some(5), Some(7), false)
    );
    assert!(
        read(&|r| {
            r.write_u32(7);
            r.write_i64(5);
        })
        .2
    );
    assert!(
        read(&|r| {
            r.write_i64(5);
            r.write_u32(7);
            r.write_u32(8);
        })
        .2
    );
    assert!(read(&|r| r.write_u64(5)).2);
    assert!(read(&|r| r.write(&[1, 2])).2);
}
