//! Panics that end the process. A panic in an actix handler only drops that actor; for the actors the crawl cannot
//! go on without (the scheduler, the sink, the frontier store) that would leave the process waiting forever. Each
//! of them owns a [`PanicGuard`]: when the actor is dropped while its thread unwinds, the guard sends the cause on a
//! [`FatalSender`], and whoever started the tree ends the process with status 1. What was committed stays; the
//! same command resumes.

use tokio::sync::mpsc;

/// Where fatal causes go. Cheap to clone; sending never blocks and works from any thread.
#[derive(Debug, Clone)]
pub struct FatalSender(mpsc::UnboundedSender<String>);

/// Receives fatal causes (held by whoever waits for the crawl).
#[derive(Debug)]
pub struct FatalReceiver(mpsc::UnboundedReceiver<String>);

/// A new channel of fatal causes.
pub fn channel() -> (FatalSender, FatalReceiver) {
    let (tx, rx) = mpsc::unbounded_channel();
    (FatalSender(tx), FatalReceiver(rx))
}

impl FatalSender {
    /// Reports a fatal cause. Ignored when nobody listens any more (the process is ending anyway).
    pub fn send(&self, cause: impl Into<String>) {
        let _ = self.0.send(cause.into());
    }

    /// A guard for the actor called `name`.
    pub fn guard(&self, name: &'static str) -> PanicGuard {
        PanicGuard {
            name,
            fatal: self.clone(),
        }
    }
}

impl FatalReceiver {
    /// The next cause; None once every sender is gone.
    pub async fn recv(&mut self) -> Option<String> {
        self.0.recv().await
    }

    /// A cause already sent, without waiting.
    pub fn try_recv(&mut self) -> Option<String> {
        self.0.try_recv().ok()
    }
}

/// Owned by an actor; reports "<name> panicked" when dropped while the thread is panicking (the actor's future is
/// dropped during the unwind).
#[derive(Debug)]
pub struct PanicGuard {
    name: &'static str,
    fatal: FatalSender,
}

impl PanicGuard {
    pub fn name(&self) -> &'static str {
        self.name
    }
}

impl Drop for PanicGuard {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let thread = std::thread::current();
            let cause = format!(
                "{} panicked (thread {}); the next run resumes from the last commit",
                self.name,
                thread.name().unwrap_or("unnamed")
            );
            tracing::error!(actor = self.name, "actor panicked; ending the process");
            self.fatal.send(cause);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_reports_only_when_dropped_by_a_panic() {
        let (tx, mut rx) = channel();
        drop(tx.guard("sink"));
        assert_eq!(rx.try_recv(), None, "a clean drop reports nothing");
        let g = tx.guard("scheduler");
        let r = std::thread::spawn(move || {
            let _g = g;
            panic!("boom");
        })
        .join();
        assert!(r.is_err());
        let cause = rx.try_recv().unwrap_or_default();
        assert!(cause.starts_with("scheduler panicked"), "{cause}");
        assert_eq!(rx.try_recv(), None);
    }

    #[test]
    fn a_panicking_actor_on_an_arbiter_reports_through_its_guard() {
        use actix::{Actor, Context, Handler, Message};
        struct Boom {
            _guard: PanicGuard,
        }
        impl Actor for Boom {
            type Context = Context<Self>;
        }
        #[derive(Message)]
        #[rtype(result = "()")]
        struct Go;
        impl Handler<Go> for Boom {
            type Result = ();
            fn handle(&mut self, _: Go, _: &mut Context<Self>) {
                panic!("injected");
            }
        }
        let (tx, mut rx) = channel();
        let sys = actix::System::new();
        let cause = sys.block_on(async move {
            let arbiter = actix::Arbiter::new();
            let g = tx.guard("boom");
            let addr = Boom::start_in_arbiter(&arbiter.handle(), move |_| Boom { _guard: g });
            addr.do_send(Go);
            let got = tokio::time::timeout(std::time::Duration::from_secs(5), rx.recv()).await;
            arbiter.stop();
            got
        });
        let cause = cause.ok().flatten().unwrap_or_default();
        assert!(cause.starts_with("boom panicked"), "{cause}");
    }
}
