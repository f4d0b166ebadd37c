//! A Redis Sentinel topology started by a test: a master and its replicas (`redis-server --replicaof`) and the
//! sentinels that watch them (`redis-server <conf> --sentinel`, what Debian's redis-sentinel package runs), every
//! one on a loopback port the system handed out. Dropping the topology kills every process.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::ToolError;
use crate::redis::{Options, RedisServer, free_port};

/// The name the sentinels monitor the master under.
pub const MASTER: &str = "crawl";
/// How long a topology may take to be watched by every sentinel with every replica known.
const READY_WITHIN: Duration = Duration::from_secs(20);

/// How to start a topology.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub replicas: usize,
    pub sentinels: usize,
    /// `down-after-milliseconds`: how long the master may not answer before a sentinel calls it down.
    pub down_after_ms: u64,
    /// `failover-timeout`.
    pub failover_timeout_ms: u64,
}

impl Default for Shape {
    fn default() -> Self {
        Shape {
            replicas: 2,
            sentinels: 3,
            down_after_ms: 1_000,
            failover_timeout_ms: 10_000,
        }
    }
}

/// One `redis-server --sentinel` process.
#[derive(Debug)]
pub struct SentinelNode {
    child: Option<Child>,
    dir: tempfile::TempDir,
    pub port: u16,
}

impl SentinelNode {
    fn start(master_port: u16, quorum: usize, shape: Shape) -> Result<SentinelNode, ToolError> {
        let mut dir = tempfile::Builder::new()
            .prefix("sentinel")
            .tempdir()
            .map_err(ToolError::io("tempdir for a sentinel"))?;
        let mut last = None;
        for _ in 0..20 {
            let port = free_port()?;
            let conf: PathBuf = dir.path().join("sentinel.conf");
            let text = format!(
                "port {port}\nbind 127.0.0.1\ndir {dir}\nlogfile sentinel.log\nprotected-mode no\n\
                 sentinel monitor {MASTER} 127.0.0.1 {master_port} {quorum}\n\
                 sentinel down-after-milliseconds {MASTER} {down}\n\
                 sentinel failover-timeout {MASTER} {fo}\n\
                 sentinel parallel-syncs {MASTER} 2\n",
                dir = dir.path().display(),
                down = shape.down_after_ms,
                fo = shape.failover_timeout_ms,
            );
            std::fs::write(&conf, text).map_err(ToolError::io("write sentinel.conf"))?;
            let child = Command::new("redis-server")
                .arg(&conf)
                .arg("--sentinel")
                .current_dir(dir.path())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(ToolError::io("redis-server --sentinel"))?;
            let mut node = SentinelNode {
                child: Some(child),
                dir,
                port,
            };
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if node.cli(&["PING"]).is_ok_and(|o| o.trim() == "PONG") {
                    return Ok(node);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            node.kill();
            last = Some(ToolError::NotReady {
                what: "redis-server --sentinel (PING)".to_owned(),
                within: Duration::from_secs(10),
            });
            dir = node.take_dir()?;
        }
        Err(last.unwrap_or(ToolError::NotReady {
            what: "a sentinel on a free port".to_owned(),
            within: Duration::from_secs(10),
        }))
    }

    fn take_dir(mut self) -> Result<tempfile::TempDir, ToolError> {
        self.kill();
        let fresh = tempfile::Builder::new()
            .prefix("sentinel")
            .tempdir()
            .map_err(ToolError::io("tempdir for a sentinel"))?;
        Ok(std::mem::replace(&mut self.dir, fresh))
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Runs `redis-cli` against this sentinel.
    pub fn cli(&self, args: &[&str]) -> Result<String, ToolError> {
        let out = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(ToolError::io("redis-cli"))?;
        if !out.status.success() {
            return Err(ToolError::failed("redis-cli", out.status, &out.stderr));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The master's port as this sentinel names it.
    pub fn master_port(&self) -> Option<u16> {
        let out = self
            .cli(&["SENTINEL", "get-master-addr-by-name", MASTER])
            .ok()?;
        out.lines().nth(1)?.trim().parse().ok()
    }

    /// The sentinel's log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sentinel.log")).unwrap_or_default()
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for SentinelNode {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A master, its replicas and the sentinels watching them.
#[derive(Debug)]
pub struct SentinelTopology {
    /// The servers: `servers[0]` starts as the master.
    pub servers: Vec<RedisServer>,
    pub sentinels: Vec<SentinelNode>,
}

impl SentinelTopology {
    pub fn start(shape: Shape) -> SentinelTopology {
        match SentinelTopology::try_start(shape) {
            Ok(t) => t,
            Err(e) => panic!("sentinel topology: {e}"),
        }
    }

    fn try_start(shape: Shape) -> Result<SentinelTopology, ToolError> {
        let master = RedisServer::on_tcp(Options::default());
        let master_port = master.port().unwrap_or(0);
        let mut servers = vec![master];
        for _ in 0..shape.replicas {
            servers.push(RedisServer::on_tcp(Options {
                replica_of: Some(master_port),
                ..Options::default()
            }));
        }
        let quorum = shape.sentinels / 2 + 1;
        let sentinels = (0..shape.sentinels)
            .map(|_| SentinelNode::start(master_port, quorum, shape))
            .collect::<Result<Vec<_>, _>>()?;
        let t = SentinelTopology { servers, sentinels };
        // Ready once the replicas are in sync and every sentinel knows them and its peers.
        let deadline = Instant::now() + READY_WITHIN;
        while Instant::now() < deadline {
            let synced = t.servers[0]
                .cli(&["INFO", "replication"])
                .is_ok_and(|i| i.matches("state=online").count() == shape.replicas);
            let known = t.sentinels.iter().all(|s| {
                s.cli(&["SENTINEL", "master", MASTER]).is_ok_and(|o| {
                    let lines: Vec<&str> = o.lines().map(str::trim).collect();
                    let field = |name: &str| {
                        lines
                            .iter()
                            .position(|l| *l == name)
                            .and_then(|i| lines.get(i + 1))
                            .and_then(|v| v.parse::<usize>().ok())
                    };
                    field("num-slaves") == Some(shape.replicas)
                        && field("num-other-sentinels") == Some(shape.sentinels - 1)
                })
            });
            if synced && known {
                return Ok(t);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(ToolError::NotReady {
            what: "the sentinels watching the master with every replica".to_owned(),
            within: READY_WITHIN,
        })
    }

    /// The sentinel URLs the crawler is given.
    pub fn urls(&self) -> Vec<String> {
        self.sentinels.iter().map(SentinelNode::url).collect()
    }

    /// The index in `servers` of the master the first answering sentinel names.
    pub fn master(&self) -> Option<usize> {
        let port = self.sentinels.iter().find_map(SentinelNode::master_port)?;
        self.servers.iter().position(|s| s.port() == Some(port))
    }

    /// Waits until the sentinels name a master other than `servers[old]` and it calls itself master.
    pub fn wait_failover(&self, old: usize, within: Duration) -> Result<usize, ToolError> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Some(m) = self.master().filter(|&m| m != old)
                && self.servers[m]
                    .cli(&["ROLE"])
                    .is_ok_and(|r| r.starts_with("master"))
            {
                return Ok(m);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(ToolError::NotReady {
            what: "a failover to a replica".to_owned(),
            within,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_killed_master_is_replaced_by_a_replica_the_sentinels_name() {
        if !crate::redis::require("sentinel support", true) {
            return;
        }
        let mut t = SentinelTopology::start(Shape::default());
        assert_eq!(t.master(), Some(0));
        assert_eq!(t.urls().len(), 3);
        assert_eq!(t.servers[0].cli(&["SET", "k", "v"]).unwrap().trim(), "OK");
        assert_eq!(
            t.servers[0].cli(&["WAIT", "2", "2000"]).unwrap().trim(),
            "2"
        );
        t.servers[0].kill();
        let m = t.wait_failover(0, Duration::from_secs(20)).unwrap();
        assert_ne!(m, 0);
        assert_eq!(t.servers[m].cli(&["GET", "k"]).unwrap().trim(), "v");
    }
}
