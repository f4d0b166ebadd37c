//! Alerts that act: Alertmanager's webhook payload (version 4) and what `[[api.alert_actions]]` make of it. A
//! firing alert that an action matches asks for that action; its resolution asks for the action to be undone —
//! the caller undoes it only when what the alert set is still in force (an operator who changed the setting since
//! keeps their change). Pure: parsing and matching only.

use super::{Change, HostMatch, OperatorState, Pause, Requester};
use serde::Deserialize;
use std::collections::BTreeMap;

/// Alertmanager's webhook body (version 4); fields this crate does not use are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Notification {
    pub version: String,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub receiver: String,
    pub alerts: Vec<Alert>,
}

/// One alert of a notification.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Alert {
    /// `firing` or `resolved`.
    pub status: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Alertmanager's identity of the alert (its label set).
    #[serde(default)]
    pub fingerprint: String,
}

impl Alert {
    /// Its `alertname` label.
    pub fn name(&self) -> &str {
        self.labels.get("alertname").map_or("", String::as_str)
    }

    /// True while it fires.
    pub fn firing(&self) -> bool {
        self.status == "firing"
    }

    /// Who asks, when an action is taken for it.
    pub fn requester(&self) -> Requester {
        Requester::Alert {
            alert: self.name().to_owned(),
            fingerprint: self.fingerprint.clone(),
        }
    }
}

/// Why a notification was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotificationError {
    #[error("not an Alertmanager webhook body: {0}")]
    Malformed(String),
    #[error("webhook version {0} is not supported (version 4 is)")]
    Version(String),
}

impl Notification {
    /// Parses a webhook body.
    pub fn parse(body: &[u8]) -> Result<Notification, NotificationError> {
        let n: Notification = serde_json::from_slice(body)
            .map_err(|e| NotificationError::Malformed(e.to_string()))?;
        if n.version != "4" {
            return Err(NotificationError::Version(n.version));
        }
        Ok(n)
    }
}

/// What an action does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ActionKind {
    /// Pause the host the alert names (its `host` label, or the label `host_label` names).
    PauseHost,
    /// Pause the whole crawl.
    PauseCrawl,
    /// Resolve names over DoH only (`resolver.mode = "doh"`).
    ResolverDoh,
    /// Connect directly when no proxy chain is healthy (`proxy.fallback_direct = true`).
    FallbackDirect,
    /// Never connect directly when no proxy chain is healthy (`proxy.fallback_direct = false`).
    ForbidDirect,
    /// Multiply `fetch.concurrency` and `politeness.per_host_concurrency` by `factor` (0 < factor < 1; at
    /// least 1 each).
    LowerConcurrency { factor: f64 },
}

impl ActionKind {
    /// The name as `[[api.alert_actions]]` writes it.
    pub fn as_str(&self) -> &'static str {
        match self {
            ActionKind::PauseHost => "pause_host",
            ActionKind::PauseCrawl => "pause_crawl",
            ActionKind::ResolverDoh => "resolver_doh",
            ActionKind::FallbackDirect => "fallback_direct",
            ActionKind::ForbidDirect => "forbid_direct",
            ActionKind::LowerConcurrency { .. } => "lower_concurrency",
        }
    }
}

/// One `[[api.alert_actions]]` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct AlertAction {
    /// The `alertname` it answers.
    pub alert: String,
    /// Labels the alert must carry with these values.
    pub labels: BTreeMap<String, String>,
    pub action: ActionKind,
    /// The label naming the host (`pause_host`; default `host`).
    pub host_label: String,
}

impl AlertAction {
    fn matches(&self, a: &Alert) -> bool {
        a.name() == self.alert
            && self
                .labels
                .iter()
                .all(|(k, v)| a.labels.get(k).is_some_and(|x| x == v))
    }
}

/// A setting an alert may change for as long as it fires (not kept across restarts).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Setting {
    ResolverDoh,
    FallbackDirect(bool),
    LowerConcurrency { factor: f64 },
}

/// What one action asks for one alert.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// An operator change (a pause when an alert fires, a resume when it is resolved and its pause still holds).
    Operator(Change),
    /// Set a setting for this alert (`fingerprint`) while it fires.
    Set { setting: Setting, by: Requester },
    /// The alert (`fingerprint`) was resolved: undo the setting it set, unless it was changed since.
    Unset { setting: Setting, by: Requester },
    /// The alert was resolved but what its action did is not in force as it left it (a host paused by someone
    /// else, or not paused any more): nothing is undone.
    Kept { why: String },
    /// An action matched but cannot be carried out (a `pause_host` without a usable host label): logged.
    Skipped { why: String },
}

/// One action matched by one alert of a notification, and what it asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// The alert's name (`alertname`).
    pub alert: String,
    /// Alertmanager's identity of the alert.
    pub fingerprint: String,
    /// The action that matched.
    pub action: ActionKind,
    pub step: Step,
}

impl Planned {
    /// Who asks: the alert.
    pub fn by(&self) -> Requester {
        Requester::Alert {
            alert: self.alert.clone(),
            fingerprint: self.fingerprint.clone(),
        }
    }
}

/// The steps `actions` take for `n`, alert by alert and action by action (in the order of the notification, then
/// of the config), judged against the operator state in force (`state`) for undoing pauses: a resolved alert
/// resumes only what it paused itself and what is still paused by it.
pub fn plan(
    actions: &[AlertAction],
    n: &Notification,
    state: &OperatorState,
    now_ms: u64,
) -> Vec<Planned> {
    let mut planned = Vec::new();
    for a in &n.alerts {
        for act in actions.iter().filter(|x| x.matches(a)) {
            planned.push(Planned {
                alert: a.name().to_owned(),
                fingerprint: a.fingerprint.clone(),
                action: act.action,
                step: step(act, a, state, now_ms),
            });
        }
    }
    planned
}

/// What `act` asks for the alert `a`.
fn step(act: &AlertAction, a: &Alert, state: &OperatorState, now_ms: u64) -> Step {
    let by = a.requester();
    let setting = match act.action {
        ActionKind::PauseHost => {
            let Some(text) = a.labels.get(&act.host_label) else {
                return Step::Skipped {
                    why: format!("the alert has no `{}` label", act.host_label),
                };
            };
            return match HostMatch::parse(text) {
                Ok(named) => {
                    // The host the label names and every host under it: a label that names a site (a registrable
                    // domain, as `host_group` does) pauses the site, `www.` and all; one authority stays one.
                    let host = match named.port() {
                        None => HostMatch::domain(named.host()),
                        Some(_) => named,
                    };
                    let held = state.hosts.get(&host).and_then(|r| r.paused.as_ref());
                    pause_step(Some(host), held, a, by, now_ms)
                }
                Err(e) => Step::Skipped {
                    why: format!("label `{}`: {e}", act.host_label),
                },
            };
        }
        ActionKind::PauseCrawl => {
            return pause_step(None, state.crawl.as_ref(), a, by, now_ms);
        }
        ActionKind::ResolverDoh => Setting::ResolverDoh,
        ActionKind::FallbackDirect => Setting::FallbackDirect(true),
        ActionKind::ForbidDirect => Setting::FallbackDirect(false),
        ActionKind::LowerConcurrency { factor } => Setting::LowerConcurrency { factor },
    };
    if a.firing() {
        Step::Set { setting, by }
    } else {
        Step::Unset { setting, by }
    }
}

/// A pause of `host` (None: the crawl) while `a` fires; its resume once resolved, when the pause in force
/// (`held`) is the alert's own.
fn pause_step(
    host: Option<HostMatch>,
    held: Option<&Pause>,
    a: &Alert,
    by: Requester,
    now_ms: u64,
) -> Step {
    if a.firing() {
        return Step::Operator(Change::Pause {
            host,
            at_ms: now_ms,
            by,
        });
    }
    match held {
        Some(p) if p.by.is_alert(&a.fingerprint) => Step::Operator(Change::Resume {
            host,
            at_ms: now_ms,
            by,
        }),
        Some(p) => Step::Kept {
            why: format!(
                "paused by {} since, not by this alert: it stays paused",
                p.by
            ),
        },
        None => Step::Kept {
            why: "not paused any more: nothing to resume".to_owned(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(status: &str, labels: &str, fingerprint: &str) -> Vec<u8> {
        format!(
            r#"{{"version":"4","groupKey":"{{}}:{{}}","truncatedAlerts":0,"status":"{status}","receiver":"crawl",
            "groupLabels":{{}},"commonLabels":{{}},"commonAnnotations":{{}},"externalURL":"http://am",
            "alerts":[{{"status":"{status}","labels":{labels},"annotations":{{}},
            "startsAt":"2026-12-06T00:00:00Z","endsAt":"0001-01-01T00:00:00Z","generatorURL":"http://p",
            "fingerprint":"{fingerprint}"}}]}}"#
        )
        .into_bytes()
    }

    fn actions() -> Vec<AlertAction> {
        vec![
            AlertAction {
                alert: "CrawlHostThrottling".into(),
                labels: BTreeMap::new(),
                action: ActionKind::PauseHost,
                host_label: "host".into(),
            },
            AlertAction {
                alert: "CrawlDnsPollution".into(),
                labels: [("severity".to_owned(), "critical".to_owned())].into(),
                action: ActionKind::ResolverDoh,
                host_label: "host".into(),
            },
        ]
    }

    fn steps(planned: Vec<Planned>) -> Vec<Step> {
        planned.into_iter().map(|p| p.step).collect()
    }

    #[test]
    fn a_firing_alert_pauses_its_host_and_its_resolution_resumes_it() {
        let fire = Notification::parse(&body(
            "firing",
            r#"{"alertname":"CrawlHostThrottling","host":"A.example"}"#,
            "f1",
        ))
        .unwrap();
        let mut state = OperatorState::default();
        let planned = plan(&actions(), &fire, &state, 10);
        assert_eq!(
            (
                planned[0].alert.as_str(),
                planned[0].fingerprint.as_str(),
                planned[0].action
            ),
            ("CrawlHostThrottling", "f1", ActionKind::PauseHost)
        );
        assert!(planned[0].by().is_alert("f1"));
        let steps = steps(planned);
        let [Step::Operator(pause)] = &steps[..] else {
            panic!("{steps:?}")
        };
        assert!(
            matches!(pause, Change::Pause { host: Some(h), at_ms: 10, .. } if h.to_string() == "*.a.example"),
            "the host and every host under it: {pause:?}"
        );
        assert!(state.apply(pause));
        let resolved = Notification::parse(&body(
            "resolved",
            r#"{"alertname":"CrawlHostThrottling","host":"a.example"}"#,
            "f1",
        ))
        .unwrap();
        let done = steps_of(&resolved, &state);
        assert!(
            matches!(
                &done[..],
                [Step::Operator(Change::Resume { host: Some(_), .. })]
            ),
            "{done:?}"
        );
        // An operator paused it (by hand, before or since): the resolution leaves it, saying so. (A pause of the
        // host alone, `a.example`, is another rule: the alert's resolution never touches it.)
        let mut by_hand = OperatorState::default();
        by_hand.apply(&Change::Pause {
            host: Some(HostMatch::parse("*.a.example").unwrap()),
            at_ms: 15,
            by: Requester::Api {
                peer: "127.0.0.1:1".into(),
            },
        });
        let kept = steps_of(&resolved, &by_hand);
        assert!(
            matches!(&kept[..], [Step::Kept { why }] if why.contains("api 127.0.0.1:1")),
            "{kept:?}"
        );
        // Resumed since: nothing to undo.
        let kept = steps_of(&resolved, &OperatorState::default());
        assert!(matches!(&kept[..], [Step::Kept { .. }]), "{kept:?}");
    }

    fn steps_of(n: &Notification, state: &OperatorState) -> Vec<Step> {
        steps(plan(&actions(), n, state, 20))
    }

    #[test]
    fn a_crawl_pause_is_undone_only_by_the_alert_that_paused() {
        let acts = [AlertAction {
            alert: "CrawlFrontierStalled".into(),
            labels: BTreeMap::new(),
            action: ActionKind::PauseCrawl,
            host_label: "host".into(),
        }];
        let labels = r#"{"alertname":"CrawlFrontierStalled"}"#;
        let fire = Notification::parse(&body("firing", labels, "f9")).unwrap();
        let mut state = OperatorState::default();
        let [
            Planned {
                step: Step::Operator(pause),
                ..
            },
        ] = &plan(&acts, &fire, &state, 1)[..]
        else {
            panic!("no pause")
        };
        assert!(matches!(pause, Change::Pause { host: None, .. }));
        state.apply(pause);
        let resolved = Notification::parse(&body("resolved", labels, "f9")).unwrap();
        assert!(matches!(
            steps(plan(&acts, &resolved, &state, 2))[..],
            [Step::Operator(Change::Resume { host: None, .. })]
        ));
        let other = Notification::parse(&body("resolved", labels, "f10")).unwrap();
        assert!(matches!(
            steps(plan(&acts, &other, &state, 2))[..],
            [Step::Kept { .. }]
        ));
    }

    #[test]
    fn settings_set_and_unset_and_labels_must_match() {
        let fire = Notification::parse(&body(
            "firing",
            r#"{"alertname":"CrawlDnsPollution","severity":"critical"}"#,
            "f2",
        ))
        .unwrap();
        let planned = plan(&actions(), &fire, &OperatorState::default(), 0);
        assert_eq!(planned[0].action.as_str(), "resolver_doh");
        assert!(matches!(
            &steps(planned)[..],
            [Step::Set {
                setting: Setting::ResolverDoh,
                ..
            }]
        ));
        let warning = Notification::parse(&body(
            "firing",
            r#"{"alertname":"CrawlDnsPollution","severity":"warning"}"#,
            "f3",
        ))
        .unwrap();
        assert!(plan(&actions(), &warning, &OperatorState::default(), 0).is_empty());
        let resolved = Notification::parse(&body(
            "resolved",
            r#"{"alertname":"CrawlDnsPollution","severity":"critical"}"#,
            "f2",
        ))
        .unwrap();
        let steps = steps(plan(&actions(), &resolved, &OperatorState::default(), 0));
        assert!(
            matches!(&steps[..], [Step::Unset { setting: Setting::ResolverDoh, by }] if by.is_alert("f2"))
        );
    }

    #[test]
    fn every_setting_action_sets_its_setting() {
        for (action, setting) in [
            (ActionKind::FallbackDirect, Setting::FallbackDirect(true)),
            (ActionKind::ForbidDirect, Setting::FallbackDirect(false)),
            (
                ActionKind::LowerConcurrency { factor: 0.5 },
                Setting::LowerConcurrency { factor: 0.5 },
            ),
        ] {
            let acts = [AlertAction {
                alert: "A".into(),
                labels: BTreeMap::new(),
                action,
                host_label: "host".into(),
            }];
            let fire = Notification::parse(&body("firing", r#"{"alertname":"A"}"#, "f")).unwrap();
            let got = steps(plan(&acts, &fire, &OperatorState::default(), 0));
            assert_eq!(
                got,
                [Step::Set {
                    setting,
                    by: Requester::Alert {
                        alert: "A".into(),
                        fingerprint: "f".into()
                    }
                }]
            );
        }
    }

    #[test]
    fn bad_bodies_and_labels() {
        assert!(matches!(
            Notification::parse(b"{"),
            Err(NotificationError::Malformed(_))
        ));
        assert!(matches!(
            Notification::parse(br#"{"version":"4"}"#),
            Err(NotificationError::Malformed(m)) if m.contains("alerts")
        ));
        assert!(matches!(
            Notification::parse(br#"{"version":"3","alerts":[]}"#),
            Err(NotificationError::Version(v)) if v == "3"
        ));
        let no_host = Notification::parse(&body(
            "firing",
            r#"{"alertname":"CrawlHostThrottling"}"#,
            "f",
        ))
        .unwrap();
        assert!(matches!(
            &steps(plan(&actions(), &no_host, &OperatorState::default(), 0))[..],
            [Step::Skipped { why }] if why.contains("`host`")
        ));
        let bad_host = Notification::parse(&body(
            "firing",
            r#"{"alertname":"CrawlHostThrottling","host":"http://x/"}"#,
            "f",
        ))
        .unwrap();
        assert!(matches!(
            &steps(plan(&actions(), &bad_host, &OperatorState::default(), 0))[..],
            [Step::Skipped { .. }]
        ));
    }
}
