//! Waiting for an event with a deadline: a test that must wait for a real process (the `crawl-engine` binary, a
//! `redis-server`, a fake server) polls the condition it needs every few milliseconds and fails, naming what never
//! happened, once the deadline passes. Never a fixed "let it settle" sleep.

use std::time::{Duration, Instant};

/// How often a condition is polled.
const EVERY: Duration = Duration::from_millis(5);

/// Polls `cond` until it holds; panics with `what` (the event awaited, e.g. "the site saw 10 requests") when
/// `within` passes first. `cond` may itself assert (e.g. that the process it waits on is still running).
pub async fn until(within: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !cond() {
        assert!(
            Instant::now() < deadline,
            "waited {within:?} in vain: {what}"
        );
        tokio::time::sleep(EVERY).await;
    }
}

/// [`until`] for a thread outside the async runtime.
pub fn until_blocking(within: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !cond() {
        assert!(
            Instant::now() < deadline,
            "waited {within:?} in vain: {what}"
        );
        std::thread::sleep(EVERY);
    }
}

#[cfg(test)]
mod tests {
    use super::{until, until_blocking};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[tokio::test]
    async fn returns_once_the_condition_holds() {
        let n = Arc::new(AtomicUsize::new(0));
        let bump = Arc::clone(&n);
        let writer = tokio::spawn(async move {
            for _ in 0..3 {
                tokio::time::sleep(Duration::from_millis(10)).await;
                bump.fetch_add(1, Ordering::SeqCst);
            }
        });
        until(Duration::from_secs(10), "three bumps", || {
            n.load(Ordering::SeqCst) == 3
        })
        .await;
        assert_eq!(n.load(Ordering::SeqCst), 3);
        writer.await.expect("writer");
    }

    #[tokio::test]
    #[should_panic(expected = "in vain: the flag was set")]
    async fn fails_naming_the_event_that_never_came() {
        until(Duration::from_millis(30), "the flag was set", || false).await;
    }

    #[test]
    fn blocking_returns_once_the_condition_holds_and_fails_naming_it() {
        let n = Arc::new(AtomicUsize::new(0));
        let bump = Arc::clone(&n);
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            bump.store(1, Ordering::SeqCst);
        });
        until_blocking(Duration::from_secs(10), "the flag was set", || {
            n.load(Ordering::SeqCst) == 1
        });
        writer.join().expect("writer");
        let failed = std::panic::catch_unwind(|| {
            until_blocking(Duration::from_millis(30), "a flag never set", || false);
        });
        let message = failed.expect_err("no deadline");
        let text = message
            .downcast_ref::<String>()
            .map(String::as_str)
            .unwrap_or_default();
        assert!(text.contains("in vain: a flag never set"), "{text}");
    }
}
