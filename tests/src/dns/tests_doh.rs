//! Tests of [`super::FakeDoh`] with a hyper client over tokio-rustls (connecting to 127.0.0.1 with SNI doh.test).

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hickory_proto::op::{Message, ResponseCode};
use hickory_proto::rr::RecordType;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HOST};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::ServerName;
use rustls::pki_types::pem::PemObject;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use super::tests::{query, v4s};
use super::*;

const DNS_MESSAGE: &str = "application/dns-message";

enum Client {
    H1(http1::SendRequest<Full<Bytes>>),
    H2(http2::SendRequest<Full<Bytes>>),
}

struct Doh<'a> {
    server: &'a FakeDoh,
    client: Client,
}

async fn tls_connect(
    doh: &FakeDoh,
    roots: &[rustls::pki_types::CertificateDer<'static>],
    alpn: &[&[u8]],
    name: &str,
) -> std::io::Result<TlsStream<TcpStream>> {
    let cfg = super::tls::client_config(roots, alpn).unwrap();
    let tcp = TcpStream::connect((doh.bootstrap(), doh.port())).await?;
    let server_name = ServerName::try_from(name.to_owned()).unwrap();
    TlsConnector::from(Arc::new(cfg))
        .connect(server_name, tcp)
        .await
}

/// A connection to `doh` trusting its CA, offering `alpn`; returns the negotiated protocol too.
async fn connect<'a>(doh: &'a FakeDoh, alpn: &[&[u8]]) -> (Doh<'a>, Vec<u8>) {
    let tls = tls_connect(doh, &[doh.ca_der()], alpn, DOH_HOST)
        .await
        .unwrap();
    let proto = tls.get_ref().1.alpn_protocol().unwrap_or_default().to_vec();
    let client = if proto == b"h2" {
        let (send, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
            .await
            .unwrap();
        tokio::spawn(conn);
        Client::H2(send)
    } else {
        let (send, conn) = http1::handshake(TokioIo::new(tls)).await.unwrap();
        tokio::spawn(conn);
        Client::H1(send)
    };
    (
        Doh {
            server: doh,
            client,
        },
        proto,
    )
}

impl Doh<'_> {
    /// `path_and_query` like "/dns-query?dns=..."; absolute URI for h2, origin form + Host for http/1.1.
    fn request(&self, method: &str, path_and_query: &str) -> hyper::http::request::Builder {
        let authority = format!("{DOH_HOST}:{}", self.server.port());
        match self.client {
            Client::H2(_) => Request::builder()
                .method(method)
                .uri(format!("https://{authority}{path_and_query}")),
            Client::H1(_) => Request::builder()
                .method(method)
                .uri(path_and_query)
                .header(HOST, authority),
        }
    }

    async fn send(&mut self, req: Request<Full<Bytes>>) -> Response<Incoming> {
        match &mut self.client {
            Client::H1(s) => {
                s.ready().await.unwrap();
                s.send_request(req).await.unwrap()
            }
            Client::H2(s) => {
                s.ready().await.unwrap();
                s.send_request(req).await.unwrap()
            }
        }
    }

    async fn get(&mut self, m: &Message) -> (StatusCode, Option<String>, Bytes) {
        let path = format!("/dns-query?dns={}", base64url_encode(&m.to_vec().unwrap()));
        let req = self
            .request("GET", &path)
            .header("accept", DNS_MESSAGE)
            .body(Full::default())
            .unwrap();
        collect(self.send(req).await).await
    }

    async fn post(
        &mut self,
        m: &Message,
        content_type: &str,
    ) -> (StatusCode, Option<String>, Bytes) {
        let req = self
            .request("POST", "/dns-query")
            .header(CONTENT_TYPE, content_type)
            .body(Full::new(Bytes::from(m.to_vec().unwrap())))
            .unwrap();
        collect(self.send(req).await).await
    }

    async fn status(&mut self, method: &str, path: &str) -> StatusCode {
        let req = self.request(method, path).body(Full::default()).unwrap();
        collect(self.send(req).await).await.0
    }
}

/// (status, cache-control, body)
async fn collect(resp: Response<Incoming>) -> (StatusCode, Option<String>, Bytes) {
    let status = resp.status();
    if status == StatusCode::OK {
        assert_eq!(resp.headers()[CONTENT_TYPE], DNS_MESSAGE);
    }
    let cc = resp
        .headers()
        .get(CACHE_CONTROL)
        .map(|v| v.to_str().unwrap().to_owned());
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, cc, body)
}

fn dns_query(name: &str, qtype: RecordType) -> Message {
    let mut m = query(name, qtype);
    m.metadata.id = 0; // RFC 8484 §4.1
    m
}

fn zone() -> Zone {
    Zone::new()
        .with("a.test", Behaviour::v4(&[Ipv4Addr::new(10, 0, 0, 1)], 60))
        .with("gone.test", Behaviour::NxDomain)
        .with("broken.test", Behaviour::ServFail)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_over_h2_and_post_over_http1() {
    let doh = FakeDoh::start(zone()).await.unwrap();
    let (mut h2, proto) = connect(&doh, &[b"h2", b"http/1.1"]).await;
    assert_eq!(proto, b"h2");
    let (status, cc, body) = h2.get(&dns_query("A.test.", RecordType::A)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(cc.as_deref(), Some("max-age=60"));
    let m = Message::from_vec(&body).unwrap();
    assert_eq!(m.metadata.id, 0);
    assert_eq!(v4s(&m), [Ipv4Addr::new(10, 0, 0, 1)]);

    let (mut h1, proto) = connect(&doh, &[b"http/1.1"]).await;
    assert_eq!(proto, b"http/1.1");
    let q = query("a.test", RecordType::A);
    let (status, _, body) = h1.post(&q, DNS_MESSAGE).await;
    assert_eq!(status, StatusCode::OK);
    let m = Message::from_vec(&body).unwrap();
    assert_eq!(m.metadata.id, q.metadata.id);
    assert_eq!(v4s(&m), [Ipv4Addr::new(10, 0, 0, 1)]);
    // a second request on the same http/1.1 connection, with a parameter on the media type
    let (status, _, _) = h1.post(&q, "application/dns-message; charset=binary").await;
    assert_eq!(status, StatusCode::OK);
    // POST over h2 and GET over http/1.1 too
    assert_eq!(h2.post(&q, DNS_MESSAGE).await.0, StatusCode::OK);
    assert_eq!(h1.get(&q).await.0, StatusCode::OK);

    assert_eq!(doh.get_queries(), 2);
    assert_eq!(doh.post_queries(), 3);
    assert_eq!(doh.queries(), 5);
    assert_eq!(doh.queries_for("a.test"), 5);
    assert_eq!(doh.requests(), 5);
    let log = doh.log();
    assert_eq!(log.len(), 5);
    assert_eq!(log[0].transport, Transport::DohGet);
    assert_eq!(log[1].transport, Transport::DohPost);
    doh.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behaviours_over_doh() {
    let doh = FakeDoh::start(zone()).await.unwrap();
    doh.set(
        "race.test",
        Behaviour::Twice {
            forged: "1.2.3.4".parse().unwrap(),
            real: "10.9.9.9".parse().unwrap(),
            delay: Duration::from_millis(50),
            ttl: 60,
        },
    );
    doh.set(
        "big.test",
        Behaviour::Truncate {
            v4: vec![Ipv4Addr::new(10, 1, 1, 1)],
            ttl: 60,
        },
    );
    let (mut c, _) = connect(&doh, &[b"h2"]).await;
    let rcode = |b: &Bytes| Message::from_vec(b).unwrap().metadata.response_code;
    let (s, _, b) = c.get(&dns_query("gone.test", RecordType::A)).await;
    assert_eq!((s, rcode(&b)), (StatusCode::OK, ResponseCode::NXDomain));
    let (s, _, b) = c
        .post(&dns_query("broken.test", RecordType::A), DNS_MESSAGE)
        .await;
    assert_eq!((s, rcode(&b)), (StatusCode::OK, ResponseCode::ServFail));
    let (_, _, b) = c.get(&dns_query("unknown.test", RecordType::A)).await;
    assert_eq!(rcode(&b), ResponseCode::NXDomain);

    doh.set_catch_all(CatchAll::Hijack("198.51.100.9".parse().unwrap()));
    let (_, _, b) = c.get(&dns_query("zz91kq.example", RecordType::A)).await;
    assert_eq!(
        v4s(&Message::from_vec(&b).unwrap()),
        [Ipv4Addr::new(198, 51, 100, 9)]
    );

    let (_, _, b) = c.get(&dns_query("race.test", RecordType::A)).await;
    let m = Message::from_vec(&b).unwrap();
    assert_eq!(
        v4s(&m),
        [Ipv4Addr::new(10, 9, 9, 9)],
        "DoH gets only the real answer"
    );
    let (_, _, b) = c.get(&dns_query("big.test", RecordType::A)).await;
    let m = Message::from_vec(&b).unwrap();
    assert!(!m.metadata.truncation);
    assert_eq!(v4s(&m), [Ipv4Addr::new(10, 1, 1, 1)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn down_gives_503_until_up() {
    let doh = FakeDoh::start(zone()).await.unwrap();
    let (mut c, _) = connect(&doh, &[b"h2"]).await;
    doh.set_down(true);
    assert!(doh.is_down());
    let q = dns_query("a.test", RecordType::A);
    assert_eq!(c.get(&q).await.0, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        c.post(&q, DNS_MESSAGE).await.0,
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(doh.queries(), 2, "counted while down");
    doh.set_down(false);
    let (s, _, b) = c.get(&q).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v4s(&Message::from_vec(&b).unwrap()).len(), 1);
    doh.reset_counters();
    assert_eq!(
        (doh.queries(), doh.get_queries(), doh.post_queries()),
        (0, 0, 0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_are_rejected() {
    let doh = FakeDoh::start(zone()).await.unwrap();
    let (mut c, _) = connect(&doh, &[b"http/1.1"]).await;
    assert_eq!(c.status("GET", "/dns-query").await, StatusCode::BAD_REQUEST);
    assert_eq!(
        c.status("GET", "/dns-query?dns=%%%").await,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        c.status("GET", "/dns-query?dns=AAAA").await,
        StatusCode::BAD_REQUEST,
        "not a dns message"
    );
    assert_eq!(
        c.status("GET", "/other?dns=AAAA").await,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        c.status("PUT", "/dns-query").await,
        StatusCode::METHOD_NOT_ALLOWED
    );
    let q = dns_query("a.test", RecordType::A);
    assert_eq!(
        c.post(&q, "text/plain").await.0,
        StatusCode::UNSUPPORTED_MEDIA_TYPE
    );
    assert_eq!(doh.queries(), 0);
    assert_eq!(doh.requests(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_leaves_the_request_hanging() {
    let doh = FakeDoh::start(Zone::new().with("silent.test", Behaviour::Drop))
        .await
        .unwrap();
    let (mut c, _) = connect(&doh, &[b"h2"]).await;
    let q = dns_query("silent.test", RecordType::A);
    let r = tokio::time::timeout(Duration::from_millis(300), c.get(&q)).await;
    assert!(r.is_err(), "client times out");
    assert_eq!(doh.queries_for("silent.test"), 1);
    // shutdown does not wait for the hanging stream
    doh.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificate_verifies_only_with_the_ca() {
    let doh = FakeDoh::start(zone()).await.unwrap();
    let ca = [doh.ca_der()];
    assert!(tls_connect(&doh, &ca, &[b"h2"], DOH_HOST).await.is_ok());
    assert!(
        tls_connect(&doh, &ca, &[b"h2"], "127.0.0.1").await.is_ok(),
        "IP SAN"
    );
    assert!(
        tls_connect(&doh, &ca, &[b"h2"], "other.test")
            .await
            .is_err(),
        "wrong name"
    );
    assert!(
        tls_connect(&doh, &[], &[b"h2"], DOH_HOST).await.is_err(),
        "no CA"
    );
    let other = FakeDoh::start(Zone::new()).await.unwrap();
    assert!(
        tls_connect(&doh, &[other.ca_der()], &[b"h2"], DOH_HOST)
            .await
            .is_err(),
        "another server's CA"
    );
    // the public client config trusts the CA
    let tcp = TcpStream::connect(doh.addr()).await.unwrap();
    let tls = TlsConnector::from(Arc::new(doh.client_config().unwrap()))
        .connect(ServerName::try_from(DOH_HOST).unwrap(), tcp)
        .await
        .unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_bootstrap_and_ca_file() {
    let doh = FakeDoh::start(Zone::new()).await.unwrap();
    assert_eq!(
        doh.url(),
        format!("https://doh.test:{}/dns-query", doh.port())
    );
    assert_eq!(doh.bootstrap(), IpAddr::V4(Ipv4Addr::LOCALHOST));
    let dir = tempfile::tempdir().unwrap();
    let path = doh.write_ca_file(dir.path()).unwrap();
    assert!(path.starts_with(dir.path()));
    let pem = std::fs::read_to_string(&path).unwrap();
    assert_eq!(pem, doh.ca_pem());
    assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"));
    let der = rustls::pki_types::CertificateDer::from_pem_file(&path).unwrap();
    assert_eq!(der, doh.ca_der());
}

fn hanging_zone() -> Zone {
    zone().with("silent.test", Behaviour::Drop)
}

/// Leaves an h2 connection open with one request hanging in a stream task.
async fn keep_busy(doh: &FakeDoh) -> Doh<'_> {
    let (mut c, _) = connect(doh, &[b"h2"]).await;
    let r = tokio::time::timeout(
        Duration::from_millis(200),
        c.get(&dns_query("silent.test", RecordType::A)),
    )
    .await;
    assert!(r.is_err());
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_every_task() {
    let doh = FakeDoh::start(hanging_zone()).await.unwrap();
    let addr = doh.addr();
    let shared = Arc::clone(&doh.shared);
    let busy = keep_busy(&doh).await;
    let Doh { client, .. } = busy;
    doh.shutdown().await;
    assert_eq!(Arc::strong_count(&shared), 1, "no task holds the state");
    drop(
        TcpListener::bind(addr)
            .await
            .expect("port free after shutdown"),
    );
    drop(client);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_stops_every_task() {
    let doh = FakeDoh::start(hanging_zone()).await.unwrap();
    let addr = doh.addr();
    let shared = Arc::clone(&doh.shared);
    let Doh { client, .. } = keep_busy(&doh).await;
    drop(doh);
    let mut stopped = false;
    for _ in 0..100 {
        if Arc::strong_count(&shared) == 1 && TcpListener::bind(addr).await.is_ok() {
            stopped = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(stopped, "tasks gone and port free after drop");
    drop(client);
}

#[test]
fn base64url_round_trip() {
    let vectors: [(&[u8], &str); 7] = [
        (b"", ""),
        (b"f", "Zg"),
        (b"fo", "Zm8"),
        (b"foo", "Zm9v"),
        (b"foob", "Zm9vYg"),
        (b"fooba", "Zm9vYmE"),
        (&[0xfb, 0xff, 0xbf], "-_-_"),
    ];
    for (raw, enc) in vectors {
        assert_eq!(base64url_encode(raw), enc);
        assert_eq!(base64url_decode(enc).as_deref(), Some(raw));
    }
    assert_eq!(
        base64url_decode("Zg==").as_deref(),
        Some(&b"f"[..]),
        "padding tolerated"
    );
    assert_eq!(base64url_decode("Z"), None);
    assert_eq!(base64url_decode("Zm9v!A"), None);
    assert_eq!(base64url_decode("Zm+v"), None, "standard alphabet rejected");
    let q = query("a.test", RecordType::AAAA).to_vec().unwrap();
    assert_eq!(base64url_decode(&base64url_encode(&q)), Some(q));
}
