//! [`CrawlOps`] over the running actor tree: views from the scheduler (counters, operator state, hosts), operator
//! changes made durable in the store before they are obeyed, URLs added through the group commit, and the running
//! config.

use super::config_view::config_view;
use super::dto::{
    ActionDto, AddUrlsDto, CountersDto, CrawlState, DropDto, HostDto, HostPolitenessDto,
    OperatorDto, PolitenessDto, ProcessDto, RatesDto, RobotsState, SinkDto, StatusDto, Target,
    UrlAnswerDto, UrlResult,
};
use super::ops::{BoxFuture, CrawlOps, HostSort, OpsError};
use crawl_actors::protocol::{
    AddUrls, ControlError, HostView, Processes, RobotsState as CrawlRobots, StatusView, UrlAnswer,
    UrlVerdict,
};
use crawl_actors::tree::Control;
use crawl_core::config::Config;
use crawl_core::control::alerts::AlertAction;
use crawl_core::control::{Change, HostMatch, OperatorState, Requester};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// The crawl of this process, as the control API sees it.
pub struct TreeOps {
    control: Control,
    /// The running config (replaced by every applied reload).
    config: watch::Receiver<Config>,
    process: String,
    started: Instant,
}

impl TreeOps {
    /// `config` follows the running config; `started` is when the crawl started (for the rates).
    pub fn new(control: Control, config: watch::Receiver<Config>, started: Instant) -> TreeOps {
        // In a crawl shared by many processes, the id the others (and the hosts' owners) know it by.
        let process = control
            .process_id()
            .map_or_else(process_name, str::to_owned);
        TreeOps {
            control,
            config,
            process,
            started,
        }
    }
}

/// `hostname/pid`.
fn process_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned());
    format!("{host}/{}", std::process::id())
}

fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn ops_error(e: ControlError) -> OpsError {
    match e {
        ControlError::Ended => OpsError::Ended,
        ControlError::Busy => OpsError::Busy,
        ControlError::Invalid { field, message } => OpsError::Invalid { field, message },
        ControlError::Store(detail) => OpsError::Internal(format!("frontier store: {detail}")),
    }
}

/// What operators set, for the status.
fn operator_dto(state: &OperatorState) -> OperatorDto {
    let mut dto = OperatorDto::default();
    for (host, rule) in &state.hosts {
        if rule.paused.is_some() {
            dto.paused_hosts.push(host.to_string());
        }
        if let Some(p) = &rule.politeness {
            dto.politeness.insert(
                host.to_string(),
                HostPolitenessDto {
                    delay_ms: p.delay_ms,
                    concurrency: p.concurrency,
                    expires_at: p.until_ms,
                },
            );
        }
    }
    dto
}

/// This process alone (its store is not shared, or did not say who else is there).
fn alone(process: &str) -> ProcessDto {
    ProcessDto {
        id: process.to_owned(),
        hosts_owned: None,
        shards: None,
        last_seen_ms: Some(0),
        this_process: true,
    }
}

/// The processes of the status, and why they are not all there when the store did not say; `lease_ms` is the
/// heartbeat's lease (every process of a crawl is configured alike).
fn processes_dto(p: &Processes, process: &str, lease_ms: u64) -> (Vec<ProcessDto>, Option<String>) {
    match p {
        Processes::Alone => (vec![alone(process)], None),
        Processes::Unknown { me, why } => (vec![alone(me)], Some(why.clone())),
        Processes::Shared { me, list } => {
            let mut out: Vec<ProcessDto> = list
                .iter()
                .map(|info| {
                    let this = info.id == *me;
                    ProcessDto {
                        id: info.id.clone(),
                        hosts_owned: None,
                        shards: Some(info.shards_held.len() as u64),
                        last_seen_ms: if this {
                            Some(0)
                        } else {
                            info.last_seen_ms(lease_ms)
                        },
                        this_process: this,
                    }
                })
                .collect();
            // Answering, so alive: listed even when its heartbeat lapsed and it holds nothing (Redis was away).
            if !out.iter().any(|p| p.this_process) {
                out.push(ProcessDto {
                    shards: Some(0),
                    ..alone(me)
                });
            }
            (out, None)
        }
    }
}

/// The status from the scheduler's view of a crawl `elapsed` old.
pub fn status_of(
    view: &StatusView,
    running: bool,
    elapsed: Duration,
    process: &str,
    config: &Config,
) -> StatusDto {
    let stats = &view.stats;
    let secs = elapsed.as_secs_f64();
    let pages_per_s = if secs > 0.0 {
        stats.fetched as f64 / secs
    } else {
        0.0
    };
    let paused = view.operator.crawl.is_some();
    let lease_ms = u64::try_from(config.frontier.redis.lease.as_millis()).unwrap_or(u64::MAX);
    let (processes, processes_error) = processes_dto(&view.processes, process, lease_ms);
    let state = if !running || view.draining {
        CrawlState::Draining
    } else if paused {
        CrawlState::Paused
    } else if view.waiting_for.is_some() {
        CrawlState::Waiting
    } else {
        CrawlState::Running
    };
    StatusDto {
        process: process.to_owned(),
        state,
        paused,
        waiting_for: view.waiting_for.clone(),
        counters: CountersDto {
            fetched: stats.fetched,
            failed: stats.failed,
            excluded: stats.excluded,
            queued: stats.queued,
            in_flight: stats.in_flight,
            hosts: stats.hosts,
            known: stats.known,
            retries: stats.retries,
            bytes: stats.bytes,
            resumed: stats.resumed,
            restarts: stats.restarts,
        },
        rates: RatesDto {
            pages_per_s: (pages_per_s * 100.0).round() / 100.0,
        },
        operator: operator_dto(&view.operator),
        processes,
        processes_error,
        config: config_view(config),
        sinks: view
            .sinks
            .iter()
            .map(|s| SinkDto {
                name: s.name.clone(),
                kind: s.kind.to_owned(),
                delivered: s.delivered,
                bytes: s.bytes,
                skipped: s.skipped,
                lag_records: s.lag_records,
                lag_bytes: s.lag_bytes,
                holding: s.holding,
                last_success_ms: s.last_success_ms,
                last_error: s.last_error.clone(),
            })
            .collect(),
    }
}

/// A host as the API shows it.
fn host_dto(v: HostView, process: &str) -> HostDto {
    let rule = v.rule.unwrap_or_default();
    HostDto {
        host: v.host,
        queued: v.queued,
        in_flight: u64::from(v.in_flight),
        next_allowed_in_ms: v.next_allowed_in_ms,
        backoff_level: v.backoff_level,
        paused: rule.paused.is_some(),
        paused_by: rule.paused.as_ref().map(|p| p.by.to_string()),
        politeness: rule.politeness.as_ref().map(|p| HostPolitenessDto {
            delay_ms: p.delay_ms,
            concurrency: p.concurrency,
            expires_at: p.until_ms,
        }),
        robots: match v.robots {
            CrawlRobots::Known => RobotsState::Allowed,
            CrawlRobots::Fetching => RobotsState::Fetching,
            CrawlRobots::Unavailable => RobotsState::Unavailable,
            CrawlRobots::Unknown | CrawlRobots::Ignored => RobotsState::None,
        },
        errors: v
            .errors
            .into_iter()
            .map(|(k, n)| (k.to_owned(), n))
            .collect(),
        shard: v.shard,
        owner: v
            .owner
            .or_else(|| (v.shard.is_some() && v.held_here).then(|| process.to_owned())),
    }
}

fn url_answer(a: UrlAnswer) -> UrlAnswerDto {
    let (result, reason) = match a.verdict {
        UrlVerdict::Queued => (UrlResult::Queued, None),
        UrlVerdict::Known => (UrlResult::Known, None),
        UrlVerdict::Excluded(r) => (UrlResult::Excluded, Some(r.as_str().to_owned())),
        UrlVerdict::Invalid(why) => (UrlResult::Invalid, Some(why)),
    };
    UrlAnswerDto {
        url: a.url,
        canonical: a.canonical,
        result,
        reason,
    }
}

/// Politeness and queues are a host's (one queue per host, on every port): an authority is refused.
fn whole_host(host: &HostMatch, what: &str) -> Result<(), OpsError> {
    if host.port().is_none() && !host.has_subdomains() {
        return Ok(());
    }
    Err(OpsError::Invalid {
        field: "host".into(),
        message: format!(
            "{what} is set per host, on every port: name one host, without `:port` or `*.`"
        ),
    })
}

fn sort_of(sort: HostSort) -> crawl_actors::protocol::HostSort {
    match sort {
        HostSort::Queued => crawl_actors::protocol::HostSort::Queued,
        HostSort::InFlight => crawl_actors::protocol::HostSort::InFlight,
        HostSort::Errors => crawl_actors::protocol::HostSort::Errors,
        HostSort::Name => crawl_actors::protocol::HostSort::Name,
    }
}

impl TreeOps {
    /// Applies an operator's change; the answer names what it applied to (a host, or the crawl).
    fn action(&self, change: Change) -> BoxFuture<Result<ActionDto, OpsError>> {
        let target = if change.host().is_some() {
            Target::Host
        } else {
            Target::Crawl
        };
        let control = self.control.clone();
        Box::pin(async move {
            let changed = control.operate(change).await.map_err(ops_error)?;
            Ok(ActionDto {
                changed,
                target,
                durable: true,
            })
        })
    }
}

impl CrawlOps for TreeOps {
    fn status(&self) -> BoxFuture<Result<StatusDto, OpsError>> {
        let control = self.control.clone();
        let config = self.config.borrow().clone();
        let process = self.process.clone();
        let started = self.started;
        Box::pin(async move {
            let view = control.status().await.map_err(ops_error)?;
            Ok(status_of(
                &view,
                control.is_running(),
                started.elapsed(),
                &process,
                &config,
            ))
        })
    }

    fn hosts(&self, sort: HostSort, limit: usize) -> BoxFuture<Result<Vec<HostDto>, OpsError>> {
        let control = self.control.clone();
        let process = self.process.clone();
        Box::pin(async move {
            let views = control
                .hosts(sort_of(sort), limit)
                .await
                .map_err(ops_error)?;
            Ok(views.into_iter().map(|v| host_dto(v, &process)).collect())
        })
    }

    fn host(&self, host: String) -> BoxFuture<Result<Option<HostDto>, OpsError>> {
        let control = self.control.clone();
        let process = self.process.clone();
        Box::pin(async move {
            // Named as an operator writes it: normalised as URLs carry hosts.
            let name = match HostMatch::parse(&host) {
                Ok(m) if m.port().is_none() && !m.has_subdomains() => m.host().to_owned(),
                Ok(_) => return Err(whole_host_error()),
                Err(e) => {
                    return Err(OpsError::Invalid {
                        field: "host".into(),
                        message: e.to_string(),
                    });
                }
            };
            let view = control.host(name).await.map_err(ops_error)?;
            Ok(view.map(|v| host_dto(v, &process)))
        })
    }

    fn add_urls(
        &self,
        req: AddUrlsDto,
        _by: Requester,
    ) -> BoxFuture<Result<Vec<UrlAnswerDto>, OpsError>> {
        let control = self.control.clone();
        Box::pin(async move {
            let answers = control
                .add_urls(AddUrls {
                    urls: req.urls,
                    depth: req.depth,
                    force: req.force,
                })
                .await
                .map_err(ops_error)?;
            Ok(answers.into_iter().map(url_answer).collect())
        })
    }

    fn pause(
        &self,
        host: Option<HostMatch>,
        by: Requester,
    ) -> BoxFuture<Result<ActionDto, OpsError>> {
        self.action(Change::Pause {
            host,
            at_ms: wall_ms(),
            by,
        })
    }

    fn resume(
        &self,
        host: Option<HostMatch>,
        by: Requester,
    ) -> BoxFuture<Result<ActionDto, OpsError>> {
        self.action(Change::Resume {
            host,
            at_ms: wall_ms(),
            by,
        })
    }

    fn politeness(
        &self,
        host: HostMatch,
        p: PolitenessDto,
        by: Requester,
    ) -> BoxFuture<Result<ActionDto, OpsError>> {
        if let Err(e) = whole_host(&host, "politeness") {
            return Box::pin(async { Err(e) });
        }
        let now = wall_ms();
        let until_ms = p
            .expires_s
            .filter(|_| !p.is_clear())
            .map(|s| now.saturating_add(s.saturating_mul(1000)));
        self.action(Change::Politeness {
            host,
            delay_ms: p.delay_ms,
            concurrency: p.concurrency,
            until_ms,
            at_ms: now,
            by,
        })
    }

    fn drop_queue(&self, host: HostMatch, by: Requester) -> BoxFuture<Result<DropDto, OpsError>> {
        if let Err(e) = whole_host(&host, "a queue") {
            return Box::pin(async { Err(e) });
        }
        let control = self.control.clone();
        Box::pin(async move {
            // Only a count for the answer: a view the store was too busy to complete does not stop the drop.
            let queued = match control.host(host.host().to_owned()).await {
                Ok(view) => view.and_then(|v| v.queued),
                Err(ControlError::Ended) => return Err(OpsError::Ended),
                Err(_) => None,
            };
            let requested = control
                .operate(Change::Drop {
                    host,
                    at_ms: wall_ms(),
                    by,
                })
                .await
                .map_err(ops_error)?;
            Ok(DropDto { requested, queued })
        })
    }

    fn operator(&self) -> BoxFuture<Result<OperatorState, OpsError>> {
        let control = self.control.clone();
        Box::pin(async move {
            let view = control.status().await.map_err(ops_error)?;
            Ok(view.operator)
        })
    }

    fn operate(&self, change: Change) -> BoxFuture<Result<bool, OpsError>> {
        let control = self.control.clone();
        Box::pin(async move { control.operate(change).await.map_err(ops_error) })
    }

    fn alert_actions(&self) -> Vec<AlertAction> {
        self.config.borrow().api.alert_actions.clone()
    }
}

fn whole_host_error() -> OpsError {
    OpsError::Invalid {
        field: "host".into(),
        message: "a host is viewed on every port: name one host, without `:port` or `*.`".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crawl_actors::protocol::Stats;
    use crawl_core::frontier::ProcessInfo;

    fn view(stats: Stats, operator: OperatorState) -> StatusView {
        StatusView {
            stats,
            operator,
            draining: false,
            waiting_for: None,
            processes: Processes::Alone,
            sinks: Vec::new(),
        }
    }

    #[test]
    fn the_status_carries_the_counters_and_the_masked_config() {
        let stats = Stats {
            fetched: 30,
            failed: 2,
            queued: 5,
            in_flight: 1,
            hosts: 3,
            known: 40,
            ..Stats::default()
        };
        let mut config = Config::default();
        config.api.token_file = Some("/etc/crawl/api.token".into());
        let stats = view(stats, OperatorState::default());
        let s = status_of(&stats, true, Duration::from_secs(10), "h/1", &config);
        assert_eq!(s.state, CrawlState::Running);
        assert_eq!(
            (s.counters.fetched, s.counters.failed, s.counters.known),
            (30, 2, 40)
        );
        assert_eq!(s.rates.pages_per_s, 3.0);
        assert_eq!(s.processes[0].id, "h/1");
        assert!(s.processes[0].this_process && s.processes_error.is_none());
        assert_eq!(s.config["api"]["token_file"], "/etc/crawl/api.token");
        let draining = status_of(&stats, false, Duration::ZERO, "h/1", &config);
        assert_eq!(
            (draining.state, draining.rates.pages_per_s),
            (CrawlState::Draining, 0.0)
        );
        let json = serde_json::to_value(&s).unwrap();
        for key in [
            "process",
            "state",
            "paused",
            "waiting_for",
            "counters",
            "rates",
            "operator",
            "processes",
            "processes_error",
            "config",
        ] {
            assert!(json.get(key).is_some(), "{key}");
        }
    }

    #[test]
    fn the_status_says_paused_and_lists_operators_rules() {
        let mut op = OperatorState::default();
        let by = Requester::Api {
            peer: "127.0.0.1:1".into(),
        };
        for change in [
            Change::Pause {
                host: None,
                at_ms: 1,
                by: by.clone(),
            },
            Change::Pause {
                host: Some(HostMatch::parse("a.example:81").unwrap()),
                at_ms: 1,
                by: by.clone(),
            },
            Change::Politeness {
                host: HostMatch::parse("b.example").unwrap(),
                delay_ms: Some(500),
                concurrency: None,
                until_ms: Some(9),
                at_ms: 1,
                by,
            },
        ] {
            op.apply(&change);
        }
        let s = status_of(
            &view(Stats::default(), op),
            true,
            Duration::from_secs(1),
            "h/1",
            &Config::default(),
        );
        assert_eq!((s.state, s.paused), (CrawlState::Paused, true));
        assert_eq!(s.operator.paused_hosts, ["a.example:81"]);
        assert_eq!(s.operator.politeness["b.example"].delay_ms, Some(500));
        assert_eq!(s.operator.politeness["b.example"].expires_at, Some(9));
    }

    fn info(id: &str, left: Option<u64>, shards: &[u32]) -> ProcessInfo {
        ProcessInfo {
            id: id.into(),
            heartbeat_expires_in_ms: left,
            shards_held: shards.to_vec(),
        }
    }

    #[test]
    fn the_status_lists_every_process_of_a_shared_crawl_and_marks_this_one() {
        let mut config = Config::default();
        config.frontier.redis.lease = Duration::from_millis(15_000);
        let mut v = view(Stats::default(), OperatorState::default());
        v.processes = Processes::Shared {
            me: "h-a".into(),
            list: vec![
                info("h-a", Some(14_000), &[0, 2]),
                info("h-b", Some(11_000), &[1, 3]),
                info("h-c", None, &[4]),
            ],
        };
        let s = status_of(&v, true, Duration::from_secs(1), "h-a", &config);
        let got: Vec<(&str, Option<u64>, Option<u64>, bool)> = s
            .processes
            .iter()
            .map(|p| (p.id.as_str(), p.shards, p.last_seen_ms, p.this_process))
            .collect();
        assert_eq!(
            got,
            [
                ("h-a", Some(2), Some(0), true),
                ("h-b", Some(2), Some(4_000), false),
                ("h-c", Some(1), None, false),
            ]
        );
        assert_eq!(s.processes_error, None);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["processes"][1]["this_process"], false);

        // This process answers, so it is listed even when the store no longer counts it.
        v.processes = Processes::Shared {
            me: "h-a".into(),
            list: vec![info("h-b", Some(11_000), &[0, 1])],
        };
        let s = status_of(&v, true, Duration::from_secs(1), "h-a", &config);
        assert_eq!(s.processes.len(), 2);
        assert_eq!(
            (
                s.processes[1].id.as_str(),
                s.processes[1].shards,
                s.processes[1].this_process
            ),
            ("h-a", Some(0), true)
        );

        // The store did not say: this process alone, and why.
        v.processes = Processes::Unknown {
            me: "h-a".into(),
            why: "the frontier store did not answer within 3000 ms".into(),
        };
        let s = status_of(&v, true, Duration::from_secs(1), "h-a", &config);
        assert_eq!(s.processes.len(), 1);
        assert!(s.processes[0].this_process);
        assert!(
            s.processes_error
                .as_deref()
                .is_some_and(|w| w.contains("3000 ms"))
        );
    }

    /// Every field the status, its processes and a host carry is in the OpenAPI document's schema.
    #[test]
    fn the_status_and_host_fields_are_documented() {
        let doc: serde_json::Value = serde_json::from_str(crate::api::openapi::OPENAPI).unwrap();
        let mut v = view(Stats::default(), OperatorState::default());
        v.processes = Processes::Shared {
            me: "h-a".into(),
            list: vec![info("h-a", Some(1), &[0])],
        };
        let status = status_of(&v, true, Duration::ZERO, "h-a", &Config::default());
        let host = host_dto(
            HostView {
                host: "a.example".into(),
                queued: Some(1),
                in_flight: 0,
                next_allowed_in_ms: None,
                backoff_level: 0,
                backoff_for_ms: None,
                delay_ms: 0,
                concurrency: 1,
                rule: None,
                robots: CrawlRobots::Known,
                errors: Default::default(),
                shard: Some(0),
                held_here: true,
                owner: None,
                known_here: true,
            },
            "h-a",
        );
        for (schema, value) in [
            ("Status", serde_json::to_value(&status).unwrap()),
            (
                "Process",
                serde_json::to_value(&status.processes[0]).unwrap(),
            ),
            ("Host", serde_json::to_value(&host).unwrap()),
        ] {
            let props = &doc["components"]["schemas"][schema]["properties"];
            for key in value.as_object().unwrap().keys() {
                assert!(props.get(key).is_some(), "{schema}.{key} is not documented");
            }
        }
    }

    #[test]
    fn answers_and_hosts_map_to_the_contract() {
        let a = url_answer(UrlAnswer {
            url: "http://x/".into(),
            canonical: Some("http://x/".into()),
            verdict: UrlVerdict::Excluded(crawl_core::record::Reason::Scope),
        });
        assert_eq!(
            (a.result, a.reason.as_deref()),
            (UrlResult::Excluded, Some("scope"))
        );
        let v = HostView {
            host: "a.example".into(),
            queued: None,
            in_flight: 2,
            next_allowed_in_ms: Some(5),
            backoff_level: 1,
            backoff_for_ms: None,
            delay_ms: 100,
            concurrency: 2,
            rule: None,
            robots: CrawlRobots::Known,
            errors: [("timeout", 3)].into(),
            shard: Some(7),
            held_here: false,
            owner: None,
            known_here: true,
        };
        let d = host_dto(v.clone(), "h/1");
        assert_eq!(
            (d.queued, d.in_flight, d.shard, d.owner),
            (None, 2, Some(7), None)
        );
        let held = host_dto(
            HostView {
                held_here: true,
                ..v.clone()
            },
            "h/1",
        );
        assert_eq!(held.owner.as_deref(), Some("h/1"));
        let elsewhere = host_dto(
            HostView {
                owner: Some("peer-2".into()),
                ..v
            },
            "h/1",
        );
        assert_eq!(elsewhere.owner.as_deref(), Some("peer-2"));
        assert_eq!((d.robots, d.errors["timeout"]), (RobotsState::Allowed, 3));
        assert!(whole_host(&HostMatch::parse("a.example:81").unwrap(), "politeness").is_err());
    }
}
