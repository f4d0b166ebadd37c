//! Tests of `resolver::plain` against tiny DNS responders on 127.0.0.1 built with hickory-proto.

use super::*;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use hickory_proto::op::{Message, OpCode};
use hickory_proto::rr::rdata::A;
use hickory_proto::rr::{RData, Record};
use tokio::net::TcpListener;

/// Upper bound of queries any test responder handles.
const MAX_QUERIES: usize = 8;

#[derive(Clone, Copy)]
enum Behaviour {
    /// Two different answers 150 ms apart (an injector, then the real server).
    Twice,
    /// A TC answer with no records.
    Truncate,
    /// Receives and never answers.
    Silent,
    /// Junk first: garbage, a wrong id, the wrong question; then the real answer.
    WrongIdFirst,
}

fn answer(query: &Message, id: u16, ips: &[[u8; 4]], truncated: bool) -> Vec<u8> {
    let mut m = Message::response(id, OpCode::Query);
    m.metadata.recursion_desired = true;
    m.metadata.recursion_available = true;
    m.metadata.truncation = truncated;
    m.add_queries(query.queries.iter().cloned());
    if let Some(q) = query.queries.first() {
        for ip in ips {
            m.add_answer(Record::from_rdata(
                q.name().clone(),
                120,
                RData::A(A::from(Ipv4Addr::from(*ip))),
            ));
        }
    }
    m.to_vec().unwrap()
}

/// A bound UDP socket, its address and a query counter for [`serve_udp`].
async fn udp_socket() -> (UdpSocket, SocketAddr, Arc<AtomicUsize>) {
    let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let addr = socket.local_addr().unwrap();
    (socket, addr, Arc::new(AtomicUsize::new(0)))
}

fn serve_udp(socket: UdpSocket, behaviour: Behaviour, count: Arc<AtomicUsize>) {
    tokio::spawn(async move {
        let mut buf = vec![0u8; 4096];
        for _ in 0..MAX_QUERIES {
            let Ok((len, peer)) = socket.recv_from(&mut buf).await else {
                return;
            };
            count.fetch_add(1, Ordering::SeqCst);
            let Ok(query) = Message::from_vec(&buf[..len]) else {
                continue;
            };
            let id = query.metadata.id;
            match behaviour {
                Behaviour::Silent => {}
                Behaviour::Twice => {
                    let forged = answer(&query, id, &[[10, 10, 34, 35]], false);
                    let _ = socket.send_to(&forged, peer).await;
                    tokio::time::sleep(Duration::from_millis(150)).await;
                    let real = answer(&query, id, &[[93, 184, 216, 34]], false);
                    let _ = socket.send_to(&real, peer).await;
                }
                Behaviour::Truncate => {
                    let tc = answer(&query, id, &[], true);
                    let _ = socket.send_to(&tc, peer).await;
                }
                Behaviour::WrongIdFirst => {
                    let _ = socket.send_to(b"\x00\x01garbage", peer).await;
                    let wrong_id = answer(&query, id.wrapping_add(1), &[[6, 6, 6, 6]], false);
                    let _ = socket.send_to(&wrong_id, peer).await;
                    let mut other = query.clone();
                    other.queries[0]
                        .set_name(hickory_proto::rr::Name::from_ascii("evil.test.").unwrap());
                    let wrong_question = answer(&other, id, &[[7, 7, 7, 7]], false);
                    let _ = socket.send_to(&wrong_question, peer).await;
                    let real = answer(&query, id, &[[93, 184, 216, 34]], false);
                    let _ = socket.send_to(&real, peer).await;
                }
            }
        }
    });
}

async fn start(behaviour: Behaviour) -> (SocketAddr, Arc<AtomicUsize>) {
    let (socket, addr, count) = udp_socket().await;
    serve_udp(socket, behaviour, count.clone());
    (addr, count)
}

/// A TCP DNS responder on `addr`'s port answering each query with `ips`.
fn serve_tcp(listener: TcpListener, ips: &'static [[u8; 4]], count: Arc<AtomicUsize>) {
    tokio::spawn(async move {
        for _ in 0..MAX_QUERIES {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            count.fetch_add(1, Ordering::SeqCst);
            let mut prefix = [0u8; 2];
            if stream.read_exact(&mut prefix).await.is_err() {
                continue;
            }
            let mut body = vec![0u8; usize::from(u16::from_be_bytes(prefix))];
            if stream.read_exact(&mut body).await.is_err() {
                continue;
            }
            let Ok(query) = Message::from_vec(&body) else {
                continue;
            };
            let reply = answer(&query, query.metadata.id, ips, false);
            let mut framed = (reply.len() as u16).to_be_bytes().to_vec();
            framed.extend_from_slice(&reply);
            let _ = stream.write_all(&framed).await;
        }
    });
}

#[tokio::test]
async fn collects_both_answers_within_hold_on() {
    let (addr, _) = start(Behaviour::Twice).await;
    let responses = query(
        addr,
        "www.example.com",
        QType::A,
        Duration::from_secs(2),
        Duration::from_secs(1),
    )
    .await
    .unwrap();
    assert_eq!(responses.len(), 2, "{responses:?}");
    assert_eq!(responses[0].ips, vec![IpAddr::from([10, 10, 34, 35])]);
    assert_eq!(responses[1].ips, vec![IpAddr::from([93, 184, 216, 34])]);
    assert!(
        responses
            .iter()
            .all(|r| r.answers("www.example.com", QType::A))
    );
}

#[tokio::test]
async fn short_hold_on_returns_first_answer_only() {
    let (addr, _) = start(Behaviour::Twice).await;
    let responses = query(
        addr,
        "www.example.com",
        QType::A,
        Duration::from_secs(2),
        Duration::from_millis(10),
    )
    .await
    .unwrap();
    assert_eq!(responses.len(), 1);
    assert_eq!(responses[0].ips, vec![IpAddr::from([10, 10, 34, 35])]);
}

#[tokio::test]
async fn truncated_answer_falls_back_to_tcp() {
    // UDP and TCP on the same port; retry if the TCP port happens to be taken.
    let mut bound = None;
    for _ in 0..20 {
        let (socket, addr, count) = udp_socket().await;
        if let Ok(listener) = TcpListener::bind(addr).await {
            bound = Some((socket, listener, addr, count));
            break;
        }
    }
    let (socket, listener, addr, udp_count) = bound.expect("no port free for udp and tcp");
    serve_udp(socket, Behaviour::Truncate, udp_count.clone());
    let tcp_count = Arc::new(AtomicUsize::new(0));
    serve_tcp(
        listener,
        &[[192, 0, 2, 1], [192, 0, 2, 2]],
        tcp_count.clone(),
    );

    let responses = query(
        addr,
        "big.example",
        QType::A,
        Duration::from_secs(2),
        Duration::from_millis(300),
    )
    .await
    .unwrap();
    assert_eq!(responses.len(), 1);
    assert!(!responses[0].truncated);
    assert_eq!(
        responses[0].ips,
        vec![IpAddr::from([192, 0, 2, 1]), IpAddr::from([192, 0, 2, 2])]
    );
    assert_eq!(udp_count.load(Ordering::SeqCst), 1);
    assert_eq!(tcp_count.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn silent_server_times_out() {
    let (addr, count) = start(Behaviour::Silent).await;
    let err = query(
        addr,
        "example.com",
        QType::Aaaa,
        Duration::from_millis(200),
        Duration::from_millis(50),
    )
    .await
    .unwrap_err();
    assert_eq!(err, PlainError::Timeout);
    assert!(err.is_retryable());
    assert_eq!(count.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn junk_and_wrong_id_are_ignored() {
    let (addr, _) = start(Behaviour::WrongIdFirst).await;
    let responses = query(
        addr,
        "www.example.com",
        QType::A,
        Duration::from_secs(2),
        Duration::from_millis(200),
    )
    .await
    .unwrap();
    assert_eq!(responses.len(), 1, "{responses:?}");
    assert_eq!(responses[0].ips, vec![IpAddr::from([93, 184, 216, 34])]);
}

#[tokio::test]
async fn closed_port_is_a_retryable_io_error() {
    let addr = {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        s.local_addr().unwrap()
    };
    let err = query(
        addr,
        "example.com",
        QType::A,
        Duration::from_millis(500),
        Duration::from_millis(10),
    )
    .await
    .unwrap_err();
    // Linux reports ICMP port unreachable on a connected socket; a timeout is also acceptable.
    assert!(
        matches!(err, PlainError::Io(_) | PlainError::Timeout),
        "{err:?}"
    );
    assert!(err.is_retryable());
}

#[tokio::test]
async fn attempts_go_round_robin_until_an_answer() {
    let (silent, silent_count) = start(Behaviour::Silent).await;
    let (good, good_count) = start(Behaviour::WrongIdFirst).await;
    let responses = query_with_attempts(
        &[silent, good],
        "www.example.com",
        QType::A,
        Duration::from_millis(200),
        Duration::from_millis(10),
        3,
    )
    .await
    .unwrap();
    assert_eq!(responses[0].ips, vec![IpAddr::from([93, 184, 216, 34])]);
    assert_eq!(silent_count.load(Ordering::SeqCst), 1);
    assert_eq!(good_count.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn attempts_exhausted_gives_last_error() {
    let (a, a_count) = start(Behaviour::Silent).await;
    let (b, b_count) = start(Behaviour::Silent).await;
    let err = query_with_attempts(
        &[a, b],
        "example.com",
        QType::A,
        Duration::from_millis(100),
        Duration::ZERO,
        2,
    )
    .await
    .unwrap_err();
    assert_eq!(err, PlainError::Timeout);
    assert_eq!(a_count.load(Ordering::SeqCst), 2);
    assert_eq!(b_count.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn bad_name_is_not_retried() {
    let (addr, count) = start(Behaviour::Silent).await;
    let err = query_with_attempts(
        &[addr],
        "a..b",
        QType::A,
        Duration::from_millis(100),
        Duration::ZERO,
        3,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, PlainError::Wire(WireError::BadName { .. })),
        "{err:?}"
    );
    assert!(!err.is_retryable());
    assert_eq!(count.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn no_servers_is_an_error() {
    let err = query_with_attempts(
        &[],
        "example.com",
        QType::A,
        Duration::from_millis(100),
        Duration::ZERO,
        2,
    )
    .await
    .unwrap_err();
    assert!(matches!(err, PlainError::Io(_)), "{err:?}");
}

#[test]
fn resolv_conf_parsing_skips_junk() {
    let text = "# generated\n\
                search example.com\n\
                nameserver 192.0.2.53\n\
                nameserver   2001:db8::53   # v6\n\
                nameserver fe80::1%eth0\n\
                nameserver not-an-ip\n\
                nameserver\n\
                ;nameserver 198.51.100.1\n\
                nameserver 192.0.2.53\n\
                options ndots:2\n\
                \tnameserver 127.0.0.53\n";
    assert_eq!(
        parse_resolv_conf(text),
        vec![
            "192.0.2.53:53".parse::<SocketAddr>().unwrap(),
            "[2001:db8::53]:53".parse().unwrap(),
            "127.0.0.53:53".parse().unwrap(),
        ]
    );
    assert!(parse_resolv_conf("").is_empty());
    assert!(parse_resolv_conf("\u{0}\u{ff}nameserver").is_empty());
}

#[test]
fn system_nameservers_have_port_53() {
    assert!(system_nameservers().iter().all(|s| s.port() == 53));
}

#[test]
fn random_ids_vary() {
    let ids: std::collections::HashSet<u16> = (0..64).map(|_| random_id()).collect();
    assert!(ids.len() > 32, "{}", ids.len());
}
