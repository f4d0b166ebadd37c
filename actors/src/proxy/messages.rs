//! Messages the proxy-chain actor handles.

use super::hop::ProxyStats;
use super::socks::ChainStream;
use actix::Message;

/// Open a connection to `host:port` for the HTTP connector (command). `tried` lists the chains that already failed
/// for this connection, so a retry goes to another chain.
#[derive(Message, Debug, Clone)]
#[rtype(result = "Result<Opened, ProxyFailure>")]
pub struct OpenChain {
    pub host: String,
    pub port: u16,
    pub tried: Vec<String>,
    /// The trace of the URL job whose connection this is; the actor adds a `proxy.connect` span to it.
    pub trace: crawl_observability::trace::TraceCtx,
}

/// A connection to use.
pub enum Opened {
    /// Connect directly: the host's route is direct, or no chain is healthy and `fallback_direct` is on.
    Direct { fallback: bool },
    /// The tunnel through `chain`.
    Chain { chain: String, stream: ChainStream },
}

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Opened::Direct { fallback } => write!(f, "Direct {{ fallback: {fallback} }}"),
            Opened::Chain { chain, .. } => write!(f, "Chain {{ chain: {chain} }}"),
        }
    }
}

/// Why no connection was opened (never contains credentials).
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProxyFailure {
    /// The chain failed (a proxy fault); another chain may be tried.
    #[error("proxy chain {chain} failed: {detail}")]
    Fault { chain: String, detail: String },
    /// The chain worked but the target could not be reached (SOCKS reply 03-06): recorded on the URL.
    #[error("target unreachable through chain {chain}: {detail}")]
    Target { chain: String, detail: String },
    /// No healthy chain is left and direct connections are not allowed.
    #[error("no healthy proxy chain for {host} (tried: {tried}) and fallback_direct is off")]
    NoChain { host: String, tried: String },
    /// The proxy-chain actor panicked on this connection (it is restarted).
    #[error("proxy-chain actor panicked: {detail}")]
    Panicked { detail: String },
    /// The SSRF guard refused an address the actor would have handed to the chain (a hop given by IP or resolved
    /// here, or a target resolved here): nothing was dialed. Recorded `private_network`.
    #[error("{host} is at non-public address {addr}")]
    Refused {
        host: String,
        addr: std::net::IpAddr,
    },
}

/// Read the counters.
#[derive(Message)]
#[rtype(result = "ProxyStats")]
pub struct GetProxyStats;

/// Apply a new `[proxy]` config (command, from a config reload; the config is validated already).
///
/// Rules, chains, the selection policy, deadlines, breaker settings and `fallback_direct` change at once. A chain whose
/// name and hops are unchanged keeps its breakers and counters; a removed chain is dropped (its breaker gauge goes to
/// 0), a new or changed one starts closed. Connections already open keep working; attempts still running settle into
/// their chain only if it is unchanged. A later restart by the actix `Supervisor` keeps the new config.
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct Reconfigure {
    pub config: crawl_core::config::ProxyConfig,
}
