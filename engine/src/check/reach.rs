//! Whether the servers a config names can be reached, tried without side effects: the Redis frontier as a run
//! connects to it ([`redis`]), and a TCP connection to the OTLP collector, each proxy chain's first hop and each
//! DoH endpoint ([`servers`], [`unreachable`]). Every address is shown with its userinfo and passwords masked.

use crawl_core::config::{Config, FrontierBackend, hide_userinfo};
use crawl_store_redis::CrawlThere;
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long the Redis probe may take to connect, and each of its replies.
const REDIS_WITHIN: Duration = Duration::from_secs(3);
/// How long the TCP probes may take, all together (they run side by side).
const CONNECT_BUDGET: Duration = Duration::from_secs(3);

/// A server to connect to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// The config key that names it.
    pub key: String,
    /// How it is shown: secrets masked.
    pub shown: String,
    pub host: String,
    pub port: u16,
    /// An address given in the config for it (a DoH endpoint's `bootstrap`).
    pub at: Option<IpAddr>,
    /// What the run does while it cannot be reached.
    pub meanwhile: &'static str,
}

/// What `--check` learns from Redis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedisFinding {
    Reached,
    /// The config disagrees with the crawl there: a run would be refused.
    Refused(String),
    /// Out of reach: a run would fail at start.
    Failed(String),
}

/// Connects to the crawl's Redis as a run would (auth, TLS, cluster as configured) within a short deadline; None
/// for the embedded frontier.
pub fn redis(config: &Config) -> Option<RedisFinding> {
    if config.frontier.backend != FrontierBackend::Redis {
        return None;
    }
    let settings = crawl_actors::tree::redis_settings(config);
    let r = &config.frontier.redis;
    Some(match crawl_store_redis::probe(&settings, REDIS_WITHIN) {
        Ok(CrawlThere::Made { shards: Some(made) }) if made != r.shards => {
            RedisFinding::Refused(format!(
                "frontier.redis.shards: the crawl {:?} in Redis was made with {made} shards, but this config says {} \
             (every process of a crawl uses the same count)",
                r.crawl, r.shards
            ))
        }
        Ok(_) => RedisFinding::Reached,
        Err(e) => RedisFinding::Failed(format!(
            "frontier.redis.urls: {e} (a run would stop at start; the same command starts it once Redis can be \
             reached)"
        )),
    })
}

/// The servers the config names that a TCP connection can try without side effects.
pub fn servers(config: &Config) -> Vec<Server> {
    let mut out = Vec::new();
    if let Some(u) = &config.observability.otlp_endpoint
        && let (Some(host), Some(port)) = (u.host_str(), u.port_or_known_default())
    {
        out.push(Server {
            key: "observability.otlp_endpoint".into(),
            shown: hide_userinfo(u.as_str()).into_owned(),
            host: host.to_owned(),
            port,
            at: None,
            meanwhile: "spans are dropped while it cannot be reached",
        });
    }
    for (name, chain) in &config.proxy.chains {
        if let Some(hop) = chain.hops.first() {
            out.push(Server {
                key: format!("proxy.chains.{name}"),
                shown: format!("its first hop {hop}"),
                host: hop.host.clone(),
                port: hop.port,
                at: None,
                meanwhile: "connections through the chain fail while it cannot be reached",
            });
        }
    }
    for doh in &config.resolver.doh {
        if let (Some(host), Some(port)) = (doh.url.host_str(), doh.url.port_or_known_default()) {
            out.push(Server {
                key: "resolver.doh".into(),
                shown: hide_userinfo(doh.url.as_str()).into_owned(),
                host: host.to_owned(),
                port,
                at: doh.bootstrap,
                meanwhile: "lookups go elsewhere as resolver.mode allows while it cannot be reached",
            });
        }
    }
    out
}

/// Tries a TCP connection to every server at once, within a shared budget; one warning for each that could not
/// be reached, with the cause. Names the config fixes (`resolver.hosts`) are used as a run uses them.
pub fn unreachable(config: &Config, servers: Vec<Server>) -> Vec<String> {
    let deadline = Instant::now() + CONNECT_BUDGET;
    let (tx, rx) = mpsc::channel();
    let n = servers.len();
    for (i, s) in servers.iter().cloned().enumerate() {
        let tx = tx.clone();
        let fixed = config
            .resolver
            .hosts
            .get(&s.host.to_ascii_lowercase())
            .cloned();
        std::thread::spawn(move || {
            let _ = tx.send((i, connect(&s, fixed, deadline)));
        });
    }
    drop(tx);
    let late = format!("no connection within {} s", CONNECT_BUDGET.as_secs());
    let mut causes: Vec<Option<String>> = vec![Some(late); n];
    for _ in 0..n {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((i, r)) => causes[i] = r.err(),
            Err(_) => break,
        }
    }
    servers
        .iter()
        .zip(causes)
        .filter_map(|(s, cause)| {
            cause.map(|c| {
                format!(
                    "{}: cannot connect to {}: {c}; {}",
                    s.key, s.shown, s.meanwhile
                )
            })
        })
        .collect()
}

/// Connects to one of the server's addresses (then closes the connection at once).
fn connect(s: &Server, fixed: Option<Vec<IpAddr>>, deadline: Instant) -> Result<(), String> {
    let bare = s.host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> = if let Some(ip) = s.at.or_else(|| bare.parse().ok()) {
        vec![SocketAddr::new(ip, s.port)]
    } else if let Some(ips) = fixed {
        ips.into_iter()
            .map(|ip| SocketAddr::new(ip, s.port))
            .collect()
    } else {
        (bare, s.port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {bare}: {e}"))?
            .collect()
    };
    let mut last = format!("{bare} has no address");
    for a in addrs {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        match TcpStream::connect_timeout(&a, left) {
            Ok(_) => return Ok(()),
            Err(e) => last = format!("{a}: {e}"),
        }
    }
    Err(last)
}
