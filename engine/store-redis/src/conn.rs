//! Connections to Redis (one server or a cluster), script calls sent as one pipeline where the connection allows
//! it, and the redaction of secrets in URLs and error texts.

use super::RedisSettings;
pub use super::call::Call;
use super::spool::Spool;
use super::topology::{self, Switches};
use crawl_core::frontier::FrontierError;
use crawl_core::outage::{Outage, Report};
use redis::{ErrorKind, RedisError, ServerErrorKind, Value};
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

/// How long a connection attempt and a reply may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the store's requests wait for Redis to come back before the crawl stops with an error.
pub const MAX_OUTAGE: Duration = Duration::from_secs(600);
/// With `replicas_ack` decided from the topology: how long WAITs must keep falling short while the topology has a
/// master without a replica before writes stop waiting for one (a stopped master that comes back still counts
/// itself a master without its replica for a moment, until the cluster demotes it and drops what it took), and
/// then how often the topology is read again to see whether writes can wait for a replica again.
const TOPOLOGY_RECHECK: Duration = Duration::from_secs(1);

/// A Redis URL with its password (userinfo or `pass=` query parameter) replaced by `***`. Anything that cannot
/// be parsed as a URL is not shown at all.
pub fn redact(url: &str) -> String {
    let Ok(mut u) = url::Url::parse(url) else {
        return "<unparseable redis url>".to_owned();
    };
    if u.password().is_some() && u.set_password(Some("***")).is_err() {
        return "<redis url>".to_owned();
    }
    if u.query().is_some() {
        let pairs: Vec<(String, String)> = u
            .query_pairs()
            .map(|(k, v)| {
                let secret = matches!(k.as_ref(), "pass" | "password");
                (
                    k.into_owned(),
                    if secret {
                        "***".to_owned()
                    } else {
                        v.into_owned()
                    },
                )
            })
            .collect();
        u.query_pairs_mut().clear().extend_pairs(pairs);
    }
    u.to_string()
}

/// The passwords named in `urls` (to scrub them from any text that came back from the client library).
fn secrets_of(urls: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for url in urls {
        if let Ok(u) = url::Url::parse(url) {
            if let Some(p) = u.password() {
                out.push(p.to_owned());
                if let Some(decoded) = percent_decode(p) {
                    out.push(decoded);
                }
            }
            for (k, v) in u.query_pairs() {
                if matches!(k.as_ref(), "pass" | "password") {
                    out.push(v.into_owned());
                }
            }
        }
    }
    out.retain(|s| !s.is_empty());
    out.sort_by_key(|s| std::cmp::Reverse(s.len()));
    out.dedup();
    out
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && let Some(v) = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// Replaces every secret in `text` with `***`.
fn scrub(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_owned();
    for s in secrets {
        if out.contains(s.as_str()) {
            out = out.replace(s.as_str(), "***");
        }
    }
    out
}

/// What a script answered: a value, or an error the server returned for this call alone.
pub type Reply = Result<Value, RedisError>;

enum Link {
    /// Not connected yet.
    None,
    Single(redis::Connection),
    Cluster(Box<redis::cluster::ClusterConnection>),
}

/// A connection to the crawl's Redis: one server, or a cluster (MOVED/ASK handled by the client).
pub struct Conn {
    link: Link,
    /// Retry through an outage (the store's connection); the lease thread's connection fails fast instead.
    retry: bool,
    /// How long a retrying request waits for Redis before it fails.
    max_outage: Duration,
    /// Where a commit waits on disk while Redis is unreachable.
    spool: Option<Spool>,
    /// The redacted URLs, for error texts.
    target: String,
    secrets: Vec<String>,
    settings: RedisSettings,
    /// The master switches of this process (shared by its connections).
    switches: Arc<Switches>,
    /// The master this link is connected to (sentinels), as `host:port`.
    master: Option<String>,
    /// The deadlines of a new link: connecting, and each reply.
    connect: Duration,
    response: Duration,
    /// `replicas_ack` was left out and decided from the topology when the connection was opened: it follows the
    /// topology (a master left without a replica by a failover has none to wait for).
    ack_from_topology: bool,
    /// Since when (last read) the topology has a master without a replica, while writes do not wait for one.
    no_replica_since: Option<Instant>,
    /// Since when WAITs fell short while the topology had a master without a replica (writes still wait).
    short_since: Option<Instant>,
    /// Requests sent over this connection (a pipeline counts once): what a read costs, in round trips.
    requests: u64,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn")
            .field("target", &self.target)
            .finish()
    }
}

impl Conn {
    pub fn open(settings: &RedisSettings) -> Result<Conn, FrontierError> {
        Conn::open_within(settings, CONNECT_TIMEOUT, RESPONSE_TIMEOUT)
    }

    /// [`open`](Self::open) with other deadlines for connecting and for each reply.
    pub fn open_within(
        settings: &RedisSettings,
        connect: Duration,
        response: Duration,
    ) -> Result<Conn, FrontierError> {
        let (target, secrets) = if settings.sentinels.is_empty() {
            (
                settings
                    .urls
                    .iter()
                    .map(|u| redact(u))
                    .collect::<Vec<_>>()
                    .join(","),
                secrets_of(&settings.urls),
            )
        } else {
            let mut secrets = secrets_of(&settings.sentinels);
            secrets.extend(topology::secrets(settings));
            secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
            secrets.dedup();
            (
                format!(
                    "master {:?} of sentinels {}",
                    settings.master,
                    settings
                        .sentinels
                        .iter()
                        .map(|u| redact(u))
                        .collect::<Vec<_>>()
                        .join(",")
                ),
                secrets,
            )
        };
        // A master that does not answer within a lease is as good as gone: with sentinels, the next request goes
        // to the master they name then.
        let response = if settings.sentinels.is_empty() {
            response
        } else {
            response.min(Duration::from_millis(
                settings
                    .lease_ms
                    .max(settings.replicas_ack_timeout_ms.saturating_add(1000)),
            ))
        };
        let mut conn = Conn {
            link: Link::None,
            retry: false,
            max_outage: MAX_OUTAGE,
            spool: None,
            target,
            secrets,
            settings: settings.clone(),
            switches: Arc::new(Switches::default()),
            master: None,
            connect,
            response,
            ack_from_topology: false,
            no_replica_since: None,
            short_since: None,
            requests: 0,
        };
        conn.link = conn.connect()?;
        if conn.settings.replicas_ack.is_none() {
            let ack = conn.replicas_in_topology().map_or(0, |n| u32::from(n > 0));
            tracing::info!(
                target_url = %conn.target,
                replicas_ack = ack,
                "replicas_ack decided from the topology"
            );
            conn.settings.replicas_ack = Some(ack);
            conn.ack_from_topology = true;
        }
        Ok(conn)
    }

    /// The replicas the topology has: a master's connected replicas, or on a cluster the fewest any master has
    /// (None when the server does not say).
    fn replicas_in_topology(&mut self) -> Option<u32> {
        match &mut self.link {
            Link::None => None,
            Link::Single(conn) => {
                let info: String = redis::cmd("INFO").arg("replication").query(conn).ok()?;
                info.lines()
                    .find_map(|l| l.strip_prefix("connected_slaves:"))
                    .and_then(|n| n.trim().parse().ok())
            }
            Link::Cluster(conn) => {
                let nodes: String = redis::cmd("CLUSTER")
                    .arg("NODES")
                    .query(conn.as_mut())
                    .ok()?;
                topology::cluster_min_replicas(&nodes)
            }
        }
    }

    /// A new link to the crawl's Redis (with sentinels: to the master they name now).
    fn connect(&mut self) -> Result<Link, FrontierError> {
        let fail = |e: RedisError| FrontierError::Redis {
            target: self.target.clone(),
            detail: scrub(&e.to_string(), &self.secrets),
        };
        let settings = &self.settings;
        if settings.cluster {
            let client =
                redis::cluster::ClusterClientBuilder::new(settings.urls.iter().map(String::as_str))
                    .connection_timeout(self.connect)
                    .response_timeout(self.response)
                    .build()
                    .map_err(fail)?;
            return Ok(Link::Cluster(Box::new(
                client.get_connection().map_err(fail)?,
            )));
        }
        let (client, master) = if settings.sentinels.is_empty() {
            let [url] = settings.urls.as_slice() else {
                return Err(FrontierError::Redis {
                    target: self.target.clone(),
                    detail: "exactly one URL is needed when cluster = false".into(),
                });
            };
            (redis::Client::open(url.as_str()).map_err(fail)?, None)
        } else {
            let (client, addr) = topology::master_client(settings).map_err(fail)?;
            (client, Some(addr))
        };
        let conn = client
            .get_connection_with_timeout(self.connect)
            .map_err(fail)?;
        conn.set_read_timeout(Some(self.response)).map_err(fail)?;
        conn.set_write_timeout(Some(self.response)).map_err(fail)?;
        if let Some(addr) = &master {
            self.switches.connected(addr);
        }
        self.master = master;
        Ok(Link::Single(conn))
    }

    /// Replaces the link with a new one when one can be made (the old one may be broken for good).
    fn relink(&mut self) {
        if let Ok(link) = self.connect() {
            self.link = link;
        }
    }

    /// With sentinels: when they name another master than the one this link is connected to (a switch-over, or a
    /// failover while this link still reaches the old master), connects to theirs. Nothing happens when no
    /// sentinel answers.
    /// On a cluster: notes which master serves each slot range now, which logs a failover once.
    pub fn follow_master(&mut self) {
        if let Link::Cluster(conn) = &mut self.link {
            if let Ok(nodes) = redis::cmd("CLUSTER")
                .arg("NODES")
                .query::<String>(conn.as_mut())
            {
                self.switches
                    .cluster_masters(topology::cluster_masters(&nodes));
            }
            return;
        }
        if self.settings.sentinels.is_empty() {
            return;
        }
        let within = self.connect.min(Duration::from_millis(500));
        if let Some(named) = topology::named_master(&self.settings, within)
            && self.master.as_deref() != Some(named.as_str())
        {
            self.relink();
        }
    }

    /// The master switches this process went through.
    pub fn switches(&self) -> &Arc<Switches> {
        &self.switches
    }

    /// A new connection to the same place (failing fast).
    pub fn reopen(&self) -> Result<Conn, FrontierError> {
        let mut c = Conn {
            link: Link::None,
            retry: false,
            max_outage: MAX_OUTAGE,
            spool: None,
            target: self.target.clone(),
            secrets: self.secrets.clone(),
            settings: self.settings.clone(),
            switches: self.switches.clone(),
            master: None,
            connect: self.connect,
            response: self.response,
            ack_from_topology: self.ack_from_topology,
            no_replica_since: None,
            short_since: None,
            requests: 0,
        };
        c.link = c.connect()?;
        Ok(c)
    }

    /// Makes every request of this connection ride out an outage: a broken connection, or a server that answers
    /// `LOADING` (reading its append-only file), `TRYAGAIN`, `CLUSTERDOWN` or `MASTERDOWN`, is retried on a fresh
    /// connection with capped backoff for up to [`MAX_OUTAGE`]. Every script is idempotent, so a request that
    /// reached Redis before the connection broke may run again.
    pub fn retrying(mut self, max_outage: Duration) -> Conn {
        self.retry = true;
        self.max_outage = max_outage;
        self
    }

    /// Turns the outage retries on or off (reads fail fast and are asked again later; commits wait); returns the
    /// previous setting.
    pub fn set_retry(&mut self, retry: bool) -> bool {
        std::mem::replace(&mut self.retry, retry)
    }

    /// Keeps the commits that meet an outage in `dir` (see [`run_spooled`](Self::run_spooled)).
    pub fn spool_in(&mut self, dir: &std::path::Path) {
        self.spool = Some(Spool {
            dir: dir.to_path_buf(),
        });
    }

    /// The spool, when there is one.
    pub fn spool(&self) -> Option<&Spool> {
        self.spool.as_ref()
    }

    /// Like [`run`](Self::run), for a commit: when Redis is unreachable, the calls are first written to the spool
    /// and fsynced, so that a process killed during the outage replays them at its next start
    /// ([`Spool::replay`]); the file goes once the calls went through.
    pub fn run_spooled(&mut self, calls: &[Call]) -> Result<Vec<Reply>, FrontierError> {
        self.run_inner(calls, true)
    }

    /// The error that ends the crawl once Redis stayed out of reach for `max_outage`.
    pub fn unreachable(&self, lasted: Duration) -> FrontierError {
        FrontierError::Unreachable {
            target: self.target.clone(),
            for_ms: u64::try_from(lasted.as_millis()).unwrap_or(u64::MAX),
            max_ms: u64::try_from(self.max_outage.as_millis()).unwrap_or(u64::MAX),
        }
    }

    /// How long requests of this process have been failing, when they are past `max_outage`.
    pub fn past_max_outage(&self) -> Option<Duration> {
        self.switches
            .failing_for()
            .filter(|d| *d >= self.max_outage)
    }

    /// The redacted URLs.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The error for a failure of the connection or of one call, secrets scrubbed. A shard script that refused to
    /// touch a shard whose data is gone answers `LOST ...`: that becomes [`FrontierError::Lost`].
    pub fn error(&self, e: &RedisError) -> FrontierError {
        if e.code() == Some("LOST") {
            return FrontierError::Lost(scrub(e.detail().unwrap_or("a shard"), &self.secrets));
        }
        FrontierError::Redis {
            target: self.target.clone(),
            detail: scrub(&e.to_string(), &self.secrets),
        }
    }

    /// Runs one call; a server error is an error.
    pub fn call(&mut self, call: &Call) -> Result<Value, FrontierError> {
        let mut replies = self.run(std::slice::from_ref(call))?;
        match replies.pop() {
            Some(Ok(v)) => Ok(v),
            Some(Err(e)) => Err(self.error(&e)),
            None => Err(FrontierError::Redis {
                target: self.target.clone(),
                detail: "no reply".into(),
            }),
        }
    }

    /// Runs calls, in order: one pipeline on a single server, one request per call on a cluster. A failure of the
    /// connection fails them all (after the outage retries of a [`retrying`](Self::retrying) connection); a server
    /// error fails only its call.
    pub fn run(&mut self, calls: &[Call]) -> Result<Vec<Reply>, FrontierError> {
        self.run_inner(calls, false)
    }

    fn run_inner(&mut self, calls: &[Call], spooled: bool) -> Result<Vec<Reply>, FrontierError> {
        if !self.retry {
            let r = self.run_once(calls);
            match &r {
                Err(FrontierError::Redis { .. }) => {
                    self.switches.failed(Instant::now());
                    // The connection may be broken for good: the next request goes over a fresh one.
                    self.relink();
                }
                Ok(_) => self.switches.ok(),
                Err(_) => {}
            }
            return r;
        }
        let mut outage = Outage::default();
        let mut kept: Option<std::path::PathBuf> = None;
        let mut delay = Duration::from_millis(50);
        loop {
            let failure = match self.run_once(calls) {
                Ok(replies) => match replies
                    .iter()
                    .find_map(|r| r.as_ref().err().filter(|e| busy(e)))
                {
                    // A commit counts once the replicas asked for hold it (see `replicated`).
                    None => match if spooled {
                        self.until_replicated()
                    } else {
                        Ok(())
                    } {
                        Ok(()) => {
                            self.switches.ok();
                            if let Some(r) = outage.succeeded(std::time::Instant::now()) {
                                tracing::info!(
                                    target_url = %self.target,
                                    outage_ms = r.lasted.as_millis() as u64,
                                    failures = r.failures,
                                    "redis reachable again"
                                );
                            }
                            if let Some(path) = kept
                                && let Err(e) = std::fs::remove_file(&path)
                            {
                                tracing::warn!(path = %path.display(), error = %e, "spooled commit not removed");
                            }
                            return Ok(replies);
                        }
                        Err(e) => e,
                    },
                    Some(e) => self.error(e),
                },
                Err(e @ FrontierError::Lost(_)) => return Err(e),
                Err(e) => e,
            };
            let now = std::time::Instant::now();
            self.switches.failed(now);
            match outage.failed(now) {
                Some(Report::First) => tracing::warn!(
                    target_url = %self.target,
                    error = %failure,
                    "redis unreachable; retrying until it is back"
                ),
                Some(Report::Still {
                    for_how_long,
                    failures,
                }) => tracing::warn!(
                    target_url = %self.target,
                    error = %failure,
                    unreachable_s = for_how_long.as_secs(),
                    failures,
                    "redis still unreachable; retrying until it is back"
                ),
                None => {}
            }
            let since = outage.since().unwrap_or(now);
            if spooled
                && kept.is_none()
                && let Some(spool) = &self.spool
            {
                match spool.write(calls) {
                    Ok(path) => {
                        tracing::warn!(path = %path.display(), calls = calls.len(), "commit spooled until redis is back");
                        kept = Some(path);
                    }
                    Err(e) => tracing::error!(error = %e, "the commit could not be spooled"),
                }
            }
            // The outage counts from the first failure of any request of the process (a lease round meets it
            // within a third of a lease), so that every process of the crawl gives up alike.
            let lasted = since
                .elapsed()
                .max(self.switches.failing_for().unwrap_or_default());
            if lasted >= self.max_outage {
                tracing::debug!(error = %failure, "last failure before giving up");
                return Err(self.unreachable(lasted));
            }
            std::thread::sleep(delay);
            delay = (delay * 2).min(Duration::from_secs(2));
            // With sentinels the next attempt goes to the master they name now.
            self.relink();
        }
    }

    /// Asks [`Self::replicated`] again until the replicas hold the writes (they are on the master already: only
    /// the WAIT is repeated), for up to the outage limit; an error when the link broke or the sentinels name
    /// another master meanwhile (the caller runs the calls again there), or the limit passed. On a cluster the
    /// first WAIT that falls short is an error: the client may send the next WAIT over other connections (to the
    /// master promoted meanwhile, which never saw the writes a stopped master took before it was demoted), so the
    /// calls run again instead.
    fn until_replicated(&mut self) -> Result<(), FrontierError> {
        let start = Instant::now();
        let mut told = false;
        loop {
            let e = match self.replicated() {
                Ok(()) => return Ok(()),
                Err(e @ FrontierError::Replicas { .. }) if !self.is_cluster() => e,
                Err(e) => return Err(e),
            };
            if !told {
                told = true;
                tracing::warn!(target_url = %self.target, error = %e, "commit not yet on enough replicas; it waits");
            }
            let before = self.master.clone();
            self.follow_master();
            if self.master != before || start.elapsed() >= self.max_outage {
                return Err(e);
            }
        }
    }

    /// How many replicas must hold a write before it counts (decided when the connection was opened).
    pub fn replicas_ack(&self) -> u32 {
        self.settings.replicas_ack.unwrap_or(0)
    }

    /// True on a Redis Cluster link.
    pub fn is_cluster(&self) -> bool {
        matches!(self.link, Link::Cluster(_))
    }

    /// Waits (Redis `WAIT`) until `replicas_ack` replicas hold every write this link made; [`FrontierError::Replicas`]
    /// when fewer did within `replicas_ack_timeout_ms`. Nothing to wait for with `replicas_ack = 0`. On a cluster
    /// the client sends the WAIT to every master over the connection it writes to that master with, and answers
    /// the fewest replicas any of them counted.
    ///
    /// With `replicas_ack` decided from the topology, a WAIT that fell short reads the topology again: when a
    /// master has had no replica for [`TOPOLOGY_RECHECK`] (its own was promoted in place of a master that failed),
    /// there is no replica a failover could promote with the write missing, so the write counts; the topology is
    /// read again every [`TOPOLOGY_RECHECK`] and writes wait for a replica again once every master has one.
    pub fn replicated(&mut self) -> Result<(), FrontierError> {
        let want = self.replicas_ack();
        if want == 0 {
            return Ok(());
        }
        if let Some(since) = self.no_replica_since {
            if since.elapsed() < TOPOLOGY_RECHECK {
                return Ok(());
            }
            if self.replicas_in_topology() == Some(0) {
                self.no_replica_since = Some(Instant::now());
                return Ok(());
            }
            self.no_replica_since = None;
            tracing::info!(
                target_url = %self.target,
                replicas_ack = want,
                "every master has a replica again; writes wait for it"
            );
        }
        self.requests += 1;
        let mut wait = redis::cmd("WAIT");
        wait.arg(want).arg(self.settings.replicas_ack_timeout_ms);
        let got: Result<i64, RedisError> = match &mut self.link {
            Link::None => Err(RedisError::from((ErrorKind::Io, "not connected"))),
            Link::Single(conn) => wait.query(conn),
            Link::Cluster(conn) => wait.query(conn.as_mut()),
        };
        let got = got.map_err(|e| FrontierError::Redis {
            target: self.target.clone(),
            detail: scrub(&e.to_string(), &self.secrets),
        })?;
        if got >= i64::from(want) {
            self.short_since = None;
            return Ok(());
        }
        if self.ack_from_topology && self.replicas_in_topology() == Some(0) {
            let since = *self.short_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= TOPOLOGY_RECHECK {
                self.short_since = None;
                self.no_replica_since = Some(Instant::now());
                tracing::warn!(
                    target_url = %self.target,
                    acked = got,
                    "a master has no replica now; writes do not wait for one until it has"
                );
                return Ok(());
            }
        } else {
            self.short_since = None;
        }
        Err(FrontierError::Replicas {
            target: self.target.clone(),
            acked: u32::try_from(got.max(0)).unwrap_or(0),
            wanted: want,
            within_ms: self.settings.replicas_ack_timeout_ms,
        })
    }

    /// Requests sent over this connection so far (a pipeline on one server counts once, a call on a cluster once).
    pub fn requests(&self) -> u64 {
        self.requests
    }

    fn run_once(&mut self, calls: &[Call]) -> Result<Vec<Reply>, FrontierError> {
        if calls.is_empty() {
            return Ok(Vec::new());
        }
        self.requests += match self.link {
            Link::Cluster(_) => calls.len() as u64,
            _ => 1,
        };
        let mut replies = match &mut self.link {
            Link::None => Err(RedisError::from((ErrorKind::Io, "not connected"))),
            Link::Single(conn) => {
                let mut pipe = redis::pipe();
                pipe.ignore_errors();
                for c in calls {
                    pipe.add_command(c.cmd());
                }
                let r: Result<Vec<Reply>, RedisError> = pipe.query(conn);
                r
            }
            Link::Cluster(conn) => {
                let mut out = Vec::with_capacity(calls.len());
                for c in calls {
                    match c.cmd().query::<Value>(conn.as_mut()) {
                        Err(e) if !is_server_error(&e) => {
                            out.clear();
                            return Err(self.error(&e));
                        }
                        r => out.push(r),
                    }
                }
                Ok(out)
            }
        }
        .map_err(|e| self.error(&e))?;
        // A server that lost its script cache (restarted, SCRIPT FLUSH) answers NOSCRIPT without running the
        // call: load the script and run that call again.
        for (i, c) in calls.iter().enumerate() {
            let noscript = matches!(&replies[i], Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript));
            if noscript {
                let again = match &mut self.link {
                    Link::None => Err(RedisError::from((ErrorKind::Io, "not connected"))),
                    Link::Single(conn) => c
                        .script
                        .load(conn)
                        .and_then(|_| c.cmd().query::<Value>(conn)),
                    Link::Cluster(conn) => c
                        .script
                        .load(conn.as_mut())
                        .and_then(|_| c.cmd().query::<Value>(conn.as_mut())),
                };
                if let Err(e) = &again
                    && !is_server_error(e)
                {
                    return Err(self.error(e));
                }
                replies[i] = again;
            }
        }
        Ok(replies)
    }

    /// Runs a plain command (one key's slot on a cluster, or a command the cluster client routes itself).
    pub fn cmd(&mut self, cmd: &redis::Cmd) -> Result<Value, FrontierError> {
        self.requests += 1;
        let r = match &mut self.link {
            Link::None => Err(RedisError::from((ErrorKind::Io, "not connected"))),
            Link::Single(conn) => cmd.query::<Value>(conn),
            Link::Cluster(conn) => cmd.query::<Value>(conn.as_mut()),
        };
        r.map_err(|e| self.error(&e))
    }
}

/// A server that cannot answer now but will (loading its data, a cluster reconfiguring).
fn busy(e: &RedisError) -> bool {
    matches!(
        e.code(),
        Some("LOADING" | "TRYAGAIN" | "CLUSTERDOWN" | "MASTERDOWN" | "BUSY")
    )
}

fn is_server_error(e: &RedisError) -> bool {
    matches!(e.kind(), ErrorKind::Server(_) | ErrorKind::Extension)
}

/// Reading script replies.
pub mod reply {
    use super::Value;
    use crawl_core::frontier::FrontierError;

    fn bad(what: &str, v: &Value) -> FrontierError {
        FrontierError::Store(format!("unexpected reply from redis for {what}: {v:?}"))
    }

    pub fn int(v: &Value, what: &str) -> Result<i64, FrontierError> {
        match v {
            Value::Int(i) => Ok(*i),
            Value::BulkString(b) => std::str::from_utf8(b)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| bad(what, v)),
            Value::SimpleString(s) => s.parse().map_err(|_| bad(what, v)),
            _ => Err(bad(what, v)),
        }
    }

    pub fn uint(v: &Value, what: &str) -> Result<u64, FrontierError> {
        u64::try_from(int(v, what)?.max(0)).map_err(|_| bad(what, v))
    }

    pub fn bytes(v: Value, what: &str) -> Result<Vec<u8>, FrontierError> {
        match v {
            Value::BulkString(b) => Ok(b),
            Value::SimpleString(s) => Ok(s.into_bytes()),
            Value::Int(i) => Ok(i.to_string().into_bytes()),
            other => Err(bad(what, &other)),
        }
    }

    pub fn string(v: Value, what: &str) -> Result<String, FrontierError> {
        String::from_utf8(bytes(v, what)?)
            .map_err(|_| FrontierError::Store(format!("{what}: not utf-8")))
    }

    pub fn array(v: Value, what: &str) -> Result<Vec<Value>, FrontierError> {
        match v {
            Value::Array(a) | Value::Set(a) => Ok(a),
            Value::Nil => Ok(Vec::new()),
            other => Err(bad(what, &other)),
        }
    }
}

/// Replays the commits an earlier run of this process left in the spool (it was stopped during an outage), oldest
/// first, then removes them. A replayed commit whose shard has another owner now is refused (fenced) and dropped:
/// that owner redoes the work.
pub(super) fn replay_spool(conn: &mut Conn, dir: &std::path::Path) -> Result<(), FrontierError> {
    let Some(spool) = conn.spool().cloned() else {
        return Ok(());
    };
    let io = |e: std::io::Error| FrontierError::Io {
        path: dir.display().to_string(),
        source: e,
    };
    spool.remove_partial().map_err(io)?;
    for path in spool.pending().map_err(io)? {
        match Spool::read(&path).map_err(io)? {
            Some(calls) => {
                let replies = conn.run(&calls)?;
                if let Some(e) = replies.iter().find_map(|r| r.as_ref().err()) {
                    return Err(conn.error(e));
                }
                let refused = replies
                    .iter()
                    .filter(|r| {
                        matches!(r, Ok(Value::Array(a)) if a.len() == 1 && reply::int(&a[0], "apply").is_ok_and(|n| n == 0))
                    })
                    .count();
                tracing::info!(path = %path.display(), calls = calls.len(), refused, "spooled commit replayed");
            }
            None => tracing::warn!(
                path = %path.display(),
                "incomplete spooled commit dropped (it was never sent)"
            ),
        }
        std::fs::remove_file(&path).map_err(io)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_hides_passwords_in_userinfo_and_query() {
        assert_eq!(
            redact("redis://:s3cret@127.0.0.1:6379/2"),
            "redis://:***@127.0.0.1:6379/2"
        );
        assert_eq!(
            redact("redis://user:s3cret@host:1/0"),
            "redis://user:***@host:1/0"
        );
        let unix = redact("redis+unix:///tmp/r.sock?db=1&pass=s3cret");
        assert!(!unix.contains("s3cret"), "{unix}");
        assert!(unix.contains("db=1"), "{unix}");
        assert_eq!(redact("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
        assert!(!redact("not a url :s3cret@").contains("s3cret"));
    }

    #[test]
    fn scrub_removes_every_secret_form() {
        let secrets = secrets_of(&["redis://:p%40ss@h:1".to_owned()]);
        assert!(secrets.contains(&"p@ss".to_owned()));
        assert_eq!(
            scrub("auth p@ss failed (p%40ss)", &secrets),
            "auth *** failed (***)"
        );
    }
}
