//! Sending a request again after a failure that may pass, as the OTLP specification asks: the answers it names
//! retryable (HTTP 429, 502, 503 and 504; gRPC CANCELLED, DEADLINE_EXCEEDED, ABORTED, OUT_OF_RANGE, UNAVAILABLE and
//! DATA_LOSS) and a collector that could not be reached or did not answer in time, after the wait the collector
//! asks for (`Retry-After` in seconds) or an exponential backoff with jitter (so that the processes of a crawl,
//! refused together, do not come back together), [`RETRIES`] times at most, and without waiting
//! once the exporter stops (its shutdown's own wait bounds the tries then). While a request waits it keeps its place among those in flight and its spans stay pending: a
//! collector that stays down fills the bound on pending spans, and what comes past it is dropped and counted.

use super::{Request, Transport};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::Notify;

/// Tries after the first, at most.
pub(crate) const RETRIES: u32 = 3;
/// The first wait of the backoff, doubled at each try.
pub(crate) const FIRST_WAIT: Duration = Duration::from_millis(500);
/// The longest wait between two tries, whatever the collector asks.
pub(crate) const MAX_WAIT: Duration = Duration::from_secs(5);

/// Why a request failed, and whether the same request may be sent again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub detail: String,
    pub retry: Retry,
}

/// When a failed request may be sent again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// Never: the collector refused it for good (a bad request, an unknown gRPC status).
    Never,
    /// After the backoff's next wait.
    Backoff,
    /// After the wait the collector asked for.
    After(Duration),
}

impl Failure {
    /// A failure that sending again would not mend.
    pub(crate) fn fatal(detail: impl Into<String>) -> Failure {
        Failure {
            detail: detail.into(),
            retry: Retry::Never,
        }
    }

    /// A failure that may pass (the collector unreachable, slow or overloaded).
    pub(crate) fn transient(detail: impl Into<String>) -> Failure {
        Failure {
            detail: detail.into(),
            retry: Retry::Backoff,
        }
    }
}

/// Whether an HTTP answer may pass when the request is sent again: 429, 502, 503 and 504 may, after the
/// `Retry-After` seconds when the answer gives them (a date is taken as no wait given).
pub(crate) fn http_retry(status: http::StatusCode, headers: &http::HeaderMap) -> Retry {
    match status.as_u16() {
        429 | 502 | 503 | 504 => headers
            .get(http::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map_or(Retry::Backoff, |s| Retry::After(Duration::from_secs(s))),
        _ => Retry::Never,
    }
}

/// Whether a gRPC status may pass when the request is sent again. RESOURCE_EXHAUSTED (8) may only when the
/// collector says so in a `RetryInfo`, which is not read here: it is not retried.
pub(crate) fn grpc_retry(code: &str) -> Retry {
    match code {
        "1" | "4" | "10" | "11" | "14" | "15" => Retry::Backoff,
        _ => Retry::Never,
    }
}

/// Ends the waits between tries when the exporter shuts down: what is left of a request's tries comes at once.
#[derive(Debug, Default)]
pub(crate) struct Halt {
    halted: AtomicBool,
    wake: Notify,
}

impl Halt {
    pub(crate) fn halt(&self) {
        self.halted.store(true, Ordering::Release);
        self.wake.notify_waiters();
    }

    fn is_halted(&self) -> bool {
        self.halted.load(Ordering::Acquire)
    }
}

/// Between half of `wait` and all of it, drawn anew at each call.
fn jittered(wait: Duration) -> Duration {
    use std::hash::BuildHasher as _;
    // Each `RandomState` has keys of its own (random per thread, then stepped at every new one): a hash under
    // them is random enough to spread retries, with no generator or counter to keep.
    let draw = std::collections::hash_map::RandomState::new().hash_one(());
    // The top 16 bits as a fraction of one half.
    wait / 2 + (wait / 2).mul_f64((draw >> 48) as f64 / 65_536.0)
}

/// Sends `request`, and again after each failure that may pass, at most [`RETRIES`] more times; the last
/// failure's detail otherwise (with the number of tries when there were more than one).
pub(crate) async fn send<T: Transport>(
    transport: &T,
    request: &Request,
    halt: &Halt,
) -> Result<(), String> {
    let mut backoff = FIRST_WAIT;
    let mut tries = 1;
    loop {
        let failure = match transport.send(request).await {
            Ok(()) => return Ok(()),
            Err(f) => f,
        };
        let wait = match failure.retry {
            Retry::Never => None,
            Retry::Backoff => Some(jittered(backoff)),
            Retry::After(asked) => Some(asked.min(MAX_WAIT)),
        };
        let Some(wait) = wait.filter(|_| tries <= RETRIES) else {
            return Err(if tries == 1 {
                failure.detail
            } else {
                format!("{} (tried {tries} times)", failure.detail)
            });
        };
        tracing::debug!(
            tries,
            wait_ms = wait.as_millis() as u64,
            error = %failure.detail,
            "trace export failed, to be tried again"
        );
        // Registered before the flag is read: a halt between the two still ends the wait.
        let woken = halt.wake.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        if !halt.is_halted() {
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = woken => {}
            }
        }
        backoff = (backoff * 2).min(MAX_WAIT);
        tries += 1;
    }
}

#[cfg(test)]
mod tests;
