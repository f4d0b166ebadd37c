//! Loading the config and running one crawl inside an actix system.

use crate::error::EngineError;
use crate::progress;
use crate::summary::Summary;
use crawl_actors::faults::Faults;
use crawl_actors::fetcher::http::HttpSettings;
use crawl_actors::tree;
use crawl_core::canon;
use crawl_core::config::{Config, hide_userinfo};
use std::path::Path;
use std::time::Instant;

/// How long the end-of-crawl summary waits for the resolver's and the proxy actor's counters.
const STATS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// How to run.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Show progress: None = nothing, Some(mode).
    pub progress: Option<progress::Mode>,
    /// Fault injection (tests only; from CRAWL_ENGINE_FAULTS).
    pub faults: Faults,
    /// React to SIGINT/SIGTERM (drain, then exit at once on a second signal).
    pub handle_signals: bool,
    /// Extra trusted roots for the HTTP client.
    pub extra_roots: Vec<rustls::pki_types::CertificateDer<'static>>,
    /// What SIGHUP re-reads (with `handle_signals`).
    pub reload: crate::reload::ReloadSource,
}

/// Loads the config file (or the defaults when `path` is None), adds the command-line seeds and checks that there
/// is something to crawl. Every problem is reported at once.
pub fn load_config(path: Option<&Path>, seeds: &[String]) -> Result<Config, EngineError> {
    load_config_with(path, seeds, true)
}

/// [`load_config`]; with `require_seeds` false a config without seeds is accepted (`--check`: seeds may come from
/// `--seed` when it runs).
pub fn load_config_with(
    path: Option<&Path>,
    seeds: &[String],
    require_seeds: bool,
) -> Result<Config, EngineError> {
    let mut config = match path {
        Some(p) => Config::from_file(p).map_err(|e| EngineError::Usage(e.to_string()))?,
        None => Config::default(),
    };
    let mut problems = Vec::new();
    // A seed's user name and password become `Authorization: Basic` for the seed's origin (and only it); the
    // canonical seed, like every URL the crawl stores or records, has none.
    for s in seeds {
        if let Ok(raw) = url::Url::parse(s.trim())
            && let Err(e) = config.fetch.credentials.add_seed(&raw)
        {
            problems.push(e);
        }
        match canon::canonicalize(s) {
            Ok(u) => config.add_seed(u),
            Err(e) => problems.push(format!("--seed {}: {e}", hide_userinfo(s))),
        }
    }
    if config.crawl.seeds.is_empty() && require_seeds {
        problems.push("no seeds: set crawl.seeds in the config or pass --seed URL".to_owned());
    }
    if !problems.is_empty() {
        return Err(EngineError::Usage(problems.join("\n")));
    }
    // Seeds from the file are canonicalised like every other URL.
    let mut canonical = Vec::with_capacity(config.crawl.seeds.len());
    for s in &config.crawl.seeds {
        if let Err(e) = config.fetch.credentials.add_seed(s) {
            problems.push(e);
        }
        match canon::canonicalize(s.as_str()) {
            Ok(u) if !canonical.contains(&u) => canonical.push(u),
            Ok(_) => {}
            Err(e) => problems.push(format!("seed {}: {e}", hide_userinfo(s.as_str()))),
        }
    }
    if !problems.is_empty() {
        return Err(EngineError::Usage(problems.join("\n")));
    }
    config.crawl.seeds = canonical;
    Ok(config)
}

/// Runs a crawl to its end on a new actix system. Blocks the calling thread.
pub fn run_crawl(config: &Config, opts: Options) -> Result<Summary, EngineError> {
    run_crawl_locked(config, opts, None)
}

/// [`run_crawl`] with the data_dir's lock already taken (the binary takes it before it opens any listener, so that a
/// second process on the same data_dir is told so, whatever else it would have tripped over first).
pub fn run_crawl_locked(
    config: &Config,
    opts: Options,
    lock: Option<crawl_store_embedded::DirLock>,
) -> Result<Summary, EngineError> {
    let started = Instant::now();
    let mut http: HttpSettings = tree::http_settings(config);
    http.extra_roots = opts.extra_roots.clone();
    let grace = config.shutdown.grace;
    let output = config.output.jsonl.display().to_string();
    let data_dir = config.frontier.data_dir.display().to_string();
    let sys = actix::System::new();
    let config = config.clone();
    let result = sys.block_on(async move {
        // Installed before anything else: SIGHUP's default action would end the process.
        let hangup = if opts.handle_signals {
            use tokio::signal::unix::{SignalKind, signal};
            match signal(SignalKind::hangup()) {
                Ok(s) => Some(s),
                Err(e) => {
                    tracing::error!(error = %e, "cannot install the sighup handler; reloads are off");
                    None
                }
            }
        } else {
            None
        };
        let mut tree = tree::start_locked(&config, opts.faults.clone(), http, lock)?;
        let reload_task = hangup.map(|h| {
            let reloader = crate::reload::Reloader::new(
                opts.reload.clone(),
                config.clone(),
                tree.reconfigurer.clone(),
            );
            actix_rt::spawn(watch_hangup(h, reloader))
        });
        let scheduler = tree.scheduler.clone();
        let progress_task = opts
            .progress
            .map(|mode| actix_rt::spawn(progress::run(scheduler.clone(), mode)));
        let signals = if opts.handle_signals {
            match crate::signals::SignalWatch::start(scheduler.clone(), grace) {
                Ok(w) => Some(w),
                Err(e) => {
                    tracing::error!(error = %e, "cannot install signal handlers");
                    None
                }
            }
        } else {
            None
        };
        let crawl = tokio::select! {
            biased;
            cause = tree.fatal.recv() => {
                let cause = cause.unwrap_or_else(|| "the actor tree failed".to_owned());
                tracing::error!(cause = %cause, "fatal error; exiting");
                return Err(EngineError::Fatal(format!(
                    "{cause} (the same command resumes the crawl)"
                )));
            }
            done = &mut tree.done => done
                .map_err(|_| EngineError::Fatal("the actor tree stopped without a summary".into())),
        };
        if let Some(w) = &signals {
            w.crawl_ended();
        }
        if let Some(t) = progress_task {
            t.abort();
        }
        if let Some(t) = reload_task {
            t.abort();
        }
        // Bounded: the resolver's thread may be blocked (the summary then lacks its counters).
        let dns = tree
            .resolver
            .send(crawl_actors::resolver::messages::GetResolverStats)
            .timeout(STATS_TIMEOUT)
            .await
            .unwrap_or_default();
        let proxy = match &tree.proxy {
            Some(p) => p
                .send(crawl_actors::proxy::messages::GetProxyStats)
                .timeout(STATS_TIMEOUT)
                .await
                .ok(),
            None => None,
        };
        tree.stopper.stop();
        crawl.map(|c| (c, dns, proxy))
    });
    actix::System::current().stop();
    let (crawl, dns, proxy) = result?;
    // A fatal end still has a summary; the caller prints it and exits 1 with the cause.
    let mut summary = Summary::new(crawl, started.elapsed(), output);
    summary.data_dir = data_dir;
    summary.dns = dns;
    summary.proxy = proxy;
    Ok(summary)
}

/// Reloads on every SIGHUP. The signal stream keeps one pending notification, so SIGHUPs that arrive during a
/// reload coalesce into one more reload, which reads the file as it is by then.
async fn watch_hangup(
    mut hangup: tokio::signal::unix::Signal,
    mut reloader: crate::reload::Reloader,
) {
    while hangup.recv().await.is_some() {
        tracing::info!("sighup received; reloading the config");
        reloader.reload();
    }
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
