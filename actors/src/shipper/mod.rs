//! The shippers: one loop per `[[sinks]]` entry, on a thread of their own, delivering what the crawl committed
//! beyond the local files (records to Kafka and PostgreSQL, closed WARC files to an object store).
//!
//! Each record sink reads the JSONL (every line there is a committed record, in commit order) from its own durable
//! checkpoint in `data_dir/sinks` (the sinks in step share one read and parse of each line: [`RecordFeed`]), so a
//! sink that is down or slow falls behind without slowing fetches; once it is `output.sink_max_lag` records or
//! `output.sink_max_lag_bytes` bytes behind it holds fetching back ([`Backpressure`]) until it is under half of
//! both. A restart goes on from each checkpoint. When the crawl ends
//! the loops deliver what is left ([`Shippers::finish`]), for as long as the caller lets them.

mod archives;
pub mod hold;
mod outage;
mod records;
pub mod state;

use std::sync::Arc;
use std::time::Duration;

use actix::Arbiter;
use crawl_core::config::{Config, SinkConfig, SinkKind};
use crawl_sinks::SinkError;
use crawl_sinks::archive::ArchiveStore;
use crawl_sinks::checkpoint::CheckpointFile;
use crawl_sinks::feed::RecordFeed;
use tokio::sync::watch;

use crate::fatal::{FatalSender, PanicGuard};
use crate::protocol::{Backpressure, OutputProgress};
use hold::Hold;
pub use hold::Lag;
use outage::Say;
pub use state::{SinkState, SinkView};

/// How much lower than the crawl's the shipping thread's CPU priority is (a nice increment; the threads it starts,
/// librdkafka's and the file digests', inherit it). On a machine the crawl keeps busy, fetching comes first and
/// the sinks use what it leaves, catching up as it idles or ends; `output.sink_max_lag` bounds how far behind
/// they fall. On a machine with CPU to spare it changes nothing.
const SHIP_NICENESS: i32 = 10;

/// Lowers the calling thread's CPU priority by [`SHIP_NICENESS`] (best effort: a refusal is logged and shipping
/// runs at the crawl's priority).
fn lower_priority() {
    let tid = rustix::thread::gettid();
    let now = rustix::process::getpriority_process(Some(tid)).unwrap_or(0);
    if let Err(e) = rustix::process::setpriority_process(Some(tid), now + SHIP_NICENESS) {
        tracing::debug!(error = %e, "sink thread priority not lowered");
    }
}

/// Where the sinks keep their checkpoints and manifests: `data_dir/sinks`.
pub fn state_dir(config: &Config) -> std::path::PathBuf {
    config.frontier.data_dir.join("sinks")
}

/// The running sinks of a crawl.
pub struct Shippers {
    arbiter: Arbiter,
    states: Vec<Arc<SinkState>>,
    finish: watch::Sender<bool>,
    done: Vec<tokio::sync::oneshot::Receiver<()>>,
}

impl Shippers {
    /// Connects every sink of `config` (each within its `timeout_ms`) on a thread of their own and starts their
    /// loops. The first sink that cannot start is the error (its message names it and the setting at fault), and
    /// none runs then. None without sinks.
    pub fn start(
        config: &Config,
        progress: &OutputProgress,
        gate: &Arc<Backpressure>,
        fatal: &FatalSender,
    ) -> Result<Option<Shippers>, SinkError> {
        if config.sinks.is_empty() {
            return Ok(None);
        }
        let arbiter = Arbiter::new();
        // First on the thread, before any sink connects and starts threads of its own.
        arbiter.spawn(async { lower_priority() });
        let (finish, finish_rx) = watch::channel(false);
        let (started_tx, started_rx) = std::sync::mpsc::channel::<(usize, Result<(), SinkError>)>();
        let now_ms = unix_ms();
        let feed = RecordFeed::new(&config.output.jsonl, feed_window(config));
        let mut states = Vec::new();
        let mut done = Vec::new();
        let mut wait = Duration::ZERO;
        for (index, sink) in config.sinks.iter().enumerate() {
            let state = Arc::new(SinkState::new(&sink.name, sink.kind.as_str(), now_ms));
            crawl_observability::metrics::metrics()
                .sinks()
                .register_sink(&sink.name, now_ms as f64 / 1000.0);
            states.push(state.clone());
            wait = wait.max(sink.timeout);
            let common = Common {
                name: sink.name.clone(),
                kind: sink.kind.as_str(),
                index,
                retry_max: sink.retry_max,
                state,
                gate: gate.clone(),
                hold: Hold::new(config.output.sink_max_lag, config.output.sink_max_lag_bytes),
                finish: finish_rx.clone(),
                _guard: fatal.guard("sink shipper"),
            };
            let (done_tx, done_rx) = tokio::sync::oneshot::channel();
            done.push(done_rx);
            let (sink, config, progress, feed, started) = (
                sink.clone(),
                config.clone(),
                progress.clone(),
                feed.clone(),
                started_tx.clone(),
            );
            arbiter.spawn(async move {
                match connect(common, &sink, &config, &progress, &feed).await {
                    Ok(run) => {
                        let _ = started.send((index, Ok(())));
                        run.run().await;
                    }
                    Err(e) => {
                        let _ = started.send((index, Err(e)));
                    }
                }
                let _ = done_tx.send(());
            });
        }
        drop(started_tx);
        // Each connect is bounded by its sink's timeout; the slack covers the thread's start.
        let deadline = std::time::Instant::now() + wait * 2 + Duration::from_secs(5);
        let mut first_error: Option<(usize, SinkError)> = None;
        for _ in 0..config.sinks.len() {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match started_rx.recv_timeout(left) {
                Ok((_, Ok(()))) => {}
                Ok((i, Err(e))) => {
                    if first_error.as_ref().is_none_or(|(j, _)| i < *j) {
                        first_error = Some((i, e));
                    }
                }
                Err(_) => {
                    arbiter.stop();
                    return Err(SinkError::Transient {
                        sink: config
                            .sinks
                            .iter()
                            .map(|s| s.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                        detail: "did not connect in time".to_owned(),
                    });
                }
            }
        }
        if let Some((_, e)) = first_error {
            arbiter.stop();
            return Err(e);
        }
        for s in &config.sinks {
            tracing::info!(sink = %s.name, kind = s.kind.as_str(), "sink started");
        }
        Ok(Some(Shippers {
            arbiter,
            states,
            finish,
            done,
        }))
    }

    /// Every sink's shared state.
    pub fn states(&self) -> Vec<Arc<SinkState>> {
        self.states.clone()
    }

    /// Every sink's state now.
    pub fn views(&self) -> Vec<SinkView> {
        self.states.iter().map(|s| s.view()).collect()
    }

    /// The crawl has ended: every loop delivers what is left (the last WARC file included) and stops, for up to
    /// `limit`. Returns the sinks still behind then.
    pub async fn finish(&mut self, limit: Duration) -> Vec<SinkView> {
        self.finish.send_replace(true);
        let all = futures_util::future::join_all(self.done.iter_mut());
        let _ = tokio::time::timeout(limit, all).await;
        self.views()
            .into_iter()
            .filter(|v| v.lag_records > 0 || v.lag_bytes > 0)
            .collect()
    }

    /// Stops the loops' thread.
    pub fn stop(self) {
        self.arbiter.stop();
    }
}

/// Connects every sink of `config` as a run would (`--check`), on a thread and runtime of its own, and lets go:
/// the errors of those that could not start.
pub fn probe(config: &Config) -> Vec<SinkError> {
    if config.sinks.is_empty() {
        return Vec::new();
    }
    let config = config.clone();
    let run = std::thread::spawn(move || {
        let rt = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                return vec![SinkError::Transient {
                    sink: "all".to_owned(),
                    detail: format!("no runtime for the sink probe: {e}"),
                }];
            }
        };
        rt.block_on(async {
            let mut errors = Vec::new();
            for sink in &config.sinks {
                let r = match &sink.kind {
                    // A folder of its own for the probe's state, removed after: a look leaves no file behind.
                    SinkKind::ObjectStore(cfg) => {
                        let scratch = std::env::temp_dir().join(format!(
                            "crawl-engine-check-{}-{}",
                            std::process::id(),
                            sink.name
                        ));
                        let r = ArchiveStore::open(sink, cfg, &scratch).await.map(drop);
                        let _ = std::fs::remove_dir_all(&scratch);
                        r
                    }
                    SinkKind::Kafka(_) | SinkKind::Postgres(_) => {
                        crawl_sinks::RecordTarget::connect(sink).await.map(drop)
                    }
                };
                if let Err(e) = r {
                    errors.push(e);
                }
            }
            errors
        })
    });
    run.join().unwrap_or_else(|_| {
        vec![SinkError::Transient {
            sink: "all".to_owned(),
            detail: "the sink probe panicked".to_owned(),
        }]
    })
}

/// A loop ready to run.
enum Loop {
    Records(Box<records::RecordLoop>),
    Archive(Box<archives::ArchiveLoop>),
}

impl Loop {
    async fn run(self) {
        match self {
            Loop::Records(l) => l.run().await,
            Loop::Archive(l) => l.run().await,
        }
    }
}

/// How many parsed records the record sinks share: four of the largest batch, at least 4,096 (a few MB).
fn feed_window(config: &Config) -> usize {
    let batch = config
        .sinks
        .iter()
        .filter(|s| !matches!(s.kind, SinkKind::ObjectStore(_)))
        .map(|s| s.batch_records)
        .max()
        .unwrap_or(0);
    batch.saturating_mul(4).max(4096)
}

/// Connects a sink and opens what its loop reads.
async fn connect(
    common: Common,
    sink: &SinkConfig,
    config: &Config,
    progress: &OutputProgress,
    feed: &std::sync::Arc<RecordFeed>,
) -> Result<Loop, SinkError> {
    let dir = state_dir(config);
    match &sink.kind {
        SinkKind::ObjectStore(cfg) => {
            let store = ArchiveStore::open(sink, cfg, &dir).await?;
            let warc_dir = config
                .output
                .warc_dir
                .clone()
                .ok_or_else(|| SinkError::Setup {
                    sink: sink.name.clone(),
                    kind: "object_store",
                    key: "kind",
                    detail: "an object_store sink uploads WARC files: set output.warc_dir"
                        .to_owned(),
                })?;
            Ok(Loop::Archive(Box::new(archives::ArchiveLoop {
                common,
                store,
                dir: warc_dir,
                prefix: config.output.warc_prefix.clone(),
                delete_local: cfg.delete_local,
                committed: progress.warc_file.subscribe(),
            })))
        }
        SinkKind::Kafka(_) | SinkKind::Postgres(_) => {
            let (checkpoint, at) = CheckpointFile::open(&dir, &sink.name)?;
            let tail = feed.reader(&sink.name, at)?;
            let target = crawl_sinks::RecordTarget::connect(sink).await?;
            Ok(Loop::Records(Box::new(records::RecordLoop {
                common,
                target,
                batch: sink.batch_records,
                tail,
                checkpoint,
                delivered: at,
                jsonl: progress.jsonl.subscribe(),
            })))
        }
    }
}

/// What every sink's loop holds besides its target.
pub(crate) struct Common {
    name: String,
    kind: &'static str,
    index: usize,
    retry_max: Duration,
    state: Arc<SinkState>,
    gate: Arc<Backpressure>,
    hold: Hold,
    finish: watch::Receiver<bool>,
    /// A panic in a loop ends the process (what was delivered is checkpointed; the next run goes on).
    _guard: PanicGuard,
}

impl Common {
    /// True once the crawl has ended and the loop should deliver what is left and stop.
    fn finishing(&self) -> bool {
        *self.finish.borrow()
    }

    /// Waits for news on `news`, the end of the crawl, or `idle`, whichever comes first.
    async fn wait<T>(&mut self, news: &mut watch::Receiver<T>, idle: Duration) {
        tokio::select! {
            r = news.changed() => {
                if r.is_err() {
                    tokio::time::sleep(idle).await;
                }
            }
            r = self.finish.changed() => {
                if r.is_err() {
                    tokio::time::sleep(idle).await;
                }
            }
            () = tokio::time::sleep(idle) => {}
        }
    }

    /// A failure: logged as the outage rule says, counted, kept as the last error; then the wait before the next
    /// try.
    async fn failed(&mut self, outage: &mut outage::Outage, e: &SinkError) {
        let text = e.to_string();
        let (say, delay) = outage.failed(&text, std::time::Instant::now());
        self.report(e, say);
        self.state.update(|v| v.last_error = Some(text));
        tokio::time::sleep(delay).await;
    }

    /// A delivery: ends the outage there was, with a line saying how long it lasted.
    fn delivered(&self, outage: &mut outage::Outage) {
        if let Some((lasted, failures)) = outage.succeeded(std::time::Instant::now()) {
            tracing::info!(
                sink = %self.name,
                lasted_ms = u64::try_from(lasted.as_millis()).unwrap_or(u64::MAX),
                failures,
                "sink delivers again"
            );
        }
    }

    /// Takes the lag now: metrics, shared state, backpressure.
    fn lag(&mut self, lag: Lag) {
        let was = self.hold.held();
        let holding = self.hold.update(lag);
        if holding != was {
            if holding {
                tracing::warn!(
                    sink = %self.name,
                    lag_records = lag.records,
                    lag_bytes = lag.bytes,
                    "sink behind: fetching waits for it"
                );
            } else {
                tracing::info!(sink = %self.name, lag_records = lag.records, "sink caught up: fetching goes on");
            }
        }
        self.gate.set(self.index, holding);
        crawl_observability::metrics::metrics().sinks().lag(
            &self.name,
            lag.records,
            lag.bytes,
            holding,
        );
        self.state.update(|v| {
            v.lag_records = lag.records;
            v.lag_bytes = lag.bytes;
            v.holding = holding;
        });
    }

    /// Counts a failure and logs it as `say` decides: problems the operator must fix at error, the rest at warn.
    fn report(&self, e: &SinkError, say: Say) {
        crawl_observability::metrics::metrics()
            .sinks()
            .error(&self.name, e.kind());
        let needs_operator = matches!(
            e,
            SinkError::Setup { .. } | SinkError::Oversize { .. } | SinkError::BadRecord { .. }
        );
        match (say, needs_operator) {
            (Say::Quiet, _) => {}
            (Say::Started, true) => {
                tracing::error!(sink = %self.name, error = %e, "sink failed; retrying")
            }
            (Say::Started, false) => {
                tracing::warn!(sink = %self.name, error = %e, "sink failed; retrying")
            }
            (Say::StillFailing, _) => {
                tracing::warn!(sink = %self.name, error = %e, "sink still failing")
            }
        }
    }
}

/// Unix time in ms.
pub(crate) fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
