use super::*;

#[test]
fn one_warning_per_minute_at_most() {
    let every = Every::new(WARN_EVERY);
    let t0 = Instant::now();
    assert!(every.allow(t0));
    assert!(!every.allow(t0 + Duration::from_secs(59)));
    assert!(every.allow(t0 + Duration::from_secs(61)));
    assert!(!every.allow(t0 + Duration::from_secs(62)));
}

#[test]
fn spans_past_the_bound_and_of_failed_exports_are_counted() {
    let loss = Loss::new();
    let admitted = (0..10).filter(|_| loss.admit(1, 4)).count();
    assert_eq!((admitted, loss.dropped()), (4, 6));
    loss.settle(2, None);
    assert!(loss.admit(1, 4) && loss.admit(1, 4) && !loss.admit(1, 4));
    assert_eq!(loss.dropped(), 7);
    loss.settle(3, Some("unavailable"));
    assert_eq!(loss.dropped(), 10);
    assert_eq!(loss.accepted(), 6);
}

#[test]
fn spans_left_at_shutdown_are_counted_once() {
    let loss = Loss::new();
    for _ in 0..5 {
        assert!(loss.admit(1, 100));
    }
    loss.settle(2, None);
    loss.close();
    assert_eq!(loss.dropped(), 3);
    // An export that ends after shutdown changes nothing; a second close neither.
    loss.settle(3, Some("late"));
    loss.close();
    assert_eq!(loss.dropped(), 3);
}
