//! Redis servers started by a test: Debian's `redis-server` on a unix socket in a temporary directory, or, for a
//! cluster, on loopback ports the system handed out, never the machine's own Redis. A server counts as started once
//! it answers PING (within a deadline); dropping one kills it.
//!
//! A test that needs Redis calls [`require`] first: it returns false (the test skips, with a note) when
//! `redis-server` is missing, except under `CI=true`, where a missing tool fails the test.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{ToolError, tool};

const SERVER: &str = "redis-server";
const CLI: &str = "redis-cli";
const HINT: &str = "apt-get install redis-server redis-tools";
/// How long a server may take to answer its first PING.
const READY_WITHIN: Duration = Duration::from_secs(10);
/// How long a new cluster may take to reach `cluster_state:ok` (and its replicas to be in sync).
const CLUSTER_READY_WITHIN: Duration = Duration::from_secs(30);
/// `cluster-node-timeout` of [`RedisCluster::start`]'s nodes.
const NODE_TIMEOUT_MS: u64 = 5000;
/// The number of hash slots of a Redis Cluster.
const SLOTS: u16 = 16384;
/// Ports handed out by the system may be taken again before the server binds them: tries before giving up.
const PORT_TRIES: usize = 20;

/// True when the Redis tools this test needs are installed (`redis-cli` too for a cluster). Missing: false with a
/// note, or a panic under `CI=true`.
pub fn require(test: &str, cluster: bool) -> bool {
    let tools: &[&str] = if cluster { &[SERVER, CLI] } else { &[SERVER] };
    tool::require(test, tools, HINT)
}

/// How to start a server.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `requirepass`.
    pub password: Option<String>,
    /// Keep an append-only file (fsync always), so a restart keeps the data.
    pub aof: bool,
    /// Start as a replica of the server on this loopback port (`--replicaof`).
    pub replica_of: Option<u16>,
    /// The address a TCP server listens on instead of 127.0.0.1 (the hub side of the network namespaces a test
    /// made, see [`crate::netns`]); its URL and `redis-cli` use it too. Unix-socket servers ignore it.
    pub bind: Option<Ipv4Addr>,
}

/// Where a server listens.
#[derive(Debug, Clone, Copy)]
enum Listen {
    /// `redis.sock` in the server's directory.
    Unix,
    /// A cluster node on a loopback TCP port (its cluster bus on that port + 10000), with its
    /// `cluster-node-timeout`.
    Cluster { port: u16, node_timeout_ms: u64 },
    /// A plain server on a loopback TCP port (a master or replica that sentinels watch).
    Tcp { port: u16 },
}

/// One `redis-server` process.
#[derive(Debug)]
pub struct RedisServer {
    child: Option<Child>,
    dir: tempfile::TempDir,
    opts: Options,
    listen: Listen,
}

impl RedisServer {
    /// A server on a unix socket, no password, nothing kept on disk.
    pub fn start() -> RedisServer {
        RedisServer::with(Options::default())
    }

    /// A server on a unix socket with these options.
    pub fn with(opts: Options) -> RedisServer {
        match RedisServer::spawn_new(opts, Listen::Unix) {
            Ok(s) => s,
            Err(e) => panic!("start {SERVER}: {e}"),
        }
    }

    fn spawn_new(opts: Options, listen: Listen) -> Result<RedisServer, ToolError> {
        let dir = tempfile::Builder::new()
            .prefix("redis")
            .tempdir()
            .map_err(ToolError::io("tempdir for redis"))?;
        let mut s = RedisServer {
            child: None,
            dir,
            opts,
            listen,
        };
        s.spawn()?;
        Ok(s)
    }

    /// A cluster node on a port the system handed out (tried again on another when one was taken meanwhile).
    fn cluster_node(node_timeout_ms: u64) -> Result<RedisServer, ToolError> {
        let mut last = None;
        for _ in 0..PORT_TRIES {
            let Some(port) = free_port_pair()? else {
                continue;
            };
            let listen = Listen::Cluster {
                port,
                node_timeout_ms,
            };
            match RedisServer::spawn_new(Options::default(), listen) {
                Ok(s) => return Ok(s),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or(ToolError::NotReady {
            what: format!("a cluster node on a free port pair ({PORT_TRIES} tries)"),
            within: READY_WITHIN,
        }))
    }

    /// A server on a loopback TCP port the system handed out (tried again on another when one was taken
    /// meanwhile), with these options (a replica names its master's port in `replica_of`).
    pub fn on_tcp(opts: Options) -> RedisServer {
        let mut last = None;
        for _ in 0..PORT_TRIES {
            let port = match free_port() {
                Ok(p) => p,
                Err(e) => panic!("{e}"),
            };
            match RedisServer::spawn_new(opts.clone(), Listen::Tcp { port }) {
                Ok(s) => return s,
                Err(e) => last = Some(e),
            }
        }
        panic!("start {SERVER} on a free port: {last:?}")
    }

    /// Stops the server (SIGSTOP) or lets it go on (SIGCONT): a server that hangs without dying.
    pub fn signal(&self, sig: &str) {
        if let Some(c) = &self.child {
            let _ = Command::new("kill")
                .arg(format!("-{sig}"))
                .arg(c.id().to_string())
                .status();
        }
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
        match self.listen {
            Listen::Cluster { port, .. } | Listen::Tcp { port } => {
                let auth = self
                    .opts
                    .password
                    .as_ref()
                    .map(|p| format!(":{p}@"))
                    .unwrap_or_default();
                format!("redis://{auth}{}:{port}/0", self.host())
            }
            Listen::Unix => {
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

    /// The address a TCP server listens on.
    fn host(&self) -> Ipv4Addr {
        self.opts.bind.unwrap_or(Ipv4Addr::LOCALHOST)
    }

    /// The TCP port (cluster nodes).
    pub fn port(&self) -> Option<u16> {
        match self.listen {
            Listen::Cluster { port, .. } | Listen::Tcp { port } => Some(port),
            Listen::Unix => None,
        }
    }

    fn spawn(&mut self) -> Result<(), ToolError> {
        let mut cmd = Command::new(SERVER);
        cmd.current_dir(self.dir.path())
            .args(["--save", "", "--daemonize", "no", "--protected-mode", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .args(["--logfile", "redis.log"]);
        match self.listen {
            Listen::Unix => {
                cmd.args(["--port", "0", "--unixsocket"])
                    .arg(self.socket())
                    .args(["--unixsocketperm", "700"]);
            }
            Listen::Cluster {
                port,
                node_timeout_ms,
            } => {
                cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                    .args(["--cluster-enabled", "yes"])
                    .args(["--cluster-config-file", "nodes.conf"])
                    .args(["--cluster-node-timeout", &node_timeout_ms.to_string()]);
            }
            Listen::Tcp { port } => {
                cmd.args([
                    "--port",
                    &port.to_string(),
                    "--bind",
                    &self.host().to_string(),
                ]);
            }
        }
        if let Some(master) = self.opts.replica_of {
            cmd.args(["--replicaof", "127.0.0.1", &master.to_string()]);
        }
        if let Some(p) = &self.opts.password {
            cmd.args(["--requirepass", p]);
        }
        if self.opts.aof {
            cmd.args(["--appendonly", "yes", "--appendfsync", "always"]);
        } else {
            cmd.args(["--appendonly", "no"]);
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(ToolError::io(SERVER))?;
        self.child = Some(child);
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if self.answers_ping() {
                return Ok(());
            }
            if let Some(c) = &mut self.child
                && let Ok(Some(status)) = c.try_wait()
            {
                self.child = None;
                let log =
                    std::fs::read_to_string(self.dir.path().join("redis.log")).unwrap_or_default();
                return Err(ToolError::failed(SERVER, status, log.as_bytes()));
            }
            if Instant::now() >= deadline {
                self.kill();
                return Err(ToolError::NotReady {
                    what: format!("{SERVER} (PING)"),
                    within: READY_WITHIN,
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// True when the server answers PING (a password-protected one answers NOAUTH: it is up as well).
    fn answers_ping(&self) -> bool {
        let timeout = Some(Duration::from_millis(500));
        let mut reply = [0u8; 64];
        let n = match self.listen {
            Listen::Unix => UnixStream::connect(self.socket()).and_then(|mut s| {
                s.set_read_timeout(timeout)?;
                s.write_all(b"PING\r\n")?;
                s.read(&mut reply)
            }),
            Listen::Cluster { port, .. } | Listen::Tcp { port } => {
                let addr = SocketAddr::from((self.host(), port));
                TcpStream::connect_timeout(&addr, Duration::from_millis(500)).and_then(|mut s| {
                    s.set_read_timeout(timeout)?;
                    s.write_all(b"PING\r\n")?;
                    s.read(&mut reply)
                })
            }
        };
        n.is_ok_and(|n| {
            let r = &reply[..n];
            r.starts_with(b"+PONG") || r.starts_with(b"-NOAUTH")
        })
    }

    /// Runs `redis-cli` against this server and returns its output.
    pub fn cli(&self, args: &[&str]) -> Result<String, ToolError> {
        let mut cmd = Command::new(CLI);
        match self.listen {
            Listen::Cluster { port, .. } | Listen::Tcp { port } => {
                cmd.args(["-h", &self.host().to_string(), "-p", &port.to_string()])
            }
            Listen::Unix => cmd.arg("-s").arg(self.socket()),
        };
        if let Some(p) = &self.opts.password {
            cmd.env("REDISCLI_AUTH", p);
        }
        let out = cmd
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(ToolError::io(CLI))?;
        if !out.status.success() {
            return Err(ToolError::failed(CLI, out.status, &out.stderr));
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
        if let Err(e) = self.spawn() {
            panic!("restart {SERVER}: {e}");
        }
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
        if let Err(e) = self.spawn() {
            panic!("restart {SERVER} empty: {e}");
        }
    }

    /// `INFO memory`'s used_memory, in bytes (0 when it cannot be read).
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

/// A loopback TCP port the system handed out (bound on 127.0.0.1:0, then released for the server).
pub(crate) fn free_port() -> Result<u16, ToolError> {
    let l =
        TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(ToolError::io("bind 127.0.0.1:0"))?;
    Ok(l.local_addr()
        .map_err(ToolError::io("bind 127.0.0.1:0"))?
        .port())
}

/// A loopback TCP port the system handed out whose cluster bus port (+ 10000) is free too: both are bound (the
/// first on 127.0.0.1:0), then released for redis-server, which takes a port number rather than a listener. None
/// when the bus port is out of range or taken (the caller asks again).
fn free_port_pair() -> Result<Option<u16>, ToolError> {
    let bind = |port: u16| TcpListener::bind((Ipv4Addr::LOCALHOST, port));
    let first = bind(0).map_err(ToolError::io("bind 127.0.0.1:0"))?;
    let port = first
        .local_addr()
        .map_err(ToolError::io("bind 127.0.0.1:0"))?
        .port();
    Ok(port
        .checked_add(10_000)
        .is_some_and(|bus| bind(bus).is_ok())
        .then_some(port))
}

/// A Redis Cluster on loopback TCP ports, made with `redis-cli --cluster create`: masters only, or masters with
/// replicas ([`RedisCluster::with_replicas`]) whose masters a test kills or stops to see a replica promoted.
#[derive(Debug)]
pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
    /// Nodes killed or stopped through this handle: never asked anything (a stopped one would not answer).
    down: Vec<bool>,
}

fn no_live_node() -> ToolError {
    ToolError::Report {
        what: "the cluster".to_owned(),
        report: "every node was killed or stopped".to_owned(),
    }
}

/// One line of `CLUSTER NODES`, as seen by some node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeView {
    /// The node's index in [`RedisCluster::nodes`] (None for a node the cluster knows and this handle does not).
    pub index: Option<usize>,
    pub id: String,
    pub port: u16,
    /// Flagged `master`.
    pub master: bool,
    /// The id of the master of a replica.
    pub replica_of: Option<String>,
    /// Flagged `fail` (or `fail?`: suspected by the node that answered).
    pub failed: bool,
    /// The slot ranges it serves (inclusive).
    pub slots: Vec<(u16, u16)>,
}

impl NodeView {
    /// True when the node serves `slot`.
    pub fn serves(&self, slot: u16) -> bool {
        self.slots.iter().any(|&(a, b)| (a..=b).contains(&slot))
    }
}

impl RedisCluster {
    /// Starts `masters` nodes and joins them into one cluster (all slots covered, no replicas,
    /// `cluster-node-timeout` 5000 ms).
    pub fn start(masters: usize) -> RedisCluster {
        RedisCluster::with_replicas(masters, 0, NODE_TIMEOUT_MS)
    }

    /// Starts `masters * (1 + replicas_per_master)` nodes with this `cluster-node-timeout` and joins them into one
    /// cluster (`--cluster-replicas`): ready once every node says `cluster_state:ok`, knows every other node, and
    /// every master counts its replicas online (`INFO replication`). Nodes `0..masters` are the masters.
    pub fn with_replicas(
        masters: usize,
        replicas_per_master: usize,
        node_timeout_ms: u64,
    ) -> RedisCluster {
        match RedisCluster::try_start(masters, replicas_per_master, node_timeout_ms) {
            Ok(c) => c,
            Err(e) => panic!("redis cluster: {e}"),
        }
    }

    fn try_start(
        masters: usize,
        replicas_per_master: usize,
        node_timeout_ms: u64,
    ) -> Result<RedisCluster, ToolError> {
        let total = masters * (1 + replicas_per_master);
        let nodes = (0..total)
            .map(|_| RedisServer::cluster_node(node_timeout_ms))
            .collect::<Result<Vec<_>, _>>()?;
        let addrs: Vec<String> = nodes
            .iter()
            .filter_map(RedisServer::port)
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        let out = Command::new(CLI)
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", &replicas_per_master.to_string()])
            .arg("--cluster-yes")
            .stdin(Stdio::null())
            .output()
            .map_err(ToolError::io(format!("{CLI} --cluster create")))?;
        if !out.status.success() {
            return Err(ToolError::failed(
                format!("{CLI} --cluster create"),
                out.status,
                &out.stdout,
            ));
        }
        let c = RedisCluster {
            down: vec![false; nodes.len()],
            nodes,
        };
        let known = format!("cluster_known_nodes:{total}");
        c.wait(
            CLUSTER_READY_WITHIN,
            "the cluster (cluster_state:ok, replicas in sync)",
            || {
                c.nodes.iter().all(|n| {
                    n.cli(&["CLUSTER", "INFO"])
                        .is_ok_and(|i| i.contains("cluster_state:ok") && i.contains(&known))
                }) && c.masters().is_some_and(|ms| {
                    ms.len() == masters
                        && ms
                            .iter()
                            .all(|&m| c.replicas_in_sync(m) == Some(replicas_per_master))
                })
            },
        )?;
        Ok(c)
    }

    /// Polls `ready` until it holds, for up to `within`.
    fn wait(
        &self,
        within: Duration,
        what: &str,
        mut ready: impl FnMut() -> bool,
    ) -> Result<(), ToolError> {
        let deadline = Instant::now() + within;
        loop {
            if ready() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(ToolError::NotReady {
                    what: what.to_owned(),
                    within,
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Seed URLs of the nodes.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    /// The nodes this handle has not killed or stopped.
    fn live(&self) -> impl Iterator<Item = (usize, &RedisServer)> {
        self.nodes
            .iter()
            .enumerate()
            .filter(|(i, _)| !self.down[*i])
    }

    /// `CLUSTER NODES` as the first live node answers it.
    pub fn nodes_text(&self) -> Result<String, ToolError> {
        let mut last = None;
        for (_, n) in self.live() {
            match n.cli(&["CLUSTER", "NODES"]) {
                Ok(t) => return Ok(t),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(no_live_node))
    }

    /// The cluster as the first live node sees it.
    pub fn view(&self) -> Result<Vec<NodeView>, ToolError> {
        Ok(self.parse_nodes(&self.nodes_text()?))
    }

    fn parse_nodes(&self, text: &str) -> Vec<NodeView> {
        text.lines()
            .filter_map(|line| {
                let f: Vec<&str> = line.split_whitespace().collect();
                let (id, addr, flags, master) = (f.first()?, f.get(1)?, f.get(2)?, f.get(3)?);
                let port: u16 = addr
                    .split(['@', ','])
                    .next()?
                    .rsplit(':')
                    .next()?
                    .parse()
                    .ok()?;
                let flags: Vec<&str> = flags.split(',').collect();
                let slots = f
                    .iter()
                    .skip(8)
                    .filter(|s| !s.starts_with('['))
                    .filter_map(|s| match s.split_once('-') {
                        Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
                        None => s.parse().ok().map(|a| (a, a)),
                    })
                    .collect();
                Some(NodeView {
                    index: self.nodes.iter().position(|n| n.port() == Some(port)),
                    id: (*id).to_owned(),
                    port,
                    master: flags.contains(&"master"),
                    replica_of: (*master != "-").then(|| (*master).to_owned()),
                    failed: flags.iter().any(|x| *x == "fail" || *x == "fail?"),
                    slots,
                })
            })
            .collect()
    }

    /// The masters serving slots, by index (None when no live node answers).
    pub fn masters(&self) -> Option<Vec<usize>> {
        let v = self.view().ok()?;
        Some(
            v.iter()
                .filter(|n| n.master && !n.failed && !n.slots.is_empty())
                .filter_map(|n| n.index)
                .collect(),
        )
    }

    /// The hash slot of `key` (`CLUSTER KEYSLOT`, asked of a live node).
    pub fn slot_of(&self, key: &str) -> Result<u16, ToolError> {
        let mut last = None;
        for (_, n) in self.live() {
            match n.cli(&["CLUSTER", "KEYSLOT", key]) {
                Ok(t) => {
                    return t.trim().parse().map_err(|_| ToolError::Report {
                        what: format!("CLUSTER KEYSLOT {key}"),
                        report: t,
                    });
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(no_live_node))
    }

    /// The index of the master that serves `slot` now (not flagged failed).
    pub fn master_of_slot(&self, slot: u16) -> Option<usize> {
        debug_assert!(slot < SLOTS);
        self.view()
            .ok()?
            .into_iter()
            .find(|n| n.master && !n.failed && n.serves(slot))
            .and_then(|n| n.index)
    }

    /// The index of the master that serves `key`'s slot now.
    pub fn master_of_key(&self, key: &str) -> Option<usize> {
        self.master_of_slot(self.slot_of(key).ok()?)
    }

    /// The replicas of node `master`, by index.
    pub fn replicas_of(&self, master: usize) -> Vec<usize> {
        let Ok(v) = self.view() else {
            return Vec::new();
        };
        let Some(id) = v
            .iter()
            .find(|n| n.index == Some(master))
            .map(|n| n.id.clone())
        else {
            return Vec::new();
        };
        v.iter()
            .filter(|n| n.replica_of.as_deref() == Some(id.as_str()))
            .filter_map(|n| n.index)
            .collect()
    }

    /// How many replicas node `master` counts online (`INFO replication`), None when it does not answer.
    pub fn replicas_in_sync(&self, master: usize) -> Option<usize> {
        if self.down[master] {
            return None;
        }
        let info = self.nodes[master].cli(&["INFO", "replication"]).ok()?;
        Some(
            info.lines()
                .filter(|l| l.starts_with("slave") && l.contains("state=online"))
                .count(),
        )
    }

    /// Kills node `i` at once (SIGKILL); its files stay.
    pub fn kill(&mut self, i: usize) {
        self.down[i] = true;
        self.nodes[i].kill();
    }

    /// Stops node `i` (SIGSTOP): it hangs without dying.
    pub fn stop(&mut self, i: usize) {
        self.down[i] = true;
        self.nodes[i].signal("STOP");
    }

    /// Lets a stopped node `i` go on (SIGCONT).
    pub fn resume(&mut self, i: usize) {
        self.nodes[i].signal("CONT");
        self.down[i] = false;
    }

    /// Waits until a replica of the master `old` (killed or stopped) serves its slots: the node the live nodes
    /// name as master of them, flagged `master` itself (`ROLE`), and every live node says `cluster_state:ok`.
    /// Returns the promoted node's index. `old`'s replicas must be read before it went down (`replicas`).
    pub fn wait_promoted(
        &self,
        replicas: &[usize],
        slot: u16,
        within: Duration,
    ) -> Result<usize, ToolError> {
        let mut promoted = None;
        self.wait(within, "a replica promoted by the cluster", || {
            promoted = self.master_of_slot(slot).filter(|m| replicas.contains(m));
            promoted.is_some_and(|m| {
                self.nodes[m]
                    .cli(&["ROLE"])
                    .is_ok_and(|r| r.starts_with("master"))
                    && self.live().all(|(_, n)| {
                        n.cli(&["CLUSTER", "INFO"])
                            .is_ok_and(|i| i.contains("cluster_state:ok"))
                    })
            })
        })?;
        promoted.ok_or(ToolError::NotReady {
            what: "a replica promoted by the cluster".to_owned(),
            within,
        })
    }

    /// Waits until node `node` is a replica of node `master` in sync with it (`master` counts it online).
    pub fn wait_replica_of(
        &self,
        node: usize,
        master: usize,
        within: Duration,
    ) -> Result<(), ToolError> {
        let port = self.nodes[master].port().unwrap_or_default().to_string();
        let me = self.nodes[node].port().unwrap_or_default().to_string();
        self.wait(within, "a node back as a replica in sync", || {
            self.nodes[node].cli(&["ROLE"]).is_ok_and(|r| {
                let mut l = r.lines();
                l.next() == Some("slave") && l.nth(1) == Some(port.as_str())
            }) && self.nodes[master]
                .cli(&["INFO", "replication"])
                .is_ok_and(|i| {
                    i.lines().any(|l| {
                        l.starts_with("slave")
                            && l.contains(&format!("port={me},"))
                            && l.contains("state=online")
                    })
                })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_starts_keeps_data_over_an_aof_restart_and_comes_back_empty() {
        if !require("redis server support", true) {
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
        let socket = s.socket();
        drop(s);
        assert!(
            UnixStream::connect(&socket).is_err(),
            "the server outlived its handle"
        );
    }

    #[test]
    fn a_cluster_covers_every_slot_on_ports_the_system_handed_out() {
        if !require("redis cluster support", true) {
            return;
        }
        let c = RedisCluster::start(3);
        let ports: Vec<u16> = c.nodes.iter().filter_map(RedisServer::port).collect();
        assert_eq!(ports.len(), 3);
        let info = c.nodes[0].cli(&["CLUSTER", "INFO"]).unwrap();
        assert!(info.contains("cluster_slots_assigned:16384"), "{info}");
        assert!(c.urls().iter().all(|u| u.starts_with("redis://127.0.0.1:")));
    }

    #[test]
    fn a_cluster_with_replicas_promotes_one_when_its_master_dies_or_hangs() {
        if !require("redis cluster failover support", true) {
            return;
        }
        let mut c = RedisCluster::with_replicas(3, 1, 1000);
        assert_eq!(c.masters().unwrap().len(), 3);
        let slot = c.slot_of("{k}").unwrap();
        let m = c.master_of_key("{k}").unwrap();
        assert_eq!(c.master_of_slot(slot), Some(m));
        let replicas = c.replicas_of(m);
        assert_eq!(replicas.len(), 1, "{}", c.nodes_text().unwrap());
        assert_eq!(c.replicas_in_sync(m), Some(1));
        assert_eq!(c.nodes[m].cli(&["SET", "{k}", "v"]).unwrap().trim(), "OK");
        assert_eq!(c.nodes[m].cli(&["WAIT", "1", "2000"]).unwrap().trim(), "1");
        c.kill(m);
        let p = c
            .wait_promoted(&replicas, slot, Duration::from_secs(20))
            .unwrap();
        assert_eq!(p, replicas[0]);
        assert_eq!(c.nodes[p].cli(&["GET", "{k}"]).unwrap().trim(), "v");
        // Another master hangs past the node timeout: its replica takes over, and the old one, let go on, comes
        // back as a replica of it.
        let other = c.masters().unwrap().into_iter().find(|&x| x != p).unwrap();
        let slot = c
            .view()
            .unwrap()
            .into_iter()
            .find(|n| n.index == Some(other))
            .unwrap()
            .slots[0]
            .0;
        let replicas = c.replicas_of(other);
        c.stop(other);
        let q = c
            .wait_promoted(&replicas, slot, Duration::from_secs(20))
            .unwrap();
        c.resume(other);
        c.wait_replica_of(other, q, Duration::from_secs(20))
            .unwrap();
    }
}
