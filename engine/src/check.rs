//! `--check` beyond parsing: sees what a run would. It judges the outputs as a run claims them (a data_dir, JSONL
//! or WARC folder held by another process or owned by another crawl is refused with the run's own message), checks
//! that the paths can be made and written and that the metrics port is free (and the control API's, its token and
//! certificate readable), connects to Redis as a run would and
//! connects to every sink (`[[sinks]]`) as a run would, tries a TCP connection to every other server the config
//! names, and looks at where the seeds point. It creates nothing of the crawl's own and takes no lock for longer
//! than a look (a sink's connect creates a missing table, or a topic with `create_topic`, as a run would).

mod reach;

use crate::error::CheckFailed;
use crate::ownership::{shown, survey};
use crawl_core::config::Config;
use crawl_core::netaddr::classify_ip;
use reach::RedisFinding;
use std::net::{IpAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long the seeds' names may take to resolve, all together.
const RESOLVE_BUDGET: Duration = Duration::from_secs(3);

/// What the check found. `refused` and `failed` make `--check` fail, with the exit status a run would have (2 for
/// config and ownership, else 1); warnings and notes do not.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Findings {
    /// Config and ownership problems: a run is refused (exit 2).
    pub refused: Vec<String>,
    /// What a run would fail on at runtime (exit 1): a server out of reach, an output that cannot be read.
    pub failed: Vec<String>,
    pub warnings: Vec<String>,
    /// What `--fresh` would move aside.
    pub notes: Vec<String>,
}

impl Findings {
    /// The failure `--check` ends with, when there is one.
    pub fn failure(&self) -> Option<CheckFailed> {
        (!self.refused.is_empty() || !self.failed.is_empty()).then(|| CheckFailed {
            refused: self.refused.clone(),
            failed: self.failed.clone(),
        })
    }
}

/// Runs every check of a run's resources against `config` (`fresh`: as `--fresh` would run).
pub fn preflight(config: &Config, fresh: bool) -> Findings {
    let mut f = Findings {
        refused: paths(config),
        ..Findings::default()
    };
    // The outputs as a run claims them.
    match survey(config, fresh) {
        Ok(s) => {
            f.refused
                .extend(s.refusals().iter().map(ToString::to_string));
            f.notes.extend(
                s.to_move()
                    .into_iter()
                    .map(|(o, p)| format!("--fresh moves {} {} aside", o.key(), shown(&p))),
            );
        }
        Err(e) => f.failed.push(e.to_string()),
    }
    if let Some(addr) = config.observability.metrics_listen
        && let Err(e) = std::net::TcpListener::bind(addr)
    {
        f.refused.push(format!(
            "observability.metrics_listen: cannot listen on {addr}: {e} (use a free port, port 0 for any free \
             port, or \"\" to turn metrics off)"
        ));
    }
    // The control API as a run opens it: the token read, the certificate loaded, the port bound (then let go).
    if let Err(e) = crate::api::listener::ApiListener::open(&config.api) {
        f.refused.push(e.to_string());
    }
    // Every sink connected as a run connects it: one out of reach or not usable refuses the run (exit 2).
    f.refused.extend(
        crawl_actors::tree::probe_sinks(config)
            .into_iter()
            .map(|e| e.to_string()),
    );
    match reach::redis(config) {
        Some(RedisFinding::Refused(m)) => f.refused.push(m),
        Some(RedisFinding::Failed(m)) => f.failed.push(m),
        Some(RedisFinding::Reached) | None => {}
    }
    f.warnings
        .extend(reach::unreachable(config, reach::servers(config)));
    if !config.security.allow_private_networks {
        f.warnings.extend(private_seeds(config));
    }
    f
}

/// The paths a run writes that it could not make or write: the data_dir, the JSONL, the WARC folder.
pub fn paths(config: &Config) -> Vec<String> {
    let mut out = Vec::new();
    let data_dir = &config.frontier.data_dir;
    if data_dir.exists() {
        if !data_dir.is_dir() {
            out.push(format!(
                "frontier.data_dir: {} is not a directory",
                data_dir.display()
            ));
        } else if let Err(e) = writable_dir(data_dir) {
            out.push(format!("frontier.data_dir: {e}"));
        }
    } else if let Err(e) = creatable(data_dir) {
        out.push(format!("frontier.data_dir: {e}"));
    }
    let jsonl = &config.output.jsonl;
    if jsonl.exists() {
        if let Err(e) = std::fs::OpenOptions::new().append(true).open(jsonl) {
            out.push(format!(
                "output.jsonl: cannot write {}: {e}",
                jsonl.display()
            ));
        }
    } else if let Err(e) = creatable(jsonl) {
        out.push(format!("output.jsonl: {e}"));
    }
    if let Some(dir) = &config.output.warc_dir {
        let r = if dir.exists() {
            writable_dir(dir)
        } else {
            creatable(dir)
        };
        if let Err(e) = r {
            out.push(format!("output.warc_dir: {e}"));
        }
    }
    out
}

/// Seeds whose host is (or resolves to) an address the crawl may not reach (the guard of `[security]`: non-public
/// and not in `allow_cidrs`).
fn private_seeds(config: &Config) -> Vec<String> {
    let guard = config.security.guard();
    let deadline = std::time::Instant::now() + RESOLVE_BUDGET;
    let mut out = Vec::new();
    for seed in &config.crawl.seeds {
        let Some(host) = seed.host_str() else {
            continue;
        };
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let addrs: Vec<IpAddr> = if let Ok(ip) = bare.parse::<IpAddr>() {
            vec![ip]
        } else if let Some(ips) = config.resolver.hosts.get(&bare.to_ascii_lowercase()) {
            ips.clone()
        } else {
            resolve(bare, seed.port_or_known_default().unwrap_or(80), deadline)
        };
        if let Some(ip) = addrs.iter().find(|ip| !guard.allows(**ip)) {
            out.push(format!(
                "seed {seed}: {host} is at {ip} ({}), which security.allow_private_networks = false excludes: \
                 the URL would end excluded/private_network (list it in security.allow_cidrs or set \
                 allow_private_networks = true to crawl it)",
                classify_ip(*ip)
            ));
        }
    }
    out
}

/// The system resolver's answer for `host`, or nothing once the budget is spent (the lookup runs on its own thread:
/// a hanging resolver does not hold up the check).
fn resolve(host: &str, port: u16, deadline: std::time::Instant) -> Vec<IpAddr> {
    let left = deadline.saturating_duration_since(std::time::Instant::now());
    if left.is_zero() {
        return Vec::new();
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let name = host.to_owned();
    std::thread::spawn(move || {
        let ips: Vec<IpAddr> = (name.as_str(), port)
            .to_socket_addrs()
            .map(|a| a.map(|s| s.ip()).collect())
            .unwrap_or_default();
        let _ = tx.send(ips);
    });
    rx.recv_timeout(left).unwrap_or_default()
}

/// Why a path that a run would write to is not usable.
#[derive(Debug, thiserror::Error)]
enum PathError {
    #[error("cannot create {}: no folder of it exists", .path.display())]
    NoFolder { path: PathBuf },
    #[error("cannot create {}: {} is not a directory", .path.display(), .dir.display())]
    NotADirectory { path: PathBuf, dir: PathBuf },
    #[error("cannot create {}: {within}", .path.display())]
    Within {
        path: PathBuf,
        within: Box<PathError>,
    },
    #[error("cannot write in {}: {error}", .dir.display())]
    NotWritable { dir: PathBuf, error: std::io::Error },
}

/// `path` does not exist: its nearest existing ancestor must be a directory we can write in.
fn creatable(path: &Path) -> Result<(), PathError> {
    // A relative path's last ancestor is "", the current directory.
    let existing = path
        .ancestors()
        .skip(1)
        .map(|p| {
            if p.as_os_str().is_empty() {
                Path::new(".")
            } else {
                p
            }
        })
        .find(|p| p.exists());
    let Some(dir) = existing else {
        return Err(PathError::NoFolder { path: path.into() });
    };
    if !dir.is_dir() {
        return Err(PathError::NotADirectory {
            path: path.into(),
            dir: dir.into(),
        });
    }
    writable_dir(dir).map_err(|e| PathError::Within {
        path: path.into(),
        within: Box::new(e),
    })
}

/// Creates and removes a probe file in `dir`.
fn writable_dir(dir: &Path) -> Result<(), PathError> {
    let probe = dir.join(format!(".crawl-engine-check-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(error) => Err(PathError::NotWritable {
            dir: dir.into(),
            error,
        }),
    }
}

#[cfg(test)]
mod tests;
