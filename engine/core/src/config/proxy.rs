//! `[proxy]` configuration types (docs/PROXY.md): SOCKS5 chains, host rules, the selection
//! policy, per-phase deadlines and breaker settings. Credentials are kept in [`Secret`] and every
//! textual form of a hop (`Display`, `Debug`, error messages) hides them as
//! `socks5://***@host:port`.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

/// The pseudo-chain name meaning "connect directly, no proxy".
pub const DIRECT: &str = "direct";

/// A credential. `Debug` and `Display` print `***`; [`Secret::expose`] gives the value.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret value; only for sending it to the proxy.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// One hop of a chain, from `socks5://[user:pass@]host:port` (credentials percent-decoded).
///
/// `Display` is `socks5://***@host:port` (or `socks5://host:port` without credentials) and
/// `Debug` is `ProxyHop(<that>)`, so neither ever shows the user name or password.
#[derive(Clone, PartialEq, Eq)]
pub struct ProxyHop {
    /// Always `socks5`.
    pub scheme: String,
    /// Lowercase domain name, IPv4 address, or IPv6 address without brackets.
    pub host: String,
    pub port: u16,
    /// RFC 1929 user name; present exactly when `password` is.
    pub username: Option<String>,
    pub password: Option<Secret>,
}

impl ProxyHop {
    /// True when the hop authenticates with user name and password (RFC 1929).
    pub fn has_credentials(&self) -> bool {
        self.username.is_some() || self.password.is_some()
    }

    /// `host:port`, with IPv6 hosts in brackets.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

impl fmt::Display for ProxyHop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let creds = if self.has_credentials() { "***@" } else { "" };
        write!(f, "{}://{creds}{}", self.scheme, self.authority())
    }
}

impl fmt::Debug for ProxyHop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ProxyHop")
            .field(&format_args!("{self}"))
            .finish()
    }
}

/// Where the target's name is resolved (`proxy.chains.<name>.resolve`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResolveAt {
    /// The last hop resolves it (the name is sent in the CONNECT request, "socks5h").
    #[default]
    Remote,
    /// Our resolver first; the CONNECT request carries the address.
    Local,
}

impl ResolveAt {
    /// The name used in the config file.
    pub fn as_str(self) -> &'static str {
        match self {
            ResolveAt::Remote => "remote",
            ResolveAt::Local => "local",
        }
    }
}

impl fmt::Display for ResolveAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One `[proxy.chains.<name>]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainConfig {
    /// In connection order: TCP to the first, CONNECT through each to the next (never empty).
    pub hops: Vec<ProxyHop>,
    pub resolve: ResolveAt,
}

/// How a chain is picked among a host's candidates (`proxy.select`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SelectPolicy {
    /// Healthy candidates in turn.
    #[default]
    RoundRobin,
    /// The healthy candidate with the fewest recorded proxy faults.
    LeastFailures,
    /// The same chain for a host while it stays healthy.
    Sticky,
}

impl SelectPolicy {
    /// The name used in the config file.
    pub fn as_str(self) -> &'static str {
        match self {
            SelectPolicy::RoundRobin => "round-robin",
            SelectPolicy::LeastFailures => "least-failures",
            SelectPolicy::Sticky => "sticky",
        }
    }
}

impl fmt::Display for SelectPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One `[[proxy.rules]]` table: hosts matching any pattern use the listed chains.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyRule {
    /// Lowercase glob patterns (`*` = any run of characters).
    pub hosts: Vec<String>,
    /// Chain names or `direct` (key `use`), never empty.
    pub use_: Vec<String>,
}

/// `[proxy]`: proxy chains (docs/PROXY.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyConfig {
    /// Chains (or `direct`) for hosts no rule matches; never empty.
    pub default: Vec<String>,
    pub select: SelectPolicy,
    /// When no healthy chain is left for a host, connect directly instead of failing.
    pub fallback_direct: bool,
    /// TCP connect to the first hop (`connect_timeout_ms`).
    pub connect_timeout: Duration,
    /// Method-negotiation reply, per hop (`greeting_timeout_ms`).
    pub greeting_timeout: Duration,
    /// RFC 1929 reply, per hop (`auth_timeout_ms`).
    pub auth_timeout: Duration,
    /// CONNECT reply, per hop (`connect_reply_timeout_ms`).
    pub connect_reply_timeout: Duration,
    /// The whole chain, at least each phase timeout (`chain_timeout_ms`).
    pub chain_timeout: Duration,
    /// Proxy faults in a row that open a breaker (>= 1).
    pub breaker_failures: u32,
    /// How long an open breaker stays open before one probe (`breaker_cooldown_ms`).
    pub breaker_cooldown: Duration,
    /// Named chains.
    pub chains: BTreeMap<String, ChainConfig>,
    /// Host rules, first match wins.
    pub rules: Vec<ProxyRule>,
}

impl Default for ProxyConfig {
    fn default() -> Self {
        Self {
            default: vec![DIRECT.to_owned()],
            select: SelectPolicy::RoundRobin,
            fallback_direct: false,
            connect_timeout: Duration::from_millis(5_000),
            greeting_timeout: Duration::from_millis(3_000),
            auth_timeout: Duration::from_millis(3_000),
            connect_reply_timeout: Duration::from_millis(10_000),
            chain_timeout: Duration::from_millis(20_000),
            breaker_failures: 3,
            breaker_cooldown: Duration::from_millis(30_000),
            chains: BTreeMap::new(),
            rules: Vec::new(),
        }
    }
}

impl ProxyConfig {
    /// True when some host may be sent through a chain (any chain is declared).
    pub fn enabled(&self) -> bool {
        !self.chains.is_empty()
    }
}

/// Hides the user-info of a URL-like text: everything before the last `@` becomes `***`,
/// keeping a leading `scheme://`. Texts without `@` are returned unchanged.
pub fn redact_credentials(s: &str) -> String {
    let Some(at) = s.rfind('@') else {
        return s.to_owned();
    };
    let head = &s[..at];
    let tail = &s[at + 1..];
    let scheme = head
        .find("://")
        .map(|i| &head[..i])
        .filter(|sc| is_scheme(sc));
    match scheme {
        Some(sc) => format!("{sc}://***@{tail}"),
        None => format!("***@{tail}"),
    }
}

/// A URL scheme: a letter, then letters, digits, `+`, `-` or `.`.
pub(super) fn is_scheme(s: &str) -> bool {
    let mut bytes = s.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic())
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}
