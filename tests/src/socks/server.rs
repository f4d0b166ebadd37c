//! [`FakeSocks`]: one in-test SOCKS5 server acting out a [`Behaviour`], with counters and a task group that
//! `kill()` / `shutdown()` / drop stop.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::task::JoinSet;

use super::SocksError;
use super::proto::{self, BadRequest, NO_AUTH, NO_METHOD, SeenTarget, USER_PASS, VERSION};
use super::relay::{Style, relay};

/// How long the server waits for its own outgoing connect to a target.
const TARGET_CONNECT: Duration = Duration::from_secs(5);

/// What a [`FakeSocks`] does with each connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    /// no-auth, or user/pass when [`SocksOptions::with_auth`] is set; CONNECT to IPv4/IPv6/domain; relays
    Good,
    /// reads the method selection, never replies (until the client goes)
    HangAfterGreeting,
    /// selects user/pass, reads the RFC 1929 request, never replies
    HangAfterAuth,
    /// completes greeting (and auth), reads the CONNECT, never replies
    HangAfterConnect,
    /// selects user/pass and answers 0x01 (failure) to any RFC 1929 request
    RefuseAuth,
    /// completes greeting (and auth), reads the CONNECT, replies this code (bound 0.0.0.0:0) and closes
    Reply(u8),
    /// like `Good`, but after relaying `after_bytes` target → client bytes resets the tunnel
    DropMidStream { after_bytes: u64 },
    /// like `Good`, but relays target → client one byte per `every`
    Trickle { every: Duration },
    /// answers the greeting with garbage (an HTTP status line)
    Malformed,
}

/// Where a [`FakeSocks`] listens, its credentials and its name map.
#[derive(Clone)]
pub struct SocksOptions {
    ip: IpAddr,
    auth: Option<(String, String)>,
    names: HashMap<String, IpAddr>,
    outbound: Option<IpAddr>,
}

impl Default for SocksOptions {
    fn default() -> Self {
        Self {
            ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
            auth: None,
            names: HashMap::new(),
            outbound: None,
        }
    }
}

impl fmt::Debug for SocksOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SocksOptions")
            .field("ip", &self.ip)
            .field("auth", &self.auth.as_ref().map(|_| "***"))
            .field("names", &self.names)
            .field("outbound", &self.outbound)
            .finish()
    }
}

impl SocksOptions {
    /// Listens on `ip` (port 0) instead of 127.0.0.1; outgoing sockets bind to it too unless
    /// [`SocksOptions::outbound_ip`] says otherwise.
    pub fn on(mut self, ip: IpAddr) -> Self {
        self.ip = ip;
        self
    }

    /// Requires RFC 1929 user/pass.
    pub fn with_auth(mut self, user: &str, pass: &str) -> Self {
        self.auth = Some((user.to_owned(), pass.to_owned()));
        self
    }

    /// Resolves `name` (case-insensitive) to `ip` for domain CONNECTs; unknown names get reply 04.
    pub fn resolve(mut self, name: &str, ip: IpAddr) -> Self {
        self.names.insert(name.to_ascii_lowercase(), ip);
        self
    }

    /// Binds outgoing sockets (of the same family) to `ip`.
    pub fn outbound_ip(mut self, ip: IpAddr) -> Self {
        self.outbound = Some(ip);
        self
    }
}

/// A snapshot of a server's counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// TCP connections accepted
    pub accepted: u64,
    /// every CONNECT target read, in order
    pub targets: Vec<SeenTarget>,
    /// bytes relayed, both ways
    pub bytes_relayed: u64,
    /// tunnels relaying right now
    pub open_tunnels: usize,
    /// connection tasks alive right now (handshaking, hanging or relaying)
    pub open_connections: usize,
}

struct Shared {
    behaviour: Behaviour,
    opts: SocksOptions,
    accepted: AtomicU64,
    targets: Mutex<Vec<SeenTarget>>,
    bytes: AtomicU64,
    tunnels: AtomicUsize,
    connections: AtomicUsize,
}

/// Decrements a counter when dropped (also when the task is aborted).
struct Open<'a>(&'a AtomicUsize);

impl<'a> Open<'a> {
    fn new(c: &'a AtomicUsize) -> Self {
        c.fetch_add(1, Ordering::SeqCst);
        Self(c)
    }
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[derive(Default)]
struct TaskGroup {
    set: JoinSet<()>,
    closed: bool,
}

/// An in-test SOCKS5 server. Stops (closing every tunnel) on [`FakeSocks::kill`], [`FakeSocks::shutdown`] or drop.
pub struct FakeSocks {
    addr: SocketAddr,
    shared: Arc<Shared>,
    tasks: Arc<Mutex<TaskGroup>>,
}

impl FakeSocks {
    /// A server on 127.0.0.1:0 without auth.
    pub async fn start(behaviour: Behaviour) -> Result<Self, SocksError> {
        Self::start_with(behaviour, SocksOptions::default()).await
    }

    /// A server with `opts`.
    pub async fn start_with(behaviour: Behaviour, opts: SocksOptions) -> Result<Self, SocksError> {
        let listener = TcpListener::bind((opts.ip, 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            behaviour,
            opts,
            accepted: AtomicU64::new(0),
            targets: Mutex::new(Vec::new()),
            bytes: AtomicU64::new(0),
            tunnels: AtomicUsize::new(0),
            connections: AtomicUsize::new(0),
        });
        let tasks = Arc::new(Mutex::new(TaskGroup::default()));
        spawn_in(
            &tasks,
            accept_loop(listener, Arc::clone(&shared), Arc::downgrade(&tasks)),
        );
        tracing::debug!(%addr, ?behaviour, "fake socks started");
        Ok(Self {
            addr,
            shared,
            tasks,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `socks5://[user:pass@]ip:port`, with the configured credentials in clear (test credentials only).
    pub fn url(&self) -> String {
        match &self.shared.opts.auth {
            Some((u, p)) => format!("socks5://{u}:{p}@{}", self.addr),
            None => format!("socks5://{}", self.addr),
        }
    }

    pub fn counters(&self) -> Counters {
        Counters {
            accepted: self.accepted(),
            targets: self.targets(),
            bytes_relayed: self.bytes_relayed(),
            open_tunnels: self.open_tunnels(),
            open_connections: self.open_connections(),
        }
    }

    pub fn accepted(&self) -> u64 {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    pub fn targets(&self) -> Vec<SeenTarget> {
        self.shared
            .targets
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn bytes_relayed(&self) -> u64 {
        self.shared.bytes.load(Ordering::SeqCst)
    }

    pub fn open_tunnels(&self) -> usize {
        self.shared.tunnels.load(Ordering::SeqCst)
    }

    pub fn open_connections(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// Waits (polling every 10 ms, at most `within`) until no connection task is alive; true if that happened.
    pub async fn wait_idle(&self, within: Duration) -> bool {
        let rounds = within.as_millis().div_ceil(10).max(1);
        for _ in 0..rounds {
            if self.open_connections() == 0 && self.open_tunnels() == 0 {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.open_connections() == 0 && self.open_tunnels() == 0
    }

    /// Stops listening and aborts every connection now (tunnels close as the runtime drops the tasks).
    pub fn kill(&self) {
        let mut g = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        g.closed = true;
        g.set.abort_all();
    }

    /// Stops listening, aborts every connection and waits until all tasks have ended (tunnels are closed).
    pub async fn shutdown(&self) {
        let mut set = {
            let mut g = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
            g.closed = true;
            std::mem::take(&mut g.set)
        };
        set.abort_all();
        while set.join_next().await.is_some() {}
    }
}

impl Drop for FakeSocks {
    fn drop(&mut self) {
        self.kill();
    }
}

fn spawn_in<F>(tasks: &Mutex<TaskGroup>, fut: F)
where
    F: Future<Output = ()> + Send + 'static,
{
    let mut g = tasks.lock().unwrap_or_else(|e| e.into_inner());
    if g.closed {
        return;
    }
    while g.set.try_join_next().is_some() {}
    g.set.spawn(fut);
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    tasks: std::sync::Weak<Mutex<TaskGroup>>,
) {
    loop {
        let Ok((conn, peer)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        shared.accepted.fetch_add(1, Ordering::SeqCst);
        let Some(group) = tasks.upgrade() else { return };
        let s = Arc::clone(&shared);
        spawn_in(&group, async move {
            let _open = Open::new(&s.connections);
            if let Err(e) = serve(conn, &s).await {
                tracing::debug!(%peer, error = %e, "fake socks connection ended");
            }
        });
    }
}

/// Reads until the client goes away.
async fn hold(mut c: TcpStream) -> std::io::Result<()> {
    let mut sink = [0u8; 512];
    while c.read(&mut sink).await? > 0 {}
    Ok(())
}

async fn serve(mut c: TcpStream, s: &Shared) -> std::io::Result<()> {
    let methods = proto::read_greeting(&mut c).await?;
    let b = s.behaviour;
    match b {
        Behaviour::HangAfterGreeting => return hold(c).await,
        Behaviour::Malformed => {
            c.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").await?;
            return hold(c).await;
        }
        _ => {}
    }
    let needs_auth =
        s.opts.auth.is_some() || matches!(b, Behaviour::RefuseAuth | Behaviour::HangAfterAuth);
    if needs_auth {
        if !methods.contains(&USER_PASS) {
            return c.write_all(&[VERSION, NO_METHOD]).await;
        }
        c.write_all(&[VERSION, USER_PASS]).await?;
        let (user, pass) = proto::read_auth(&mut c).await?;
        if b == Behaviour::HangAfterAuth {
            return hold(c).await;
        }
        let ok = b != Behaviour::RefuseAuth
            && s.opts
                .auth
                .as_ref()
                .is_some_and(|(u, p)| u.as_bytes() == user && p.as_bytes() == pass);
        if !ok {
            return c.write_all(&[0x01, 0x01]).await;
        }
        c.write_all(&[0x01, 0x00]).await?;
    } else if methods.contains(&NO_AUTH) {
        c.write_all(&[VERSION, NO_AUTH]).await?;
    } else {
        return c.write_all(&[VERSION, NO_METHOD]).await;
    }

    let target = match proto::read_request(&mut c).await {
        Ok(t) => t,
        Err(BadRequest::Io(e)) => return Err(e),
        Err(BadRequest::Command) => return c.write_all(&proto::reply(0x07, None)).await,
        Err(BadRequest::AddrType) => return c.write_all(&proto::reply(0x08, None)).await,
    };
    s.targets
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(target.clone());
    let style = match b {
        Behaviour::HangAfterConnect => return hold(c).await,
        Behaviour::Reply(code) => return c.write_all(&proto::reply(code, None)).await,
        Behaviour::DropMidStream { after_bytes } => Style::CutAfter(after_bytes),
        Behaviour::Trickle { every } => Style::Trickle(every),
        _ => Style::Plain,
    };
    let dest = match target {
        SeenTarget::Addr(a) => a,
        SeenTarget::Name(name, port) => match s.opts.names.get(&name.to_ascii_lowercase()) {
            Some(ip) => SocketAddr::new(*ip, port),
            None => return c.write_all(&proto::reply(0x04, None)).await,
        },
    };
    let out = match connect_out(dest, s.opts.outbound.unwrap_or(s.opts.ip)).await {
        Ok(o) => o,
        Err(e) => return c.write_all(&proto::reply(proto::code_for(&e), None)).await,
    };
    c.write_all(&proto::reply(0x00, out.local_addr().ok()))
        .await?;
    let _tunnel = Open::new(&s.tunnels);
    relay(c, out, style, &s.bytes).await
}

/// Connects to `dest`, binding the socket to `from` when the families match.
async fn connect_out(dest: SocketAddr, from: IpAddr) -> std::io::Result<TcpStream> {
    let sock = if dest.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    if dest.is_ipv4() == from.is_ipv4() && !from.is_unspecified() {
        sock.bind(SocketAddr::new(from, 0))?;
    }
    match tokio::time::timeout(TARGET_CONNECT, sock.connect(dest)).await {
        Ok(r) => r,
        Err(_) => Err(std::io::ErrorKind::TimedOut.into()),
    }
}
