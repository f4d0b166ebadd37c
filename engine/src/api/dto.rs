//! The JSON contract of the control API: what each endpoint answers and takes. `engine/openapi.json` describes the
//! same shapes; inputs refuse unknown fields.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `GET /v1/status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusDto {
    /// This process: `host/pid`, or its id in the crawl when the store is shared (Redis; the id `processes` and
    /// host owners name it by).
    pub process: String,
    pub state: CrawlState,
    /// The whole crawl is paused by an operator.
    pub paused: bool,
    /// What a waiting crawl waits for (the next revisit, a store), when it waits.
    pub waiting_for: Option<String>,
    pub counters: CountersDto,
    pub rates: RatesDto,
    pub operator: OperatorDto,
    /// Every live process of the crawl (this one alone when the store is not shared).
    pub processes: Vec<ProcessDto>,
    /// Why `processes` lists this process alone although the store is shared: the store did not say in time.
    #[serde(default)]
    pub processes_error: Option<String>,
    /// The running config, secrets masked.
    pub config: serde_json::Value,
    /// The `[[sinks]]` of this process: what each delivered and how far behind it is.
    #[serde(default)]
    pub sinks: Vec<SinkDto>,
}

/// One sink in `GET /v1/status`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SinkDto {
    pub name: String,
    /// `kafka`, `postgres` or `object_store`.
    pub kind: String,
    /// Records (files, for an object store) delivered by this run.
    pub delivered: u64,
    pub bytes: u64,
    /// Records left out by a rule (Kafka's `oversize = "skip"`).
    pub skipped: u64,
    /// Committed records (files) not delivered yet, and their bytes.
    pub lag_records: u64,
    pub lag_bytes: u64,
    /// True while the sink is so far behind that no new fetch starts.
    pub holding: bool,
    /// Unix ms of the last delivery (or of the start).
    pub last_success_ms: u64,
    /// The last error, until a delivery succeeds.
    pub last_error: Option<String>,
}

/// What the crawl is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CrawlState {
    Running,
    Draining,
    Paused,
    Waiting,
}

impl CrawlState {
    pub fn as_str(self) -> &'static str {
        match self {
            CrawlState::Running => "running",
            CrawlState::Draining => "draining",
            CrawlState::Paused => "paused",
            CrawlState::Waiting => "waiting",
        }
    }
}

/// The crawl's counters (this run, but `known`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CountersDto {
    pub fetched: u64,
    pub failed: u64,
    pub excluded: u64,
    pub queued: u64,
    pub in_flight: u64,
    pub hosts: u64,
    /// URLs the frontier knows (all runs).
    pub known: u64,
    pub retries: u64,
    /// Decoded body bytes fetched.
    pub bytes: u64,
    /// Pending URLs taken over from an earlier run.
    pub resumed: u64,
    /// Actor restarts.
    pub restarts: u64,
}

/// Rates over the run so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RatesDto {
    pub pages_per_s: f64,
}

/// What operators set on the crawl.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperatorDto {
    /// Hosts (or `host:port`) paused.
    pub paused_hosts: Vec<String>,
    /// Per-host politeness set by operators, by host.
    pub politeness: BTreeMap<String, HostPolitenessDto>,
}

/// One process of the crawl.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessDto {
    pub id: String,
    /// Hosts this process owns (a distributed crawl), when known.
    pub hosts_owned: Option<u64>,
    /// Shards this process holds (a distributed crawl), when known.
    pub shards: Option<u64>,
    /// How long ago it was last seen (its last heartbeat); 0 for this process; None for a process whose
    /// heartbeat lapsed while it still holds shards (it stopped or hangs).
    pub last_seen_ms: Option<u64>,
    /// This is the process that answered.
    #[serde(default)]
    pub this_process: bool,
}

/// Politeness an operator set for a host.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostPolitenessDto {
    pub delay_ms: Option<u64>,
    pub concurrency: Option<u32>,
    /// When it lapses (Unix ms); None = until changed.
    pub expires_at: Option<u64>,
}

/// One host (`GET /v1/hosts`, `GET /v1/hosts/{host}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostDto {
    pub host: String,
    /// URLs queued, as the process that answers counts them; None when another process crawls the host.
    pub queued: Option<u64>,
    pub in_flight: u64,
    /// How long until its next request may start; None when it may start now.
    pub next_allowed_in_ms: Option<u64>,
    pub backoff_level: u32,
    pub paused: bool,
    /// Who paused it.
    pub paused_by: Option<String>,
    /// Politeness an operator set, if any.
    pub politeness: Option<HostPolitenessDto>,
    pub robots: RobotsState,
    /// Failed and excluded records by reason.
    pub errors: BTreeMap<String, u64>,
    /// Its shard (a distributed crawl).
    pub shard: Option<u32>,
    /// The process that holds its shard (a distributed crawl), when known.
    pub owner: Option<String>,
}

/// Where a host's robots.txt stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RobotsState {
    Allowed,
    Fetching,
    Unavailable,
    None,
}

/// `GET /v1/hosts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostsDto {
    pub hosts: Vec<HostDto>,
}

/// `POST /v1/urls`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddUrlsDto {
    /// At most [`crate::api::requests::MAX_URLS`].
    pub urls: Vec<String>,
    /// The depth the URLs are queued at (links found on them are one deeper).
    #[serde(default)]
    pub depth: u32,
    /// Queue them even when the frontier knows them already (fetched again).
    #[serde(default)]
    pub force: bool,
}

/// What became of one URL of `POST /v1/urls`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UrlAnswerDto {
    /// As given.
    pub url: String,
    pub canonical: Option<String>,
    pub result: UrlResult,
    pub reason: Option<String>,
}

/// The answer for one URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UrlResult {
    Queued,
    Known,
    Excluded,
    Invalid,
}

/// The answer of `POST /v1/urls`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UrlsDto {
    pub urls: Vec<UrlAnswerDto>,
}

/// `POST /v1/pause` and `POST /v1/resume`: `{}` = the crawl.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetDto {
    /// `example.org` (every port) or `example.org:8080` (one authority).
    #[serde(default)]
    pub host: Option<String>,
}

/// `PUT /v1/hosts/{host}/politeness`; every field None = back to the configured politeness.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolitenessDto {
    #[serde(default)]
    pub delay_ms: Option<u64>,
    #[serde(default)]
    pub concurrency: Option<u32>,
    /// Lapses after this many seconds; None = until changed.
    #[serde(default)]
    pub expires_s: Option<u64>,
}

impl PolitenessDto {
    /// True when it sets nothing (a clear).
    pub fn is_clear(&self) -> bool {
        self.delay_ms.is_none() && self.concurrency.is_none()
    }
}

/// What a pause, resume or politeness change did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionDto {
    /// False when it was so already.
    pub changed: bool,
    pub target: Target,
    /// Kept by the store: survives a restart.
    pub durable: bool,
}

/// What an action applied to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    Crawl,
    Host,
}

/// `DELETE /v1/hosts/{host}/queue`: the drop is kept by the store and carried out by the process that crawls the
/// host, each URL recorded `excluded` with reason `operator`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DropDto {
    /// False when a drop of that host was already asked for and not done yet.
    pub requested: bool,
    /// URLs queued for the host when asked, as this process counts them (None: another process crawls it).
    pub queued: Option<u64>,
}

/// `POST /v1/reload`: `applied` with the keys that changed (200), or `invalid` / `rejected` with the errors (422).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReloadDto {
    pub outcome: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<String>>,
}

/// `POST /v1/alerts`: what was done for each alert of the notification and each action that matched it (none
/// for alerts no `[[api.alert_actions]]` names).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertsDto {
    pub actions: Vec<AlertActionDto>,
}

/// One action for one alert.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertActionDto {
    /// The alert's `alertname`.
    pub alert: String,
    /// Alertmanager's identity of the alert.
    pub fingerprint: String,
    /// `pause_host`, `pause_crawl`, `resolver_doh`, `fallback_direct`, `forbid_direct` or `lower_concurrency`.
    pub action: String,
    pub result: AlertResult,
    /// What was done, or why not, in words.
    pub detail: String,
}

/// What became of an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AlertResult {
    /// Done while the alert fires (or in force already).
    Applied,
    /// Undone on the alert's resolution.
    Undone,
    /// Left as it is: set by someone else, or changed since the alert acted.
    Kept,
    /// Nothing to do, or cannot be done.
    Skipped,
}

impl AlertResult {
    pub fn as_str(self) -> &'static str {
        match self {
            AlertResult::Applied => "applied",
            AlertResult::Undone => "undone",
            AlertResult::Kept => "kept",
            AlertResult::Skipped => "skipped",
        }
    }
}

impl From<crawl_core::control::OverrideResult> for AlertResult {
    fn from(r: crawl_core::control::OverrideResult) -> AlertResult {
        use crawl_core::control::OverrideResult as R;
        match r {
            R::Applied => AlertResult::Applied,
            R::Undone => AlertResult::Undone,
            R::Kept => AlertResult::Kept,
            R::Skipped => AlertResult::Skipped,
        }
    }
}

/// Every error answer: `{"error": {...}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorDto {
    pub error: ErrorBody,
}

/// What went wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// Stable, for programs (`not_found`, `invalid_type`, `payload_too_large`, ...).
    pub code: String,
    /// For people.
    pub message: String,
    /// The request field at fault (`urls[2]`, `delay_ms`), when one is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_refuse_unknown_fields_and_take_defaults() {
        let a: AddUrlsDto = serde_json::from_str(r#"{"urls": ["http://a.example/"]}"#).unwrap();
        assert_eq!((a.depth, a.force), (0, false));
        assert!(serde_json::from_str::<AddUrlsDto>(r#"{"urls": [], "deep": 1}"#).is_err());
        assert!(serde_json::from_str::<TargetDto>(r#"{"hots": "a"}"#).is_err());
        let p: PolitenessDto = serde_json::from_str("{}").unwrap();
        assert!(p.is_clear());
    }

    #[test]
    fn answers_have_the_documented_shape() {
        let a = ActionDto {
            changed: true,
            target: Target::Host,
            durable: true,
        };
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            r#"{"changed":true,"target":"host","durable":true}"#
        );
        let e = ErrorDto {
            error: ErrorBody {
                code: "unauthorized".into(),
                message: "unauthorized".into(),
                field: None,
            },
        };
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"error":{"code":"unauthorized","message":"unauthorized"}}"#
        );
        let r = ReloadDto {
            outcome: "applied".into(),
            changed: Some(vec!["politeness.min_delay_ms".into()]),
            errors: None,
        };
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"outcome":"applied","changed":["politeness.min_delay_ms"]}"#
        );
        assert_eq!(
            serde_json::to_value(UrlResult::Excluded).unwrap(),
            serde_json::json!("excluded")
        );
        assert_eq!(
            serde_json::to_value(RobotsState::None).unwrap(),
            serde_json::json!("none")
        );
        let a = AlertsDto {
            actions: vec![AlertActionDto {
                alert: "Crawl429Storm".into(),
                fingerprint: "f1".into(),
                action: "pause_host".into(),
                result: AlertResult::Undone,
                detail: "resumed a.example".into(),
            }],
        };
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            r#"{"actions":[{"alert":"Crawl429Storm","fingerprint":"f1","action":"pause_host","result":"undone","detail":"resumed a.example"}]}"#
        );
        for r in [
            AlertResult::Applied,
            AlertResult::Undone,
            AlertResult::Kept,
            AlertResult::Skipped,
        ] {
            assert_eq!(serde_json::to_value(r).unwrap(), r.as_str());
        }
    }
}
