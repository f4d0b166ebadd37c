//! The other processes of a crawl shared by many processes, as the control API sees them: read from the store
//! through the store actor (never through the scheduler, which answers from its own state and must not wait for
//! Redis), bounded by a timeout and by the reads already waiting there.

use crate::protocol::{ControlError, HostView, Processes};
use crate::store::StoreActor;
use crate::store::messages::{KnowsHost, ReadProcesses};
use crate::store::read_slots::{ReadSlot, ReadSlots};
use actix::Addr;
use crawl_core::frontier::{FrontierError, ProcessInfo};
use std::time::Duration;

/// How long a read from the store may take before a view answers without it.
const READ_TIMEOUT: Duration = Duration::from_secs(3);
/// Reads (processes, hosts) that may wait in the store's mailbox at a time.
const MAX_WAITING: usize = 4;

/// Why the store did not answer a read.
#[derive(Debug)]
enum Unanswered {
    /// Not in time, or too many reads wait already: asking again later may do.
    Busy(String),
    /// The store failed or is gone.
    Failed(String),
}

impl Unanswered {
    fn why(&self) -> &str {
        match self {
            Unanswered::Busy(w) | Unanswered::Failed(w) => w,
        }
    }

    fn into_control(self) -> ControlError {
        match self {
            Unanswered::Busy(_) => ControlError::Busy,
            Unanswered::Failed(w) => ControlError::Store(w),
        }
    }
}

/// This process in a crawl shared by many processes, and how it reads the others.
#[derive(Clone)]
pub(super) struct Peers {
    store: Addr<StoreActor>,
    /// This process's id in the store.
    me: String,
    slots: ReadSlots,
    timeout: Duration,
}

impl Peers {
    pub fn new(store: Addr<StoreActor>, me: String) -> Peers {
        Peers {
            store,
            me,
            slots: ReadSlots::new(MAX_WAITING),
            timeout: READ_TIMEOUT,
        }
    }

    /// This process's id in the store.
    pub fn me(&self) -> &str {
        &self.me
    }

    /// Asks the store actor `make(slot)` within the timeout, if fewer than [`MAX_WAITING`] reads wait there.
    async fn ask<M, T>(&self, make: impl FnOnce(ReadSlot) -> M) -> Result<T, Unanswered>
    where
        M: actix::Message<Result = Result<T, FrontierError>> + Send + 'static,
        T: Send + 'static,
        StoreActor: actix::Handler<M>,
    {
        let Some(slot) = self.slots.take() else {
            return Err(Unanswered::Busy(format!(
                "{MAX_WAITING} reads still wait for the frontier store"
            )));
        };
        match self.store.send(make(slot)).timeout(self.timeout).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(e)) => Err(Unanswered::Failed(e.to_string())),
            Err(actix::MailboxError::Timeout) => Err(Unanswered::Busy(format!(
                "the frontier store did not answer within {} ms",
                self.timeout.as_millis()
            ))),
            Err(actix::MailboxError::Closed) => {
                Err(Unanswered::Failed("the frontier store is gone".to_owned()))
            }
        }
    }

    /// Every live process with the shards it holds, or why not.
    async fn read(&self) -> Result<Vec<ProcessInfo>, Unanswered> {
        self.ask(|slot| ReadProcesses { slot }).await
    }

    /// The processes for the status.
    pub async fn processes(&self) -> Processes {
        match self.read().await {
            Ok(list) => Processes::Shared {
                me: self.me.clone(),
                list,
            },
            Err(e) => {
                let why = e.why().to_owned();
                tracing::debug!(reason = %why, "processes not read for the status");
                Processes::Unknown {
                    me: self.me.clone(),
                    why,
                }
            }
        }
    }

    /// One host's view with its owner. A host this process never met (`known_here` false) is another's only
    /// when the store knows it: None when it does not.
    pub async fn host(&self, view: HostView) -> Result<Option<HostView>, ControlError> {
        if !view.known_here {
            let host = view.host.clone();
            let known = self
                .ask(|slot| KnowsHost { host, slot })
                .await
                .map_err(Unanswered::into_control)?;
            if !known {
                return Ok(None);
            }
        }
        let mut views = [view];
        self.owners(&mut views).await;
        let [view] = views;
        Ok(Some(view))
    }

    /// Fills in who holds each view's shard: this process for the shards it holds, else the store's answer (read
    /// once, and only when a view needs it); left unknown when the store does not answer.
    pub async fn owners(&self, views: &mut [HostView]) {
        let mut list = None;
        for v in views.iter_mut() {
            let Some(shard) = v.shard else { continue };
            if v.held_here {
                v.owner = Some(self.me.clone());
                continue;
            }
            if list.is_none() {
                list = Some(self.read().await.unwrap_or_else(|e| {
                    tracing::debug!(reason = %e.why(), "host owners not read");
                    Vec::new()
                }));
            }
            v.owner = list
                .as_deref()
                .and_then(|l| ProcessInfo::holder_of(l, shard))
                .map(|p| p.id.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::Faults;
    use crate::protocol::RobotsState;
    use actix::SyncArbiter;
    use crawl_core::frontier::{Batch, Committed, Entry, Fp, FrontierStore, QueueKey, Resume};
    use std::sync::mpsc;

    /// A store shared with "b": this process ("a") holds shards 0 and 1, "b" shard 2. With `hold`, each read of
    /// the processes waits for a message on it first (a store busy with a long commit).
    struct Shared {
        hold: Option<mpsc::Receiver<()>>,
    }

    impl FrontierStore for Shared {
        fn recover(&mut self) -> Result<Resume, FrontierError> {
            Ok(Resume::default())
        }
        fn commit(&mut self, _: Batch) -> Result<Committed, FrontierError> {
            Ok(Committed::default())
        }
        fn next_urls(
            &mut self,
            _: Fp,
            _: Option<QueueKey>,
            _: usize,
        ) -> Result<Vec<Entry>, FrontierError> {
            Ok(Vec::new())
        }
        fn is_known(&mut self, _: &str) -> Result<bool, FrontierError> {
            Ok(false)
        }
        fn knows_host(&mut self, host: &str) -> Result<bool, FrontierError> {
            Ok(host == "known.example")
        }
        fn processes(&mut self) -> Result<Vec<ProcessInfo>, FrontierError> {
            if let Some(hold) = &self.hold {
                hold.recv()
                    .map_err(|_| FrontierError::Gone("released".into()))?;
            }
            Ok(vec![
                ProcessInfo {
                    id: "a".into(),
                    heartbeat_expires_in_ms: Some(900),
                    shards_held: vec![0, 1],
                },
                ProcessInfo {
                    id: "b".into(),
                    heartbeat_expires_in_ms: Some(800),
                    shards_held: vec![2],
                },
            ])
        }
    }

    fn peers(hold: Option<mpsc::Receiver<()>>, timeout: Duration) -> Peers {
        let (tx, _rx) = crate::fatal::channel();
        let cell = std::sync::Mutex::new(Some(Shared { hold }));
        let store = SyncArbiter::start(1, move || {
            let guard = tx.guard("store");
            match cell.lock().ok().and_then(|mut c| c.take()) {
                Some(s) => StoreActor::new(Box::new(s), Faults::default(), guard),
                None => StoreActor::closed(guard),
            }
        });
        Peers {
            timeout,
            ..Peers::new(store, "a".into())
        }
    }

    fn view(shard: Option<u32>, held_here: bool) -> HostView {
        HostView {
            host: "h.example".into(),
            queued: None,
            in_flight: 0,
            next_allowed_in_ms: None,
            backoff_level: 0,
            backoff_for_ms: None,
            delay_ms: 0,
            concurrency: 1,
            rule: None,
            robots: RobotsState::Unknown,
            errors: Default::default(),
            shard,
            held_here,
            owner: None,
            known_here: true,
        }
    }

    #[test]
    fn the_status_lists_the_store_s_processes_and_hosts_get_their_owners() {
        actix::System::new().block_on(async {
            let p = peers(None, READ_TIMEOUT);
            match p.processes().await {
                Processes::Shared { me, list } => {
                    assert_eq!(me, "a");
                    assert_eq!(list.len(), 2);
                }
                other => panic!("{other:?}"),
            }
            let mut views = [
                view(Some(0), true),
                view(Some(2), false),
                view(Some(5), false),
                view(None, false),
            ];
            p.owners(&mut views).await;
            let owners: Vec<Option<&str>> = views.iter().map(|v| v.owner.as_deref()).collect();
            assert_eq!(owners, [Some("a"), Some("b"), None, None]);
            // A host this process never met: another's when the store knows it, else none.
            let elsewhere = |name: &str| HostView {
                host: name.into(),
                known_here: false,
                ..view(Some(2), false)
            };
            let v = p.host(elsewhere("known.example")).await.unwrap().unwrap();
            assert_eq!(v.owner.as_deref(), Some("b"));
            assert_eq!(p.host(elsewhere("unknown.example")).await, Ok(None));
        });
    }

    #[test]
    fn a_busy_store_makes_the_processes_unknown_and_reads_never_pile_up() {
        actix::System::new().block_on(async {
            let (release, hold) = mpsc::channel();
            let p = peers(Some(hold), Duration::from_millis(50));
            for _ in 0..MAX_WAITING {
                match p.processes().await {
                    Processes::Unknown { me, why } => {
                        assert_eq!(me, "a");
                        assert!(why.contains("did not answer within 50 ms"), "{why}");
                    }
                    other => panic!("{other:?}"),
                }
            }
            assert_eq!(p.slots.waiting(), MAX_WAITING);
            let why = p.read().await.unwrap_err();
            assert!(why.why().contains("still wait"), "{why:?}");
            let v = HostView {
                known_here: false,
                ..view(Some(2), false)
            };
            assert_eq!(p.host(v).await, Err(ControlError::Busy));
            // The store is free again: the read it was busy with ends, those given up on are dropped unserved
            // when they come up, and new ones are answered (enough releases for every read either way).
            for _ in 0..MAX_WAITING + 2 {
                release.send(()).unwrap();
            }
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while p.slots.waiting() > 0 {
                assert!(std::time::Instant::now() < deadline, "the slots stay taken");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let p = Peers {
                timeout: READ_TIMEOUT,
                ..p
            };
            assert_eq!(p.read().await.map(|l| l.len()).ok(), Some(2));
            assert_eq!(p.slots.waiting(), 0);
            let mut views = [view(Some(2), false)];
            p.owners(&mut views).await;
            assert_eq!(views[0].owner.as_deref(), Some("b"));
        });
    }
}
