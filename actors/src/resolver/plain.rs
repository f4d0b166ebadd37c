//! Plain DNS transport: UDP with a hold-on window, TCP fallback on truncation.
//!
//! [`query`] sends one question over UDP and, unlike an ordinary stub resolver, keeps listening
//! for `hold_on` after the first matching answer: an on-path injector races the real server, so
//! two different answers to one query are the evidence the detection logic needs. Datagrams whose
//! id or question do not match are ignored. A truncated first answer is asked again over TCP.
//! [`query_with_attempts`] walks a server list; [`system_nameservers`] reads /etc/resolv.conf.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};

use crate::resolver::wire::{self, QType, Response, WireError};

/// Receive buffer: larger than any EDNS payload we advertise.
const RECV_BUFFER: usize = 4096;
/// Upper bound of datagrams examined for one query (junk included).
const MAX_DATAGRAMS: usize = 256;
/// Upper bound of matching responses kept for one query.
const MAX_RESPONSES: usize = 16;

/// Errors of the plain transport.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlainError {
    /// No matching answer within the timeout.
    #[error("dns query timed out")]
    Timeout,
    /// A socket error (including ICMP port unreachable, reported as connection refused).
    #[error("dns transport error: {0}")]
    Io(String),
    /// The query could not be encoded, or a TCP answer could not be decoded.
    #[error(transparent)]
    Wire(#[from] WireError),
}

impl PlainError {
    /// True when another attempt (or another server) may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            PlainError::Timeout | PlainError::Io(_) => true,
            PlainError::Wire(_) => false,
        }
    }
}

fn io_err(what: &str, e: &std::io::Error) -> PlainError {
    PlainError::Io(format!("{what}: {e}"))
}

/// An unpredictable 16-bit message id (SipHash with the process's random keys over a counter).
fn random_id() -> u16 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let h = RandomState::new().hash_one((n, nanos));
    (h ^ (h >> 16) ^ (h >> 32) ^ (h >> 48)) as u16
}

fn matches(r: &Response, id: u16, name: &str, qtype: QType) -> bool {
    r.id == id && r.answers(name, qtype)
}

/// Queries `server` for `name` / `qtype` over UDP and returns every matching response that arrived
/// from the first one until `hold_on` after it, in arrival order. A truncated first response is
/// replaced by the single full response asked over TCP (within `timeout`).
pub async fn query(
    server: SocketAddr,
    name: &str,
    qtype: QType,
    timeout: Duration,
    hold_on: Duration,
) -> Result<Vec<Response>, PlainError> {
    let id = random_id();
    let packet = wire::build_query(id, name, qtype)?;
    let local = match server {
        SocketAddr::V4(_) => SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0),
        SocketAddr::V6(_) => SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0),
    };
    let socket = UdpSocket::bind(local)
        .await
        .map_err(|e| io_err("udp bind", &e))?;
    // Connected: the kernel drops datagrams from other sources and reports ICMP errors.
    socket
        .connect(server)
        .await
        .map_err(|e| io_err("udp connect", &e))?;
    socket
        .send(&packet)
        .await
        .map_err(|e| io_err("udp send", &e))?;

    let deadline = tokio::time::Instant::now() + timeout;
    let mut buf = vec![0u8; RECV_BUFFER];
    let mut seen = 0usize;
    let first = loop {
        if seen >= MAX_DATAGRAMS {
            return Err(PlainError::Timeout);
        }
        let len = match tokio::time::timeout_at(deadline, socket.recv(&mut buf)).await {
            Err(_) => return Err(PlainError::Timeout),
            Ok(Err(e)) => return Err(io_err("udp recv", &e)),
            Ok(Ok(len)) => len,
        };
        seen += 1;
        match wire::parse_response(buf.get(..len).unwrap_or_default()) {
            Ok(r) if matches(&r, id, name, qtype) => break r,
            Ok(r) => {
                tracing::debug!(server = %server, name = %name, got_id = r.id, want_id = id, "ignoring non-matching dns response");
            }
            Err(e) => {
                tracing::debug!(server = %server, name = %name, error = %e, "ignoring malformed dns datagram");
            }
        }
    };

    if first.truncated {
        tracing::debug!(server = %server, name = %name, "truncated udp answer, retrying over tcp");
        let full = query_tcp(server, name, qtype, timeout).await?;
        return Ok(vec![full]);
    }

    let hold_deadline = tokio::time::Instant::now() + hold_on;
    let mut responses = vec![first];
    while seen < MAX_DATAGRAMS && responses.len() < MAX_RESPONSES {
        let len = match tokio::time::timeout_at(hold_deadline, socket.recv(&mut buf)).await {
            Err(_) => break,
            Ok(Err(e)) => {
                tracing::debug!(server = %server, name = %name, error = %e, "udp recv error during hold-on");
                break;
            }
            Ok(Ok(len)) => len,
        };
        seen += 1;
        match wire::parse_response(buf.get(..len).unwrap_or_default()) {
            Ok(r) if matches(&r, id, name, qtype) => responses.push(r),
            Ok(_) | Err(_) => {
                tracing::debug!(server = %server, name = %name, "ignoring datagram during hold-on");
            }
        }
    }
    if responses.len() > 1 {
        tracing::debug!(server = %server, name = %name, count = responses.len(), "several answers within hold-on");
    }
    Ok(responses)
}

/// One query over TCP (RFC 1035 2-byte length prefix), the whole exchange within `timeout`.
pub async fn query_tcp(
    server: SocketAddr,
    name: &str,
    qtype: QType,
    timeout: Duration,
) -> Result<Response, PlainError> {
    let id = random_id();
    let packet = wire::build_query(id, name, qtype)?;
    let len = u16::try_from(packet.len())
        .map_err(|_| PlainError::Wire(WireError::Encode("query too long".to_string())))?;
    let exchange = async {
        let mut stream = TcpStream::connect(server)
            .await
            .map_err(|e| io_err("tcp connect", &e))?;
        let _ = stream.set_nodelay(true);
        let mut framed = Vec::with_capacity(packet.len() + 2);
        framed.extend_from_slice(&len.to_be_bytes());
        framed.extend_from_slice(&packet);
        stream
            .write_all(&framed)
            .await
            .map_err(|e| io_err("tcp send", &e))?;
        let mut prefix = [0u8; 2];
        stream
            .read_exact(&mut prefix)
            .await
            .map_err(|e| io_err("tcp recv", &e))?;
        let mut body = vec![0u8; usize::from(u16::from_be_bytes(prefix))];
        stream
            .read_exact(&mut body)
            .await
            .map_err(|e| io_err("tcp recv", &e))?;
        Ok::<Vec<u8>, PlainError>(body)
    };
    let body = match tokio::time::timeout(timeout, exchange).await {
        Err(_) => return Err(PlainError::Timeout),
        Ok(result) => result?,
    };
    let response = wire::parse_response(&body)?;
    if !matches(&response, id, name, qtype) {
        return Err(PlainError::Io(
            "tcp answer does not match the query".to_string(),
        ));
    }
    Ok(response)
}

/// Tries `servers` round-robin (`attempts` rounds, at least one; each server in order within a
/// round) until one returns responses. Any response counts, whatever its rcode; a non-retryable
/// error (bad name) ends at once. Returns the last error when all fail.
pub async fn query_with_attempts(
    servers: &[SocketAddr],
    name: &str,
    qtype: QType,
    timeout: Duration,
    hold_on: Duration,
    attempts: u32,
) -> Result<Vec<Response>, PlainError> {
    let mut last = PlainError::Io("no nameservers configured".to_string());
    for attempt in 0..attempts.max(1) {
        for server in servers {
            let started = Instant::now();
            match query(*server, name, qtype, timeout, hold_on).await {
                Ok(responses) => return Ok(responses),
                Err(e) if e.is_retryable() => {
                    tracing::debug!(server = %server, name = %name, attempt, error = %e,
                        elapsed_ms = started.elapsed().as_millis() as u64, "dns attempt failed");
                    last = e;
                }
                Err(e) => return Err(e),
            }
        }
    }
    Err(last)
}

/// `nameserver` addresses of a resolv.conf text, port 53, in order, without duplicates. Lines
/// that do not parse (comments, zone-scoped IPv6, junk) are skipped.
pub fn parse_resolv_conf(text: &str) -> Vec<SocketAddr> {
    let mut out: Vec<SocketAddr> = Vec::new();
    for line in text.lines() {
        let line = line.split(['#', ';']).next().unwrap_or_default();
        let mut words = line.split_whitespace();
        if words.next() != Some("nameserver") {
            continue;
        }
        let Some(addr) = words.next().and_then(|w| w.parse::<IpAddr>().ok()) else {
            continue;
        };
        let sa = SocketAddr::new(addr, 53);
        if !out.contains(&sa) {
            out.push(sa);
        }
    }
    out
}

/// The system's nameservers from /etc/resolv.conf (empty when unreadable).
pub fn system_nameservers() -> Vec<SocketAddr> {
    match std::fs::read_to_string("/etc/resolv.conf") {
        Ok(text) => parse_resolv_conf(&text),
        Err(e) => {
            tracing::debug!(error = %e, "cannot read /etc/resolv.conf");
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests;
