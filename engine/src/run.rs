//! Running one crawl inside an actix system.

use crate::api::tree_ops::TreeOps;
use crate::error::EngineError;
use crate::ownership::Owned;
use crate::progress;
use crate::reload::{ReloadHandle, forward_hangups, serve_reloads};
use crate::summary::Summary;
use crawl_actors::tree::{self, Ending, Faults};
use crawl_core::config::Config;
use std::sync::Arc;
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
    /// What SIGHUP and `POST /v1/reload` re-read.
    pub reload: crate::reload::ReloadSource,
    /// The control API's listener, bound; served once the tree has started.
    pub api: Option<crate::api::listener::ApiListener>,
}

/// Runs a crawl to its end on a new actix system, claiming its outputs first. Blocks the calling thread.
pub fn run_crawl(config: &Config, opts: Options) -> Result<Summary, EngineError> {
    let owned = crate::ownership::claim(config, false, |_| {})?;
    run_crawl_owned(config, opts, owned)
}

/// [`run_crawl`] with the outputs already claimed (the binary claims them before it opens any listener, so that a
/// second process on the same outputs is told so, whatever else it would have tripped over first). They stay
/// locked until the crawl ends.
pub fn run_crawl_owned(
    config: &Config,
    opts: Options,
    owned: Owned,
) -> Result<Summary, EngineError> {
    let (lock, identity, _markers) = owned.into_lock();
    let started = Instant::now();
    let grace = config.shutdown.grace;
    let sink_finish = config.output.sink_finish;
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
        let mut tree = tree::start(
            &config,
            opts.faults.clone(),
            opts.extra_roots.clone(),
            lock,
            &identity.crawl,
        )?;
        // One task runs every reload, whether SIGHUP or the control API asked for it.
        let (reloads, reload_requests) = ReloadHandle::channel();
        let (running_config, config_updates) = tokio::sync::watch::channel(config.clone());
        let reload_task = (hangup.is_some() || opts.api.is_some()).then(|| {
            let reloader = crate::reload::Reloader::new(
                opts.reload.clone(),
                config.clone(),
                tree.reconfigurer(),
            );
            actix_rt::spawn(serve_reloads(reload_requests, reloader, running_config))
        });
        let hangup_task = hangup.map(|h| actix_rt::spawn(forward_hangups(h, reloads.clone())));
        let api_server = match &opts.api {
            Some(listener) => {
                let ops = TreeOps::new(tree.control(), config_updates, started);
                match listener.serve(Arc::new(ops), reloads.clone()) {
                    Ok(server) => Some(server),
                    Err(e) => {
                        tracing::error!(error = %e, "cannot start the api server");
                        return Err(EngineError::Fatal(format!(
                            "cannot start the api server: {e} (the same command resumes the crawl)"
                        )));
                    }
                }
            }
            None => None,
        };
        drop(reloads);
        let progress_task = opts
            .progress
            .map(|mode| actix_rt::spawn(progress::run(tree.control(), mode)));
        let signals = if opts.handle_signals {
            match crate::signals::SignalWatch::start(tree.control(), grace) {
                Ok(w) => Some(w),
                Err(e) => {
                    tracing::error!(error = %e, "cannot install signal handlers");
                    None
                }
            }
        } else {
            None
        };
        let crawl = match tree.ended().await {
            Ending::Fatal(cause) => {
                tracing::error!(cause = %cause, "fatal error; exiting");
                return Err(EngineError::Fatal(format!(
                    "{cause} (the same command resumes the crawl)"
                )));
            }
            Ending::Finished(summary) => Ok(*summary),
            Ending::Lost => Err(EngineError::Fatal(
                "the actor tree stopped without a summary".into(),
            )),
        };
        if let Some(w) = &signals {
            w.crawl_ended();
        }
        if let Some(t) = progress_task {
            t.abort();
        }
        // The API answers no more: the crawl has ended.
        drop(api_server);
        if let Some(t) = hangup_task {
            t.abort();
        }
        if let Some(t) = reload_task {
            t.abort();
        }
        // The sinks deliver what is left (the last WARC file included), for as long as the config lets them.
        // After a signal the operator wants the process gone: the sinks get the grace period at most.
        let finishing = Instant::now();
        let sinks_behind = match &crawl {
            Ok(c) => {
                let limit = if c.reason == crawl_actors::protocol::FinishReason::Shutdown {
                    sink_finish.min(grace)
                } else {
                    sink_finish
                };
                tree.finish_sinks(limit).await
            }
            Err(_) => Vec::new(),
        };
        let sinks_finish = finishing.elapsed();
        let sinks = tree.sinks();
        // Bounded: the resolver's thread may be blocked (the summary then lacks its counters).
        let dns = tree.resolver_stats(STATS_TIMEOUT).await;
        let proxy = tree.proxy_stats(STATS_TIMEOUT).await;
        tree.stop();
        crawl.map(|c| (c, dns, proxy, (sinks, sinks_behind, sinks_finish)))
    });
    actix::System::current().stop();
    let (crawl, dns, proxy, (sinks, sinks_behind, sinks_finish)) = result?;
    // A fatal end still has a summary; the caller prints it and exits 1 with the cause.
    let mut summary = Summary::new(crawl, started.elapsed(), output);
    summary.data_dir = data_dir;
    summary.dns = dns;
    summary.proxy = proxy;
    summary.sinks = sinks;
    summary.sinks_behind = sinks_behind;
    summary.sinks_finish = sinks_finish;
    Ok(summary)
}
