//! `crawl-engine --config config.toml`: crawls from the seeds and exits 0 when the frontier is empty or a limit is
//! reached, 2 on bad usage, config or ownership (before anything is written), 1 on a runtime failure (the message
//! says whether the same command resumes); `--check` exits as the run would. The table: [`EXIT_STATUS`].
//!
//! [`EXIT_STATUS`]: crawl_engine::error::EXIT_STATUS

use crawl_actors::protocol::FinishReason;
use crawl_actors::tree::{Faults, proxy_chains};
use crawl_engine::cli::{Cli, Command};
use crawl_engine::config_file::ConfigFile;
use crawl_engine::error::CheckFailed;
use crawl_engine::ownership;
use crawl_engine::progress::Mode;
use crawl_engine::reload::ReloadSource;
use crawl_engine::{EngineError, Options, load_config_with, run_crawl_owned};
use crawl_observability::server::MetricsServer;
use crawl_observability::{Format, OtlpSettings, TelemetryConfig};
use std::io::IsTerminal;
use std::process::ExitCode;

/// jemalloc rather than the system allocator: its background threads give freed pages back to the system (glibc's
/// allocator keeps them), so resident memory falls once a large queue has drained.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    // Purging on background threads returns freed pages after their decay time even while the crawl is idle.
    if let Err(e) = tikv_jemalloc_ctl::background_thread::write(true) {
        eprintln!(
            "crawl-engine: warning: jemalloc background threads are off ({e}); freed memory returns more slowly"
        );
    }
    let cli = Cli::from_env_args();
    match real_main(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // Each cause once: an error that wraps another shows the same words only once.
            eprintln!(
                "crawl-engine: {}",
                crawl_observability::error_chain::chain_message(e.as_ref())
            );
            let code = e
                .downcast_ref::<EngineError>()
                .map(EngineError::exit_code)
                .unwrap_or(1);
            ExitCode::from(code as u8)
        }
    }
}

fn real_main(cli: &Cli) -> anyhow::Result<()> {
    if let Some(Command::Merge { output, files }) = &cli.command {
        let r = crawl_engine::merge::merge(output, files)
            .map_err(|e| EngineError::Fatal(format!("merge: {e}")))?;
        for torn in &r.torn {
            eprintln!(
                "crawl-engine: merge: {}: the last line is incomplete (a process stopped while writing it) and was left out",
                torn.display()
            );
        }
        println!(
            "merged {} records from {} files into {} ({} duplicates dropped)",
            r.written,
            r.files,
            output.display(),
            r.duplicates
        );
        return Ok(());
    }
    if let Some(Command::Ctl(args)) = &cli.command {
        crawl_engine::ctl::run(cli.config.as_deref(), args)?;
        return Ok(());
    }
    let config_file = ConfigFile::locate(
        cli.config.as_deref(),
        cli.config_from_env,
        std::path::Path::new("."),
    );
    let config_path = config_file.path().map(std::path::Path::to_path_buf);
    let config = load_config_with(config_path.as_deref(), &cli.seeds, !cli.check)?;
    let faults = match std::env::var("CRAWL_ENGINE_FAULTS") {
        Ok(spec) => Faults::parse(&spec)
            .map_err(|e| EngineError::Usage(format!("CRAWL_ENGINE_FAULTS: {e}")))?,
        Err(_) => Faults::default(),
    };
    if cli.check {
        if config.crawl.seeds.is_empty() {
            eprintln!(
                "warning: no seeds: a run needs crawl.seeds in the config or --seed URL on the command line"
            );
        }
        let found = crawl_engine::check::preflight(&config, cli.fresh);
        for w in &found.warnings {
            eprintln!("warning: {w}");
        }
        if let Some(failed) = found.failure() {
            return Err(EngineError::Check(failed).into());
        }
        println!(
            "{}: ok ({} seed{}, data_dir {}, output {})",
            config_file.label(),
            config.crawl.seeds.len(),
            if config.crawl.seeds.len() == 1 {
                ""
            } else {
                "s"
            },
            config.frontier.data_dir.display(),
            config.output.jsonl.display()
        );
        for n in &found.notes {
            println!("  {n}");
        }
        if config.frontier.backend == crawl_core::config::FrontierBackend::Redis {
            let r = &config.frontier.redis;
            let urls: Vec<String> = r.urls.iter().map(ToString::to_string).collect();
            println!(
                "  frontier: redis {} (crawl {}, {} shards, lease {} ms{})",
                urls.join(", "),
                r.crawl,
                r.shards,
                r.lease.as_millis(),
                if r.cluster { ", cluster" } else { "" }
            );
        }
        for (name, hops) in proxy_chains(&config) {
            println!("  proxy chain {name}: {}", hops.join(" -> "));
        }
        return Ok(());
    }
    // The outputs are claimed first, before anything is written: a second process, or another crawl, on the same
    // data_dir, JSONL or WARC folder is told so (exit 2), not that the metrics port (or anything else) is busy.
    let mut refused = ownership::survey(&config, cli.fresh)?
        .refusals()
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>();
    refused.extend(crawl_engine::check::paths(&config));
    if !refused.is_empty() {
        return Err(EngineError::Check(CheckFailed {
            refused,
            failed: Vec::new(),
        })
        .into());
    }
    let owned = ownership::claim(&config, cli.fresh, |m| {
        eprintln!(
            "crawl-engine: --fresh: moved {} {} to {}",
            m.output.key(),
            ownership::shown(&m.from),
            ownership::shown(&m.to)
        );
    })?;
    let format = match config.observability.log_format {
        crawl_core::config::LogFormat::Auto => Format::Auto,
        crawl_core::config::LogFormat::Text => Format::Text,
        crawl_core::config::LogFormat::Json => Format::Json,
    };
    let obs = &config.observability;
    let mut guard = crawl_observability::init(&TelemetryConfig {
        log_level: obs.log_level.clone(),
        format,
        otlp: Some(OtlpSettings {
            endpoint: obs
                .otlp_endpoint
                .as_ref()
                .map(|u| u.as_str().trim_end_matches('/').to_owned()),
            protocol: obs.otlp_protocol.map(|p| match p {
                crawl_core::config::OtlpProtocol::Grpc => crawl_observability::Protocol::Grpc,
                crawl_core::config::OtlpProtocol::HttpProtobuf => {
                    crawl_observability::Protocol::HttpProtobuf
                }
            }),
            compression: obs.otlp_compression.map(|c| match c {
                crawl_core::config::OtlpCompression::None => crawl_observability::Compression::None,
                crawl_core::config::OtlpCompression::Gzip => crawl_observability::Compression::Gzip,
            }),
            service_name: obs.service_name.clone(),
            service_version: env!("CARGO_PKG_VERSION").to_owned(),
            resource: vec![(
                "crawl.frontier.backend",
                config.frontier.backend.as_str().to_owned(),
            )],
            sample_ratio: obs.sample_ratio,
        }),
    })
    .map_err(EngineError::from)?;
    config_file.log();
    if let Some(target) = guard.export_target() {
        let (endpoint, protocol) = (&target.endpoint, target.protocol.as_str());
        tracing::info!(
            endpoint = %endpoint,
            protocol,
            compression = target.compression.as_str(),
            sample_ratio = obs.sample_ratio,
            "exporting traces over otlp"
        );
        if let Some(fix) = target.port_mismatch() {
            tracing::warn!(endpoint = %endpoint, protocol, fix = %fix, "otlp endpoint is on the other protocol's port");
        }
    }
    // Every configured chain's series exist at 0 from the first scrape on (the proxy actor starts later).
    for name in config.proxy.chains.keys() {
        crawl_observability::metrics::metrics().proxy_chain(name);
    }
    let _metrics = match obs.metrics_listen {
        Some(addr) => {
            if !addr.ip().is_loopback() {
                tracing::warn!(%addr, "metrics listener is reachable from other machines (observability.metrics_listen)");
            }
            Some(MetricsServer::start(addr).map_err(|e| {
                EngineError::Usage(format!(
                    "{e} (set observability.metrics_listen to a free address, or \"\" to turn metrics off)"
                ))
            })?)
        }
        None => None,
    };
    // Bound now (a taken port, an unreadable token or certificate is a config error); served once the tree runs.
    let api = crawl_engine::api::listener::ApiListener::open(&config.api)?;
    if let Some(l) = &api
        && !l.addr().ip().is_loopback()
    {
        tracing::warn!(addr = %l.addr(), "api listener is reachable from other machines (api.listen)");
    }
    let progress = if cli.no_progress {
        None
    } else if std::io::stderr().is_terminal() {
        Some(Mode::Bar)
    } else {
        Some(Mode::Log {
            every: config.observability.progress_interval,
        })
    };
    if !faults.is_empty() {
        tracing::warn!(faults = %faults, "fault injection is on (test hook)");
    }
    let opts = Options {
        progress,
        faults,
        handle_signals: true,
        extra_roots: Vec::new(),
        reload: ReloadSource {
            path: config_path.clone(),
            seeds: cli.seeds.clone(),
            log: Some(guard.log_control()),
            export_queue: guard.export_target().map(|t| t.queue),
        },
        api,
    };
    let summary = run_crawl_owned(&config, opts, owned);
    // Flush the last spans whatever the outcome (on this thread: no runtime is running any more).
    guard.shutdown();
    let summary = summary?;
    print!("{}", summary.render());
    if let Some(p) = &cli.summary_json {
        std::fs::write(p, serde_json::to_vec_pretty(&summary.to_json())?)?;
    }
    if let Some(e) = summary.sinks_error() {
        return Err(EngineError::Fatal(e).into());
    }
    if let FinishReason::Fatal(cause) = &summary.reason {
        let one_line = cause.lines().next().unwrap_or("fatal error").to_owned();
        return Err(
            EngineError::Fatal(format!("{one_line} (the same command resumes the crawl)")).into(),
        );
    }
    Ok(())
}
