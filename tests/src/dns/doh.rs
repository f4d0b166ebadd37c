//! [`FakeDoh`]: a fake RFC 8484 DNS-over-HTTPS server (GET `?dns=<base64url>` and POST
//! `application/dns-message` on `/dns-query`), h2 and http/1.1 by ALPN, with its own test CA.

use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::header::{ALLOW, CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use hyper_util::server::conn::auto;
use rustls::pki_types::CertificateDer;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

use super::DnsError;
use super::tasks::{Exec, Tasks};
use super::tls;
use super::zone::{Behaviour, CatchAll, QueryLog, Reply, State, Transport, Zone, encode};

/// The DNS name the server certificate is issued for (plus the IP SAN 127.0.0.1).
pub const DOH_HOST: &str = "doh.test";

/// RFC 8484 media type.
const DNS_MESSAGE: &str = "application/dns-message";
/// Largest DNS message accepted in a POST body.
const MAX_BODY: usize = 65_535;
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

pub(super) struct Shared {
    state: State,
    requests: AtomicUsize,
}

/// A fake DoH server on 127.0.0.1:<port>, reachable as `https://doh.test:<port>/dns-query` with the CA from
/// [`FakeDoh::ca_der`] / [`FakeDoh::ca_pem`]. Stops on [`FakeDoh::shutdown`] or drop.
pub struct FakeDoh {
    addr: SocketAddr,
    /// held by every task of the server (tests check it is released)
    pub(super) shared: Arc<Shared>,
    tasks: Arc<Tasks>,
    ca_pem: String,
    ca_der: CertificateDer<'static>,
}

impl FakeDoh {
    /// Makes a new CA and server certificate, binds 127.0.0.1:0 and starts answering from `zone`.
    pub async fn start(zone: Zone) -> Result<Self, DnsError> {
        let tls = tls::make(DOH_HOST)?;
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            state: State::new(zone),
            requests: AtomicUsize::new(0),
        });
        let tasks = Arc::new(Tasks::default());
        tasks.spawn(accept_loop(
            listener,
            TlsAcceptor::from(tls.server),
            Arc::clone(&shared),
            Arc::clone(&tasks),
        ));
        tracing::debug!(%addr, "fake doh started");
        Ok(Self {
            addr,
            shared,
            tasks,
            ca_pem: tls.ca_pem,
            ca_der: tls.ca_der,
        })
    }

    /// `https://doh.test:<port>/dns-query`
    pub fn url(&self) -> String {
        format!("https://{DOH_HOST}:{}/dns-query", self.addr.port())
    }

    /// The address to connect to instead of resolving [`DOH_HOST`]: 127.0.0.1.
    pub fn bootstrap(&self) -> IpAddr {
        self.addr.ip()
    }

    /// 127.0.0.1:<port>
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The test CA certificate in PEM.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The test CA certificate in DER, for a rustls `RootCertStore`.
    pub fn ca_der(&self) -> CertificateDer<'static> {
        self.ca_der.clone()
    }

    /// Writes the CA PEM to `dir/fake-doh-ca-<port>.pem` (for `[[resolver.doh]] ca_file`) and returns the path.
    pub fn write_ca_file(&self, dir: &Path) -> std::io::Result<PathBuf> {
        let path = dir.join(format!("fake-doh-ca-{}.pem", self.addr.port()));
        std::fs::write(&path, self.ca_pem.as_bytes())?;
        Ok(path)
    }

    /// A rustls client config trusting only this server's CA, offering h2 and http/1.1.
    pub fn client_config(&self) -> Result<rustls::ClientConfig, DnsError> {
        tls::client_config(std::slice::from_ref(&self.ca_der), &[b"h2", b"http/1.1"])
    }

    /// Sets (or replaces) the behaviour of `name`. Over DoH `Twice` answers only the real address, `Truncate`
    /// gives the full answer and `Drop` leaves the request hanging.
    pub fn set(&self, name: &str, behaviour: Behaviour) {
        self.shared.state.set(name, behaviour);
    }

    pub fn remove(&self, name: &str) {
        self.shared.state.remove(name);
    }

    pub fn set_catch_all(&self, catch_all: CatchAll) {
        self.shared.state.set_catch_all(catch_all);
    }

    /// `true`: every DoH query gets HTTP 503 (still counted) until `set_down(false)`.
    pub fn set_down(&self, down: bool) {
        self.shared.state.set_down(down);
    }

    pub fn is_down(&self) -> bool {
        self.shared.state.is_down()
    }

    /// Well-formed DNS queries received (GET and POST, also while down).
    pub fn queries(&self) -> usize {
        self.shared.state.total()
    }

    pub fn get_queries(&self) -> usize {
        self.shared.state.count(Transport::DohGet)
    }

    pub fn post_queries(&self) -> usize {
        self.shared.state.count(Transport::DohPost)
    }

    /// Queries for `name` (case-insensitive, trailing dot ignored).
    pub fn queries_for(&self, name: &str) -> usize {
        self.shared.state.queries_for(name)
    }

    /// Every HTTP request received, including malformed ones and wrong paths.
    pub fn requests(&self) -> usize {
        self.shared.requests.load(Ordering::Acquire)
    }

    pub fn log(&self) -> Vec<QueryLog> {
        self.shared.state.log()
    }

    /// Zeroes the query counters (not [`FakeDoh::requests`]) and clears the log.
    pub fn reset_counters(&self) {
        self.shared.state.reset_counters();
    }

    /// Stops every task (listener, connections, streams) and waits until they have ended.
    pub async fn shutdown(self) {
        self.tasks.shutdown().await;
    }
}

impl Drop for FakeDoh {
    fn drop(&mut self) {
        self.tasks.abort();
    }
}

impl std::fmt::Debug for FakeDoh {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeDoh").field("addr", &self.addr).finish()
    }
}

async fn accept_loop(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    shared: Arc<Shared>,
    tasks: Arc<Tasks>,
) {
    loop {
        match listener.accept().await {
            Ok((stream, _peer)) => {
                let conn = connection(
                    stream,
                    acceptor.clone(),
                    Arc::clone(&shared),
                    Arc::clone(&tasks),
                );
                tasks.spawn(conn);
            }
            Err(e) => {
                tracing::debug!(error = %e, "fake doh accept failed");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

async fn connection(
    stream: TcpStream,
    acceptor: TlsAcceptor,
    shared: Arc<Shared>,
    tasks: Arc<Tasks>,
) {
    let _ = stream.set_nodelay(true);
    let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "fake doh tls handshake failed");
            return;
        }
        Err(_) => {
            tracing::debug!("fake doh tls handshake timed out");
            return;
        }
    };
    let builder = auto::Builder::new(Exec(tasks));
    let svc = hyper::service::service_fn(move |req| handle(Arc::clone(&shared), req));
    if let Err(e) = builder.serve_connection(TokioIo::new(tls), svc).await {
        tracing::debug!(error = %e, "fake doh connection ended with error");
    }
}

fn response(status: StatusCode, body: Bytes) -> Response<Full<Bytes>> {
    let mut resp = Response::new(Full::new(body));
    *resp.status_mut() = status;
    resp
}

fn error(status: StatusCode) -> Response<Full<Bytes>> {
    response(status, Bytes::from(status.as_str().to_owned()))
}

/// The `dns` parameter of a GET query string.
fn dns_param(query: &str) -> Option<&str> {
    query.split('&').find_map(|kv| kv.strip_prefix("dns="))
}

fn is_dns_message(req: &Request<Incoming>) -> bool {
    req.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case(DNS_MESSAGE))
}

async fn handle(
    shared: Arc<Shared>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    shared.requests.fetch_add(1, Ordering::AcqRel);
    if req.uri().path() != "/dns-query" {
        return Ok(error(StatusCode::NOT_FOUND));
    }
    let (transport, bytes) = match *req.method() {
        Method::GET => {
            let Some(bytes) = req
                .uri()
                .query()
                .and_then(dns_param)
                .and_then(base64url_decode)
            else {
                return Ok(error(StatusCode::BAD_REQUEST));
            };
            (Transport::DohGet, Bytes::from(bytes))
        }
        Method::POST => {
            if !is_dns_message(&req) {
                return Ok(error(StatusCode::UNSUPPORTED_MEDIA_TYPE));
            }
            match Limited::new(req.into_body(), MAX_BODY).collect().await {
                Ok(body) => (Transport::DohPost, body.to_bytes()),
                Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
                    return Ok(error(StatusCode::PAYLOAD_TOO_LARGE));
                }
                Err(_) => return Ok(error(StatusCode::BAD_REQUEST)),
            }
        }
        _ => {
            let mut resp = error(StatusCode::METHOD_NOT_ALLOWED);
            resp.headers_mut()
                .insert(ALLOW, HeaderValue::from_static("GET, POST"));
            return Ok(resp);
        }
    };
    let msg = match shared.state.process(&bytes, transport) {
        Err(_) => return Ok(error(StatusCode::BAD_REQUEST)),
        Ok(Reply::Down) => return Ok(error(StatusCode::SERVICE_UNAVAILABLE)),
        Ok(Reply::Silent) => {
            // `Behaviour::Drop`: never answer; the task ends when the client goes away or the server stops
            let never: Infallible = std::future::pending().await;
            match never {}
        }
        Ok(Reply::One(msg)) | Ok(Reply::Two { second: msg, .. }) => msg,
    };
    let Some(wire) = encode(&msg) else {
        return Ok(error(StatusCode::INTERNAL_SERVER_ERROR));
    };
    let max_age = msg.answers.iter().map(|r| r.ttl).min().unwrap_or(0);
    let mut resp = response(StatusCode::OK, Bytes::from(wire));
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(DNS_MESSAGE));
    if let Ok(v) = HeaderValue::from_str(&format!("max-age={max_age}")) {
        resp.headers_mut().insert(CACHE_CONTROL, v);
    }
    Ok(resp)
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn sextet(c: u8) -> Option<u32> {
    let v = match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'-' => 62,
        b'_' => 63,
        _ => return None,
    };
    Some(u32::from(v))
}

/// Decodes base64url (RFC 4648 §5) as DoH GET uses it: no padding (trailing `=` tolerated). `None` if invalid.
pub fn base64url_decode(s: &str) -> Option<Vec<u8>> {
    let b = s.trim_end_matches('=').as_bytes();
    if b.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(b.len() / 4 * 3 + 2);
    for chunk in b.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= sextet(c)? << (18 - 6 * i);
        }
        let bytes = acc.to_be_bytes();
        out.extend_from_slice(bytes.get(1..chunk.len())?);
    }
    Some(out)
}

/// Encodes base64url without padding (for DoH GET `?dns=`).
pub fn base64url_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let mut acc = 0u32;
        for (i, &b) in chunk.iter().enumerate() {
            acc |= u32::from(b) << (16 - 8 * i);
        }
        for i in 0..=chunk.len() {
            let idx = (acc >> (18 - 6 * i)) & 63;
            if let Some(&c) = ALPHABET.get(idx as usize) {
                out.push(char::from(c));
            }
        }
    }
    out
}
