//! The connector under the HTTP client: a direct TCP connection (`super::dial`: guard and connection racing), or a
//! tunnel opened by the proxy-chain actor. TLS (hyper-rustls) wraps either, so HTTPS and HTTP/2 run inside the tunnel
//! and hyper pools tunnelled connections like direct ones. The chain used is attached to the connection
//! (`ProxyUsed`), so every response says how it travelled. [`Timed`] bounds the TLS handshake: once the transport
//! is up, the handshake has `connect_timeout` of its own and otherwise ends as `tls: handshake timed out`.

use super::dial::{Dialer, host_port};
use super::error::{LeaseLost, ProxyConnectError};
use crate::protocol::StartGate;
use crate::proxy::messages::{OpenChain, Opened, ProxyFailure};
use crate::proxy::socks::ChainStream;
use actix::Recipient;
use crawl_core::frontier::host_fp;
use crawl_observability::Attr;
use crawl_observability::trace::{Stamp, TraceCtx};
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// What the connectors learn about a connection opened for the fetch in whose task-local scope they run: the
/// fetch's trace (their spans go there) and when the transport and the whole connection were ready, as the span
/// times they become. The times are atomics (a stamp's nanoseconds, 0 for not seen): a fetch resets and reads them
/// once each, with plain loads and stores, where a lock cost two atomic writes each time.
#[derive(Debug)]
pub struct ConnProbe {
    pub trace: TraceCtx,
    transport_done: AtomicU64,
    conn_done: AtomicU64,
}

/// See [`ConnProbe`].
#[derive(Debug, Default, Clone, Copy)]
pub struct ProbeTimes {
    /// TCP (or the proxy tunnel) ready.
    pub transport_done: Option<Stamp>,
    /// TLS (when any) done: a new connection is usable.
    pub conn_done: Option<Stamp>,
}

impl ProbeTimes {
    /// A new connection was opened (false: a pooled one was reused).
    pub fn opened(&self) -> bool {
        self.conn_done.is_some()
    }
}

impl ConnProbe {
    pub fn new(trace: TraceCtx) -> Arc<ConnProbe> {
        Arc::new(ConnProbe {
            trace,
            transport_done: AtomicU64::new(0),
            conn_done: AtomicU64::new(0),
        })
    }

    /// What was seen so far.
    pub fn times(&self) -> ProbeTimes {
        let seen = |field: &AtomicU64| match field.load(Ordering::Acquire) {
            0 => None,
            nanos => Some(Stamp::from_unix_nanos(nanos)),
        };
        ProbeTimes {
            transport_done: seen(&self.transport_done),
            conn_done: seen(&self.conn_done),
        }
    }

    /// Forgets what was seen (before the next request of the same fetch, e.g. a redirect hop).
    pub fn reset(&self) {
        self.transport_done.store(0, Ordering::Release);
        self.conn_done.store(0, Ordering::Release);
    }

    /// The transport (TCP, or the proxy chain's tunnel) is up at `at`.
    fn transport_up(&self, at: Instant) {
        self.transport_done
            .store(Stamp::from(at).unix_nanos(), Ordering::Release);
    }

    /// A new connection is usable at `at`.
    fn opened_at(&self, at: Instant) {
        self.conn_done
            .store(Stamp::from(at).unix_nanos(), Ordering::Release);
    }
}

tokio::task_local! {
    static PROBE: Arc<ConnProbe>;
    /// The job's shard-lease gate (a crawl shared by many processes): the connections opened for the fetch check
    /// it again at each write.
    static GATE: StartGate;
    /// Set (synchronously) around the TLS connector's call of [`ProxyConnector::call`]: notified when the transport
    /// is up, which starts the handshake deadline.
    static TRANSPORT_READY: Arc<Notify>;
}

/// Tells [`Timed`] the transport of its connection is up (no-op outside an HTTPS connect).
fn transport_ready(ready: Option<&Arc<Notify>>) {
    if let Some(r) = ready {
        r.notify_one();
    }
}

/// Runs `fut` (a request) with `probe` visible to the connectors it calls. A plain function rather than an
/// `async fn`: a request's future is several KiB, and every future layer around it is one more copy of it.
pub fn with_probe<F: Future>(probe: Arc<ConnProbe>, fut: F) -> impl Future<Output = F::Output> {
    PROBE.scope(probe, fut)
}

/// Runs `fut` (a job's fetch) with its host's lease `gate` visible to the connectors it calls (see [`Conn`]).
pub fn with_gate<F: Future>(gate: StartGate, fut: F) -> impl Future<Output = F::Output> {
    GATE.scope(gate, fut)
}

/// The lease gate of a connection to `uri`'s host opened for the enclosing fetch: the job's gate for its own host
/// (which must still be open: a lease that ran out after the job's start check opens nothing), and for another
/// host (a robots.txt redirect's target) the gate of that host when this process holds it; None outside a crawl
/// shared by many processes, or for a host of another process's shards (nothing of it is this process's to
/// guard).
fn connection_gate(uri: &http::Uri) -> Result<Option<StartGate>, LeaseLost> {
    let Ok(job) = GATE.try_with(Clone::clone) else {
        return Ok(None);
    };
    let host = host_fp(uri.host().unwrap_or(""));
    let gate = job.for_host(host);
    if host == job.host() {
        return if gate.may_send() {
            Ok(Some(gate))
        } else {
            Err(LeaseLost)
        };
    }
    Ok(gate.may_send().then_some(gate))
}

/// The probe of the enclosing request, if any.
fn probe() -> Option<Arc<ConnProbe>> {
    PROBE.try_with(Arc::clone).ok()
}

/// `f` of the probe of the enclosing request (None outside one), without a reference of its own to it.
pub fn with_current_probe<R>(f: impl FnOnce(&ConnProbe) -> R) -> Option<R> {
    PROBE.try_with(|p| f(p)).ok()
}

/// Records a `net.connect` span for a direct TCP connection and marks the transport ready.
fn record_tcp(
    probe: Option<&Arc<ConnProbe>>,
    host: &str,
    port: u16,
    start: Instant,
    result: Result<&TokioIo<TcpStream>, &str>,
) {
    let Some(p) = probe else {
        return;
    };
    let end = Instant::now();
    let address = Attr::new("server.address", host);
    let port = Attr::new("server.port", i64::from(port));
    match result {
        Ok(io) => {
            // The peer's address (a system call and a string) only for a span that is exported.
            if p.trace.is_sampled() {
                match io.inner().peer_addr() {
                    Ok(peer) => {
                        let peer = peer.ip().to_string();
                        let peer = Attr::new("network.peer.address", &peer);
                        p.trace
                            .span("net.connect", start, end, &[address, port, peer]);
                    }
                    Err(_) => p.trace.span("net.connect", start, end, &[address, port]),
                }
            }
            p.transport_up(end);
        }
        Err(e) => p
            .trace
            .failed_span("net.connect", start, end, &[address, port], e),
    }
}

/// Wraps the TLS connector: times the whole connection, so the TLS handshake is what follows the transport, and
/// bounds that handshake by the duration given (`connect_timeout`), counted from the moment the transport is up.
#[derive(Clone)]
pub struct Timed<C>(pub C, pub Duration);

impl<C> tower_service::Service<http::Uri> for Timed<C>
where
    C: tower_service::Service<http::Uri>,
    C::Response: Connection + Send + 'static,
    C::Error: std::fmt::Display + From<super::error::TlsCause> + Send + 'static,
    C::Future: Send + 'static,
{
    type Response = C::Response;
    type Error = C::Error;
    type Future = Pin<Box<dyn Future<Output = Result<C::Response, C::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), C::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let probe = probe();
        let https = uri.scheme_str() == Some("https");
        let start = Instant::now();
        let handshake_timeout = self.1;
        let (fut, ready) = if https {
            let ready = Arc::new(Notify::new());
            let fut = TRANSPORT_READY.sync_scope(Arc::clone(&ready), || self.0.call(uri));
            (fut, Some(ready))
        } else {
            (self.0.call(uri), None)
        };
        Box::pin(async move {
            let res = match ready {
                None => fut.await,
                Some(ready) => {
                    let deadline = async {
                        ready.notified().await;
                        tokio::time::sleep(handshake_timeout).await;
                    };
                    tokio::select! {
                        biased;
                        res = fut => res,
                        () = deadline => {
                            tracing::debug!(timeout_ms = handshake_timeout.as_millis() as u64, "tls handshake timed out");
                            Err(super::error::TlsCause::HandshakeTimedOut.into())
                        }
                    }
                }
            };
            if let Some(p) = probe {
                let end = Instant::now();
                let transport = p.times().transport_done;
                match &res {
                    Ok(conn) => {
                        p.opened_at(end);
                        if https {
                            let alpn = if conn.connected().is_negotiated_h2() {
                                "h2"
                            } else {
                                "http/1.1"
                            };
                            p.trace.span(
                                "tls.handshake",
                                transport.unwrap_or(Stamp::from(start)),
                                end,
                                &[Attr::new("tls.alpn", alpn)],
                            );
                        }
                    }
                    Err(e) if https && transport.is_some() => p.trace.failed_span(
                        "tls.handshake",
                        transport.unwrap_or(Stamp::from(start)),
                        end,
                        &[],
                        &e.to_string(),
                    ),
                    Err(_) => {}
                }
            }
            res
        })
    }
}

/// Which way a response's connection went: a chain name or "direct". Found in the response extensions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyUsed(pub String);

/// A connection, direct or tunnelled. In a crawl shared by many processes it holds its host's lease gate and
/// refuses every write once the lease has run out on the local clock: the job's start check comes before the
/// pool's checkout, the connect and the request's write, and a request held up in between (or by a pause of the
/// whole process) must not go out to a host another process may be crawling by then.
pub struct Conn {
    link: Link,
    gate: Option<StartGate>,
}

enum Link {
    Direct(TokioIo<TcpStream>, bool),
    Chain(TokioIo<ChainStream>, String),
}

impl Connection for Conn {
    fn connected(&self) -> Connected {
        match &self.link {
            Link::Direct(io, proxied_config) => {
                let c = io.connected();
                if *proxied_config {
                    c.extra(ProxyUsed("direct".into()))
                } else {
                    c
                }
            }
            Link::Chain(_, chain) => Connected::new().extra(ProxyUsed(chain.clone())),
        }
    }
}

impl Read for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.get_mut().link {
            Link::Direct(io, _) => Pin::new(io).poll_read(cx, buf),
            Link::Chain(io, _) => Pin::new(io).poll_read(cx, buf),
        }
    }
}

impl Write for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if let Some(gate) = &this.gate
            && !gate.may_send()
        {
            return Poll::Ready(Err(io::Error::other(LeaseLost)));
        }
        match &mut this.link {
            Link::Direct(io, _) => Pin::new(io).poll_write(cx, buf),
            Link::Chain(io, _) => Pin::new(io).poll_write(cx, buf),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().link {
            Link::Direct(io, _) => Pin::new(io).poll_flush(cx),
            Link::Chain(io, _) => Pin::new(io).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().link {
            Link::Direct(io, _) => Pin::new(io).poll_shutdown(cx),
            Link::Chain(io, _) => Pin::new(io).poll_shutdown(cx),
        }
    }
}

/// Direct connections, or chains through the proxy-chain actor when one is configured.
#[derive(Clone)]
pub struct ProxyConnector {
    pub direct: Dialer,
    pub proxy: Option<Recipient<OpenChain>>,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl tower_service::Service<http::Uri> for ProxyConnector {
    type Response = Conn;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Conn, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.direct.poll_ready(cx)
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let gate = match connection_gate(&uri) {
            Ok(gate) => gate,
            Err(lost) => return Box::pin(std::future::ready(Err(Box::new(lost) as BoxError))),
        };
        let mut direct = self.direct.clone();
        let probe = probe();
        let ready = TRANSPORT_READY.try_with(Arc::clone).ok();
        let (host, port) = host_port(&uri);
        let Some(proxy) = self.proxy.clone() else {
            let start = Instant::now();
            let fut = direct.call(uri);
            return Box::pin(async move {
                match fut.await {
                    Ok(io) => {
                        record_tcp(probe.as_ref(), &host, port, start, Ok(&io));
                        transport_ready(ready.as_ref());
                        Ok(Conn {
                            link: Link::Direct(io, false),
                            gate,
                        })
                    }
                    Err(e) => {
                        record_tcp(probe.as_ref(), &host, port, start, Err(&e.to_string()));
                        Err(e)
                    }
                }
            });
        };
        let trace = probe.as_ref().map(|p| p.trace).unwrap_or_default();
        Box::pin(async move {
            let mut tried: Vec<String> = Vec::new();
            loop {
                let msg = OpenChain {
                    host: host.clone(),
                    port,
                    tried: tried.clone(),
                    trace,
                };
                match proxy.send(msg).await {
                    Ok(Ok(Opened::Chain { chain, stream })) => {
                        if let Some(p) = &probe {
                            p.transport_up(Instant::now());
                        }
                        transport_ready(ready.as_ref());
                        return Ok(Conn {
                            link: Link::Chain(TokioIo::new(stream), chain),
                            gate,
                        });
                    }
                    Ok(Ok(Opened::Direct { .. })) => {
                        let start = Instant::now();
                        return match direct.call(uri).await {
                            Ok(io) => {
                                record_tcp(probe.as_ref(), &host, port, start, Ok(&io));
                                transport_ready(ready.as_ref());
                                Ok(Conn {
                                    link: Link::Direct(io, true),
                                    gate,
                                })
                            }
                            Err(e) => {
                                record_tcp(probe.as_ref(), &host, port, start, Err(&e.to_string()));
                                Err(e)
                            }
                        };
                    }
                    Ok(Err(ProxyFailure::Fault { chain, detail })) => {
                        tracing::debug!(host, chain, detail, "proxy chain failed; trying another");
                        tried.push(chain);
                    }
                    Ok(Err(ProxyFailure::Refused { host, addr })) => {
                        return Err(
                            Box::new(super::error::ResolveError::PrivateOnly { host, addr })
                                as BoxError,
                        );
                    }
                    Ok(Err(e @ ProxyFailure::Target { .. })) => {
                        return Err(Box::new(ProxyConnectError::Target(e.to_string())) as BoxError);
                    }
                    Ok(Err(e @ (ProxyFailure::NoChain { .. } | ProxyFailure::Panicked { .. }))) => {
                        return Err(Box::new(ProxyConnectError::Proxy(e.to_string())) as BoxError);
                    }
                    Err(e) => {
                        return Err(Box::new(ProxyConnectError::Proxy(format!(
                            "proxy-chain actor unavailable: {e}"
                        ))) as BoxError);
                    }
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fetcher::test_lease::TestLease;
    use crawl_core::frontier::Fp;

    /// The gate a connection to `url` gets in a fetch of `job`'s host, `held` the hosts held.
    async fn gate_of(held: &[&str], job: &str, url: &str) -> Result<Option<Fp>, LeaseLost> {
        let shards = Arc::new(TestLease::of(held));
        let gate = StartGate::new(shards, host_fp(job));
        let uri: http::Uri = url.parse().unwrap();
        with_gate(gate, async move { connection_gate(&uri) })
            .await
            .map(|g| g.map(|g| g.host()))
    }

    #[tokio::test]
    async fn a_connection_is_gated_by_its_own_host_s_lease() {
        let uri: http::Uri = "http://a.test/".parse().unwrap();
        assert!(
            matches!(connection_gate(&uri), Ok(None)),
            "outside a crawl shared by many processes"
        );
        // The job's own host: gated while held, refused once the lease ran out.
        let a = Ok(Some(host_fp("a.test")));
        assert_eq!(
            gate_of(&["a.test"], "a.test", "http://a.test:8080/x").await,
            a
        );
        assert_eq!(
            gate_of(&[], "a.test", "http://a.test/").await,
            Err(LeaseLost)
        );
        // Another host (a robots.txt redirect's target): its own gate when held, none when another process's.
        let b = Ok(Some(host_fp("b.test")));
        assert_eq!(
            gate_of(&["a.test", "b.test"], "a.test", "https://b.test/").await,
            b
        );
        assert_eq!(
            gate_of(&["a.test"], "a.test", "https://b.test/").await,
            Ok(None)
        );
        // IPv6 hosts are named with their brackets, as the politeness key names them.
        let v6 = Ok(Some(host_fp("[::1]")));
        assert_eq!(gate_of(&["[::1]"], "[::1]", "http://[::1]:81/").await, v6);
    }

    /// The probe gives back the times the connectors recorded, as span stamps, in the fetch's scope, and forgets
    /// them on reset; a connection counts as opened once it was usable.
    #[tokio::test]
    async fn a_probe_keeps_the_connection_s_times_until_reset() {
        let probe = ConnProbe::new(TraceCtx::default());
        assert!(
            with_current_probe(ConnProbe::times).is_none(),
            "outside a fetch"
        );
        let seen = with_probe(probe.clone(), async {
            let fresh = with_current_probe(ConnProbe::times).expect("in scope");
            assert!(!fresh.opened() && fresh.transport_done.is_none() && fresh.conn_done.is_none());
            let tcp = Instant::now() + Duration::from_nanos(1_234_567);
            let tls = tcp + Duration::from_millis(3);
            with_current_probe(|p| p.transport_up(tcp));
            let tcp_only = with_current_probe(ConnProbe::times).expect("in scope");
            assert!(
                !tcp_only.opened(),
                "the transport alone is not a usable connection"
            );
            with_current_probe(|p| p.opened_at(tls));
            let seen = with_current_probe(ConnProbe::times).expect("in scope");
            (seen, tcp, tls)
        })
        .await;
        let (times, tcp, tls) = seen;
        assert!(times.opened());
        assert_eq!(times.transport_done, Some(Stamp::from(tcp)));
        assert_eq!(times.conn_done, Some(Stamp::from(tls)));
        probe.reset();
        let cleared = probe.times();
        assert!(
            !cleared.opened() && cleared.transport_done.is_none() && cleared.conn_done.is_none()
        );
    }
}
