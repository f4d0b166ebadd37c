//! The server side of the SOCKS5 wire format (RFC 1928 greeting and request, RFC 1929 user/pass sub-negotiation).

use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use tokio::io::{AsyncRead, AsyncReadExt};

/// RFC 1928 version byte.
pub(super) const VERSION: u8 = 0x05;
/// Method: no authentication.
pub(super) const NO_AUTH: u8 = 0x00;
/// Method: RFC 1929 user/pass.
pub(super) const USER_PASS: u8 = 0x02;
/// Method: none acceptable.
pub(super) const NO_METHOD: u8 = 0xff;
/// Command: CONNECT.
pub(super) const CONNECT: u8 = 0x01;

/// A CONNECT target as the client sent it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SeenTarget {
    /// ATYP 01 or 04
    Addr(SocketAddr),
    /// ATYP 03: a name the server resolves (socks5h)
    Name(String, u16),
}

impl fmt::Display for SeenTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Addr(a) => write!(f, "{a}"),
            Self::Name(n, p) => write!(f, "{n}:{p}"),
        }
    }
}

/// Why a request could not be read as a CONNECT (the reply code to send).
pub(super) enum BadRequest {
    Io(io::Error),
    /// reply 07
    Command,
    /// reply 08
    AddrType,
}

impl From<io::Error> for BadRequest {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

/// Reads the method-selection message; returns the offered methods.
pub(super) async fn read_greeting<R: AsyncRead + Unpin>(r: &mut R) -> io::Result<Vec<u8>> {
    let mut head = [0u8; 2];
    r.read_exact(&mut head).await?;
    if head[0] != VERSION {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "not socks5"));
    }
    let mut methods = vec![0u8; usize::from(head[1])];
    r.read_exact(&mut methods).await?;
    Ok(methods)
}

/// Reads an RFC 1929 request; returns (user, password).
pub(super) async fn read_auth<R: AsyncRead + Unpin>(r: &mut R) -> io::Result<(Vec<u8>, Vec<u8>)> {
    let mut head = [0u8; 2];
    r.read_exact(&mut head).await?;
    if head[0] != 0x01 {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "not rfc 1929"));
    }
    let mut user = vec![0u8; usize::from(head[1])];
    r.read_exact(&mut user).await?;
    let mut len = [0u8; 1];
    r.read_exact(&mut len).await?;
    let mut pass = vec![0u8; usize::from(len[0])];
    r.read_exact(&mut pass).await?;
    Ok((user, pass))
}

/// Reads a request; only CONNECT is accepted.
pub(super) async fn read_request<R: AsyncRead + Unpin>(
    r: &mut R,
) -> Result<SeenTarget, BadRequest> {
    let mut head = [0u8; 4];
    r.read_exact(&mut head).await?;
    if head[0] != VERSION {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "not socks5").into());
    }
    let target = match head[3] {
        0x01 => {
            let mut a = [0u8; 4];
            r.read_exact(&mut a).await?;
            SeenTarget::Addr(SocketAddr::new(IpAddr::from(a), read_port(r).await?))
        }
        0x04 => {
            let mut a = [0u8; 16];
            r.read_exact(&mut a).await?;
            SeenTarget::Addr(SocketAddr::new(IpAddr::from(a), read_port(r).await?))
        }
        0x03 => {
            let mut len = [0u8; 1];
            r.read_exact(&mut len).await?;
            let mut name = vec![0u8; usize::from(len[0])];
            r.read_exact(&mut name).await?;
            let name = String::from_utf8_lossy(&name).into_owned();
            SeenTarget::Name(name, read_port(r).await?)
        }
        _ => return Err(BadRequest::AddrType),
    };
    if head[1] != CONNECT {
        return Err(BadRequest::Command);
    }
    Ok(target)
}

async fn read_port<R: AsyncRead + Unpin>(r: &mut R) -> io::Result<u16> {
    let mut p = [0u8; 2];
    r.read_exact(&mut p).await?;
    Ok(u16::from_be_bytes(p))
}

/// A reply with code `rep` and the bound address (0.0.0.0:0 when `None`).
pub(super) fn reply(rep: u8, bound: Option<SocketAddr>) -> Vec<u8> {
    let bound = bound.unwrap_or(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0));
    let mut out = vec![VERSION, rep, 0x00];
    match bound.ip() {
        IpAddr::V4(v4) => {
            out.push(0x01);
            out.extend_from_slice(&v4.octets());
        }
        IpAddr::V6(v6) => {
            out.push(0x04);
            out.extend_from_slice(&Ipv6Addr::octets(&v6));
        }
    }
    out.extend_from_slice(&bound.port().to_be_bytes());
    out
}

/// The reply code for a failed outgoing connect.
pub(super) fn code_for(e: &io::Error) -> u8 {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => 0x05,
        io::ErrorKind::NetworkUnreachable => 0x03,
        io::ErrorKind::HostUnreachable | io::ErrorKind::TimedOut => 0x04,
        _ => 0x01,
    }
}
