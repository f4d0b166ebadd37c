//! The store actor: a [`FrontierStore`] served on its own thread (an actix `SyncArbiter` of one).

use super::archive::Archive;
use super::messages::{
    ApplyHints, ApplyOperator, Commit, IdleWork, KnowsHost, NextUrls, PollShards, PromoteDue,
    ReadOperator, ReadOutlook, ReadProcesses, Refetch,
};
use crate::fatal::PanicGuard;
use crate::faults::{Faults, Stage};
use actix::{Actor, Handler, SyncContext};
use crawl_core::frontier::{Committed, Entry, FrontierError, FrontierStore, ShardChanges};

pub struct StoreActor {
    store: Option<Box<dyn FrontierStore>>,
    /// WARC output (when on): written and synced before each commit that references it.
    archive: Option<Archive>,
    /// The WARC file the last committed archive checkpoint names, for an object store sink.
    warc_file: Option<tokio::sync::watch::Sender<Option<String>>>,
    idle_queued: bool,
    faults: Faults,
    /// Reports a panic on this thread: the process ends with everything committed kept.
    _guard: PanicGuard,
}

impl StoreActor {
    /// The store moves to the actor's thread at start.
    pub fn new(store: Box<dyn FrontierStore>, faults: Faults, guard: PanicGuard) -> StoreActor {
        StoreActor {
            store: Some(store),
            archive: None,
            warc_file: None,
            idle_queued: false,
            faults,
            _guard: guard,
        }
    }

    /// An actor without a store (a SyncArbiter restarted it after a panic lost the store): every request fails.
    pub fn closed(guard: PanicGuard) -> StoreActor {
        StoreActor {
            store: None,
            archive: None,
            warc_file: None,
            idle_queued: false,
            faults: Faults::default(),
            _guard: guard,
        }
    }

    /// Archives fetches (WARC) before each commit.
    pub fn with_archive(mut self, archive: Option<Archive>) -> StoreActor {
        self.archive = archive;
        self
    }

    /// Publishes the WARC file each commit's archive checkpoint names.
    pub fn with_warc_progress(
        mut self,
        tx: tokio::sync::watch::Sender<Option<String>>,
    ) -> StoreActor {
        self.warc_file = Some(tx);
        self
    }

    fn store(&mut self) -> Result<&mut Box<dyn FrontierStore>, FrontierError> {
        self.store
            .as_mut()
            .ok_or_else(|| FrontierError::Gone("the store was closed".into()))
    }

    /// Schedules one step of background work after the requests already queued.
    fn keep_idle_work_going(&mut self, ctx: &mut SyncContext<Self>) {
        if !self.idle_queued {
            self.idle_queued = true;
            ctx.address().do_send(IdleWork);
        }
    }
}

impl Actor for StoreActor {
    type Context = SyncContext<Self>;

    fn started(&mut self, ctx: &mut SyncContext<Self>) {
        self.keep_idle_work_going(ctx);
    }
}

impl Handler<Commit> for StoreActor {
    type Result = Result<Committed, FrontierError>;

    fn handle(&mut self, msg: Commit, _ctx: &mut SyncContext<Self>) -> Self::Result {
        if self.faults.has(Stage::Store) {
            for d in &msg.batch.discovered {
                self.faults.hit(Stage::Store, &d.url);
            }
        }
        let mut batch = msg.batch;
        let mut rewritten = Vec::new();
        if !msg.archive.is_empty()
            && let Some(a) = self.archive.as_mut()
        {
            rewritten = a
                .write(&mut batch, msg.archive)
                .map_err(|e| FrontierError::Store(format!("warc archive: {e}")))?;
        }
        let archived = batch.archive_checkpoint.is_some();
        let mut committed = self.store()?.commit(batch)?;
        committed.rewritten = rewritten;
        if archived && let (Some(tx), Some(a)) = (&self.warc_file, &self.archive) {
            let file = a.current_file();
            tx.send_if_modified(|at| {
                let moved = at.as_deref() != Some(file);
                if moved {
                    *at = Some(file.to_owned());
                }
                moved
            });
        }
        Ok(committed)
    }
}

impl Handler<NextUrls> for StoreActor {
    type Result = Result<Vec<Entry>, FrontierError>;

    fn handle(&mut self, msg: NextUrls, _ctx: &mut SyncContext<Self>) -> Self::Result {
        self.store()?.next_urls(msg.host, msg.after, msg.max)
    }
}

impl Handler<IdleWork> for StoreActor {
    type Result = ();

    fn handle(&mut self, _msg: IdleWork, ctx: &mut SyncContext<Self>) {
        self.idle_queued = false;
        let more = match self.store() {
            Ok(s) => s.idle_work(),
            Err(_) => false,
        };
        if more {
            self.keep_idle_work_going(ctx);
        }
    }
}

impl Handler<PollShards> for StoreActor {
    type Result = Result<ShardChanges, FrontierError>;

    fn handle(&mut self, msg: PollShards, _ctx: &mut SyncContext<Self>) -> Self::Result {
        let store = self.store()?;
        if msg.reread {
            store.reread_shards();
        }
        store.poll_shards()
    }
}

impl Handler<PromoteDue> for StoreActor {
    type Result = Result<Vec<crawl_core::frontier::Added>, FrontierError>;

    fn handle(&mut self, msg: PromoteDue, _ctx: &mut SyncContext<Self>) -> Self::Result {
        self.store()?.promote_due(msg.now_ms, msg.max)
    }
}

impl Handler<ReadOutlook> for StoreActor {
    type Result = Result<crawl_core::frontier::Outlook, FrontierError>;

    fn handle(&mut self, msg: ReadOutlook, _ctx: &mut SyncContext<Self>) -> Self::Result {
        self.store()?.outlook(msg.horizon_ms, msg.cap)
    }
}

impl Handler<ReadOperator> for StoreActor {
    type Result = Result<(u64, crawl_core::control::OperatorState), FrontierError>;

    fn handle(&mut self, _msg: ReadOperator, _ctx: &mut SyncContext<Self>) -> Self::Result {
        self.store()?.operator_state()
    }
}

impl Handler<ApplyOperator> for StoreActor {
    type Result = Result<(bool, u64, crawl_core::control::OperatorState), FrontierError>;

    fn handle(&mut self, msg: ApplyOperator, _ctx: &mut SyncContext<Self>) -> Self::Result {
        let store = self.store()?;
        let changed = store.apply_operator(&msg.change)?;
        let (version, state) = store.operator_state()?;
        Ok((changed, version, state))
    }
}

impl Handler<Refetch> for StoreActor {
    type Result = Result<Vec<crawl_core::frontier::Added>, FrontierError>;

    fn handle(&mut self, msg: Refetch, _ctx: &mut SyncContext<Self>) -> Self::Result {
        self.store()?.refetch(&msg.urls)
    }
}

impl Handler<ApplyHints> for StoreActor {
    type Result = Result<crawl_core::frontier::Hinted, FrontierError>;

    fn handle(&mut self, msg: ApplyHints, _ctx: &mut SyncContext<Self>) -> Self::Result {
        self.store()?.hint(&msg.hints, &msg.policy, msg.now_ms)
    }
}

impl Handler<ReadProcesses> for StoreActor {
    type Result = Result<Vec<crawl_core::frontier::ProcessInfo>, FrontierError>;

    fn handle(&mut self, msg: ReadProcesses, _ctx: &mut SyncContext<Self>) -> Self::Result {
        let read = self.store()?.processes();
        drop(msg.slot);
        read
    }
}

impl Handler<KnowsHost> for StoreActor {
    type Result = Result<bool, FrontierError>;

    fn handle(&mut self, msg: KnowsHost, _ctx: &mut SyncContext<Self>) -> Self::Result {
        let known = self.store()?.knows_host(&msg.host);
        drop(msg.slot);
        known
    }
}
