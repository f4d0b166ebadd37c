//! Redis servers for tests: each test starts its own `redis-server` (on a unix socket in a temporary directory, or
//! on loopback ports for a cluster) and the server is killed when the handle is dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SERVER: &str = "redis-server";
const CLI: &str = "redis-cli";

fn on_path(bin: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(bin).is_file()))
}

/// True when the tests can run: the binaries are there. When they are missing a test skips with a message, except
/// under CI (`CI=true`), where it fails.
pub fn require(bins: &[&str]) -> bool {
    let missing: Vec<&str> = bins.iter().copied().filter(|b| !on_path(b)).collect();
    if missing.is_empty() {
        return true;
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!(
            "{} not found on PATH (required under CI)",
            missing.join(", ")
        );
    }
    eprintln!("skipped: {} not found on PATH", missing.join(", "));
    false
}

/// True when a single-server test can run.
pub fn require_server() -> bool {
    require(&[SERVER])
}

/// A running `redis-server`.
#[derive(Debug)]
pub struct RedisServer {
    child: Child,
    /// The URL to reach it (with the password when it has one).
    pub url: String,
    /// The TCP port (cluster nodes), if any.
    pub port: Option<u16>,
    /// What it was started with, to start it again.
    args: Vec<String>,
    _dir: tempfile::TempDir,
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(dir: &Path, args: &[String]) -> std::io::Result<Child> {
    Command::new(SERVER)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
}

fn base_args(dir: &Path) -> Vec<String> {
    [
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        &dir.display().to_string(),
        "--daemonize",
        "no",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn wait_ready(url: &str, child: &mut Child) -> std::io::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait()? {
            return Err(std::io::Error::other(format!(
                "redis-server exited: {status}"
            )));
        }
        let ok = redis::Client::open(url)
            .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(200)))
            .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c));
        match ok {
            Ok(_) => return Ok(()),
            // A password-protected server answers, but refuses PING without the password: it is up.
            Err(e)
                if e.kind() == redis::ErrorKind::AuthenticationFailed
                    || e.code() == Some("NOAUTH") =>
            {
                return Ok(());
            }
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(std::io::Error::other(e.to_string())),
        }
    }
}

impl RedisServer {
    /// A server on a unix socket in a fresh temporary directory (no TCP port), with extra arguments.
    pub fn unix(extra: &[&str]) -> std::io::Result<RedisServer> {
        let dir = tempfile::tempdir()?;
        let sock: PathBuf = dir.path().join("redis.sock");
        let mut args = base_args(dir.path());
        args.extend(
            [
                "--port",
                "0",
                "--unixsocket",
                &sock.display().to_string(),
                "--unixsocketperm",
                "700",
            ]
            .iter()
            .map(|s| s.to_string()),
        );
        args.extend(extra.iter().map(|s| s.to_string()));
        let password = extra
            .windows(2)
            .find(|w| w[0] == "--requirepass")
            .map(|w| w[1].to_owned());
        let url = match &password {
            Some(p) => format!("redis+unix://{}?pass={p}", sock.display()),
            None => format!("redis+unix://{}", sock.display()),
        };
        let mut child = spawn(dir.path(), &args)?;
        let probe = format!("redis+unix://{}", sock.display());
        if let Err(e) = wait_ready(&probe, &mut child) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
        Ok(RedisServer {
            child,
            url,
            port: None,
            args,
            _dir: dir,
        })
    }

    /// A server on 127.0.0.1 at a free port (tried again on other ports when a bind fails).
    pub fn tcp(extra: &[&str]) -> std::io::Result<RedisServer> {
        let mut last = None;
        for attempt in 0..20u32 {
            let port = pick_port(attempt);
            let dir = tempfile::tempdir()?;
            let mut args = base_args(dir.path());
            args.extend(
                ["--port", &port.to_string(), "--bind", "127.0.0.1"]
                    .iter()
                    .map(|s| s.to_string()),
            );
            args.extend(extra.iter().map(|s| s.to_string()));
            let mut child = spawn(dir.path(), &args)?;
            let url = format!("redis://127.0.0.1:{port}");
            match wait_ready(&url, &mut child) {
                Ok(()) => {
                    return Ok(RedisServer {
                        child,
                        url,
                        port: Some(port),
                        args,
                        _dir: dir,
                    });
                }
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    last = Some(e);
                }
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("no free port")))
    }

    /// Kills the server (SIGKILL); its files stay.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts it again with the same arguments and files (an append-only file brings its data back).
    pub fn restart(&mut self) -> std::io::Result<()> {
        self.kill();
        self.child = spawn(self._dir.path(), &self.args)?;
        let probe = match self.port {
            Some(_) => self.url.clone(),
            None => self.url.split('?').next().unwrap_or(&self.url).to_owned(),
        };
        wait_ready(&probe, &mut self.child)
    }

    /// A plain command on this server (test setup and checks).
    pub fn query<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> T {
        let client = redis::Client::open(self.url.as_str()).unwrap();
        let mut c = client.get_connection().unwrap();
        cmd.query(&mut c).unwrap()
    }
}

/// A port in 20000..55000 (the cluster bus uses port + 10000), different per process, attempt and call.
fn pick_port(attempt: u32) -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let seed = std::process::id()
        .wrapping_mul(7919)
        .wrapping_add(nanos)
        .wrapping_add(attempt.wrapping_mul(104_729))
        .wrapping_add(n.wrapping_mul(31));
    20_000 + (seed % 35_000) as u16
}

/// A cluster of three masters on loopback ports, made with `redis-cli --cluster create`.
#[derive(Debug)]
pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    pub fn start() -> std::io::Result<RedisCluster> {
        let mut nodes = Vec::new();
        for _ in 0..3 {
            nodes.push(RedisServer::tcp(&[
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-node-timeout",
                "5000",
            ])?);
        }
        let addrs: Vec<String> = nodes
            .iter()
            .filter_map(|n| n.port.map(|p| format!("127.0.0.1:{p}")))
            .collect();
        let out = Command::new(CLI)
            .arg("--cluster")
            .arg("create")
            .args(&addrs)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdin(Stdio::null())
            .output()?;
        if !out.status.success() {
            return Err(std::io::Error::other(format!(
                "redis-cli --cluster create failed: {}",
                String::from_utf8_lossy(&out.stdout)
            )));
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let ok = nodes.iter().all(|n| {
                let info: String = n.query(redis::cmd("CLUSTER").arg("INFO"));
                info.contains("cluster_state:ok")
            });
            if ok {
                return Ok(RedisCluster { nodes });
            }
            if Instant::now() > deadline {
                return Err(std::io::Error::other("cluster did not become ready"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.url.clone()).collect()
    }
}
