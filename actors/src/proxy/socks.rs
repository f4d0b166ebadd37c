//! Opening a SOCKS5 chain (RFC 1928, RFC 1929 user/pass auth) with tokio-socks, hop by hop, under per-phase
//! deadlines, and classifying what went wrong (see docs/PROXY.md).
//!
//! [`open_chain`] TCP-connects to hop 1, CONNECTs through it to hop 2, …, then CONNECTs to the [`Target`]. Every
//! handshake runs on a `PhaseTimer` (module `socks_phase.rs`) so a hang reports its phase. Failures come back as
//! [`ChainError`]: the hop at fault and whether it is a proxy fault (counts against the hop) or a target fault
//! (recorded on the URL only). Credentials never appear in any `Display`/`Debug` output or error.

use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::client::legacy::connect::{Connected, Connection};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_socks::tcp::Socks5Stream;
use tokio_socks::{IntoTargetAddr, TargetAddr};

mod phase;

use phase::{PhaseTimeout, PhaseTimer};

/// Longest user name, password or domain name SOCKS5 can carry (one length byte).
const MAX_FIELD: usize = 255;

/// One SOCKS5 hop: where it is and, optionally, its RFC 1929 credentials. Prints as `socks5://***@host:port`.
#[derive(Clone, PartialEq, Eq)]
pub struct HopSpec {
    /// an IP literal (IPv6 without brackets) or a host name
    pub host: String,
    pub port: u16,
    /// (user, password), percent-decoded
    pub auth: Option<(String, String)>,
}

impl HopSpec {
    /// `host:port`, with brackets around an IPv6 literal.
    fn host_port(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// Where to CONNECT through the previous hop to reach this one.
    fn as_target(&self) -> Result<TargetAddr<'static>, AddrError> {
        target_addr(&self.host, self.port)
    }
}

impl fmt::Display for HopSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let creds = if self.auth.is_some() { "***@" } else { "" };
        write!(f, "socks5://{creds}{}", self.host_port())
    }
}

impl fmt::Debug for HopSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Why a hop URL did not parse. Never contains any part of the input (it may hold a password).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HopParseError {
    #[error("hop must start with socks5://")]
    BadScheme,
    #[error("hop must not have a path, query or fragment")]
    HasPath,
    #[error("hop has no host")]
    MissingHost,
    #[error("hop host is not a valid name or IP address")]
    BadHost,
    #[error("hop has no port")]
    MissingPort,
    #[error("hop port is not a number in 1..=65535")]
    BadPort,
    #[error("hop credentials need both user and password (user:pass@)")]
    MissingPassword,
    #[error("hop user or password is empty or longer than 255 bytes")]
    BadCredentialLength,
    #[error("hop user or password has bad percent-encoding or is not utf-8")]
    BadPercentEncoding,
}

/// Parses `socks5://[user:pass@]host:port` (user and password percent-decoded; IPv6 as `[::1]`).
pub fn parse_hop(s: &str) -> Result<HopSpec, HopParseError> {
    const SCHEME: &str = "socks5://";
    let rest = match s.get(..SCHEME.len()) {
        Some(p) if p.eq_ignore_ascii_case(SCHEME) => s.get(SCHEME.len()..).unwrap_or_default(),
        _ => return Err(HopParseError::BadScheme),
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let (userinfo, hostport) = match rest.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, rest),
    };
    if hostport.contains(['/', '?', '#']) {
        return Err(HopParseError::HasPath);
    }
    let auth = userinfo.map(parse_userinfo).transpose()?;
    let (host, port) = split_host_port(hostport)?;
    Ok(HopSpec { host, port, auth })
}

fn parse_userinfo(u: &str) -> Result<(String, String), HopParseError> {
    let (user, pass) = u.split_once(':').ok_or(HopParseError::MissingPassword)?;
    let user = percent_decode(user)?;
    let pass = percent_decode(pass)?;
    let ok = |v: &str| (1..=MAX_FIELD).contains(&v.len());
    if !ok(&user) || !ok(&pass) {
        return Err(HopParseError::BadCredentialLength);
    }
    Ok((user, pass))
}

fn split_host_port(hp: &str) -> Result<(String, u16), HopParseError> {
    if hp.is_empty() {
        return Err(HopParseError::MissingHost);
    }
    let (host, port) = if let Some(v6) = hp.strip_prefix('[') {
        let (h, after) = v6.split_once(']').ok_or(HopParseError::BadHost)?;
        if h.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(HopParseError::BadHost);
        }
        let port = after.strip_prefix(':').ok_or(HopParseError::MissingPort)?;
        (h, port)
    } else {
        hp.rsplit_once(':').ok_or(HopParseError::MissingPort)?
    };
    if host.is_empty() {
        return Err(HopParseError::MissingHost);
    }
    if !valid_host(host) {
        return Err(HopParseError::BadHost);
    }
    if port.is_empty() {
        return Err(HopParseError::MissingPort);
    }
    if !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err(HopParseError::BadPort);
    }
    match port.parse::<u16>() {
        Ok(p) if p != 0 => Ok((host.to_owned(), p)),
        _ => Err(HopParseError::BadPort),
    }
}

fn valid_host(h: &str) -> bool {
    h.len() <= MAX_FIELD
        && (h.parse::<IpAddr>().is_ok()
            || h.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_'))
}

fn percent_decode(s: &str) -> Result<String, HopParseError> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = |j: usize| {
                bytes
                    .get(j)
                    .and_then(|c| char::from(*c).to_digit(16))
                    .ok_or(HopParseError::BadPercentEncoding)
            };
            let v = hex(i + 1)? * 16 + hex(i + 2)?;
            out.push(u8::try_from(v).map_err(|_| HopParseError::BadPercentEncoding)?);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| HopParseError::BadPercentEncoding)
}

/// The deadlines of one chain opening.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    /// TCP connect to the first hop
    pub connect: Duration,
    /// method-selection reply, per hop
    pub greeting: Duration,
    /// RFC 1929 reply, per hop
    pub auth: Duration,
    /// CONNECT reply, per hop
    pub connect_reply: Duration,
    /// the whole chain
    pub chain: Duration,
}

impl Default for Deadlines {
    /// The defaults of docs/PROXY.md (5 s, 3 s, 3 s, 10 s, 20 s).
    fn default() -> Self {
        Self {
            connect: Duration::from_millis(5000),
            greeting: Duration::from_millis(3000),
            auth: Duration::from_millis(3000),
            connect_reply: Duration::from_millis(10000),
            chain: Duration::from_millis(20000),
        }
    }
}

/// What the last hop connects to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    /// a host name the last hop resolves (socks5h); an IP literal here is sent as an address
    Name(String, u16),
    /// an address we resolved ourselves
    Addr(SocketAddr),
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name(h, p) if h.contains(':') => write!(f, "[{h}]:{p}"),
            Self::Name(h, p) => write!(f, "{h}:{p}"),
            Self::Addr(a) => write!(f, "{a}"),
        }
    }
}

/// A phase of opening one hop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// TCP connect to the first hop
    Connect,
    /// method-selection reply
    Greeting,
    /// RFC 1929 reply
    Auth,
    /// CONNECT reply
    ConnectReply,
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Connect => "tcp connect",
            Self::Greeting => "greeting reply",
            Self::Auth => "auth reply",
            Self::ConnectReply => "connect reply",
        })
    }
}

/// A proxy fault: counts against the hop (and its chain).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// TCP connect refused / unreachable, or the previous hop could not reach this one (reply 03–06)
    Refused,
    /// a phase's (or the chain's) deadline passed
    Timeout(Phase),
    /// RFC 1929 rejected the credentials (or they cannot be sent)
    AuthFailed,
    /// the hop wants auth and we have no credentials (or no method was acceptable)
    AuthRequired,
    /// reply 01
    GeneralFailure,
    /// reply 02
    NotAllowed,
    /// reply 07
    CommandNotSupported,
    /// reply 08
    AddrTypeNotSupported,
    /// bad version, reserved byte, reply code or address type
    Malformed,
    /// the stream closed (or broke) mid-handshake
    Closed,
}

/// A target fault (reply 03–06 from the last hop): recorded on the URL, not counted against the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TargetFault {
    NetworkUnreachable,
    HostUnreachable,
    ConnectionRefused,
    TtlExpired,
    /// the target cannot be sent in a SOCKS5 request (empty or longer than 255 bytes)
    InvalidAddress,
}

/// Proxy or target fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    Proxy(FaultKind),
    Target(TargetFault),
}

impl FaultKind {
    /// Snake-case name, as in logs, stats and the `kind` label of `crawl_proxy_faults_total`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Refused => "refused",
            Self::Timeout(Phase::Connect) => "timeout_connect",
            Self::Timeout(Phase::Greeting) => "timeout_greeting",
            Self::Timeout(Phase::Auth) => "timeout_auth",
            Self::Timeout(Phase::ConnectReply) => "timeout_connect_reply",
            Self::AuthFailed => "auth_failed",
            Self::AuthRequired => "auth_required",
            Self::GeneralFailure => "general_failure",
            Self::NotAllowed => "not_allowed",
            Self::CommandNotSupported => "command_not_supported",
            Self::AddrTypeNotSupported => "addr_type_not_supported",
            Self::Malformed => "malformed",
            Self::Closed => "closed",
        }
    }
}

impl TargetFault {
    /// Snake-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NetworkUnreachable => "network_unreachable",
            Self::HostUnreachable => "host_unreachable",
            Self::ConnectionRefused => "connection_refused",
            Self::TtlExpired => "ttl_expired",
            Self::InvalidAddress => "invalid_address",
        }
    }
}

impl ErrorKind {
    /// Snake-case name of the fault.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Proxy(k) => k.as_str(),
            Self::Target(t) => t.as_str(),
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Proxy(k) => write!(f, "proxy fault {k:?}"),
            Self::Target(k) => write!(f, "target fault {k:?}"),
        }
    }
}

/// Why a chain did not open. `detail` names hops as `socks5://***@host:port`, never with credentials.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} at hop {hop}: {detail}")]
pub struct ChainError {
    /// 0-based index of the hop at fault; `hops.len()` means the target step
    pub hop: usize,
    pub kind: ErrorKind,
    pub detail: String,
}

impl ChainError {
    /// True when the fault counts against the proxy (hop and chain).
    pub fn is_proxy_fault(&self) -> bool {
        matches!(self.kind, ErrorKind::Proxy(_))
    }

    fn proxy(hop: usize, kind: FaultKind, detail: String) -> Self {
        Self {
            hop,
            kind: ErrorKind::Proxy(kind),
            detail,
        }
    }
}

/// The hop the tunnel comes out of (the last one), without credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerHop {
    /// 0-based index of the last hop
    pub index: usize,
    pub host: String,
    pub port: u16,
    /// the bound address the last hop reported in its CONNECT reply, when it is an IP address
    pub bound: Option<SocketAddr>,
}

impl fmt::Display for PeerHop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "socks5://[{}]:{}", self.host, self.port)
        } else {
            write!(f, "socks5://{}:{}", self.host, self.port)
        }
    }
}

/// Any stream a hop's handshake can run over.
trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

type BoxedIo = Box<dyn Io>;

/// The tunnelled stream to the target (TLS to the target runs inside it). Use with `hyper_util::rt::TokioIo`.
pub struct ChainStream {
    io: BoxedIo,
    peer: PeerHop,
}

impl ChainStream {
    /// The last hop of the chain.
    pub fn peer_hop(&self) -> &PeerHop {
        &self.peer
    }
}

impl fmt::Debug for ChainStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChainStream")
            .field("peer", &self.peer)
            .finish_non_exhaustive()
    }
}

impl AsyncRead for ChainStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for ChainStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

impl Connection for ChainStream {
    fn connected(&self) -> Connected {
        // a tunnel, not an HTTP proxy: requests keep origin-form
        Connected::new()
    }
}

/// Why a host cannot be sent as a SOCKS5 address.
#[derive(Debug, thiserror::Error)]
enum AddrError {
    #[error("name of {0} bytes cannot be sent")]
    Length(usize),
    #[error("{0}")]
    Invalid(#[from] tokio_socks::Error),
}

/// A SOCKS5 address for `host` (IP literal, bracketed or not, or a name of 1..=255 bytes).
fn target_addr(host: &str, port: u16) -> Result<TargetAddr<'static>, AddrError> {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Ok(TargetAddr::Ip(SocketAddr::new(ip, port)));
    }
    if bare.is_empty() || bare.len() > MAX_FIELD {
        return Err(AddrError::Length(bare.len()));
    }
    Ok((bare.to_owned(), port).into_target_addr()?)
}

/// Opens `hops` in order and CONNECTs the last one to `target`, all within `d.chain`.
pub async fn open_chain(
    hops: &[HopSpec],
    target: &Target,
    d: &Deadlines,
) -> Result<ChainStream, ChainError> {
    let chain_deadline = Instant::now()
        .checked_add(d.chain)
        .unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400));
    let Some(first) = hops.first() else {
        return Err(ChainError::proxy(
            0,
            FaultKind::Refused,
            "chain has no hops".into(),
        ));
    };
    let final_target = match target {
        Target::Addr(a) => Ok(TargetAddr::Ip(*a)),
        Target::Name(h, p) => target_addr(h, *p),
    }
    .map_err(|why| ChainError {
        hop: hops.len(),
        kind: ErrorKind::Target(TargetFault::InvalidAddress),
        detail: format!("target {target}: {why}"),
    })?;

    let mut stream: BoxedIo = Box::new(connect_first(first, d, chain_deadline).await?);
    let mut bound = None;
    for (i, hop) in hops.iter().enumerate() {
        let next = match hops.get(i + 1) {
            Some(n) => n.as_target().map_err(|why| {
                ChainError::proxy(i + 1, FaultKind::Refused, format!("hop {n}: {why}"))
            })?,
            None => final_target.clone(),
        };
        let timer = PhaseTimer::new(stream, *d, chain_deadline);
        let res = match &hop.auth {
            Some((user, pass)) => {
                Socks5Stream::connect_with_password_and_socket(timer, next, user, pass).await
            }
            None => Socks5Stream::connect_with_socket(timer, next).await,
        };
        match res {
            Ok(s) => {
                bound = match s.target_addr() {
                    TargetAddr::Ip(a) => Some(a),
                    TargetAddr::Domain(..) => None,
                };
                stream = Box::new(s);
            }
            Err(e) => return Err(classify(e, i, hops, target)),
        }
    }
    let index = hops.len() - 1;
    let last = hops.get(index).unwrap_or(first);
    tracing::debug!(hops = hops.len(), last = %last, target = %target, "socks chain open");
    Ok(ChainStream {
        io: stream,
        peer: PeerHop {
            index,
            host: last.host.clone(),
            port: last.port,
            bound,
        },
    })
}

/// TCP to the first hop within the connect deadline (or what is left of the chain's).
async fn connect_first(
    hop: &HopSpec,
    d: &Deadlines,
    chain_deadline: Instant,
) -> Result<TcpStream, ChainError> {
    let own = Instant::now()
        .checked_add(d.connect)
        .unwrap_or(chain_deadline);
    let at = own.min(chain_deadline);
    match tokio::time::timeout_at(at, TcpStream::connect((hop.host.as_str(), hop.port))).await {
        Ok(Ok(tcp)) => {
            // best effort: small handshakes and requests should not wait for Nagle
            let _ = tcp.set_nodelay(true);
            Ok(tcp)
        }
        Ok(Err(e)) => Err(ChainError::proxy(
            0,
            FaultKind::Refused,
            format!("hop {hop}: tcp connect: {e}"),
        )),
        Err(_) => {
            let why = if chain_deadline <= own {
                "chain deadline passed during tcp connect".to_owned()
            } else {
                format!("no tcp connect within {:?}", d.connect)
            };
            Err(ChainError::proxy(
                0,
                FaultKind::Timeout(Phase::Connect),
                format!("hop {hop}: {why}"),
            ))
        }
    }
}

/// Maps a tokio-socks error from the handshake with hop `i` (which CONNECTs to hop `i + 1` or the target).
fn classify(e: tokio_socks::Error, i: usize, hops: &[HopSpec], target: &Target) -> ChainError {
    use tokio_socks::Error as E;
    let hop_name = hops.get(i).map(ToString::to_string).unwrap_or_default();
    let here = |kind: FaultKind, what: String| {
        ChainError::proxy(i, kind, format!("hop {i} {hop_name}: {what}"))
    };
    let unreachable = |tf: TargetFault, what: &str| match hops.get(i + 1) {
        Some(next) => ChainError::proxy(
            i + 1,
            FaultKind::Refused,
            format!(
                "hop {i} {hop_name} could not reach hop {} {next}: {what}",
                i + 1
            ),
        ),
        None => ChainError {
            hop: hops.len(),
            kind: ErrorKind::Target(tf),
            detail: format!("last hop {hop_name} could not reach {target}: {what}"),
        },
    };
    let has_auth = hops.get(i).is_some_and(|h| h.auth.is_some());
    let what = e.to_string();
    match e {
        E::Io(io) => match PhaseTimeout::of(&io) {
            Some(t) => here(FaultKind::Timeout(t.phase), t.to_string()),
            None => here(
                FaultKind::Closed,
                format!("stream closed mid-handshake ({:?})", io.kind()),
            ),
        },
        E::GeneralSocksServerFailure => here(FaultKind::GeneralFailure, what),
        E::ConnectionNotAllowedByRuleset => here(FaultKind::NotAllowed, what),
        E::CommandNotSupported => here(FaultKind::CommandNotSupported, what),
        E::AddressTypeNotSupported => here(FaultKind::AddrTypeNotSupported, what),
        E::NetworkUnreachable => unreachable(TargetFault::NetworkUnreachable, &what),
        E::HostUnreachable => unreachable(TargetFault::HostUnreachable, &what),
        E::ConnectionRefused => unreachable(TargetFault::ConnectionRefused, &what),
        E::TtlExpired => unreachable(TargetFault::TtlExpired, &what),
        E::PasswordAuthFailure(code) => here(
            FaultKind::AuthFailed,
            format!("credentials rejected (status {code})"),
        ),
        E::InvalidAuthValues(_) => here(
            FaultKind::AuthFailed,
            "credentials must be 1..=255 bytes each".into(),
        ),
        E::AuthorizationRequired => here(
            FaultKind::AuthRequired,
            "hop requires auth and no credentials are configured".into(),
        ),
        E::NoAcceptableAuthMethods if has_auth => here(FaultKind::AuthFailed, what),
        E::NoAcceptableAuthMethods => here(FaultKind::AuthRequired, what),
        E::ProxyServerUnreachable => here(FaultKind::Refused, what),
        // unknown reply code (tokio-socks reports it as UnknownAuthMethod), bad version, reserved byte, address
        E::InvalidResponseVersion
        | E::UnknownAuthMethod
        | E::UnknownError
        | E::InvalidReservedByte
        | E::UnknownAddressType
        | E::InvalidTargetAddress(_)
        | E::ParseError(_)
        | E::IdentdAuthFailure
        | E::InvalidUserIdAuthFailure => {
            here(FaultKind::Malformed, format!("malformed reply: {what}"))
        }
    }
}

#[cfg(test)]
mod tests;
