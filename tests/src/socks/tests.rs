//! Tests of the fake SOCKS5 servers, driven by the real client (`crawl_actors::proxy::socks`, on tokio-socks).

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use crawl_actors::proxy::socks::{
    ChainError, ChainStream, Deadlines, ErrorKind, FaultKind, HopSpec, Phase, Target, TargetFault,
    open_chain, parse_hop,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::{Behaviour, FakeSocks, SeenTarget, SocksOptions};

const USER: &str = "bob-user";
const PASS: &str = "pa55-SECRET";
const IDLE: Duration = Duration::from_secs(3);
const MARGIN: Duration = Duration::from_millis(800);

/// A target that writes the peer's IP and a newline, then echoes.
struct Who {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for Who {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn who(ip: &str) -> Who {
    let l = TcpListener::bind((ip.parse::<IpAddr>().unwrap(), 0))
        .await
        .unwrap();
    let addr = l.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let mut conns = tokio::task::JoinSet::new();
        while let Ok((mut s, peer)) = l.accept().await {
            conns.spawn(async move {
                let _ = s.set_nodelay(true);
                if s.write_all(format!("{}\n", peer.ip()).as_bytes())
                    .await
                    .is_err()
                {
                    return;
                }
                let mut buf = [0u8; 1024];
                while let Ok(n) = s.read(&mut buf).await {
                    if n == 0 || s.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    Who { addr, task }
}

fn d() -> Deadlines {
    Deadlines {
        connect: Duration::from_secs(2),
        greeting: Duration::from_secs(2),
        auth: Duration::from_secs(2),
        connect_reply: Duration::from_secs(2),
        chain: Duration::from_secs(5),
    }
}

fn hop(s: &FakeSocks) -> HopSpec {
    parse_hop(&s.url()).unwrap()
}

async fn first_line(s: &mut ChainStream) -> String {
    let mut out = Vec::new();
    let mut b = [0u8; 1];
    while s.read(&mut b).await.unwrap() == 1 && b[0] != b'\n' {
        out.push(b[0]);
        assert!(out.len() < 100);
    }
    String::from_utf8(out).unwrap()
}

fn assert_clean(e: &ChainError) {
    for s in [e.to_string(), format!("{e:?}")] {
        assert!(!s.contains(PASS), "password leaked: {s}");
    }
}

async fn fails(hops: &[HopSpec], deadlines: Deadlines) -> (ChainError, Duration) {
    let start = Instant::now();
    let e = open_chain(hops, &Target::Name("site.test".into(), 80), &deadlines)
        .await
        .unwrap_err();
    assert_clean(&e);
    (e, start.elapsed())
}

#[tokio::test]
async fn good_relays_ipv4_ipv6_and_mapped_names() {
    let w4 = who("127.0.0.1").await;
    let w6 = who("::1").await;
    let opts = SocksOptions::default().resolve("Site.Test", "127.0.0.1".parse().unwrap());
    let s = FakeSocks::start_with(Behaviour::Good, opts).await.unwrap();

    let mut c = open_chain(&[hop(&s)], &Target::Addr(w4.addr), &d())
        .await
        .unwrap();
    assert_eq!(first_line(&mut c).await, "127.0.0.1");
    c.write_all(b"ping\n").await.unwrap();
    assert_eq!(first_line(&mut c).await, "ping");

    let mut c6 = open_chain(&[hop(&s)], &Target::Addr(w6.addr), &d())
        .await
        .unwrap();
    assert_eq!(first_line(&mut c6).await, "::1");

    let mut cn = open_chain(
        &[hop(&s)],
        &Target::Name("site.test".into(), w4.addr.port()),
        &d(),
    )
    .await
    .unwrap();
    assert_eq!(first_line(&mut cn).await, "127.0.0.1");

    // a name outside the map: host unreachable, never real DNS
    let e = open_chain(&[hop(&s)], &Target::Name("example.com".into(), 80), &d())
        .await
        .unwrap_err();
    assert_eq!(
        (e.hop, e.kind),
        (1, ErrorKind::Target(TargetFault::HostUnreachable))
    );

    let c_ = s.counters();
    assert_eq!(c_.accepted, 4);
    assert_eq!(
        c_.targets,
        vec![
            SeenTarget::Addr(w4.addr),
            SeenTarget::Addr(w6.addr),
            SeenTarget::Name("site.test".into(), w4.addr.port()),
            SeenTarget::Name("example.com".into(), 80),
        ]
    );
    assert_eq!(c_.open_tunnels, 3);
    // "127.0.0.1\n" + "ping\n" both ways + "::1\n" + "127.0.0.1\n"
    assert_eq!(c_.bytes_relayed, 10 + 5 + 5 + 4 + 10);
    drop((c, c6, cn));
    assert!(
        s.wait_idle(IDLE).await,
        "tunnels closed after the client dropped: {:?}",
        s.counters()
    );
}

#[tokio::test]
async fn user_pass_is_required_and_checked() {
    let w = who("127.0.0.1").await;
    let s = FakeSocks::start_with(
        Behaviour::Good,
        SocksOptions::default().with_auth(USER, PASS),
    )
    .await
    .unwrap();
    assert_eq!(s.url(), format!("socks5://{USER}:{PASS}@{}", s.addr()));
    let good = hop(&s);
    let mut c = open_chain(std::slice::from_ref(&good), &Target::Addr(w.addr), &d())
        .await
        .unwrap();
    assert_eq!(first_line(&mut c).await, "127.0.0.1");

    let wrong = HopSpec {
        auth: Some((USER.into(), "nope".into())),
        ..good.clone()
    };
    let (e, _) = fails(&[wrong], d()).await;
    assert_eq!(
        (e.hop, e.kind),
        (0, ErrorKind::Proxy(FaultKind::AuthFailed))
    );
    let none = HopSpec { auth: None, ..good };
    let (e, _) = fails(&[none], d()).await;
    assert_eq!(e.kind, ErrorKind::Proxy(FaultKind::AuthRequired));
    assert!(!format!("{:?}", SocksOptions::default().with_auth(USER, PASS)).contains(PASS));
}

#[tokio::test]
async fn two_hops_on_distinct_loopback_ips() {
    let w = who("127.0.0.1").await;
    let ip1: IpAddr = "127.0.0.181".parse().unwrap();
    let ip2: IpAddr = "127.0.0.182".parse().unwrap();
    let h1 = FakeSocks::start_with(Behaviour::Good, SocksOptions::default().on(ip1))
        .await
        .unwrap();
    let opts2 = SocksOptions::default()
        .on(ip2)
        .with_auth(USER, PASS)
        .resolve("site.test", "127.0.0.1".parse().unwrap());
    let h2 = FakeSocks::start_with(Behaviour::Good, opts2).await.unwrap();
    let hops = [hop(&h1), hop(&h2)];
    let mut c = open_chain(
        &hops,
        &Target::Name("site.test".into(), w.addr.port()),
        &d(),
    )
    .await
    .unwrap();
    assert_eq!(
        first_line(&mut c).await,
        "127.0.0.182",
        "the target sees the last hop"
    );
    assert_eq!(h1.targets(), vec![SeenTarget::Addr(h2.addr())]);
    assert_eq!(
        h2.targets(),
        vec![SeenTarget::Name("site.test".into(), w.addr.port())]
    );
    drop(c);
    assert!(h1.wait_idle(IDLE).await && h2.wait_idle(IDLE).await);
}

#[tokio::test]
async fn misbehaviours_are_classified_within_their_deadlines() {
    let short = Duration::from_millis(250);
    let cases = [
        (
            Behaviour::HangAfterGreeting,
            Deadlines {
                greeting: short,
                ..d()
            },
            FaultKind::Timeout(Phase::Greeting),
        ),
        (
            Behaviour::HangAfterAuth,
            Deadlines { auth: short, ..d() },
            FaultKind::Timeout(Phase::Auth),
        ),
        (
            Behaviour::HangAfterConnect,
            Deadlines {
                connect_reply: short,
                ..d()
            },
            FaultKind::Timeout(Phase::ConnectReply),
        ),
        (Behaviour::RefuseAuth, d(), FaultKind::AuthFailed),
        (Behaviour::Reply(0x01), d(), FaultKind::GeneralFailure),
        (Behaviour::Reply(0x02), d(), FaultKind::NotAllowed),
        (Behaviour::Reply(0x07), d(), FaultKind::CommandNotSupported),
        (Behaviour::Reply(0x08), d(), FaultKind::AddrTypeNotSupported),
        (Behaviour::Malformed, d(), FaultKind::Malformed),
    ];
    for (b, deadlines, want) in cases {
        let s = FakeSocks::start_with(b, SocksOptions::default().with_auth(USER, PASS))
            .await
            .unwrap();
        let (e, took) = fails(&[hop(&s)], deadlines).await;
        assert_eq!((e.hop, e.kind), (0, ErrorKind::Proxy(want)), "{b:?}: {e}");
        if let FaultKind::Timeout(_) = want {
            assert!(
                took >= short && took < short + MARGIN,
                "{b:?} took {took:?}"
            );
        } else {
            assert!(took < MARGIN, "{b:?} took {took:?}");
        }
        assert_eq!(s.accepted(), 1);
        assert!(
            s.wait_idle(IDLE).await,
            "{b:?}: the connection task ended after the client left"
        );
    }
}

#[tokio::test]
async fn reply_05_is_a_target_fault() {
    let s = FakeSocks::start(Behaviour::Reply(0x05)).await.unwrap();
    let (e, _) = fails(&[hop(&s)], d()).await;
    assert_eq!(
        (e.hop, e.kind),
        (1, ErrorKind::Target(TargetFault::ConnectionRefused))
    );
    assert!(!e.is_proxy_fault());
    assert_eq!(s.targets(), vec![SeenTarget::Name("site.test".into(), 80)]);
}

#[tokio::test]
async fn drop_mid_stream_cuts_after_the_budget() {
    let w = who("127.0.0.1").await;
    let s = FakeSocks::start(Behaviour::DropMidStream { after_bytes: 4 })
        .await
        .unwrap();
    let mut c = open_chain(&[hop(&s)], &Target::Addr(w.addr), &d())
        .await
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 64];
    loop {
        match c.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
        assert!(got.len() <= 4, "relayed past the budget: {got:?}");
    }
    assert_eq!(got, b"127.");
    assert!(s.wait_idle(IDLE).await);
    assert_eq!(s.open_tunnels(), 0);
}

#[tokio::test]
async fn trickle_relays_one_byte_at_a_time() {
    let w = who("127.0.0.1").await;
    let every = Duration::from_millis(20);
    let s = FakeSocks::start(Behaviour::Trickle { every })
        .await
        .unwrap();
    let start = Instant::now();
    let mut c = open_chain(&[hop(&s)], &Target::Addr(w.addr), &d())
        .await
        .unwrap();
    let mut got = Vec::new();
    let mut reads = 0;
    let mut buf = [0u8; 64];
    while got.len() < 10 {
        let n = c.read(&mut buf).await.unwrap();
        assert!(n > 0, "eof after {got:?}");
        reads += 1;
        got.extend_from_slice(&buf[..n]);
    }
    assert_eq!(got, b"127.0.0.1\n");
    assert!(
        reads >= 3,
        "bytes came one by one, not at once ({reads} reads)"
    );
    assert!(start.elapsed() >= every * 9);
}

#[tokio::test]
async fn shutdown_and_kill_close_every_tunnel() {
    let w = who("127.0.0.1").await;
    let s = FakeSocks::start(Behaviour::Good).await.unwrap();
    let mut a = open_chain(&[hop(&s)], &Target::Addr(w.addr), &d())
        .await
        .unwrap();
    let mut b = open_chain(&[hop(&s)], &Target::Addr(w.addr), &d())
        .await
        .unwrap();
    assert_eq!(first_line(&mut a).await, "127.0.0.1");
    assert_eq!(first_line(&mut b).await, "127.0.0.1");
    assert_eq!(s.open_tunnels(), 2);
    s.shutdown().await;
    assert_eq!((s.open_tunnels(), s.open_connections()), (0, 0));
    let mut buf = [0u8; 8];
    let n = tokio::time::timeout(IDLE, a.read(&mut buf))
        .await
        .unwrap()
        .unwrap_or(0);
    assert_eq!(n, 0, "the client sees the tunnel close");
    let (e, _) = fails(&[hop(&s)], d()).await;
    assert_eq!(
        e.kind,
        ErrorKind::Proxy(FaultKind::Refused),
        "no longer listening"
    );

    let k = FakeSocks::start(Behaviour::HangAfterConnect).await.unwrap();
    let (hk, target) = (hop(&k), Target::Addr(w.addr));
    let pending = tokio::spawn(async move { open_chain(&[hk], &target, &d()).await.map(|_| ()) });
    for _ in 0..300 {
        if !k.targets().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(k.open_connections(), 1);
    k.kill();
    let e = tokio::time::timeout(IDLE, pending)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Proxy(FaultKind::Closed), "{e}");
    assert!(k.wait_idle(IDLE).await);
}
