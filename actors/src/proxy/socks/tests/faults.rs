//! Fault tests of `socks.rs`: every misbehaviour of a hop classified right and ending within its deadline.

use super::*;

async fn timed(hops: &[HopSpec], d: Deadlines) -> (ChainError, Duration) {
    let start = Instant::now();
    let e = open_chain(hops, &Target::Name("echo.test".into(), 1), &d)
        .await
        .unwrap_err();
    assert_clean(&e);
    (e, start.elapsed())
}

const MARGIN: Duration = Duration::from_millis(800);

#[tokio::test]
async fn each_hang_times_out_in_its_phase() {
    let short = Duration::from_millis(250);
    let g = Srv::start("127.0.0.1", Mode::HangGreeting, None).await;
    let (e, took) = timed(
        &[g.hop(None)],
        Deadlines {
            greeting: short,
            ..quick()
        },
    )
    .await;
    assert_eq!(
        (e.hop, e.kind),
        (0, ErrorKind::Proxy(FaultKind::Timeout(Phase::Greeting)))
    );
    assert!(took >= short && took < short + MARGIN, "{took:?}");

    let a = Srv::start("127.0.0.1", Mode::HangAuth, None).await;
    let (e, took) = timed(
        &[a.hop(Some((USER, PASS)))],
        Deadlines {
            auth: short,
            ..quick()
        },
    )
    .await;
    assert_eq!(e.kind, ErrorKind::Proxy(FaultKind::Timeout(Phase::Auth)));
    assert!(took >= short && took < short + MARGIN, "{took:?}");

    let c = Srv::start("127.0.0.1", Mode::HangConnect, None).await;
    let (e, took) = timed(
        &[c.hop(None)],
        Deadlines {
            connect_reply: short,
            ..quick()
        },
    )
    .await;
    assert_eq!(
        e.kind,
        ErrorKind::Proxy(FaultKind::Timeout(Phase::ConnectReply))
    );
    assert!(
        e.detail.contains("no connect reply within 250ms"),
        "{}",
        e.detail
    );
    assert!(took >= short && took < short + MARGIN, "{took:?}");
}

#[tokio::test]
async fn trickled_reply_hits_the_phase_deadline_not_an_idle_timer() {
    // 10 reply bytes, one per 100 ms: each read is quick, the phase as a whole is not
    let t = Srv::start(
        "127.0.0.1",
        Mode::TrickleReply(Duration::from_millis(100)),
        None,
    )
    .await;
    let short = Duration::from_millis(350);
    let (e, took) = timed(
        &[t.hop(None)],
        Deadlines {
            connect_reply: short,
            ..quick()
        },
    )
    .await;
    assert_eq!(
        e.kind,
        ErrorKind::Proxy(FaultKind::Timeout(Phase::ConnectReply))
    );
    assert!(took >= short && took < short + MARGIN, "{took:?}");
}

#[tokio::test]
async fn chain_deadline_caps_the_phases_and_names_the_hop() {
    let h1 = Srv::start("127.0.0.175", Mode::Good, None).await;
    let h2 = Srv::start("127.0.0.176", Mode::HangConnect, None).await;
    let chain = Duration::from_millis(300);
    let (e, took) = timed(
        &[h1.hop(None), h2.hop(None)],
        Deadlines { chain, ..quick() },
    )
    .await;
    assert_eq!(
        (e.hop, e.kind),
        (1, ErrorKind::Proxy(FaultKind::Timeout(Phase::ConnectReply)))
    );
    assert!(e.detail.contains("chain deadline"), "{}", e.detail);
    assert!(took >= chain && took < chain + MARGIN, "{took:?}");
    assert!(
        h1.wait_no_tunnels().await,
        "the tunnel through hop 1 closed"
    );
}

#[tokio::test]
async fn connect_phase_refused_and_timeout() {
    let closed = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let hop = HopSpec {
        host: "127.0.0.1".into(),
        port: closed.port(),
        auth: Some((USER.into(), PASS.into())),
    };
    let (e, _) = timed(std::slice::from_ref(&hop), quick()).await;
    assert_eq!((e.hop, e.kind), (0, ErrorKind::Proxy(FaultKind::Refused)));

    // a listener whose accept queue is full drops further SYNs: the TCP connect hangs
    let sock = TcpSocket::new_v4().unwrap();
    sock.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let full = sock.listen(1).unwrap();
    let addr = full.local_addr().unwrap();
    let mut fillers = Vec::new();
    for _ in 0..8 {
        if let Ok(Ok(s)) =
            tokio::time::timeout(Duration::from_millis(100), TcpStream::connect(addr)).await
        {
            fillers.push(s);
        }
    }
    let short = Duration::from_millis(300);
    let hop = HopSpec {
        host: "127.0.0.1".into(),
        port: addr.port(),
        auth: None,
    };
    let (e, took) = timed(
        &[hop],
        Deadlines {
            connect: short,
            ..quick()
        },
    )
    .await;
    assert_eq!(e.kind, ErrorKind::Proxy(FaultKind::Timeout(Phase::Connect)));
    assert!(took >= short && took < short + MARGIN, "{took:?}");
}

#[tokio::test]
async fn reply_codes_are_classified() {
    use FaultKind as F;
    use TargetFault as T;
    let cases = [
        (1, ErrorKind::Proxy(F::GeneralFailure)),
        (2, ErrorKind::Proxy(F::NotAllowed)),
        (3, ErrorKind::Target(T::NetworkUnreachable)),
        (4, ErrorKind::Target(T::HostUnreachable)),
        (5, ErrorKind::Target(T::ConnectionRefused)),
        (6, ErrorKind::Target(T::TtlExpired)),
        (7, ErrorKind::Proxy(F::CommandNotSupported)),
        (8, ErrorKind::Proxy(F::AddrTypeNotSupported)),
        (9, ErrorKind::Proxy(F::Malformed)),
    ];
    for (code, want) in cases {
        let s = Srv::start("127.0.0.1", Mode::Reply(code), Some((USER, PASS))).await;
        let (e, _) = timed(&[s.hop(Some((USER, PASS)))], quick()).await;
        assert_eq!(e.kind, want, "reply {code}");
        let want_hop = if matches!(want, ErrorKind::Target(_)) {
            1
        } else {
            0
        };
        assert_eq!(e.hop, want_hop, "reply {code}");
        assert_eq!(e.is_proxy_fault(), want_hop == 0);
    }
}

#[tokio::test]
async fn unreachable_next_hop_is_that_hops_fault() {
    let h1 = Srv::start("127.0.0.177", Mode::Good, None).await;
    let dead = TcpListener::bind("127.0.0.178:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let hop2 = HopSpec {
        host: dead.ip().to_string(),
        port: dead.port(),
        auth: Some((USER.into(), PASS.into())),
    };
    let (e, _) = timed(&[h1.hop(None), hop2], quick()).await;
    assert_eq!((e.hop, e.kind), (1, ErrorKind::Proxy(FaultKind::Refused)));
    assert!(e.detail.contains("could not reach hop 1"), "{}", e.detail);
}

#[tokio::test]
async fn garbage_and_early_close() {
    let m = Srv::start("127.0.0.1", Mode::Malformed, None).await;
    let (e, _) = timed(&[m.hop(None)], quick()).await;
    assert_eq!(e.kind, ErrorKind::Proxy(FaultKind::Malformed));
    let c = Srv::start("127.0.0.1", Mode::CloseAfterGreeting, None).await;
    let (e, _) = timed(&[c.hop(Some((USER, PASS)))], quick()).await;
    assert_eq!(e.kind, ErrorKind::Proxy(FaultKind::Closed));
}

#[tokio::test]
async fn bad_inputs_fail_without_connecting() {
    let s = Srv::start("127.0.0.1", Mode::Good, None).await;
    let long = Target::Name("a".repeat(256), 80);
    let e = open_chain(&[s.hop(None)], &long, &quick())
        .await
        .unwrap_err();
    assert_eq!(
        (e.hop, e.kind),
        (1, ErrorKind::Target(TargetFault::InvalidAddress))
    );
    assert!(!e.is_proxy_fault());
    let e = open_chain(&[], &Target::Name("x".into(), 80), &quick())
        .await
        .unwrap_err();
    assert!(e.is_proxy_fault());
    assert_eq!(s.accepted.load(Ordering::SeqCst), 0);
}
