//! A loopback TCP forwarder a test puts between a client and a server, to take the server away and give it back
//! while the client runs.
//!
//! [`Forwarder::cut`] models the server's host going down: every open connection is closed (the client sees its
//! request fail half-way) and the listening port is closed too, so a new connection is refused at once
//! (`ECONNREFUSED`), as it is when nothing listens any more. [`Forwarder::heal`] listens on the same address again.
//! [`Forwarder::cut_after`] cuts once a number of bytes went from the client to the server, so a test can cut in the
//! middle of a given request (the second part of an upload, say) without racing it. [`Forwarder::stall`] models a
//! network that drops every packet instead: connections stay open and new ones are accepted, but nothing goes
//! through until [`Forwarder::heal`], so only the client's own timeouts end its requests.
//!
//! Threads and `std` only: one thread accepts, two per connection copy bytes; at most [`MAX_CONNECTIONS`] at once
//! (more are closed at accept). Dropping the forwarder closes everything and joins its threads.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Connections forwarded at once; more are closed as soon as they are accepted.
pub const MAX_CONNECTIONS: usize = 256;
/// How often the accept thread looks for a cut or a drop while no client connects.
const POLL: Duration = Duration::from_millis(5);
/// How long [`Forwarder::heal`] tries to listen on its address again.
const REBIND_WITHIN: Duration = Duration::from_secs(5);
/// How long connecting to the target may take.
const CONNECT_WITHIN: Duration = Duration::from_secs(5);

/// What the forwarder does with traffic now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Bytes go through.
    Open,
    /// Connections closed, the port closed.
    Cut,
    /// Connections held open, nothing goes through.
    Stalled,
}

#[derive(Debug)]
struct State {
    mode: Mode,
    /// Both streams of every open connection, by id, so a cut can close them.
    conns: Vec<(u64, TcpStream, TcpStream)>,
    /// Cut once `forwarded` reaches this.
    cut_at: Option<u64>,
    /// Bumped by every cut, so the accept thread knows its listener is stale.
    epoch: u64,
}

#[derive(Debug)]
struct Shared {
    addr: SocketAddr,
    target: SocketAddr,
    state: Mutex<State>,
    /// Signalled when the mode changes (stalled pumps wait on it).
    changed: Condvar,
    /// Bytes sent on from the client to the target.
    forwarded: AtomicU64,
    accepted: AtomicUsize,
    next_id: AtomicU64,
    stop: AtomicBool,
    /// The thread that owns the listening socket now.
    acceptor: Mutex<Option<JoinHandle<()>>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Closes every connection and the port: the accept thread drops its listener when it sees the new epoch, and
    /// this waits for it, so a connection made after this returns is refused.
    fn cut(&self) {
        {
            let mut st = self.lock();
            self.cut_locked(&mut st);
        }
        let acceptor = self
            .acceptor
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(h) = acceptor {
            let _ = h.join();
        }
    }

    /// Marks the cut and closes the connections; [`Shared::cut`] also waits for the port to close.
    fn cut_locked(&self, st: &mut State) {
        st.mode = Mode::Cut;
        st.cut_at = None;
        st.epoch += 1;
        for (_, a, b) in st.conns.drain(..) {
            let _ = a.shutdown(Shutdown::Both);
            let _ = b.shutdown(Shutdown::Both);
        }
        self.changed.notify_all();
    }
}

/// A TCP forwarder on a loopback port the system handed out, to one target.
#[derive(Debug)]
pub struct Forwarder {
    shared: Arc<Shared>,
    threads: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Forwarder {
    /// Listens on `127.0.0.1:0` and forwards every connection to `target`.
    pub fn start(target: SocketAddr) -> io::Result<Forwarder> {
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            addr,
            target,
            state: Mutex::new(State {
                mode: Mode::Open,
                conns: Vec::new(),
                cut_at: None,
                epoch: 0,
            }),
            changed: Condvar::new(),
            forwarded: AtomicU64::new(0),
            accepted: AtomicUsize::new(0),
            next_id: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            acceptor: Mutex::new(None),
        });
        let threads = Arc::new(Mutex::new(Vec::new()));
        let f = Forwarder { shared, threads };
        f.spawn_acceptor(listener, 0)?;
        Ok(f)
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.shared.addr
    }

    /// `http://127.0.0.1:PORT`, the forwarder as an HTTP endpoint.
    pub fn http_url(&self) -> String {
        format!("http://{}", self.shared.addr)
    }

    /// Closes every open connection and the port: new connections are refused until [`Forwarder::heal`].
    pub fn cut(&self) {
        self.shared.cut();
    }

    /// Cuts (as [`Forwarder::cut`]) once `bytes` more bytes have gone from clients to the target; the bytes past
    /// that point are not sent on.
    pub fn cut_after(&self, bytes: u64) {
        let mut st = self.shared.lock();
        st.cut_at = Some(self.shared.forwarded.load(Ordering::SeqCst) + bytes);
    }

    /// Holds every connection, open and new, without passing a byte, until [`Forwarder::heal`].
    pub fn stall(&self) {
        let mut st = self.shared.lock();
        if st.mode == Mode::Open {
            st.mode = Mode::Stalled;
        }
        self.shared.changed.notify_all();
    }

    /// Lets traffic through again: after a cut, listens on the same address again (a panic if another process took
    /// the port meanwhile, within a few seconds); after a stall, the held bytes go on.
    pub fn heal(&self) {
        let mode = self.shared.lock().mode;
        let listener = (mode == Mode::Cut).then(|| {
            let deadline = Instant::now() + REBIND_WITHIN;
            loop {
                match TcpListener::bind(self.shared.addr) {
                    Ok(l) => break l,
                    Err(e) if Instant::now() >= deadline => {
                        panic!("forwarder: listen on {} again: {e}", self.shared.addr)
                    }
                    Err(_) => std::thread::sleep(POLL),
                }
            }
        });
        let epoch = {
            let mut st = self.shared.lock();
            st.mode = Mode::Open;
            self.shared.changed.notify_all();
            st.epoch
        };
        if let Some(l) = listener
            && let Err(e) = self.spawn_acceptor(l, epoch)
        {
            panic!("forwarder: accept thread: {e}");
        }
    }

    /// Bytes sent on from clients to the target so far.
    pub fn forwarded(&self) -> u64 {
        self.shared.forwarded.load(Ordering::SeqCst)
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// True while cut (by [`Forwarder::cut`] or a [`Forwarder::cut_after`] that fired).
    pub fn is_cut(&self) -> bool {
        self.shared.lock().mode == Mode::Cut
    }

    fn spawn_acceptor(&self, listener: TcpListener, epoch: u64) -> io::Result<()> {
        listener.set_nonblocking(true)?;
        let shared = Arc::clone(&self.shared);
        let threads = Arc::clone(&self.threads);
        let h = std::thread::Builder::new()
            .name("cut-accept".into())
            .spawn(move || accept_loop(&listener, epoch, &shared, &threads))?;
        *self
            .shared
            .acceptor
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(h);
        Ok(())
    }
}

fn push_thread(threads: &Mutex<Vec<JoinHandle<()>>>, h: JoinHandle<()>) {
    let mut t = threads
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    t.retain(|h| !h.is_finished());
    t.push(h);
}

/// Accepts until the forwarder is cut (a new epoch) or dropped; the listener closes when this returns.
fn accept_loop(
    listener: &TcpListener,
    epoch: u64,
    shared: &Arc<Shared>,
    threads: &Arc<Mutex<Vec<JoinHandle<()>>>>,
) {
    loop {
        if shared.stop.load(Ordering::SeqCst) || shared.lock().epoch != epoch {
            return;
        }
        match listener.accept() {
            Ok((client, _)) => {
                shared.accepted.fetch_add(1, Ordering::SeqCst);
                if let Err(e) = connect(client, shared, threads) {
                    eprintln!("forwarder {}: {e}", shared.addr);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(POLL),
            Err(_) => std::thread::sleep(POLL),
        }
    }
}

/// Connects an accepted client to the target and starts its two pumps.
fn connect(
    client: TcpStream,
    shared: &Arc<Shared>,
    threads: &Arc<Mutex<Vec<JoinHandle<()>>>>,
) -> io::Result<()> {
    client.set_nonblocking(false)?;
    if shared.lock().conns.len() >= MAX_CONNECTIONS {
        return Ok(());
    }
    let server = TcpStream::connect_timeout(&shared.target, CONNECT_WITHIN)?;
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    let id = shared.next_id.fetch_add(1, Ordering::SeqCst);
    {
        let mut st = shared.lock();
        if st.mode == Mode::Cut {
            return Ok(());
        }
        st.conns
            .push((id, client.try_clone()?, server.try_clone()?));
    }
    let (c2, s2) = (client.try_clone()?, server.try_clone()?);
    let up = Arc::clone(shared);
    let down = Arc::clone(shared);
    let h1 = std::thread::Builder::new()
        .name("cut-up".into())
        .spawn(move || pump(client, server, true, id, &up))?;
    let h2 = std::thread::Builder::new()
        .name("cut-down".into())
        .spawn(move || pump(s2, c2, false, id, &down))?;
    push_thread(threads, h1);
    push_thread(threads, h2);
    Ok(())
}

/// Copies `from` to `to` until either side closes or the forwarder cuts. `upstream`: the client-to-target
/// direction, which counts bytes and fires [`Forwarder::cut_after`].
fn pump(mut from: TcpStream, mut to: TcpStream, upstream: bool, id: u64, shared: &Shared) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut send = n;
        {
            let mut st = shared.lock();
            while st.mode == Mode::Stalled && !shared.stop.load(Ordering::SeqCst) {
                st = shared
                    .changed
                    .wait(st)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
            if st.mode == Mode::Cut || shared.stop.load(Ordering::SeqCst) {
                break;
            }
            if upstream {
                let done = shared.forwarded.load(Ordering::SeqCst);
                if let Some(at) = st.cut_at {
                    send = send.min(usize::try_from(at.saturating_sub(done)).unwrap_or(send));
                }
                shared.forwarded.fetch_add(send as u64, Ordering::SeqCst);
            }
        }
        if send > 0 && to.write_all(&buf[..send]).is_err() {
            break;
        }
        let reached = upstream
            && shared
                .lock()
                .cut_at
                .is_some_and(|at| shared.forwarded.load(Ordering::SeqCst) >= at);
        if send < n || reached {
            shared.cut();
            break;
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
    shared.lock().conns.retain(|(c, _, _)| *c != id);
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        {
            let mut st = self.shared.lock();
            for (_, a, b) in st.conns.drain(..) {
                let _ = a.shutdown(Shutdown::Both);
                let _ = b.shutdown(Shutdown::Both);
            }
            self.shared.changed.notify_all();
        }
        let acceptor = self
            .shared
            .acceptor
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(h) = acceptor {
            let _ = h.join();
        }
        let threads = std::mem::take(
            &mut *self
                .threads
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for h in threads {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An echo server on loopback, for as many connections as come (threads end with their connections).
    fn echo() -> SocketAddr {
        let l = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            for s in l.incoming() {
                let Ok(mut s) = s else { return };
                std::thread::spawn(move || {
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = s.read(&mut buf) {
                        if n == 0 || s.write_all(&buf[..n]).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        addr
    }

    fn round_trip(addr: SocketAddr, msg: &[u8]) -> io::Result<Vec<u8>> {
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
        s.set_read_timeout(Some(Duration::from_secs(2)))?;
        s.write_all(msg)?;
        let mut got = vec![0u8; msg.len()];
        s.read_exact(&mut got)?;
        Ok(got)
    }

    #[test]
    fn bytes_go_through_until_a_cut_then_connections_are_refused_until_healed() {
        let f = Forwarder::start(echo()).unwrap();
        assert_eq!(round_trip(f.addr(), b"hello").unwrap(), b"hello");
        let mut open = TcpStream::connect(f.addr()).unwrap();
        open.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        open.write_all(b"x").unwrap();
        let mut one = [0u8; 1];
        open.read_exact(&mut one).unwrap();
        f.cut();
        assert!(f.is_cut());
        // The open connection is closed, and a new one refused.
        let mut rest = Vec::new();
        assert!(matches!(open.read_to_end(&mut rest), Ok(0) | Err(_)));
        let refused = TcpStream::connect_timeout(&f.addr(), Duration::from_secs(2)).unwrap_err();
        assert_eq!(refused.kind(), io::ErrorKind::ConnectionRefused);
        f.heal();
        assert_eq!(round_trip(f.addr(), b"again").unwrap(), b"again");
        assert_eq!(f.forwarded(), 5 + 1 + 5);
    }

    #[test]
    fn a_cut_after_some_bytes_passes_exactly_those() {
        // A server that keeps what one connection sent, up to its close.
        let l = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let target = l.local_addr().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut got = Vec::new();
            let _ = s.read_to_end(&mut got);
            let _ = tx.send(got);
        });
        let f = Forwarder::start(target).unwrap();
        f.cut_after(10);
        let mut s = TcpStream::connect(f.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        s.write_all(&[7u8; 25]).unwrap();
        let got = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(got, vec![7u8; 10]);
        assert_eq!(f.forwarded(), 10);
        assert!(f.is_cut());
        let mut rest = Vec::new();
        assert!(matches!(s.read_to_end(&mut rest), Ok(0) | Err(_)));
    }

    #[test]
    fn a_stall_holds_bytes_until_healed() {
        let f = Forwarder::start(echo()).unwrap();
        f.stall();
        let mut s = TcpStream::connect(f.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        s.write_all(b"held").unwrap();
        let mut buf = [0u8; 4];
        let e = s.read_exact(&mut buf).unwrap_err();
        assert!(matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        ));
        f.heal();
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        s.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"held");
    }
}
