//! Tests of the connection race (pure logic on paused time: start times, who wins, what is dropped) and of the
//! dialer against loopback listeners (the guard on every address of a mixed set).

use super::*;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::time::{Instant, sleep};

fn sa(s: &str) -> SocketAddr {
    s.parse().expect("socket address")
}

#[test]
fn interleave_alternates_families_from_the_first() {
    let got = interleave(vec![
        sa("[2001:db8::1]:80"),
        sa("[2001:db8::2]:80"),
        sa("[2001:db8::3]:80"),
        sa("192.0.2.1:80"),
        sa("192.0.2.2:80"),
    ]);
    assert_eq!(
        got,
        [
            sa("[2001:db8::1]:80"),
            sa("192.0.2.1:80"),
            sa("[2001:db8::2]:80"),
            sa("192.0.2.2:80"),
            sa("[2001:db8::3]:80"),
        ]
    );
    let v4_first = interleave(vec![sa("192.0.2.1:80"), sa("[::1]:80"), sa("192.0.2.2:80")]);
    assert_eq!(
        v4_first,
        [sa("192.0.2.1:80"), sa("[::1]:80"), sa("192.0.2.2:80")]
    );
    assert!(interleave(Vec::new()).is_empty());
}

/// What a fake attempt does: succeed or fail after a delay, or never finish.
#[derive(Clone, Copy)]
enum Fake {
    Ok(u64),
    Fail(u64),
    Hang,
}

/// Runs a race over fake attempts; returns the result, when each attempt started (ms after the start), and how
/// many attempts were dropped unfinished.
async fn run(
    plan: &[(&str, Fake)],
) -> (
    Result<(SocketAddr, u64), Vec<SocketAddr>>,
    Vec<(SocketAddr, u64)>,
    usize,
) {
    let t0 = Instant::now();
    let starts = Arc::new(Mutex::new(Vec::new()));
    let dropped = Arc::new(AtomicUsize::new(0));
    let addrs: Vec<SocketAddr> = plan.iter().map(|(a, _)| sa(a)).collect();
    let behaviour: Vec<(SocketAddr, Fake)> = plan.iter().map(|(a, f)| (sa(a), *f)).collect();
    /// Counts a drop unless disarmed (the attempt finished).
    struct OnDrop(Arc<AtomicUsize>, bool);
    impl OnDrop {
        fn disarm(&mut self) {
            self.1 = true;
        }
    }
    impl Drop for OnDrop {
        fn drop(&mut self) {
            if !self.1 {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
    }
    let res = race(&addrs, ATTEMPT_DELAY, |addr| {
        let fake = behaviour
            .iter()
            .find(|(a, _)| *a == addr)
            .map(|(_, f)| *f)
            .expect("planned");
        starts
            .lock()
            .unwrap()
            .push((addr, t0.elapsed().as_millis() as u64));
        let mut watch = OnDrop(dropped.clone(), false);
        async move {
            let out = match fake {
                Fake::Ok(ms) => {
                    sleep(Duration::from_millis(ms)).await;
                    Ok(t0.elapsed().as_millis() as u64)
                }
                Fake::Fail(ms) => {
                    sleep(Duration::from_millis(ms)).await;
                    Err("refused")
                }
                Fake::Hang => std::future::pending().await,
            };
            watch.disarm();
            out
        }
    })
    .await;
    let res = res
        .map(|(at, addr)| (addr, at))
        .map_err(|failed| failed.into_iter().map(|(a, _)| a).collect());
    let starts = starts.lock().unwrap().clone();
    (res, starts, dropped.load(Ordering::SeqCst))
}

#[tokio::test(start_paused = true)]
async fn a_black_holed_first_address_costs_one_attempt_delay() {
    let (res, starts, dropped) =
        run(&[("[::1]:80", Fake::Hang), ("127.0.0.1:80", Fake::Ok(10))]).await;
    assert_eq!(res, Ok((sa("127.0.0.1:80"), 260)));
    assert_eq!(starts, [(sa("[::1]:80"), 0), (sa("127.0.0.1:80"), 250)]);
    assert_eq!(
        dropped, 1,
        "the hanging attempt is dropped once the other wins"
    );
}

#[tokio::test(start_paused = true)]
async fn a_refused_attempt_starts_the_next_at_once() {
    let (res, starts, dropped) =
        run(&[("[::1]:80", Fake::Fail(5)), ("127.0.0.1:80", Fake::Ok(10))]).await;
    assert_eq!(res, Ok((sa("127.0.0.1:80"), 15)));
    assert_eq!(starts, [(sa("[::1]:80"), 0), (sa("127.0.0.1:80"), 5)]);
    assert_eq!(dropped, 0);
}

#[tokio::test(start_paused = true)]
async fn the_first_success_wins_even_if_started_later() {
    // The first attempt is slow (1 s); the second starts at 250 ms and is up at 300 ms; the third never starts
    // before the winner (it would start at 500 ms).
    let (res, starts, dropped) = run(&[
        ("[2001:db8::1]:80", Fake::Ok(1000)),
        ("192.0.2.1:80", Fake::Ok(50)),
        ("[2001:db8::2]:80", Fake::Ok(1)),
    ])
    .await;
    assert_eq!(res, Ok((sa("192.0.2.1:80"), 300)));
    assert_eq!(
        starts,
        [(sa("[2001:db8::1]:80"), 0), (sa("192.0.2.1:80"), 250)]
    );
    assert_eq!(dropped, 1);
}

#[tokio::test(start_paused = true)]
async fn attempts_start_every_delay_until_one_answers() {
    let (res, starts, dropped) = run(&[
        ("[2001:db8::1]:80", Fake::Hang),
        ("192.0.2.1:80", Fake::Hang),
        ("[2001:db8::2]:80", Fake::Hang),
        ("192.0.2.2:80", Fake::Ok(100)),
    ])
    .await;
    assert_eq!(res, Ok((sa("192.0.2.2:80"), 850)));
    let at: Vec<u64> = starts.iter().map(|(_, t)| *t).collect();
    assert_eq!(at, [0, 250, 500, 750]);
    assert_eq!(dropped, 3);
}

#[tokio::test(start_paused = true)]
async fn every_failure_is_reported_when_nothing_connects() {
    let (res, starts, _) = run(&[
        ("[2001:db8::1]:80", Fake::Fail(400)),
        ("192.0.2.1:80", Fake::Fail(10)),
    ])
    .await;
    // The second (started at 250 ms) fails first, at 260 ms; the first at 400 ms.
    assert_eq!(res, Err(vec![sa("192.0.2.1:80"), sa("[2001:db8::1]:80")]));
    assert_eq!(starts.len(), 2);
    let (none, starts, _) = run(&[]).await;
    assert_eq!(none, Err(Vec::new()));
    assert!(starts.is_empty());
}

/// A loopback listener that counts the connections it accepts (and keeps them open).
async fn counting_listener(ip: &str) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind((ip, 0)).await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((sock, _)) = listener.accept().await {
            seen.fetch_add(1, Ordering::SeqCst);
            held.push(sock);
        }
    });
    (addr, count)
}

fn dialer(allow: &[&str], ips: Vec<IpAddr>) -> Dialer {
    let guard = NetGuard::new(
        false,
        allow.iter().map(|c| c.parse().expect("block")).collect(),
    );
    Dialer {
        guard: Arc::new(guard),
        lookup: Some(NameLookup(Arc::new(move |_name: String| {
            let ips = ips.clone();
            Box::pin(async move { Ok(ips) })
        }))),
        connect_timeout: Duration::from_secs(5),
        attempt_delay: ATTEMPT_DELAY,
    }
}

#[tokio::test]
async fn a_private_address_in_a_mixed_set_is_never_dialed() {
    let (private, private_hits) = counting_listener("127.0.2.5").await;
    // The allowed address listens on the same port as the private one, so only the guard tells them apart.
    let allowed_ip: IpAddr = "127.0.1.5".parse().unwrap();
    let listener = match tokio::net::TcpListener::bind((allowed_ip, private.port())).await {
        Ok(l) => l,
        Err(e) => panic!("127.0.1.5:{} is taken: {e}", private.port()),
    };
    let allowed_hits = Arc::new(AtomicUsize::new(0));
    let seen = allowed_hits.clone();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            seen.fetch_add(1, Ordering::SeqCst);
            drop(s);
        }
    });
    let mut d = dialer(
        &["127.0.1.0/24"],
        vec![
            private.ip(),
            allowed_ip,
            "::ffff:127.0.2.5".parse().unwrap(),
        ],
    );
    let uri: http::Uri = format!("http://mixed.test:{}/", private.port())
        .parse()
        .unwrap();
    let io = tower_service::Service::call(&mut d, uri)
        .await
        .expect("the allowed address is dialed");
    assert_eq!(io.inner().peer_addr().unwrap().ip(), allowed_ip);
    sleep(Duration::from_millis(50)).await;
    assert_eq!(
        private_hits.load(Ordering::SeqCst),
        0,
        "the private address got no connection"
    );
    assert_eq!(allowed_hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_host_whose_every_address_is_refused_fails_as_private_only() {
    let (private, hits) = counting_listener("127.0.2.6").await;
    for ip in [
        "127.0.2.6",
        "0.0.0.0",
        "169.254.169.254",
        "100.64.0.1",
        "fd00::1",
        "ff02::1",
        "::ffff:127.0.2.6",
        "64:ff9b::7f00:206",
    ] {
        let ip: IpAddr = ip.parse().unwrap();
        let mut d = dialer(&["127.0.1.0/24"], vec![ip]);
        let uri: http::Uri = format!("http://rebound.test:{}/", private.port())
            .parse()
            .unwrap();
        let err = tower_service::Service::call(&mut d, uri)
            .await
            .expect_err("refused");
        match err.downcast_ref::<ResolveError>() {
            Some(ResolveError::PrivateOnly { host, addr }) => {
                assert_eq!((host.as_str(), *addr), ("rebound.test", ip));
            }
            other => panic!("{ip}: expected PrivateOnly, got {other:?} ({err})"),
        }
    }
    assert_eq!(hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_refused_connection_is_an_io_error_naming_the_address() {
    // Bound and dropped: nothing listens there any more.
    let gone = std::net::TcpListener::bind("127.0.1.7:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut d = dialer(&["127.0.1.0/24"], vec![gone.ip()]);
    let uri: http::Uri = format!("http://gone.test:{}/", gone.port())
        .parse()
        .unwrap();
    let err = tower_service::Service::call(&mut d, uri)
        .await
        .expect_err("refused");
    let io = err.downcast_ref::<io::Error>().expect("an io error");
    assert_eq!(io.kind(), io::ErrorKind::ConnectionRefused);
    assert!(io.to_string().contains(&gone.to_string()), "{io}");
}

#[tokio::test]
async fn without_the_resolver_actor_the_system_resolver_is_asked_and_guarded() {
    // `localhost` through getaddrinfo (both families, as the system has them): refused by the default guard,
    // dialed when loopback is allowed.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { while listener.accept().await.is_ok() {} });
    let uri: http::Uri = format!("http://localhost:{port}/").parse().unwrap();
    let mut refused = Dialer {
        guard: Arc::new(NetGuard::default()),
        lookup: None,
        connect_timeout: Duration::from_secs(5),
        attempt_delay: ATTEMPT_DELAY,
    };
    let err = tower_service::Service::call(&mut refused, uri.clone())
        .await
        .expect_err("loopback refused");
    assert!(
        matches!(err.downcast_ref::<ResolveError>(), Some(ResolveError::PrivateOnly { host, .. }) if host == "localhost"),
        "{err}"
    );
    let mut allowed = Dialer {
        guard: Arc::new(NetGuard::new(
            false,
            vec!["127.0.0.0/8".parse().unwrap(), "::1".parse().unwrap()],
        )),
        ..refused
    };
    let io = tower_service::Service::call(&mut allowed, uri)
        .await
        .expect("dialed");
    assert!(io.inner().peer_addr().unwrap().ip().is_loopback());
}
