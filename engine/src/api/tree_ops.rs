//! [`CrawlOps`] over the running actor tree: the status from the scheduler's counters and the running config.
//! Pausing, per-host politeness, adding URLs, dropping queues and the per-host views need operations the crawl
//! does not offer yet: they answer [`OpsError::Unsupported`] (501).

use super::config_view::config_view;
use super::dto::{
    ActionDto, AddUrlsDto, CountersDto, CrawlState, DropDto, HostDto, OperatorDto, PolitenessDto,
    ProcessDto, RatesDto, StatusDto, UrlAnswerDto,
};
use super::ops::{BoxFuture, CrawlOps, HostSort, OpsError};
use crawl_actors::protocol::Stats;
use crawl_actors::tree::Control;
use crawl_core::config::Config;
use crawl_core::control::{HostMatch, Requester};
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
        TreeOps {
            control,
            config,
            process: process_name(),
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

/// The status from the counters of a crawl `elapsed` old.
pub fn status_of(
    stats: &Stats,
    running: bool,
    elapsed: Duration,
    process: &str,
    config: &Config,
) -> StatusDto {
    let secs = elapsed.as_secs_f64();
    let pages_per_s = if secs > 0.0 {
        stats.fetched as f64 / secs
    } else {
        0.0
    };
    StatusDto {
        process: process.to_owned(),
        state: if running {
            CrawlState::Running
        } else {
            CrawlState::Draining
        },
        paused: false,
        waiting_for: None,
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
        operator: OperatorDto::default(),
        processes: vec![ProcessDto {
            id: process.to_owned(),
            hosts_owned: None,
            shards: None,
            last_seen_ms: Some(0),
        }],
        config: config_view(config),
    }
}

fn unsupported<T: Send + 'static>() -> BoxFuture<Result<T, OpsError>> {
    Box::pin(async { Err(OpsError::Unsupported) })
}

impl CrawlOps for TreeOps {
    fn status(&self) -> BoxFuture<Result<StatusDto, OpsError>> {
        let control = self.control.clone();
        let config = self.config.borrow().clone();
        let process = self.process.clone();
        let started = self.started;
        Box::pin(async move {
            let stats = control.stats().await.ok_or(OpsError::Ended)?;
            Ok(status_of(
                &stats,
                control.is_running(),
                started.elapsed(),
                &process,
                &config,
            ))
        })
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let s = status_of(&stats, true, Duration::from_secs(10), "h/1", &config);
        assert_eq!(s.state, CrawlState::Running);
        assert_eq!(
            (s.counters.fetched, s.counters.failed, s.counters.known),
            (30, 2, 40)
        );
        assert_eq!(s.rates.pages_per_s, 3.0);
        assert_eq!(s.processes[0].id, "h/1");
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
            "config",
        ] {
            assert!(json.get(key).is_some(), "{key}");
        }
    }
}
