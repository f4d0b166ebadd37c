//! `--check` beyond parsing: opens what a run would open (the data_dir and its lock, the metrics port, the JSONL and
//! WARC paths) and looks at where the seeds point, so that a config that passes the check also starts.

use crawl_core::config::Config;
use crawl_core::netaddr::classify_ip;
use crawl_store_embedded::DirLock;
use std::net::{IpAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long the seeds' names may take to resolve, all together.
const RESOLVE_BUDGET: Duration = Duration::from_secs(3);

/// What the check found: errors make `--check` fail (exit 2), warnings do not.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Findings {
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
}

/// Runs every check of a run's resources against `config`.
pub fn preflight(config: &Config) -> Findings {
    let mut f = Findings::default();
    let data_dir = &config.frontier.data_dir;
    if data_dir.exists() {
        if !data_dir.is_dir() {
            f.errors.push(format!(
                "frontier.data_dir: {} is not a directory",
                data_dir.display()
            ));
        } else if let Err(e) = DirLock::acquire(data_dir) {
            f.errors.push(format!("frontier.data_dir: {e}"));
        }
    } else if let Err(e) = creatable(data_dir) {
        f.errors.push(format!("frontier.data_dir: {e}"));
    }
    let jsonl = &config.output.jsonl;
    if jsonl.exists() {
        if let Err(e) = std::fs::OpenOptions::new().append(true).open(jsonl) {
            f.errors.push(format!(
                "output.jsonl: cannot write {}: {e}",
                jsonl.display()
            ));
        }
    } else if let Err(e) = creatable(jsonl) {
        f.errors.push(format!("output.jsonl: {e}"));
    }
    if let Some(dir) = &config.output.warc_dir {
        let r = if dir.exists() {
            writable_dir(dir)
        } else {
            creatable(dir)
        };
        if let Err(e) = r {
            f.errors.push(format!("output.warc_dir: {e}"));
        }
    }
    if let Some(addr) = config.observability.metrics_listen
        && let Err(e) = std::net::TcpListener::bind(addr)
    {
        f.errors.push(format!(
            "observability.metrics_listen: cannot listen on {addr}: {e} (use a free port, port 0 for any free \
             port, or \"\" to turn metrics off)"
        ));
    }
    if !config.security.allow_private_networks {
        f.warnings.extend(private_seeds(config));
    }
    f
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
mod tests {
    use super::*;

    fn config(dir: &Path) -> Config {
        let mut c = Config::default();
        c.frontier.data_dir = dir.join("data");
        c.output.jsonl = dir.join("out/crawl.jsonl");
        c.output.warc_dir = Some(dir.join("warc"));
        c.observability.metrics_listen = None;
        c
    }

    #[test]
    fn a_fresh_layout_passes_and_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let c = config(dir.path());
        assert_eq!(preflight(&c), Findings::default());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_locked_data_dir_a_busy_port_and_a_path_under_a_file_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = config(dir.path());
        let _held = DirLock::acquire(&c.frontier.data_dir).unwrap();
        let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        c.observability.metrics_listen = Some(busy.local_addr().unwrap());
        std::fs::write(dir.path().join("file"), b"x").unwrap();
        c.output.warc_dir = Some(dir.path().join("file/warc"));
        let f = preflight(&c);
        assert_eq!(f.errors.len(), 3, "{f:?}");
        assert!(f.errors[0].starts_with("frontier.data_dir:") && f.errors[0].contains("in use"));
        assert!(
            f.errors[1].starts_with("output.warc_dir:") && f.errors[1].contains("not a directory")
        );
        assert!(f.errors[2].starts_with("observability.metrics_listen:"));
    }

    #[test]
    fn a_relative_path_is_judged_by_the_current_directory_and_a_file_blocks_its_children() {
        assert!(creatable(Path::new("no-such-folder/sub/crawl.jsonl")).is_ok());
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), b"x").unwrap();
        let err = creatable(&dir.path().join("f/a/b"))
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("f is not a directory"), "{err}");
    }

    #[test]
    fn private_seeds_warn_unless_allowed() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = config(dir.path());
        c.add_seed(url::Url::parse("http://127.0.0.9/").unwrap());
        c.add_seed(url::Url::parse("http://intranet.example/").unwrap());
        c.add_seed(url::Url::parse("http://[::1]:8080/").unwrap());
        c.resolver
            .hosts
            .insert("intranet.example".into(), vec!["10.1.2.3".parse().unwrap()]);
        let f = preflight(&c);
        assert!(f.errors.is_empty(), "{f:?}");
        assert_eq!(f.warnings.len(), 3, "{f:?}");
        assert!(
            f.warnings[1].contains("10.1.2.3 (private)"),
            "{}",
            f.warnings[1]
        );
        c.security.allow_cidrs = vec!["10.1.0.0/16".parse().unwrap(), "::1".parse().unwrap()];
        let f = preflight(&c);
        assert_eq!(f.warnings.len(), 1, "only 127.0.0.9 is left: {f:?}");
        assert!(f.warnings[0].contains("127.0.0.9 (loopback)"), "{f:?}");
        c.security.allow_private_networks = true;
        assert!(preflight(&c).warnings.is_empty());
    }
}
