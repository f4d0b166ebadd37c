//! Tests of [`super::FakeDns`] with a plain tokio UDP/TCP client and hickory-proto messages.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hickory_proto::op::{Edns, Message, Query, ResponseCode};
use hickory_proto::rr::{Name, RData, RecordType};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};

use super::*;

const WAIT: Duration = Duration::from_secs(3);
/// How long a test waits to be sure nothing (more) arrives.
const QUIET: Duration = Duration::from_millis(300);

pub(super) fn query(name: &str, qtype: RecordType) -> Message {
    let mut m = Message::query();
    m.metadata.recursion_desired = true;
    m.add_query(Query::query(Name::from_ascii(name).unwrap(), qtype));
    m
}

pub(super) fn v4s(m: &Message) -> Vec<Ipv4Addr> {
    m.answers
        .iter()
        .filter_map(|r| match &r.data {
            RData::A(a) => Some(a.0),
            _ => None,
        })
        .collect()
}

pub(super) fn v6s(m: &Message) -> Vec<Ipv6Addr> {
    m.answers
        .iter()
        .filter_map(|r| match &r.data {
            RData::AAAA(a) => Some(a.0),
            _ => None,
        })
        .collect()
}

async fn client() -> UdpSocket {
    UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap()
}

async fn send(sock: &UdpSocket, to: SocketAddr, m: &Message) {
    sock.send_to(&m.to_vec().unwrap(), to).await.unwrap();
}

/// The next response on `sock`, or `None` after `limit`.
async fn recv(sock: &UdpSocket, limit: Duration) -> Option<Message> {
    let mut buf = vec![0u8; 65_535];
    let (n, _) = tokio::time::timeout(limit, sock.recv_from(&mut buf))
        .await
        .ok()?
        .unwrap();
    Some(Message::from_vec(&buf[..n]).unwrap())
}

async fn udp_ask(dns: &FakeDns, name: &str, qtype: RecordType) -> Message {
    let sock = client().await;
    let q = query(name, qtype);
    send(&sock, dns.addr(), &q).await;
    let r = recv(&sock, WAIT).await.expect("udp answer");
    assert_eq!(r.metadata.id, q.metadata.id);
    r
}

async fn tcp_send(stream: &mut TcpStream, m: &Message) {
    let bytes = m.to_vec().unwrap();
    stream
        .write_all(&u16::try_from(bytes.len()).unwrap().to_be_bytes())
        .await
        .unwrap();
    stream.write_all(&bytes).await.unwrap();
}

async fn tcp_recv(stream: &mut TcpStream, limit: Duration) -> Option<Message> {
    let len = tokio::time::timeout(limit, stream.read_u16())
        .await
        .ok()?
        .unwrap();
    let mut buf = vec![0u8; usize::from(len)];
    stream.read_exact(&mut buf).await.unwrap();
    Some(Message::from_vec(&buf).unwrap())
}

async fn tcp_ask(dns: &FakeDns, name: &str, qtype: RecordType) -> Option<Message> {
    let mut stream = TcpStream::connect(dns.addr()).await.unwrap();
    let q = query(name, qtype);
    tcp_send(&mut stream, &q).await;
    let r = tcp_recv(&mut stream, QUIET).await?;
    assert_eq!(r.metadata.id, q.metadata.id);
    Some(r)
}

fn answer_zone() -> Zone {
    Zone::new().with(
        "A.Test.",
        Behaviour::Answer {
            v4: vec![Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2)],
            v6: vec!["fd00::1".parse().unwrap()],
            ttl: 60,
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_a_and_aaaa_over_udp_case_insensitively() {
    let dns = FakeDns::start(answer_zone()).await.unwrap();
    assert_eq!(dns.addr().ip(), IpAddr::V4(Ipv4Addr::LOCALHOST));

    let a = udp_ask(&dns, "a.test.", RecordType::A).await;
    assert_eq!(a.metadata.response_code, ResponseCode::NoError);
    assert!(!a.metadata.truncation);
    assert!(a.metadata.recursion_available);
    assert_eq!(
        v4s(&a),
        [Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2)]
    );
    assert!(a.answers.iter().all(|r| r.ttl == 60));
    assert_eq!(a.queries.len(), 1);
    assert_eq!(a.queries[0].query_type, RecordType::A);

    let aaaa = udp_ask(&dns, "A.TEST", RecordType::AAAA).await;
    assert_eq!(v6s(&aaaa), ["fd00::1".parse::<Ipv6Addr>().unwrap()]);
    assert!(v4s(&aaaa).is_empty());

    let mx = udp_ask(&dns, "a.test", RecordType::MX).await;
    assert_eq!(mx.metadata.response_code, ResponseCode::NoError);
    assert!(mx.answers.is_empty());
    dns.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echoes_edns_and_ignores_garbage() {
    let dns = FakeDns::start(answer_zone()).await.unwrap();
    let sock = client().await;
    sock.send_to(b"\x01\x02garbage", dns.addr()).await.unwrap();
    assert!(recv(&sock, QUIET).await.is_none(), "garbage gets no answer");
    let mut q = query("a.test", RecordType::A);
    q.set_edns(Edns::new());
    send(&sock, dns.addr(), &q).await;
    let r = recv(&sock, WAIT).await.unwrap();
    assert!(r.edns.is_some());
    assert_eq!(v4s(&r).len(), 2);
    assert_eq!(dns.queries(), 1, "garbage is not counted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_over_tcp_with_several_queries_per_connection() {
    let dns = FakeDns::start(answer_zone()).await.unwrap();
    let mut stream = TcpStream::connect(dns.addr()).await.unwrap();
    for qtype in [RecordType::A, RecordType::AAAA] {
        let q = query("a.test", qtype);
        tcp_send(&mut stream, &q).await;
        let r = tcp_recv(&mut stream, WAIT).await.unwrap();
        assert_eq!(r.metadata.id, q.metadata.id);
        match qtype {
            RecordType::A => assert_eq!(v4s(&r).len(), 2),
            _ => assert_eq!(v6s(&r).len(), 1),
        }
    }
    assert_eq!(dns.tcp_queries(), 2);
    assert_eq!(dns.udp_queries(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twice_sends_forged_then_real_with_the_same_id_over_udp_only() {
    let forged = IpAddr::V4(Ipv4Addr::new(1, 2, 3, 4));
    let real = IpAddr::V4(Ipv4Addr::new(93, 184, 216, 34));
    let delay = Duration::from_millis(200);
    let zone = Zone::new().with(
        "race.test",
        Behaviour::Twice {
            forged,
            real,
            delay,
            ttl: 120,
        },
    );
    let dns = FakeDns::start(zone).await.unwrap();
    let sock = client().await;
    let q = query("race.test", RecordType::A);
    send(&sock, dns.addr(), &q).await;
    let first = recv(&sock, WAIT).await.unwrap();
    let t1 = Instant::now();
    let second = recv(&sock, WAIT).await.unwrap();
    let gap = t1.elapsed();
    assert_eq!(first.metadata.id, q.metadata.id);
    assert_eq!(second.metadata.id, q.metadata.id);
    assert_eq!(v4s(&first), [Ipv4Addr::new(1, 2, 3, 4)]);
    assert_eq!(v4s(&second), [Ipv4Addr::new(93, 184, 216, 34)]);
    assert!(
        gap >= Duration::from_millis(150),
        "second came {gap:?} after the first"
    );
    assert!(recv(&sock, QUIET).await.is_none(), "exactly two answers");

    // a type neither address has: one empty answer
    send(&sock, dns.addr(), &query("race.test", RecordType::AAAA)).await;
    let empty = recv(&sock, WAIT).await.unwrap();
    assert!(empty.answers.is_empty());
    assert!(recv(&sock, QUIET).await.is_none());

    // over TCP only the real answer
    let r = tcp_ask(&dns, "race.test", RecordType::A).await.unwrap();
    assert_eq!(v4s(&r), [Ipv4Addr::new(93, 184, 216, 34)]);
    dns.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncate_sets_tc_over_udp_and_answers_over_tcp() {
    let zone = Zone::new().with(
        "big.test",
        Behaviour::Truncate {
            v4: vec![Ipv4Addr::new(10, 1, 1, 1)],
            ttl: 30,
        },
    );
    let dns = FakeDns::start(zone).await.unwrap();
    let udp = udp_ask(&dns, "big.test", RecordType::A).await;
    assert!(udp.metadata.truncation);
    assert!(udp.answers.is_empty());
    let tcp = tcp_ask(&dns, "big.test", RecordType::A).await.unwrap();
    assert!(!tcp.metadata.truncation);
    assert_eq!(v4s(&tcp), [Ipv4Addr::new(10, 1, 1, 1)]);
    assert_eq!(tcp.answers[0].ttl, 30);
    assert_eq!((dns.udp_queries(), dns.tcp_queries()), (1, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nxdomain_servfail_and_default_catch_all() {
    let zone = Zone::new()
        .with("gone.test", Behaviour::NxDomain)
        .with("broken.test", Behaviour::ServFail);
    let dns = FakeDns::start(zone).await.unwrap();
    let nx = udp_ask(&dns, "gone.test", RecordType::A).await;
    assert_eq!(nx.metadata.response_code, ResponseCode::NXDomain);
    let sf = udp_ask(&dns, "broken.test", RecordType::A).await;
    assert_eq!(sf.metadata.response_code, ResponseCode::ServFail);
    let unknown = udp_ask(&dns, "never-set.test", RecordType::A).await;
    assert_eq!(unknown.metadata.response_code, ResponseCode::NXDomain);
    let tcp = tcp_ask(&dns, "broken.test", RecordType::AAAA)
        .await
        .unwrap();
    assert_eq!(tcp.metadata.response_code, ResponseCode::ServFail);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_gives_just_the_bogus_address() {
    let zone = Zone::new().with("fake.test", Behaviour::Only("10.10.34.35".parse().unwrap()));
    let dns = FakeDns::start(zone).await.unwrap();
    let a = udp_ask(&dns, "fake.test", RecordType::A).await;
    assert_eq!(v4s(&a), [Ipv4Addr::new(10, 10, 34, 35)]);
    assert_eq!(a.answers[0].ttl, DEFAULT_TTL);
    let aaaa = udp_ask(&dns, "fake.test", RecordType::AAAA).await;
    assert_eq!(aaaa.metadata.response_code, ResponseCode::NoError);
    assert!(aaaa.answers.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_never_answers_but_counts() {
    let zone = Zone::new().with("silent.test", Behaviour::Drop);
    let dns = FakeDns::start(zone).await.unwrap();
    let sock = client().await;
    send(&sock, dns.addr(), &query("silent.test", RecordType::A)).await;
    assert!(recv(&sock, QUIET).await.is_none(), "client times out");
    assert!(tcp_ask(&dns, "silent.test", RecordType::A).await.is_none());
    assert_eq!(dns.queries_for("silent.test"), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hijack_catch_all_answers_random_labels() {
    let hijack: IpAddr = "198.51.100.7".parse().unwrap();
    let zone = Zone::new()
        .with(
            "real.test",
            Behaviour::v4(&[Ipv4Addr::new(10, 2, 2, 2)], 60),
        )
        .catch_all(CatchAll::Hijack(hijack));
    let dns = FakeDns::start(zone).await.unwrap();
    let probe = "xq7zk2p9vfw3.example";
    let r = udp_ask(&dns, probe, RecordType::A).await;
    assert_eq!(r.metadata.response_code, ResponseCode::NoError);
    assert_eq!(v4s(&r), [Ipv4Addr::new(198, 51, 100, 7)]);
    let known = udp_ask(&dns, "real.test", RecordType::A).await;
    assert_eq!(v4s(&known), [Ipv4Addr::new(10, 2, 2, 2)]);

    dns.set_catch_all(CatchAll::Hijack("2001:db8::7".parse().unwrap()));
    let r6 = udp_ask(&dns, "another-random-label.example", RecordType::AAAA).await;
    assert_eq!(v6s(&r6), ["2001:db8::7".parse::<Ipv6Addr>().unwrap()]);

    dns.set_catch_all(CatchAll::Behaviour(Behaviour::ServFail));
    let sf = udp_ask(&dns, "third.example", RecordType::A).await;
    assert_eq!(sf.metadata.response_code, ResponseCode::ServFail);

    dns.set_catch_all(CatchAll::NxDomain);
    let nx = udp_ask(&dns, probe, RecordType::A).await;
    assert_eq!(nx.metadata.response_code, ResponseCode::NXDomain);
    assert_eq!(dns.queries_for(probe), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_down_drops_everything_until_up() {
    let dns = FakeDns::start(answer_zone()).await.unwrap();
    dns.set_down(true);
    assert!(dns.is_down());
    let sock = client().await;
    send(&sock, dns.addr(), &query("a.test", RecordType::A)).await;
    assert!(recv(&sock, QUIET).await.is_none());
    assert!(tcp_ask(&dns, "a.test", RecordType::A).await.is_none());
    assert_eq!(
        (dns.udp_queries(), dns.tcp_queries()),
        (1, 1),
        "counted while down"
    );

    dns.set_down(false);
    assert!(!dns.is_down());
    let r = udp_ask(&dns, "a.test", RecordType::A).await;
    assert_eq!(v4s(&r).len(), 2);
    assert!(tcp_ask(&dns, "a.test", RecordType::A).await.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behaviours_change_while_running() {
    let dns = FakeDns::start(Zone::new()).await.unwrap();
    let r = udp_ask(&dns, "later.test", RecordType::A).await;
    assert_eq!(r.metadata.response_code, ResponseCode::NXDomain);
    dns.set(
        "LATER.test.",
        Behaviour::ips(
            &["10.3.3.3".parse().unwrap(), "fd00::3".parse().unwrap()],
            5,
        ),
    );
    let r = udp_ask(&dns, "later.test", RecordType::A).await;
    assert_eq!(v4s(&r), [Ipv4Addr::new(10, 3, 3, 3)]);
    let r = udp_ask(&dns, "later.test", RecordType::AAAA).await;
    assert_eq!(v6s(&r), ["fd00::3".parse::<Ipv6Addr>().unwrap()]);
    dns.remove("later.test");
    let r = udp_ask(&dns, "later.test", RecordType::A).await;
    assert_eq!(r.metadata.response_code, ResponseCode::NXDomain);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_and_log() {
    let dns = FakeDns::start(answer_zone()).await.unwrap();
    let start = Instant::now();
    udp_ask(&dns, "a.test", RecordType::A).await;
    udp_ask(&dns, "A.test.", RecordType::AAAA).await;
    tcp_ask(&dns, "other.test", RecordType::A).await.unwrap();
    assert_eq!(dns.udp_queries(), 2);
    assert_eq!(dns.tcp_queries(), 1);
    assert_eq!(dns.queries(), 3);
    assert_eq!(dns.queries_for("a.TEST."), 2);
    assert_eq!(dns.queries_for("other.test"), 1);
    assert_eq!(dns.queries_for("nobody.test"), 0);
    let log = dns.log();
    let seen: Vec<_> = log
        .iter()
        .map(|e| (e.name.as_str(), e.qtype, e.transport))
        .collect();
    assert_eq!(
        seen,
        [
            ("a.test", RecordType::A, Transport::Udp),
            ("a.test", RecordType::AAAA, Transport::Udp),
            ("other.test", RecordType::A, Transport::Tcp),
        ]
    );
    assert!(log.windows(2).all(|w| w[0].at <= w[1].at));
    assert!(log[0].at >= start);
    dns.reset_counters();
    assert_eq!(
        (dns.queries(), dns.queries_for("a.test"), dns.log().len()),
        (0, 0, 0)
    );
}

/// A zone whose `slow.test` leaves a delayed UDP answer pending for 30 s.
fn slow_zone() -> Zone {
    answer_zone().with(
        "slow.test",
        Behaviour::Twice {
            forged: "1.2.3.4".parse().unwrap(),
            real: "10.0.0.9".parse().unwrap(),
            delay: Duration::from_secs(30),
            ttl: 60,
        },
    )
}

/// Starts work in every kind of task: an open TCP connection and a pending delayed answer.
async fn keep_busy(dns: &FakeDns) -> (TcpStream, UdpSocket) {
    let conn = TcpStream::connect(dns.addr()).await.unwrap();
    let sock = client().await;
    send(&sock, dns.addr(), &query("slow.test", RecordType::A)).await;
    assert!(recv(&sock, WAIT).await.is_some(), "forged answer");
    (conn, sock)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_every_task() {
    let dns = FakeDns::start(slow_zone()).await.unwrap();
    let addr = dns.addr();
    let state = Arc::clone(&dns.state);
    let _busy = keep_busy(&dns).await;
    dns.shutdown().await;
    assert_eq!(Arc::strong_count(&state), 1, "no task holds the state");
    // the delayed answer's task held the UDP socket: the port is free only if it is gone too
    let udp = UdpSocket::bind(addr).await.expect("udp port free");
    let tcp = TcpListener::bind(addr).await.expect("tcp port free");
    drop((udp, tcp));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_stops_every_task() {
    let dns = FakeDns::start(slow_zone()).await.unwrap();
    let addr = dns.addr();
    let state = Arc::clone(&dns.state);
    let _busy = keep_busy(&dns).await;
    drop(dns);
    let mut stopped = false;
    for _ in 0..100 {
        if Arc::strong_count(&state) == 1
            && UdpSocket::bind(addr).await.is_ok()
            && TcpListener::bind(addr).await.is_ok()
        {
            stopped = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(stopped, "tasks gone and port free after drop");
}

#[test]
fn normalize_names() {
    assert_eq!(normalize_name("WWW.Example.COM."), "www.example.com");
    assert_eq!(normalize_name("a.test"), "a.test");
    assert_eq!(normalize_name("."), "");
}

#[tokio::test]
async fn a_sequence_answers_each_query_type_in_turn() {
    let first = Ipv4Addr::new(127, 0, 1, 5);
    let then = Ipv4Addr::new(127, 0, 2, 5);
    let zone = Zone::new().with(
        "rebind.test",
        Behaviour::Sequence(vec![Behaviour::v4(&[first], 0), Behaviour::v4(&[then], 0)]),
    );
    let dns = FakeDns::start(zone).await.unwrap();
    // AAAA queries count on their own: they do not move the A answers along.
    assert!(v6s(&udp_ask(&dns, "rebind.test", RecordType::AAAA).await).is_empty());
    assert_eq!(
        v4s(&udp_ask(&dns, "rebind.test", RecordType::A).await),
        [first]
    );
    assert_eq!(
        v4s(&udp_ask(&dns, "rebind.test", RecordType::A).await),
        [then]
    );
    assert_eq!(
        v4s(&udp_ask(&dns, "rebind.test", RecordType::A).await),
        [then],
        "the last one repeats"
    );
    assert_eq!(dns.queries_for("rebind.test"), 4);
    dns.shutdown().await;
}

#[tokio::test]
async fn truncated_sends_every_type_to_tcp() {
    let inner = Behaviour::Answer {
        v4: vec![Ipv4Addr::new(127, 0, 1, 5)],
        v6: vec![Ipv6Addr::LOCALHOST],
        ttl: 60,
    };
    let zone = Zone::new().with("big.test", Behaviour::Truncated(Box::new(inner)));
    let dns = FakeDns::start(zone).await.unwrap();
    for qtype in [RecordType::A, RecordType::AAAA] {
        let udp = udp_ask(&dns, "big.test", qtype).await;
        assert!(udp.metadata.truncation && udp.answers.is_empty(), "{qtype}");
    }
    let aaaa = tcp_ask(&dns, "big.test", RecordType::AAAA).await.unwrap();
    assert!(!aaaa.metadata.truncation);
    assert_eq!(v6s(&aaaa), [Ipv6Addr::LOCALHOST]);
    let a = tcp_ask(&dns, "big.test", RecordType::A).await.unwrap();
    assert_eq!(v4s(&a), [Ipv4Addr::new(127, 0, 1, 5)]);
    dns.shutdown().await;
}
