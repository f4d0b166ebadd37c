//! Direct TCP connections: name resolution, the SSRF guard on the address actually dialed, and connection racing
//! as in RFC 8305 (Happy Eyeballs v2).
//!
//! [`Dialer`] turns a request URI into a connected socket. The host (an IP literal, or the addresses the resolver
//! actor or, without one, the system resolver gives for the name) is dialed in [`interleave`] order: families
//! alternate, starting with the family of the first address. [`race`] starts the first attempt, then the next one
//! when the previous fails or [`ATTEMPT_DELAY`] after the last start, whichever comes first; the first connection
//! up wins and the attempts still running are dropped. Right before each attempt the [`NetGuard`] is asked about
//! the address: a refused address is never dialed (a debug log with host, addr and class) and counts as a failed
//! attempt, so a private address in a mixed answer set only moves the race on to the next one. When every address
//! was refused the connection fails as [`ResolveError::PrivateOnly`] (recorded `private_network`).

use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use crawl_core::netaddr::IpClass;
use crawl_core::netguard::NetGuard;
use futures_util::StreamExt as _;
use futures_util::stream::FuturesUnordered;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::error::{LookupError, ResolveError};

/// RFC 8305 section 5: the recommended delay between the starts of two connection attempts.
pub const ATTEMPT_DELAY: Duration = Duration::from_millis(250);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Resolves a host name to addresses for the connector (in the engine: a message to the resolver actor).
#[derive(Clone)]
pub struct NameLookup(pub Arc<LookupFn>);

/// The function behind [`NameLookup`]: host name -> addresses, or why not.
pub type LookupFn = dyn Fn(String) -> futures_util::future::BoxFuture<'static, Result<Vec<IpAddr>, LookupError>>
    + Send
    + Sync;

impl std::fmt::Debug for NameLookup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NameLookup")
    }
}

/// Why one connection attempt failed.
#[derive(Debug)]
pub enum AttemptError {
    /// The guard refused the address; nothing was sent to it.
    Refused(IpClass),
    /// The connection failed.
    Io(io::Error),
}

/// RFC 8305 section 4: the addresses with the families interleaved, starting with the family of the first one;
/// the order within each family is kept.
pub fn interleave(addrs: Vec<SocketAddr>) -> Vec<SocketAddr> {
    let Some(first) = addrs.first() else {
        return addrs;
    };
    let first_v6 = first.is_ipv6();
    let (mut lead, mut other): (Vec<SocketAddr>, Vec<SocketAddr>) =
        addrs.into_iter().partition(|a| a.is_ipv6() == first_v6);
    let mut out = Vec::with_capacity(lead.len() + other.len());
    lead.reverse();
    other.reverse();
    loop {
        match (lead.pop(), other.pop()) {
            (None, None) => return out,
            (a, b) => out.extend(a.into_iter().chain(b)),
        }
    }
}

/// Races connection attempts to `addrs` in order (see the module doc): the first success wins, with its address;
/// when every attempt failed, each address with its error, in the order they ended.
pub async fn race<T, E, F, Fut>(
    addrs: &[SocketAddr],
    delay: Duration,
    mut connect: F,
) -> Result<(T, SocketAddr), Vec<(SocketAddr, E)>>
where
    F: FnMut(SocketAddr) -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let mut running = FuturesUnordered::new();
    let mut failed = Vec::new();
    let mut next = addrs.iter().copied();
    let mut start = |running: &mut FuturesUnordered<_>| match next.next() {
        Some(addr) => {
            let attempt = connect(addr);
            running.push(async move { (addr, attempt.await) });
            true
        }
        None => false,
    };
    let mut more = start(&mut running);
    loop {
        if running.is_empty() && !more {
            return Err(failed);
        }
        let timer = tokio::time::sleep(delay);
        tokio::pin!(timer);
        tokio::select! {
            biased;
            Some((addr, result)) = running.next() => match result {
                Ok(conn) => return Ok((conn, addr)),
                Err(e) => {
                    failed.push((addr, e));
                    // A failure starts the next attempt at once.
                    more = start(&mut running);
                }
            },
            () = &mut timer, if more => more = start(&mut running),
        }
    }
}

/// Opens direct TCP connections for the HTTP client (see the module doc).
#[derive(Clone)]
pub struct Dialer {
    pub guard: Arc<NetGuard>,
    /// The resolver actor; None = the system resolver.
    pub lookup: Option<NameLookup>,
    /// Bounds the whole connection (lookup and every attempt).
    pub connect_timeout: Duration,
    pub attempt_delay: Duration,
}

/// The host of a URI without IPv6 brackets, and its port (the scheme's default when absent).
pub fn host_port(uri: &http::Uri) -> (String, u16) {
    let host = uri
        .host()
        .unwrap_or_default()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = uri
        .port_u16()
        .unwrap_or(if uri.scheme_str() == Some("https") {
            443
        } else {
            80
        });
    (host, port)
}

async fn addresses(
    host: &str,
    port: u16,
    lookup: Option<&NameLookup>,
) -> Result<Vec<SocketAddr>, ResolveError> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let found: Result<Vec<SocketAddr>, LookupError> = match lookup {
        Some(NameLookup(f)) => f(host.to_owned()).await.map(|ips| {
            ips.into_iter()
                .map(|ip| SocketAddr::new(ip, port))
                .collect()
        }),
        None => tokio::net::lookup_host((host, port))
            .await
            .map(Iterator::collect)
            .map_err(LookupError::System),
    };
    match found {
        Ok(addrs) if addrs.is_empty() => Err(ResolveError::Lookup {
            host: host.to_owned(),
            detail: LookupError::NoAddresses,
        }),
        Ok(addrs) => Ok(addrs),
        Err(detail) => Err(ResolveError::Lookup {
            host: host.to_owned(),
            detail,
        }),
    }
}

/// One attempt: the guard on the address about to be dialed, then the TCP connect.
async fn attempt(
    guard: &NetGuard,
    host: &str,
    addr: SocketAddr,
) -> Result<TcpStream, AttemptError> {
    if let Err(refused) = guard.check(addr.ip()) {
        tracing::debug!(host, addr = %addr.ip(), class = refused.0.as_str(), "guard refused address");
        return Err(AttemptError::Refused(refused.0));
    }
    let stream = TcpStream::connect(addr).await.map_err(AttemptError::Io)?;
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!(host, addr = %addr, error = %e, "tcp nodelay not set");
    }
    Ok(stream)
}

/// Turns the failures of every attempt into one error: refusals only are `PrivateOnly`; otherwise the first I/O
/// failure (its kind kept, so that a timeout stays one), naming how many addresses were tried.
fn all_failed(host: &str, failed: Vec<(SocketAddr, AttemptError)>) -> BoxError {
    let tried = failed.len();
    let mut first_refused = None;
    let mut first_io = None;
    for (addr, e) in failed {
        match e {
            AttemptError::Refused(class) => {
                first_refused.get_or_insert((addr.ip(), class));
            }
            AttemptError::Io(e) => {
                first_io.get_or_insert((addr, e));
            }
        }
    }
    match (first_io, first_refused) {
        (Some((addr, e)), _) => {
            let detail = if tried > 1 {
                format!("tcp connect to {addr} failed ({tried} addresses tried): {e}")
            } else {
                format!("tcp connect to {addr} failed: {e}")
            };
            Box::new(io::Error::new(e.kind(), detail))
        }
        (None, Some((addr, _))) => Box::new(ResolveError::PrivateOnly {
            host: host.to_owned(),
            addr,
        }),
        (None, None) => Box::new(ResolveError::Lookup {
            host: host.to_owned(),
            detail: LookupError::NoAddresses,
        }),
    }
}

impl Dialer {
    async fn dial(self, host: String, port: u16) -> Result<TokioIo<TcpStream>, BoxError> {
        let addrs = interleave(addresses(&host, port, self.lookup.as_ref()).await?);
        let guard = Arc::clone(&self.guard);
        let h = host.as_str();
        match race(&addrs, self.attempt_delay, |addr| {
            let guard = Arc::clone(&guard);
            async move { attempt(&guard, h, addr).await }
        })
        .await
        {
            Ok((stream, addr)) => {
                if addrs.len() > 1 {
                    tracing::debug!(host, addr = %addr, candidates = addrs.len(), "connection race won");
                }
                Ok(TokioIo::new(stream))
            }
            Err(failed) => Err(all_failed(&host, failed)),
        }
    }
}

impl tower_service::Service<http::Uri> for Dialer {
    type Response = TokioIo<TcpStream>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<TokioIo<TcpStream>, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let (host, port) = host_port(&uri);
        let timeout = self.connect_timeout;
        let dial = self.clone().dial(host, port);
        Box::pin(async move {
            match tokio::time::timeout(timeout, dial).await {
                Ok(result) => result,
                Err(_) => Err(Box::new(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("tcp connect timed out after {} ms", timeout.as_millis()),
                )) as BoxError),
            }
        })
    }
}

#[cfg(test)]
mod tests;
