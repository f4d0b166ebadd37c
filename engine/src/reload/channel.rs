//! Reload requests from SIGHUP and from the control API (`POST /v1/reload`), and the settings alerts change while
//! they fire (`POST /v1/alerts`), served one at a time by one task that owns the [`Reloader`]: two changes of the
//! running config never run at once, and every source goes through the same code path.

use super::{ReloadOutcome, Reloader};
use crawl_core::config::Config;
use crawl_core::control::OverrideOutcome;
use crawl_core::control::Requester;
use crawl_core::control::alerts::Setting;
use tokio::sync::{mpsc, oneshot, watch};

/// Requests waiting for the reload task; more wait on the sender.
const QUEUE: usize = 8;

/// Who asked for a reload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReloadCause {
    /// SIGHUP.
    Signal,
    /// A client of the control API (`ip:port`).
    Api { peer: String },
}

/// A setting an alert changes over the running config.
#[derive(Debug, Clone, PartialEq)]
pub enum SettingChange {
    /// The alert `by` fires: give the setting its value while it does.
    Set { setting: Setting, by: Requester },
    /// The alert `by` was resolved: put back what its setting replaced, unless changed since.
    Unset { setting: Setting, by: Requester },
}

/// One change of the running config to make, and where its outcome goes.
#[derive(Debug)]
pub enum ReloadRequest {
    /// Re-read the config file.
    Reload {
        cause: ReloadCause,
        reply: oneshot::Sender<ReloadOutcome>,
    },
    /// Set or unset a setting for an alert.
    Setting {
        change: SettingChange,
        reply: oneshot::Sender<OverrideOutcome>,
    },
}

/// Asks the reload task for reloads; clones share the task.
#[derive(Debug, Clone)]
pub struct ReloadHandle {
    tx: mpsc::Sender<ReloadRequest>,
}

impl ReloadHandle {
    /// A handle and the receiving end the reload task serves ([`serve_reloads`]).
    pub fn channel() -> (ReloadHandle, mpsc::Receiver<ReloadRequest>) {
        let (tx, rx) = mpsc::channel(QUEUE);
        (ReloadHandle { tx }, rx)
    }

    /// Runs a reload and waits for its outcome; None when the reload task is gone (the crawl ended).
    pub async fn reload(&self, cause: ReloadCause) -> Option<ReloadOutcome> {
        let (reply, outcome) = oneshot::channel();
        self.tx
            .send(ReloadRequest::Reload { cause, reply })
            .await
            .ok()?;
        outcome.await.ok()
    }

    /// Sets or unsets a setting for an alert and waits for the outcome; None when the reload task is gone.
    pub async fn setting(&self, change: SettingChange) -> Option<OverrideOutcome> {
        let (reply, outcome) = oneshot::channel();
        self.tx
            .send(ReloadRequest::Setting { change, reply })
            .await
            .ok()?;
        outcome.await.ok()
    }
}

/// Serves requests one after the other until every handle is gone; the running config after each applied reload
/// or setting change is published on `running`.
pub async fn serve_reloads(
    mut requests: mpsc::Receiver<ReloadRequest>,
    mut reloader: Reloader,
    running: watch::Sender<Config>,
) {
    while let Some(req) = requests.recv().await {
        match req {
            ReloadRequest::Reload { cause, reply } => {
                match &cause {
                    ReloadCause::Signal => tracing::info!("sighup received; reloading the config"),
                    ReloadCause::Api { peer } => {
                        tracing::info!(peer = %peer, "reload asked through the api; reloading the config");
                    }
                }
                let outcome = reloader.reload();
                if matches!(outcome, ReloadOutcome::Applied(_)) {
                    running.send_replace(reloader.current().clone());
                }
                // The asker may have given up (its connection closed): the reload happened all the same.
                let _ = reply.send(outcome);
            }
            ReloadRequest::Setting { change, reply } => {
                let before = reloader.current().clone();
                let outcome = reloader.setting(change);
                if *reloader.current() != before {
                    running.send_replace(reloader.current().clone());
                }
                let _ = reply.send(outcome);
            }
        }
    }
}

/// Turns every SIGHUP into a reload request. The signal stream keeps one pending notification, so SIGHUPs that
/// arrive during a reload coalesce into one more reload, which reads the file as it is by then.
pub async fn forward_hangups(mut hangup: tokio::signal::unix::Signal, reloads: ReloadHandle) {
    while hangup.recv().await.is_some() {
        if reloads.reload(ReloadCause::Signal).await.is_none() {
            return;
        }
    }
}
