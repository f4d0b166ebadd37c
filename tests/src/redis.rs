//! Redis servers started by a test: Debian's `redis-server`, on a unix socket in a temporary directory (or on
//! loopback TCP ports for a cluster), never the machine's own Redis. Dropping one kills it.
//!
//! A test that needs Redis calls [`require`] first: it returns false (the test skips, with a note) when
//! `redis-server` is missing, except under `CI=true`, where a missing tool fails the test.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SERVER: &str = "redis-server";
const CLI: &str = "redis-cli";

fn installed(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// True when the Redis tools this test needs are installed. Missing: false with a note, or a panic under CI=true.
pub fn require(test: &str, cluster: bool) -> bool {
    let mut missing = Vec::new();
    if !installed(SERVER) {
        missing.push(SERVER);
    }
    if cluster && !installed(CLI) {
        missing.push(CLI);
    }
    if missing.is_empty() {
        return true;
    }
    let msg = format!(
        "{test}: {} not installed (apt-get install redis-server redis-tools)",
        missing.join(" and ")
    );
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{msg}");
    }
    eprintln!("note: skipping {msg}");
    false
}

/// How to start a server.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `requirepass`.
    pub password: Option<String>,
    /// Keep an append-only file (fsync always), so a restart keeps the data.
    pub aof: bool,
    /// Listen on this loopback TCP port instead of a unix socket.
    pub port: Option<u16>,
    /// `cluster-enabled yes` (needs a TCP port).
    pub cluster: bool,
}

/// One `redis-server` process.
#[derive(Debug)]
pub struct RedisServer {
    child: Option<Child>,
    dir: tempfile::TempDir,
    opts: Options,
}

impl RedisServer {
    /// A server on a unix socket, no password, nothing kept on disk.
    pub fn start() -> RedisServer {
        RedisServer::with(Options::default())
    }

    /// A server with these options.
    pub fn with(opts: Options) -> RedisServer {
        let dir = tempfile::Builder::new()
            .prefix("redis")
            .tempdir()
            .expect("tempdir for redis");
        let mut s = RedisServer {
            child: None,
            dir,
            opts,
        };
        s.spawn().expect("start redis-server");
        s
    }

    /// The socket path (unix-socket servers).
    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("redis.sock")
    }

    /// The directory the server keeps its files in.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The URL the crawler is given (with the password when there is one).
    pub fn url(&self) -> String {
        let auth = self
            .opts
            .password
            .as_ref()
            .map(|p| format!(":{p}@"))
            .unwrap_or_default();
        match self.opts.port {
            Some(port) => format!("redis://{auth}127.0.0.1:{port}/0"),
            None => {
                let pass = self
                    .opts
                    .password
                    .as_ref()
                    .map(|p| format!("?pass={p}"))
                    .unwrap_or_default();
                format!("redis+unix://{}{pass}", self.socket().display())
            }
        }
    }

    pub fn port(&self) -> Option<u16> {
        self.opts.port
    }

    fn spawn(&mut self) -> Result<(), String> {
        let mut cmd = Command::new(SERVER);
        cmd.current_dir(self.dir.path())
            .args(["--save", "", "--daemonize", "no", "--protected-mode", "no"])
            .args(["--dir", &self.dir.path().display().to_string()])
            .args(["--logfile", "redis.log"]);
        match self.opts.port {
            Some(port) => {
                cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1"]);
            }
            None => {
                cmd.args(["--port", "0", "--unixsocket"])
                    .arg(self.socket())
                    .args(["--unixsocketperm", "700"]);
            }
        }
        if let Some(p) = &self.opts.password {
            cmd.args(["--requirepass", p]);
        }
        if self.opts.aof {
            cmd.args(["--appendonly", "yes", "--appendfsync", "always"]);
        } else {
            cmd.args(["--appendonly", "no"]);
        }
        if self.opts.cluster {
            cmd.args([
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-node-timeout",
                "2000",
            ]);
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("{SERVER}: {e}"))?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.cli(&["PING"]).is_ok_and(|o| o.trim() == "PONG") {
                return Ok(());
            }
            if let Some(c) = &mut self.child
                && let Ok(Some(status)) = c.try_wait()
            {
                let log =
                    std::fs::read_to_string(self.dir.path().join("redis.log")).unwrap_or_default();
                self.child = None;
                return Err(format!("{SERVER} exited ({status}): {log}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!("{SERVER} did not answer PING within 10 s"))
    }

    /// Runs `redis-cli` against this server and returns its output.
    pub fn cli(&self, args: &[&str]) -> Result<String, String> {
        let mut cmd = Command::new(CLI);
        match self.opts.port {
            Some(port) => cmd.args(["-h", "127.0.0.1", "-p", &port.to_string()]),
            None => cmd.arg("-s").arg(self.socket()),
        };
        if let Some(p) = &self.opts.password {
            cmd.env("REDISCLI_AUTH", p);
        }
        let out = cmd
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("{CLI}: {e}"))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Kills the server at once (SIGKILL); its files stay.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the server again on the same socket or port and files (with `aof`, its data comes back).
    pub fn restart(&mut self) {
        self.kill();
        self.spawn().expect("restart redis-server");
    }

    /// Starts the server again with its data files removed: it comes back empty.
    pub fn restart_empty(&mut self) {
        self.kill();
        for entry in std::fs::read_dir(self.dir.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("appendonly") || name.ends_with(".rdb") {
                let p = entry.path();
                let _ = std::fs::remove_dir_all(&p).or_else(|_| std::fs::remove_file(&p));
            }
        }
        self.spawn().expect("restart redis-server empty");
    }

    /// `INFO memory`'s used_memory, in bytes.
    pub fn used_memory(&self) -> u64 {
        self.cli(&["INFO", "memory"])
            .ok()
            .and_then(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("used_memory:"))
                    .and_then(|v| v.trim().parse().ok())
            })
            .unwrap_or(0)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A Redis Cluster of `masters` servers on loopback TCP ports, made with `redis-cli --cluster create`.
#[derive(Debug)]
pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// Starts the nodes on free ports (a port taken meanwhile is skipped) and joins them into one cluster.
    pub fn start(masters: usize) -> RedisCluster {
        let mut nodes = Vec::new();
        let mut port = 20_000 + (std::process::id() % 20_000) as u16;
        while nodes.len() < masters {
            port = port.wrapping_add(7).max(20_000);
            // A cluster node also listens on port + 10000.
            if port > 55_000 || !free(port) || !free(port + 10_000) {
                continue;
            }
            let dir = tempfile::Builder::new()
                .prefix("redis")
                .tempdir()
                .expect("tempdir for redis");
            let mut s = RedisServer {
                child: None,
                dir,
                opts: Options {
                    port: Some(port),
                    cluster: true,
                    ..Options::default()
                },
            };
            if s.spawn().is_ok() {
                nodes.push(s);
            }
        }
        let addrs: Vec<String> = nodes
            .iter()
            .filter_map(|n| n.port())
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        let mut cmd = Command::new(CLI);
        cmd.arg("--cluster").arg("create");
        cmd.args(&addrs);
        cmd.args(["--cluster-replicas", "0", "--cluster-yes"]);
        let out = cmd.output().expect("redis-cli --cluster create");
        assert!(
            out.status.success(),
            "cluster create: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let c = RedisCluster { nodes };
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if c.nodes.iter().all(|n| {
                n.cli(&["CLUSTER", "INFO"])
                    .is_ok_and(|i| i.contains("cluster_state:ok"))
            }) {
                return c;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the cluster did not reach cluster_state:ok");
    }

    /// Seed URLs of the nodes.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }
}

/// Whether a loopback TCP port can be bound now (for redis-server, which takes a port number, not a listener).
fn free(port: u16) -> bool {
    std::net::TcpListener::bind(("127.0.0.1", port)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_starts_keeps_data_over_an_aof_restart_and_comes_back_empty() {
        if !require("redis server support", false) {
            return;
        }
        let mut s = RedisServer::with(Options {
            aof: true,
            password: Some("pw-test".into()),
            ..Options::default()
        });
        assert_eq!(s.cli(&["SET", "k", "v"]).unwrap().trim(), "OK");
        s.restart();
        assert_eq!(s.cli(&["GET", "k"]).unwrap().trim(), "v");
        s.restart_empty();
        assert_eq!(s.cli(&["GET", "k"]).unwrap().trim(), "");
        assert!(s.url().starts_with("redis+unix://") && s.url().contains("pass=pw-test"));
        assert!(s.used_memory() > 0);
    }
}
