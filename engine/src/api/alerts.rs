//! `POST /v1/alerts`: an Alertmanager notification carried out. The actions `[[api.alert_actions]]` name (read
//! from the running config) are planned against the operator state in force ([`crawl_core::control::alerts::plan`]),
//! then each step is taken: pauses and resumes as operator changes (durable, like an operator's), settings through
//! the reload task as overrides of the running config (in memory only: a restart starts from the config file).
//! Every action is logged at info with `by = alert <name>` and answered with what became of it.

use super::dto::{AlertActionDto, AlertResult, AlertsDto};
use super::ops::{BoxFuture, CrawlOps, OpsError};
use crate::reload::{ReloadHandle, SettingChange};
use crawl_core::control::alerts::{Notification, Planned, Step, plan};
use crawl_core::control::{Change, HostMatch, OperatorState, Pause};
use std::sync::Arc;
use std::time::Duration;

/// Carries out notifications for one crawl.
pub struct Responder {
    ops: Arc<dyn CrawlOps>,
    settings: Option<ReloadHandle>,
    /// How long the crawl may take to answer one call.
    timeout: Duration,
}

impl Responder {
    /// `settings` None: setting actions are skipped (nothing can change the running config).
    pub fn new(
        ops: Arc<dyn CrawlOps>,
        settings: Option<ReloadHandle>,
        timeout: Duration,
    ) -> Responder {
        Responder {
            ops,
            settings,
            timeout,
        }
    }

    /// Carries out `n` at `now_ms` (Unix ms): what became of each action. A call the crawl does not answer (or
    /// an ended crawl) fails the whole notification, which Alertmanager then sends again: every step can be taken
    /// twice to the same effect.
    pub async fn carry_out(&self, n: &Notification, now_ms: u64) -> Result<AlertsDto, OpsError> {
        let actions = self.ops.alert_actions();
        let mut answer = AlertsDto {
            actions: Vec::new(),
        };
        if actions.is_empty() || n.alerts.is_empty() {
            return Ok(answer);
        }
        let mut state = self.ask(self.ops.operator()).await?;
        for p in plan(&actions, n, &state, now_ms) {
            let (result, detail) = self.take(&p, &mut state).await?;
            tracing::info!(
                by = %p.by(),
                fingerprint = %p.fingerprint,
                action = p.action.as_str(),
                result = result.as_str(),
                detail = %detail,
                "alert action"
            );
            answer.actions.push(AlertActionDto {
                alert: p.alert,
                fingerprint: p.fingerprint,
                action: p.action.as_str().to_owned(),
                result,
                detail,
            });
        }
        Ok(answer)
    }

    /// Takes one step; `state` follows the changes made, for the steps after it.
    async fn take(
        &self,
        p: &Planned,
        state: &mut OperatorState,
    ) -> Result<(AlertResult, String), OpsError> {
        match &p.step {
            Step::Operator(change) => self.operator(change, p, state).await,
            Step::Set { setting, by } => {
                self.setting(SettingChange::Set {
                    setting: *setting,
                    by: by.clone(),
                })
                .await
            }
            Step::Unset { setting, by } => {
                self.setting(SettingChange::Unset {
                    setting: *setting,
                    by: by.clone(),
                })
                .await
            }
            Step::Kept { why } => Ok((AlertResult::Kept, why.clone())),
            Step::Skipped { why } => Ok((AlertResult::Skipped, why.clone())),
        }
    }

    /// A pause while the alert fires (unless someone else paused first: theirs stands, and the alert's resolution
    /// will leave it), a resume when it is resolved.
    async fn operator(
        &self,
        change: &Change,
        p: &Planned,
        state: &mut OperatorState,
    ) -> Result<(AlertResult, String), OpsError> {
        let what = target(change.host());
        if let Change::Pause { host, .. } = change
            && let Some(held) = pause_in_force(state, host.as_ref())
        {
            return Ok(if held.by == p.by() {
                (
                    AlertResult::Applied,
                    format!("{what} paused already by this alert"),
                )
            } else {
                (
                    AlertResult::Kept,
                    format!(
                        "{what} paused already by {}: left as it is (this alert's resolution will not resume it)",
                        held.by
                    ),
                )
            });
        }
        let changed = self.ask(self.ops.operate(change.clone())).await?;
        state.apply(change);
        Ok(match (change, changed) {
            (Change::Pause { .. }, true) => (
                AlertResult::Applied,
                format!("paused {what} until the alert resolves"),
            ),
            (Change::Pause { .. }, false) => {
                (AlertResult::Applied, format!("{what} paused already"))
            }
            (_, true) => (AlertResult::Undone, format!("resumed {what}")),
            (_, false) => (
                AlertResult::Kept,
                format!("{what} not paused any more: nothing to resume"),
            ),
        })
    }

    async fn setting(&self, change: SettingChange) -> Result<(AlertResult, String), OpsError> {
        let Some(settings) = &self.settings else {
            return Ok((
                AlertResult::Skipped,
                "settings cannot be changed in this process".to_owned(),
            ));
        };
        let asked = tokio::time::timeout(self.timeout, settings.setting(change)).await;
        match asked {
            Ok(Some(o)) => Ok((o.result.into(), o.detail)),
            Ok(None) => Err(OpsError::Ended),
            Err(_) => Err(OpsError::Busy),
        }
    }

    async fn ask<T>(&self, call: BoxFuture<Result<T, OpsError>>) -> Result<T, OpsError> {
        tokio::time::timeout(self.timeout, call)
            .await
            .unwrap_or(Err(OpsError::Busy))
    }
}

/// The pause in force on `host` (None: the crawl), as an operator or alert set it.
fn pause_in_force<'a>(state: &'a OperatorState, host: Option<&HostMatch>) -> Option<&'a Pause> {
    match host {
        Some(h) => state.hosts.get(h).and_then(|r| r.paused.as_ref()),
        None => state.crawl.as_ref(),
    }
}

/// `host a.example` or `the crawl`, for a detail.
fn target(host: Option<&HostMatch>) -> String {
    host.map_or_else(|| "the crawl".to_owned(), |h| format!("host {h}"))
}

/// The wall clock in Unix ms.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests;
