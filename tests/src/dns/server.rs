//! [`FakeDns`]: a fake plain DNS server answering over UDP and TCP (2-byte length prefix) on one loopback port.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};

use super::DnsError;
use super::tasks::Tasks;
use super::zone::{Behaviour, CatchAll, QueryLog, Reply, State, Transport, Zone, encode};

/// How many random ports to try until UDP and TCP can both be bound on one.
const BIND_TRIES: usize = 32;

/// A fake DNS server on 127.0.0.1 (UDP and TCP on the same port). Stops on [`FakeDns::shutdown`] or drop.
pub struct FakeDns {
    addr: SocketAddr,
    /// held by every task of the server (tests check it is released)
    pub(super) state: Arc<State>,
    tasks: Arc<Tasks>,
}

impl FakeDns {
    /// Binds 127.0.0.1:0 (UDP and TCP on the same port) and starts answering from `zone`.
    pub async fn start(zone: Zone) -> Result<Self, DnsError> {
        let (udp, tcp) = bind_pair().await?;
        let addr = udp.local_addr()?;
        let state = Arc::new(State::new(zone));
        let tasks = Arc::new(Tasks::default());
        tasks.spawn(udp_loop(
            Arc::new(udp),
            Arc::clone(&state),
            Arc::clone(&tasks),
        ));
        tasks.spawn(tcp_loop(tcp, Arc::clone(&state), Arc::clone(&tasks)));
        tracing::debug!(%addr, "fake dns started");
        Ok(Self { addr, state, tasks })
    }

    /// The address to send queries to (same port for UDP and TCP).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Sets (or replaces) the behaviour of `name` (case-insensitive, trailing dot ignored).
    pub fn set(&self, name: &str, behaviour: Behaviour) {
        self.state.set(name, behaviour);
    }

    /// Forgets `name`: it falls to the catch-all again.
    pub fn remove(&self, name: &str) {
        self.state.remove(name);
    }

    /// How unknown names are answered.
    pub fn set_catch_all(&self, catch_all: CatchAll) {
        self.state.set_catch_all(catch_all);
    }

    /// `true`: every query is dropped unanswered (still counted) until `set_down(false)`.
    pub fn set_down(&self, down: bool) {
        self.state.set_down(down);
    }

    pub fn is_down(&self) -> bool {
        self.state.is_down()
    }

    /// Queries received over UDP (also those dropped or unanswered).
    pub fn udp_queries(&self) -> usize {
        self.state.count(Transport::Udp)
    }

    /// Queries received over TCP.
    pub fn tcp_queries(&self) -> usize {
        self.state.count(Transport::Tcp)
    }

    /// All queries received.
    pub fn queries(&self) -> usize {
        self.state.total()
    }

    /// Queries received for `name` (case-insensitive, trailing dot ignored), any type and transport.
    pub fn queries_for(&self, name: &str) -> usize {
        self.state.queries_for(name)
    }

    /// Every query received so far, in arrival order.
    pub fn log(&self) -> Vec<QueryLog> {
        self.state.log()
    }

    /// Zeroes all counters and clears the log.
    pub fn reset_counters(&self) {
        self.state.reset_counters();
    }

    /// Stops every task of the server and waits until they have ended (the port is free afterwards).
    pub async fn shutdown(self) {
        self.tasks.shutdown().await;
    }
}

impl Drop for FakeDns {
    fn drop(&mut self) {
        self.tasks.abort();
    }
}

impl std::fmt::Debug for FakeDns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeDns").field("addr", &self.addr).finish()
    }
}

async fn bind_pair() -> Result<(UdpSocket, TcpListener), DnsError> {
    for _ in 0..BIND_TRIES {
        let udp = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let port = udp.local_addr()?.port();
        match TcpListener::bind((Ipv4Addr::LOCALHOST, port)).await {
            Ok(tcp) => return Ok((udp, tcp)),
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(DnsError::NoCommonPort(BIND_TRIES))
}

async fn udp_loop(sock: Arc<UdpSocket>, state: Arc<State>, tasks: Arc<Tasks>) {
    let mut buf = vec![0u8; 65_535];
    loop {
        let (n, peer) = match sock.recv_from(&mut buf).await {
            Ok(v) => v,
            Err(e) => {
                tracing::debug!(error = %e, "fake dns udp receive failed");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let Some(bytes) = buf.get(..n) else { continue };
        let Ok(reply) = state.process(bytes, Transport::Udp) else {
            tracing::debug!(%peer, "fake dns ignored a malformed udp query");
            continue;
        };
        match reply {
            Reply::Silent | Reply::Down => {}
            Reply::One(msg) => send_udp(&sock, &msg, peer).await,
            Reply::Two {
                first,
                second,
                delay,
            } => {
                send_udp(&sock, &first, peer).await;
                let sock = Arc::clone(&sock);
                tasks.spawn(async move {
                    tokio::time::sleep(delay).await;
                    send_udp(&sock, &second, peer).await;
                });
            }
        }
    }
}

async fn send_udp(sock: &UdpSocket, msg: &hickory_proto::op::Message, peer: SocketAddr) {
    if let Some(bytes) = encode(msg)
        && let Err(e) = sock.send_to(&bytes, peer).await
    {
        tracing::debug!(%peer, error = %e, "fake dns udp send failed");
    }
}

async fn tcp_loop(listener: TcpListener, state: Arc<State>, tasks: Arc<Tasks>) {
    loop {
        match listener.accept().await {
            Ok((stream, _peer)) => {
                let state = Arc::clone(&state);
                tasks.spawn(tcp_conn(stream, state));
            }
            Err(e) => {
                tracing::debug!(error = %e, "fake dns tcp accept failed");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

/// Answers length-prefixed queries on one connection until the client closes it.
async fn tcp_conn(mut stream: TcpStream, state: Arc<State>) {
    let _ = stream.set_nodelay(true);
    loop {
        let Ok(len) = stream.read_u16().await else {
            return;
        };
        let mut buf = vec![0u8; usize::from(len)];
        if stream.read_exact(&mut buf).await.is_err() {
            return;
        }
        let Ok(reply) = state.process(&buf, Transport::Tcp) else {
            tracing::debug!("fake dns closed a tcp connection after a malformed query");
            return;
        };
        let ok = match reply {
            Reply::Silent | Reply::Down => true,
            Reply::One(msg) => write_tcp(&mut stream, &msg).await,
            Reply::Two {
                first,
                second,
                delay,
            } => {
                write_tcp(&mut stream, &first).await && {
                    tokio::time::sleep(delay).await;
                    write_tcp(&mut stream, &second).await
                }
            }
        };
        if !ok {
            return;
        }
    }
}

async fn write_tcp(stream: &mut TcpStream, msg: &hickory_proto::op::Message) -> bool {
    let Some(bytes) = encode(msg) else {
        return true;
    };
    let Ok(len) = u16::try_from(bytes.len()) else {
        tracing::warn!(len = bytes.len(), "fake dns response too long for tcp");
        return true;
    };
    let mut framed = Vec::with_capacity(bytes.len() + 2);
    framed.extend_from_slice(&len.to_be_bytes());
    framed.extend_from_slice(&bytes);
    stream.write_all(&framed).await.is_ok()
}
