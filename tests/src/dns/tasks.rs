//! The task group of one fake server: every task it spawns (listeners, connections, delayed answers, HTTP/2
//! streams) goes in here, so `shutdown` and `Drop` can stop them all.

use std::future::Future;
use std::sync::Mutex;

use tokio::task::JoinSet;

#[derive(Default)]
struct Inner {
    set: JoinSet<()>,
    closed: bool,
}

#[derive(Default)]
pub(crate) struct Tasks {
    inner: Mutex<Inner>,
}

impl Tasks {
    /// Spawns `fut` on the current tokio runtime, unless the group is closed. Must be called inside a runtime.
    pub fn spawn<F>(&self, fut: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if g.closed {
            return;
        }
        // reap finished tasks so the set does not grow with every connection
        while g.set.try_join_next().is_some() {}
        g.set.spawn(fut);
    }

    /// Closes the group and aborts every task (they stop at their next await point). For `Drop`.
    pub fn abort(&self) {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        g.closed = true;
        g.set.abort_all();
    }

    /// Closes the group, aborts every task and waits until all have ended.
    pub async fn shutdown(&self) {
        let mut set = {
            let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            g.closed = true;
            std::mem::take(&mut g.set)
        };
        set.abort_all();
        while set.join_next().await.is_some() {}
    }
}

/// hyper's executor (HTTP/2 streams) spawning into a task group.
#[derive(Clone)]
pub(crate) struct Exec(pub std::sync::Arc<Tasks>);

impl<F> hyper::rt::Executor<F> for Exec
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, fut: F) {
        self.0.spawn(async move {
            let _ = fut.await;
        });
    }
}
