//! Tests of `socks.rs` against minimal in-test SOCKS5 servers on loopback (crawl-actors cannot use crawl-tests'
//! servers): parsing and masking, 2-hop chains, auth, every misbehaviour classified within its deadline, the
//! hyper integration and tunnel clean-up. The fault cases are in `socks_tests_faults.rs`.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::*;

const USER: &str = "alice-user";
const PASS: &str = "s3cr3t-PW";

// ---------- a minimal SOCKS5 server ----------

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Good,
    HangGreeting,
    HangAuth,
    HangConnect,
    RefuseAuth,
    Reply(u8),
    Malformed,
    CloseAfterGreeting,
    TrickleReply(Duration),
}

struct Srv {
    addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
    tunnels: Arc<AtomicUsize>,
    seen: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Srv {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Srv {
    async fn start(ip: &str, mode: Mode, auth: Option<(&str, &str)>) -> Srv {
        let ip: IpAddr = ip.parse().unwrap();
        let listener = TcpListener::bind((ip, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let tunnels = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let auth = auth.map(|(u, p)| (u.to_owned(), p.to_owned()));
        let names: HashMap<String, IpAddr> =
            [("echo.test".to_owned(), "127.0.0.1".parse().unwrap())].into();
        let (acc, tun, sn) = (accepted.clone(), tunnels.clone(), seen.clone());
        let task = tokio::spawn(async move {
            let mut conns = JoinSet::new();
            loop {
                let Ok((c, _)) = listener.accept().await else {
                    break;
                };
                acc.fetch_add(1, Ordering::SeqCst);
                let (auth, names, tun, sn) = (auth.clone(), names.clone(), tun.clone(), sn.clone());
                while conns.try_join_next().is_some() {}
                conns.spawn(async move {
                    let _ = serve(c, mode, auth, ip, names, tun, sn).await;
                });
            }
        });
        Srv {
            addr,
            accepted,
            tunnels,
            seen,
            task,
        }
    }

    fn hop(&self, auth: Option<(&str, &str)>) -> HopSpec {
        HopSpec {
            host: self.addr.ip().to_string(),
            port: self.addr.port(),
            auth: auth.map(|(u, p)| (u.to_owned(), p.to_owned())),
        }
    }

    async fn wait_no_tunnels(&self) -> bool {
        for _ in 0..200 {
            if self.tunnels.load(Ordering::SeqCst) == 0 {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }
}

struct TunnelGuard(Arc<AtomicUsize>);
impl Drop for TunnelGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Reads until the client goes away.
async fn hold(mut c: TcpStream) -> std::io::Result<()> {
    let mut sink = [0u8; 256];
    while c.read(&mut sink).await? > 0 {}
    Ok(())
}

async fn serve(
    mut c: TcpStream,
    mode: Mode,
    auth: Option<(String, String)>,
    ip: IpAddr,
    names: HashMap<String, IpAddr>,
    tunnels: Arc<AtomicUsize>,
    seen: Arc<Mutex<Vec<String>>>,
) -> std::io::Result<()> {
    let mut h = [0u8; 2];
    c.read_exact(&mut h).await?;
    let mut methods = vec![0u8; usize::from(h[1])];
    c.read_exact(&mut methods).await?;
    match mode {
        Mode::HangGreeting => return hold(c).await,
        Mode::Malformed => return c.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").await,
        Mode::CloseAfterGreeting => return Ok(()),
        _ => {}
    }
    let wants_auth = auth.is_some() || matches!(mode, Mode::RefuseAuth | Mode::HangAuth);
    if wants_auth {
        if !methods.contains(&2) {
            return c.write_all(&[5, 0xff]).await;
        }
        c.write_all(&[5, 2]).await?;
        let mut v = [0u8; 2];
        c.read_exact(&mut v).await?;
        let mut user = vec![0u8; usize::from(v[1])];
        c.read_exact(&mut user).await?;
        let mut pl = [0u8; 1];
        c.read_exact(&mut pl).await?;
        let mut pass = vec![0u8; usize::from(pl[0])];
        c.read_exact(&mut pass).await?;
        if mode == Mode::HangAuth {
            return hold(c).await;
        }
        let ok = mode != Mode::RefuseAuth
            && auth
                .as_ref()
                .is_some_and(|(u, p)| u.as_bytes() == user && p.as_bytes() == pass);
        if !ok {
            return c.write_all(&[1, 1]).await;
        }
        c.write_all(&[1, 0]).await?;
    } else {
        c.write_all(&[5, 0]).await?;
    }
    let mut req = [0u8; 4];
    c.read_exact(&mut req).await?;
    let (dest, label) = match req[3] {
        1 => {
            let mut a = [0u8; 6];
            c.read_exact(&mut a).await?;
            let ip = IpAddr::from([a[0], a[1], a[2], a[3]]);
            let sa = SocketAddr::new(ip, u16::from_be_bytes([a[4], a[5]]));
            (Some(sa), sa.to_string())
        }
        4 => {
            let mut a = [0u8; 18];
            c.read_exact(&mut a).await?;
            let mut o = [0u8; 16];
            o.copy_from_slice(&a[..16]);
            let sa = SocketAddr::new(IpAddr::from(o), u16::from_be_bytes([a[16], a[17]]));
            (Some(sa), sa.to_string())
        }
        _ => {
            let mut l = [0u8; 1];
            c.read_exact(&mut l).await?;
            let mut n = vec![0u8; usize::from(l[0]) + 2];
            c.read_exact(&mut n).await?;
            let port = u16::from_be_bytes([n[n.len() - 2], n[n.len() - 1]]);
            let name = String::from_utf8_lossy(&n[..n.len() - 2]).into_owned();
            (
                names.get(&name).map(|ip| SocketAddr::new(*ip, port)),
                format!("{name}:{port}"),
            )
        }
    };
    seen.lock().unwrap().push(label);
    let ok_reply = [5, 0, 0, 1, 127, 0, 0, 1, 0, 80];
    match mode {
        Mode::HangConnect => return hold(c).await,
        Mode::Reply(code) => return c.write_all(&[5, code, 0, 1, 0, 0, 0, 0, 0, 0]).await,
        Mode::TrickleReply(every) => {
            for b in ok_reply {
                c.write_all(&[b]).await?;
                tokio::time::sleep(every).await;
            }
            return hold(c).await;
        }
        _ => {}
    }
    let Some(dest) = dest else {
        return c.write_all(&[5, 4, 0, 1, 0, 0, 0, 0, 0, 0]).await;
    };
    let sock = if dest.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    if dest.is_ipv4() == ip.is_ipv4() {
        sock.bind(SocketAddr::new(ip, 0))?;
    }
    let mut out = match sock.connect(dest).await {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            return c.write_all(&[5, 5, 0, 1, 0, 0, 0, 0, 0, 0]).await;
        }
        Err(_) => return c.write_all(&[5, 1, 0, 1, 0, 0, 0, 0, 0, 0]).await,
    };
    c.write_all(&ok_reply).await?;
    tunnels.fetch_add(1, Ordering::SeqCst);
    let _guard = TunnelGuard(tunnels);
    tokio::io::copy_bidirectional(&mut c, &mut out).await?;
    Ok(())
}

// ---------- an HTTP target that answers with the peer IP ----------

async fn echo_http() -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let mut conns = JoinSet::new();
        while let Ok((s, peer)) = l.accept().await {
            conns.spawn(async move {
                let svc = hyper::service::service_fn(move |_req| async move {
                    Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::from(
                        peer.ip().to_string(),
                    ))))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(s), svc)
                    .await;
            });
        }
    });
    (addr, task)
}

fn quick() -> Deadlines {
    Deadlines {
        connect: Duration::from_secs(2),
        greeting: Duration::from_secs(2),
        auth: Duration::from_secs(2),
        connect_reply: Duration::from_secs(2),
        chain: Duration::from_secs(5),
    }
}

fn assert_clean(e: &ChainError) {
    for s in [e.to_string(), format!("{e:?}")] {
        assert!(
            !s.contains(PASS) && !s.contains(USER),
            "credentials leaked: {s}"
        );
    }
}

async fn get_body(stream: ChainStream, host: &str) -> String {
    let (mut tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let req = http::Request::get("/")
        .header("host", host)
        .body(Full::new(Bytes::new()))
        .unwrap();
    let res = tx.send_request(req).await.unwrap();
    assert_eq!(res.status(), 200);
    String::from_utf8(res.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap()
}

// ---------- parsing and masking ----------

#[test]
fn parses_hops_and_masks_credentials() {
    let h = parse_hop("socks5://alice-user:s3cr3t%2DPW@127.0.0.1:1080").unwrap();
    assert_eq!(h.host, "127.0.0.1");
    assert_eq!(h.port, 1080);
    assert_eq!(h.auth, Some((USER.to_owned(), PASS.to_owned())));
    assert_eq!(h.to_string(), "socks5://***@127.0.0.1:1080");
    assert_eq!(format!("{h:?}"), "socks5://***@127.0.0.1:1080");

    let h = parse_hop("SOCKS5://[::1]:9050/").unwrap();
    assert_eq!(
        (h.host.as_str(), h.port, h.auth.is_none()),
        ("::1", 9050, true)
    );
    assert_eq!(h.to_string(), "socks5://[::1]:9050");

    let h = parse_hop("socks5://u:p%40ss@proxy-1.example:1").unwrap();
    assert_eq!(h.auth, Some(("u".to_owned(), "p@ss".to_owned())));
    // an unencoded '@' in the password: the last '@' separates the host
    let h = parse_hop("socks5://u:a@b@h:2").unwrap();
    assert_eq!((h.host.as_str(), h.auth.unwrap().1.as_str()), ("h", "a@b"));
}

#[test]
fn parse_errors_never_echo_the_input() {
    let cases = [
        ("http://alice-user:s3cr3t-PW@h:1", HopParseError::BadScheme),
        (
            "socks5://alice-user:s3cr3t-PW@h:1/x",
            HopParseError::HasPath,
        ),
        (
            "socks5://alice-user:s3cr3t-PW@:1",
            HopParseError::MissingHost,
        ),
        (
            "socks5://alice-user:s3cr3t-PW@h",
            HopParseError::MissingPort,
        ),
        ("socks5://alice-user:s3cr3t-PW@h:0", HopParseError::BadPort),
        (
            "socks5://alice-user:s3cr3t-PW@h:99999",
            HopParseError::BadPort,
        ),
        ("socks5://alice-user:s3cr3t-PW", HopParseError::BadPort),
        ("socks5://s3cr3t-PW@h:1", HopParseError::MissingPassword),
        (
            "socks5://alice-user:@h:1",
            HopParseError::BadCredentialLength,
        ),
        (
            "socks5://alice-user:s3cr3t-PW%zz@h:1",
            HopParseError::BadPercentEncoding,
        ),
        (
            "socks5://alice-user:s3cr3t-PW%ff@h:1",
            HopParseError::BadPercentEncoding,
        ),
        (
            "socks5://alice-user:s3cr3t-PW@h st:1",
            HopParseError::BadHost,
        ),
        (
            "socks5://alice-user:s3cr3t-PW@[::zz]:1",
            HopParseError::BadHost,
        ),
        ("socks5://", HopParseError::MissingHost),
        ("", HopParseError::BadScheme),
        ("socks5://é:1", HopParseError::BadHost),
    ];
    for (input, want) in cases {
        let e = parse_hop(input).unwrap_err();
        assert_eq!(e, want, "{input}");
        for s in [e.to_string(), format!("{e:?}")] {
            assert!(!s.contains(PASS) && !s.contains(USER), "{s}");
        }
    }
    let long = format!("socks5://u:{}@h:1", "x".repeat(256));
    assert_eq!(
        parse_hop(&long).unwrap_err(),
        HopParseError::BadCredentialLength
    );
}

#[test]
fn open_chain_future_is_send() {
    fn is_send<T: Send>(_: &T) {}
    let hops: Vec<HopSpec> = Vec::new();
    let t = Target::Name("a".into(), 1);
    let d = Deadlines::default();
    let f = open_chain(&hops, &t, &d);
    is_send(&f);
}

// ---------- working chains ----------

#[tokio::test]
async fn two_hop_chain_reaches_target_from_the_last_hops_ip() {
    let (echo, _e) = echo_http().await;
    let h1 = Srv::start("127.0.0.171", Mode::Good, None).await;
    let h2 = Srv::start("127.0.0.172", Mode::Good, Some((USER, PASS))).await;
    let hops = [h1.hop(None), h2.hop(Some((USER, PASS)))];
    let target = Target::Name("echo.test".into(), echo.port());
    let s = open_chain(&hops, &target, &quick()).await.unwrap();
    assert_eq!(s.peer_hop().index, 1);
    assert_eq!(s.peer_hop().host, "127.0.0.172");
    assert_eq!(s.peer_hop().to_string(), format!("socks5://{}", h2.addr));
    assert!(!format!("{s:?}").contains(PASS));
    assert_eq!(get_body(s, "echo.test").await, "127.0.0.172");
    assert_eq!(*h1.seen.lock().unwrap(), vec![h2.addr.to_string()]);
    // the name went to the last hop unresolved (socks5h)
    assert_eq!(
        *h2.seen.lock().unwrap(),
        vec![format!("echo.test:{}", echo.port())]
    );
    assert!(
        h1.wait_no_tunnels().await && h2.wait_no_tunnels().await,
        "tunnels closed after drop"
    );
}

#[tokio::test]
async fn pooled_hyper_client_over_the_chain() {
    #[derive(Clone)]
    struct Via(Arc<Vec<HopSpec>>);
    impl tower_service::Service<http::Uri> for Via {
        type Response = TokioIo<ChainStream>;
        type Error = ChainError;
        type Future = Pin<Box<dyn Future<Output = Result<Self::Response, ChainError>> + Send>>;
        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ChainError>> {
            Poll::Ready(Ok(()))
        }
        fn call(&mut self, uri: http::Uri) -> Self::Future {
            let hops = self.0.clone();
            Box::pin(async move {
                let t = Target::Name(
                    uri.host().unwrap_or_default().to_owned(),
                    uri.port_u16().unwrap_or(80),
                );
                open_chain(&hops, &t, &quick()).await.map(TokioIo::new)
            })
        }
    }
    let (echo, _e) = echo_http().await;
    let h1 = Srv::start("127.0.0.173", Mode::Good, Some((USER, PASS))).await;
    let client = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .build::<_, Full<Bytes>>(Via(Arc::new(vec![h1.hop(Some((USER, PASS)))])));
    let uri: http::Uri = format!("http://echo.test:{}/", echo.port())
        .parse()
        .unwrap();
    for _ in 0..3 {
        let res = client.get(uri.clone()).await.unwrap();
        let body = res.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], b"127.0.0.173");
        // let the connection go back to the pool before the next checkout
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        h1.accepted.load(Ordering::SeqCst),
        1,
        "hyper pooled the tunnel"
    );
    drop(client);
    assert!(h1.wait_no_tunnels().await);
}

#[tokio::test]
async fn ip_target_and_bound_address() {
    let (echo, _e) = echo_http().await;
    let h1 = Srv::start("127.0.0.174", Mode::Good, None).await;
    let s = open_chain(&[h1.hop(None)], &Target::Addr(echo), &quick())
        .await
        .unwrap();
    assert_eq!(s.peer_hop().bound, Some("127.0.0.1:80".parse().unwrap()));
    assert_eq!(*h1.seen.lock().unwrap(), vec![echo.to_string()]);
    assert_eq!(get_body(s, "x").await, "127.0.0.174");
}

// ---------- auth ----------

#[tokio::test]
async fn auth_refused_wrong_or_missing() {
    let t = Target::Name("echo.test".into(), 1);
    let refuse = Srv::start("127.0.0.1", Mode::RefuseAuth, None).await;
    let e = open_chain(&[refuse.hop(Some((USER, PASS)))], &t, &quick())
        .await
        .unwrap_err();
    assert_eq!(
        (e.hop, e.kind),
        (0, ErrorKind::Proxy(FaultKind::AuthFailed))
    );
    assert!(e.is_proxy_fault());
    assert_clean(&e);

    let good = Srv::start("127.0.0.1", Mode::Good, Some((USER, PASS))).await;
    let e = open_chain(&[good.hop(Some((USER, "wrong")))], &t, &quick())
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Proxy(FaultKind::AuthFailed));
    let e = open_chain(&[good.hop(None)], &t, &quick())
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Proxy(FaultKind::AuthRequired));
    assert_clean(&e);
}

mod faults;
