//! Which answers are tried again and when, with a transport that answers from a script, in paused time: the
//! waits are the backoff's or the collector's (capped), the tries are bounded, and a halt ends a wait at once.

use super::*;
use std::collections::VecDeque;
use std::future::Future;
use std::sync::{Arc, Mutex};
use tokio::time::Instant;

/// Answers from a script (the last one from then on), noting when each request came.
struct Script {
    answers: Mutex<VecDeque<Result<(), Failure>>>,
    last: Result<(), Failure>,
    at: Mutex<Vec<Instant>>,
}

impl Script {
    fn new(answers: Vec<Result<(), Failure>>) -> Arc<Script> {
        let last = answers.last().cloned().unwrap_or(Ok(()));
        Arc::new(Script {
            answers: Mutex::new(answers.into()),
            last,
            at: Mutex::new(Vec::new()),
        })
    }

    /// The times between the first request and each one after it.
    fn waits(&self) -> Vec<Duration> {
        let at = self.at.lock().unwrap();
        at.iter().skip(1).map(|t| *t - at[0]).collect()
    }
}

impl Transport for Arc<Script> {
    fn send(&self, _request: &Request) -> impl Future<Output = Result<(), Failure>> + Send {
        self.at.lock().unwrap().push(Instant::now());
        let answer = self.answers.lock().unwrap().pop_front();
        let answer = answer.unwrap_or_else(|| self.last.clone());
        async move { answer }
    }
}

fn request() -> Request {
    Request::of(b"HEAD".to_vec(), vec![vec![1; 10]])
}

fn after(secs: u64) -> Failure {
    Failure {
        detail: "busy".into(),
        retry: Retry::After(Duration::from_secs(secs)),
    }
}

#[tokio::test(start_paused = true)]
async fn a_failure_that_may_pass_is_tried_again_after_the_backoff_or_the_asked_wait() {
    let script = Script::new(vec![
        Err(Failure::transient("refused")),
        Err(after(2)),
        Err(Failure::transient("reset")),
        Ok(()),
    ]);
    send(&script, &request(), &Halt::default()).await.unwrap();
    let ms = |n| Duration::from_millis(n);
    let w = script.waits();
    assert_eq!(w.len(), 3, "{w:?}");
    // The backoff's 0.5 s (jittered down to half), the 2 s asked for (as asked), then the backoff doubled at each
    // try, 2 s (jittered down to half).
    assert!(w[0] >= ms(250) && w[0] <= ms(500), "{w:?}");
    assert_eq!(w[1] - w[0], ms(2_000), "{w:?}");
    assert!(
        w[2] - w[1] >= ms(1_000) && w[2] - w[1] <= ms(2_000),
        "{w:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_wait_asked_for_is_capped_and_the_tries_are_bounded() {
    let script = Script::new(vec![Err(after(3_600))]);
    let err = send(&script, &request(), &Halt::default())
        .await
        .unwrap_err();
    assert_eq!(script.waits().len() as u32, RETRIES, "{:?}", script.waits());
    assert_eq!(script.waits()[0], MAX_WAIT, "an hour asked for: the cap");
    assert!(
        err.contains("busy") && err.contains("tried 4 times"),
        "{err}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_failure_that_cannot_pass_is_not_tried_again() {
    let script = Script::new(vec![Err(Failure::fatal("HTTP 400")), Ok(())]);
    let err = send(&script, &request(), &Halt::default())
        .await
        .unwrap_err();
    assert_eq!(err, "HTTP 400");
    assert!(script.waits().is_empty(), "one try");
    // After tries that may pass: the tries are named.
    let script = Script::new(vec![
        Err(Failure::transient("refused")),
        Err(Failure::fatal("HTTP 400")),
        Ok(()),
    ]);
    let err = send(&script, &request(), &Halt::default())
        .await
        .unwrap_err();
    assert_eq!(err, "HTTP 400 (tried 2 times)");
}

#[tokio::test(start_paused = true)]
async fn a_halt_ends_the_wait_and_the_tries_left_come_at_once() {
    let script = Script::new(vec![Err(after(5))]);
    let halt = Arc::new(Halt::default());
    let started = Instant::now();
    let req = request();
    let (result, ()) = tokio::join!(send(&script, &req, &halt), async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        halt.halt();
    });
    let err = result.unwrap_err();
    assert!(err.contains("tried 4 times"), "{err}");
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(1),
        "no wait after the halt"
    );
    let second = Duration::from_secs(1);
    assert_eq!(
        script.waits(),
        vec![second; 3],
        "the three tries left, at the halt"
    );
}

#[test]
fn the_backoff_is_jittered_between_half_and_all_of_it() {
    let wait = Duration::from_secs(2);
    let draws: Vec<Duration> = (0..200).map(|_| jittered(wait)).collect();
    assert!(
        draws.iter().all(|d| *d >= wait / 2 && *d <= wait),
        "{draws:?}"
    );
    let distinct: std::collections::BTreeSet<_> = draws.iter().collect();
    assert!(
        distinct.len() > 100,
        "spread: {} distinct of 200",
        distinct.len()
    );
    let low = draws.iter().filter(|d| **d < wait * 3 / 4).count();
    assert!(
        (40..=160).contains(&low),
        "{low} of 200 in the lower half of the range"
    );
}

#[test]
fn the_specification_s_retryable_answers_are_retried_and_no_others() {
    let headers = |after: Option<&str>| {
        let mut h = http::HeaderMap::new();
        if let Some(a) = after {
            h.insert(http::header::RETRY_AFTER, a.parse().unwrap());
        }
        h
    };
    let status = |n| http::StatusCode::from_u16(n).unwrap();
    for n in [429, 502, 503, 504] {
        assert_eq!(http_retry(status(n), &headers(None)), Retry::Backoff, "{n}");
        assert_eq!(
            http_retry(status(n), &headers(Some(" 7 "))),
            Retry::After(Duration::from_secs(7)),
            "{n}"
        );
        // A date is not read: the backoff.
        let date = Some("Wed, 21 Oct 2015 07:28:00 GMT");
        assert_eq!(http_retry(status(n), &headers(date)), Retry::Backoff);
    }
    for n in [400, 401, 403, 404, 413, 500, 501] {
        assert_eq!(
            http_retry(status(n), &headers(Some("1"))),
            Retry::Never,
            "{n}"
        );
    }
    for code in ["1", "4", "10", "11", "14", "15"] {
        assert_eq!(grpc_retry(code), Retry::Backoff, "{code}");
    }
    for code in ["2", "3", "5", "7", "8", "9", "12", "13", "16", "x"] {
        assert_eq!(grpc_retry(code), Retry::Never, "{code}");
    }
}
