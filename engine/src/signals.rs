//! SIGINT and SIGTERM, watched on a thread of their own so that they work even when the scheduler's thread (the
//! actix system thread) is blocked or its actor is gone.
//!
//! The first signal asks the scheduler to drain (or exits 1 at once when the scheduler is gone) and arms a timer of
//! the grace period plus [`EXIT_SLACK`]: a crawl that has not ended by then exits 1. A second signal exits 130.

use crawl_actors::tree::Control;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::signal::unix::{Signal, SignalKind, signal};

/// What the process gets after the grace period to finish on its own.
pub const EXIT_SLACK: Duration = Duration::from_secs(5);

/// The running watcher. Tell it when the crawl has ended, so that its exit timer stands down.
#[derive(Debug)]
pub struct SignalWatch {
    ended: Arc<AtomicBool>,
}

impl SignalWatch {
    /// Installs the handlers (before returning, so no signal is missed) and starts the watcher thread.
    pub fn start(crawl: Control, grace: Duration) -> std::io::Result<SignalWatch> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (term, int) = {
            let _entered = rt.enter();
            (
                signal(SignalKind::terminate())?,
                signal(SignalKind::interrupt())?,
            )
        };
        let ended = Arc::new(AtomicBool::new(false));
        let seen = ended.clone();
        std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || rt.block_on(watch(term, int, crawl, grace, seen)))?;
        Ok(SignalWatch { ended })
    }

    /// The crawl has ended (whatever the outcome); a pending exit timer does nothing any more.
    pub fn crawl_ended(&self) {
        self.ended.store(true, Ordering::SeqCst);
    }
}

async fn next(term: &mut Signal, int: &mut Signal) {
    tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
}

async fn watch(
    mut term: Signal,
    mut int: Signal,
    crawl: Control,
    grace: Duration,
    ended: Arc<AtomicBool>,
) {
    next(&mut term, &mut int).await;
    if !crawl.is_running() {
        tracing::error!(
            "signal received but the scheduler is gone; exiting now (the next run resumes safely)"
        );
        std::process::exit(1);
    }
    tracing::info!(
        grace_ms = grace.as_millis() as u64,
        "signal received; draining (send again to exit at once)"
    );
    crawl.drain(grace);
    let limit = grace + EXIT_SLACK;
    tokio::select! {
        _ = next(&mut term, &mut int) => {}
        _ = tokio::time::sleep(limit) => {
            if !ended.load(Ordering::SeqCst) {
                tracing::error!(
                    limit_ms = limit.as_millis() as u64,
                    "the crawl did not end within the grace period; exiting now (the next run resumes safely)"
                );
                std::process::exit(1);
            }
            next(&mut term, &mut int).await;
        }
    }
    tracing::warn!("second signal; exiting now (the next run resumes safely)");
    std::process::exit(130);
}
