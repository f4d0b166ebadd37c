//! Notifications carried out against a crawl that keeps a real [`OperatorState`] and a reload task that keeps real
//! [`SettingOverrides`] over a config (the actor tree itself is exercised by the binary's tests).

use super::*;
use crate::api::dto::{
    ActionDto, AddUrlsDto, DropDto, HostDto, PolitenessDto, StatusDto, UrlAnswerDto,
};
use crate::api::ops::HostSort;
use crate::reload::ReloadRequest;
use crawl_core::config::{Config, DohEndpoint, ResolverMode};
use crawl_core::control::alerts::{ActionKind, AlertAction};
use crawl_core::control::{Requester, SettingOverrides};
use std::sync::Mutex;

/// A crawl with operator state and alert actions; everything else is unsupported.
struct Crawl {
    state: Mutex<OperatorState>,
    actions: Vec<AlertAction>,
    operated: Mutex<Vec<String>>,
}

impl Crawl {
    fn new(actions: Vec<AlertAction>) -> Arc<Crawl> {
        Arc::new(Crawl {
            state: Mutex::new(OperatorState::default()),
            actions,
            operated: Mutex::new(Vec::new()),
        })
    }

    /// Who paused `host` (its own rule, else a domain's above it), as the crawl would obey it.
    fn paused_by(&self, host: &str) -> Option<String> {
        let state = self.state.lock().unwrap();
        state.pause_of(host, 443).map(|p| p.by.to_string())
    }
}

fn unsupported<T: Send + 'static>() -> BoxFuture<Result<T, OpsError>> {
    Box::pin(async { Err(OpsError::Unsupported) })
}

impl CrawlOps for Crawl {
    fn status(&self) -> BoxFuture<Result<StatusDto, OpsError>> {
        unsupported()
    }
    fn hosts(&self, _: HostSort, _: usize) -> BoxFuture<Result<Vec<HostDto>, OpsError>> {
        unsupported()
    }
    fn host(&self, _: String) -> BoxFuture<Result<Option<HostDto>, OpsError>> {
        unsupported()
    }
    fn add_urls(
        &self,
        _: AddUrlsDto,
        _: Requester,
    ) -> BoxFuture<Result<Vec<UrlAnswerDto>, OpsError>> {
        unsupported()
    }
    fn pause(&self, _: Option<HostMatch>, _: Requester) -> BoxFuture<Result<ActionDto, OpsError>> {
        unsupported()
    }
    fn resume(&self, _: Option<HostMatch>, _: Requester) -> BoxFuture<Result<ActionDto, OpsError>> {
        unsupported()
    }
    fn politeness(
        &self,
        _: HostMatch,
        _: PolitenessDto,
        _: Requester,
    ) -> BoxFuture<Result<ActionDto, OpsError>> {
        unsupported()
    }
    fn drop_queue(&self, _: HostMatch, _: Requester) -> BoxFuture<Result<DropDto, OpsError>> {
        unsupported()
    }
    fn operator(&self) -> BoxFuture<Result<OperatorState, OpsError>> {
        let state = self.state.lock().unwrap().clone();
        Box::pin(async move { Ok(state) })
    }
    fn operate(&self, change: Change) -> BoxFuture<Result<bool, OpsError>> {
        let changed = self.state.lock().unwrap().apply(&change);
        self.operated
            .lock()
            .unwrap()
            .push(format!("{} by {}", change.name(), change.by()));
        Box::pin(async move { Ok(changed) })
    }
    fn alert_actions(&self) -> Vec<AlertAction> {
        self.actions.clone()
    }
}

fn action(alert: &str, action: ActionKind, host_label: &str) -> AlertAction {
    AlertAction {
        alert: alert.into(),
        labels: Default::default(),
        action,
        host_label: host_label.into(),
    }
}

/// A webhook body with one alert per `(status, labels, fingerprint)`.
fn notification(alerts: &[(&str, &str, &str)]) -> Notification {
    let alerts: Vec<String> = alerts
        .iter()
        .map(|(status, labels, fp)| {
            format!(
                r#"{{"status":"{status}","labels":{labels},"annotations":{{}},"startsAt":"2026-12-06T00:00:00Z",
                "endsAt":"0001-01-01T00:00:00Z","generatorURL":"http://p","fingerprint":"{fp}"}}"#
            )
        })
        .collect();
    let body = format!(
        r#"{{"version":"4","groupKey":"{{}}","truncatedAlerts":0,"status":"firing","receiver":"crawl",
        "groupLabels":{{}},"commonLabels":{{}},"commonAnnotations":{{}},"externalURL":"http://am",
        "alerts":[{}]}}"#,
        alerts.join(",")
    );
    Notification::parse(body.as_bytes()).unwrap()
}

fn results(a: &AlertsDto) -> Vec<(&str, &str, &str, AlertResult)> {
    a.actions
        .iter()
        .map(|x| {
            (
                x.alert.as_str(),
                x.fingerprint.as_str(),
                x.action.as_str(),
                x.result,
            )
        })
        .collect()
}

const STORM: &str = r#"{"alertname":"Crawl429Storm","host_group":"a.example"}"#;

#[tokio::test]
async fn a_firing_alert_pauses_its_host_and_its_resolution_resumes_it() {
    let crawl = Crawl::new(vec![action(
        "Crawl429Storm",
        ActionKind::PauseHost,
        "host_group",
    )]);
    let r = Responder::new(crawl.clone(), None, Duration::from_secs(5));
    let a = r
        .carry_out(&notification(&[("firing", STORM, "f1")]), 10)
        .await
        .unwrap();
    assert_eq!(
        results(&a),
        [("Crawl429Storm", "f1", "pause_host", AlertResult::Applied)]
    );
    assert_eq!(
        a.actions[0].detail,
        "paused host *.a.example until the alert resolves"
    );
    assert_eq!(
        crawl.paused_by("a.example").as_deref(),
        Some("alert Crawl429Storm")
    );
    // Alertmanager sends it again while it fires: nothing changes.
    let again = r
        .carry_out(&notification(&[("firing", STORM, "f1")]), 11)
        .await
        .unwrap();
    assert_eq!(again.actions[0].result, AlertResult::Applied);
    assert!(again.actions[0].detail.contains("by this alert"));
    let resolved = r
        .carry_out(&notification(&[("resolved", STORM, "f1")]), 20)
        .await
        .unwrap();
    assert_eq!(resolved.actions[0].result, AlertResult::Undone);
    assert_eq!(crawl.paused_by("a.example"), None);
    assert_eq!(
        *crawl.operated.lock().unwrap(),
        [
            "pause by alert Crawl429Storm",
            "resume by alert Crawl429Storm"
        ]
    );
    // Resolved twice: nothing left to do.
    let twice = r
        .carry_out(&notification(&[("resolved", STORM, "f1")]), 30)
        .await
        .unwrap();
    assert_eq!(twice.actions[0].result, AlertResult::Kept);
}

#[tokio::test]
async fn an_operators_pause_is_neither_taken_over_nor_undone() {
    let crawl = Crawl::new(vec![action(
        "Crawl429Storm",
        ActionKind::PauseHost,
        "host_group",
    )]);
    // The site, as the alert would pause it: a pause of the host alone is another rule, which the alert leaves.
    crawl.state.lock().unwrap().apply(&Change::Pause {
        host: Some(HostMatch::parse("*.a.example").unwrap()),
        at_ms: 1,
        by: Requester::Api {
            peer: "127.0.0.1:9".into(),
        },
    });
    let r = Responder::new(crawl.clone(), None, Duration::from_secs(5));
    let fired = r
        .carry_out(&notification(&[("firing", STORM, "f1")]), 10)
        .await
        .unwrap();
    assert_eq!(fired.actions[0].result, AlertResult::Kept);
    assert!(
        fired.actions[0]
            .detail
            .contains("paused already by api 127.0.0.1:9"),
        "{}",
        fired.actions[0].detail
    );
    let resolved = r
        .carry_out(&notification(&[("resolved", STORM, "f1")]), 20)
        .await
        .unwrap();
    assert_eq!(resolved.actions[0].result, AlertResult::Kept);
    assert_eq!(
        crawl.paused_by("a.example").as_deref(),
        Some("api 127.0.0.1:9")
    );
}

#[tokio::test]
async fn alerts_no_action_names_and_unusable_labels() {
    let crawl = Crawl::new(vec![
        action("Crawl429Storm", ActionKind::PauseHost, "host_group"),
        action("Crawl429Storm", ActionKind::PauseCrawl, "host"),
    ]);
    let r = Responder::new(crawl.clone(), None, Duration::from_secs(5));
    let a = r
        .carry_out(
            &notification(&[
                ("firing", r#"{"alertname":"Other"}"#, "f0"),
                ("firing", r#"{"alertname":"Crawl429Storm"}"#, "f1"),
            ]),
            1,
        )
        .await
        .unwrap();
    // Both actions of the second alert, in the config's order; the first alert has none.
    assert_eq!(
        results(&a),
        [
            ("Crawl429Storm", "f1", "pause_host", AlertResult::Skipped),
            ("Crawl429Storm", "f1", "pause_crawl", AlertResult::Applied),
        ]
    );
    assert_eq!(a.actions[0].detail, "the alert has no `host_group` label");
    assert!(crawl.state.lock().unwrap().crawl.is_some());
    // Without actions nothing is asked of the crawl.
    let none = Crawl::new(Vec::new());
    let r = Responder::new(none.clone(), None, Duration::from_secs(5));
    let a = r
        .carry_out(&notification(&[("firing", STORM, "f1")]), 1)
        .await
        .unwrap();
    assert!(a.actions.is_empty());
}

/// Serves setting changes as the reload task does, over `config`.
fn settings_task(mut config: Config) -> (ReloadHandle, tokio::task::JoinHandle<Config>) {
    let (handle, mut rx) = ReloadHandle::channel();
    let task = tokio::spawn(async move {
        let mut overrides = SettingOverrides::default();
        while let Some(req) = rx.recv().await {
            if let ReloadRequest::Setting { change, reply } = req {
                let outcome = match change {
                    SettingChange::Set { setting, by } => overrides.set(setting, &by, &mut config),
                    SettingChange::Unset { setting, by } => {
                        overrides.unset(setting, &by, &mut config)
                    }
                };
                reply.send(outcome).unwrap();
            }
        }
        config
    });
    (handle, task)
}

#[tokio::test]
async fn settings_go_through_the_reload_task_and_come_back() {
    let crawl = Crawl::new(vec![action(
        "CrawlDnsPollutionSpike",
        ActionKind::ResolverDoh,
        "host",
    )]);
    let mut config = Config::default();
    config.resolver.doh.push(DohEndpoint {
        url: url::Url::parse("https://dns.example/dns-query").unwrap(),
        bootstrap: None,
        ca_file: None,
    });
    let (handle, task) = settings_task(config);
    let r = Responder::new(crawl.clone(), Some(handle), Duration::from_secs(5));
    let labels = r#"{"alertname":"CrawlDnsPollutionSpike"}"#;
    let fired = r
        .carry_out(&notification(&[("firing", labels, "d1")]), 1)
        .await
        .unwrap();
    assert_eq!(
        results(&fired),
        [(
            "CrawlDnsPollutionSpike",
            "d1",
            "resolver_doh",
            AlertResult::Applied
        )]
    );
    assert!(
        fired.actions[0]
            .detail
            .starts_with("resolver.mode = \"doh\" (was \"detect\")"),
        "{}",
        fired.actions[0].detail
    );
    let resolved = r
        .carry_out(&notification(&[("resolved", labels, "d1")]), 2)
        .await
        .unwrap();
    assert_eq!(resolved.actions[0].result, AlertResult::Undone);
    drop(r);
    let config = task.await.unwrap();
    assert_eq!(config.resolver.mode, ResolverMode::Detect);
    // Without a reload task, a setting cannot change.
    let r = Responder::new(crawl, None, Duration::from_secs(5));
    let skipped = r
        .carry_out(&notification(&[("firing", labels, "d1")]), 3)
        .await
        .unwrap();
    assert_eq!(skipped.actions[0].result, AlertResult::Skipped);
}

#[tokio::test]
async fn an_ended_reload_task_fails_the_notification() {
    let crawl = Crawl::new(vec![action("A", ActionKind::FallbackDirect, "host")]);
    let (handle, rx) = ReloadHandle::channel();
    drop(rx);
    let r = Responder::new(crawl, Some(handle), Duration::from_secs(5));
    let e = r
        .carry_out(&notification(&[("firing", r#"{"alertname":"A"}"#, "x")]), 1)
        .await
        .unwrap_err();
    assert_eq!(e, OpsError::Ended);
}
