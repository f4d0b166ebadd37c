//! Tests of `resolver::doh` against a loopback tokio-rustls + hyper DoH server for `doh.test`.

use super::*;
use std::convert::Infallible;
use std::net::Ipv4Addr;
use std::str::FromStr as _;
use std::sync::Mutex;

use hickory_proto::op::{Message, OpCode};
use hickory_proto::rr::rdata::A;
use hickory_proto::rr::{RData, Record};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::TcpListener;

/// Upper bound of connections a test server accepts.
const MAX_ACCEPTS: usize = 8;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// A proper answer with 192.0.2.80.
    Answer,
    /// 503 Service Unavailable.
    Unavailable,
    /// 200 with a body that is not DNS.
    Garbage,
    /// 200 with a DNS answer whose id is not 0.
    WrongId,
}

/// What the server saw: (HTTP version, method, content-type, query name) per request.
type Seen = Arc<Mutex<Vec<(http::Version, http::Method, String, String)>>>;

struct Pki {
    ca_pem: Vec<u8>,
    acceptor: tokio_rustls::TlsAcceptor,
}

/// A fresh CA and a `doh.test` leaf signed by it, served with ALPN h2 + http/1.1.
fn pki() -> Pki {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "doh test ca");
    ca_params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);

    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let mut leaf_params = rcgen::CertificateParams::new(vec!["doh.test".to_string()]).unwrap();
    leaf_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "doh.test");
    leaf_params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let leaf_cert = leaf_params.signed_by(&leaf_key, &issuer).unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![leaf_cert.der().clone()], key)
        .unwrap();
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Pki {
        ca_pem: ca_cert.pem().into_bytes(),
        acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(cfg)),
    }
}

fn reply(mode: Mode, query: &Message) -> http::Response<Full<Bytes>> {
    let dns = |id: u16| {
        let mut m = Message::response(id, OpCode::Query);
        m.metadata.recursion_available = true;
        m.add_queries(query.queries.iter().cloned());
        if let Some(q) = query.queries.first() {
            m.add_answer(Record::from_rdata(
                q.name().clone(),
                300,
                RData::A(A::from(Ipv4Addr::new(192, 0, 2, 80))),
            ));
        }
        Bytes::from(m.to_vec().unwrap())
    };
    let (status, body) = match mode {
        Mode::Answer => (200, dns(query.metadata.id)),
        Mode::WrongId => (200, dns(query.metadata.id.wrapping_add(7))),
        Mode::Garbage => (200, Bytes::from_static(b"<html>not dns</html>")),
        Mode::Unavailable => (503, Bytes::from_static(b"busy")),
    };
    http::Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, DNS_MESSAGE)
        .body(Full::new(body))
        .unwrap()
}

async fn handle(
    mode: Mode,
    seen: Seen,
    req: http::Request<Incoming>,
) -> http::Response<Full<Bytes>> {
    let version = req.version();
    let method = req.method().clone();
    let ct = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-")
        .to_string();
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let Ok(query) = Message::from_vec(&body) else {
        seen.lock()
            .unwrap()
            .push((version, method, ct, "<bad query>".to_string()));
        return http::Response::builder()
            .status(400)
            .body(Full::new(Bytes::new()))
            .unwrap();
    };
    let qname = query
        .queries
        .first()
        .map(|q| q.name().to_ascii())
        .unwrap_or_default();
    assert_eq!(query.metadata.id, 0, "rfc 8484 id");
    seen.lock().unwrap().push((version, method, ct, qname));
    reply(mode, &query)
}

/// Starts a TLS DoH server on 127.0.0.1:0.
async fn doh_server(mode: Mode, acceptor: tokio_rustls::TlsAcceptor) -> (u16, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    tokio::spawn(async move {
        for _ in 0..MAX_ACCEPTS {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            let record = record.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let svc = service_fn(move |req| {
                    let record = record.clone();
                    async move { Ok::<_, Infallible>(handle(mode, record, req).await) }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), svc)
                    .await;
            });
        }
    });
    (port, seen)
}

fn endpoint(port: u16, ca_pem: &[u8]) -> DohEndpoint {
    DohEndpoint {
        url: url::Url::parse(&format!("https://doh.test:{port}/dns-query")).unwrap(),
        bootstrap: Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        ca_pem: Some(ca_pem.to_vec()),
    }
}

const TIMEOUT: Duration = Duration::from_secs(5);

#[tokio::test]
async fn answers_over_h2_via_bootstrap() {
    let pki = pki();
    let (port, seen) = doh_server(Mode::Answer, pki.acceptor.clone()).await;
    // doh.test resolves nowhere: success proves the bootstrap address was used.
    let client = DohClient::new(vec![endpoint(port, &pki.ca_pem)], TIMEOUT).unwrap();
    let r = client.query("www.Example.com", QType::A).await.unwrap();
    assert_eq!(r.id, 0);
    assert_eq!(r.rcode, 0);
    assert_eq!(r.ips, vec![IpAddr::from([192, 0, 2, 80])]);
    assert_eq!(r.min_ttl, 300);
    let again = client.query("second.example", QType::A).await.unwrap();
    assert!(again.answers("second.example", QType::A));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    for (version, method, ct, _) in &seen {
        assert_eq!(*version, http::Version::HTTP_2);
        assert_eq!(*method, http::Method::POST);
        assert_eq!(ct, DNS_MESSAGE);
    }
    assert_eq!(seen[0].3.to_ascii_lowercase(), "www.example.com.");
}

#[tokio::test]
async fn wrong_ca_fails_tls() {
    let pki = pki();
    let other = pki_ca_only();
    let (port, seen) = doh_server(Mode::Answer, pki.acceptor.clone()).await;
    let client = DohClient::new(vec![endpoint(port, &other)], TIMEOUT).unwrap();
    let err = client.query("example.com", QType::A).await.unwrap_err();
    assert!(matches!(err, DohError::Tls { .. }), "{err:?}");
    assert!(seen.lock().unwrap().is_empty());
}

/// PEM of an unrelated CA.
fn pki_ca_only() -> Vec<u8> {
    pki().ca_pem
}

#[tokio::test]
async fn status_503_is_a_status_error() {
    let pki = pki();
    let (port, seen) = doh_server(Mode::Unavailable, pki.acceptor.clone()).await;
    let client = DohClient::new(vec![endpoint(port, &pki.ca_pem)], TIMEOUT).unwrap();
    let err = client.query("example.com", QType::Aaaa).await.unwrap_err();
    assert!(
        matches!(err, DohError::Status { status: 503, .. }),
        "{err:?}"
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn bad_bodies_are_errors() {
    let pki = pki();
    for mode in [Mode::Garbage, Mode::WrongId] {
        let (port, _) = doh_server(mode, pki.acceptor.clone()).await;
        let client = DohClient::new(vec![endpoint(port, &pki.ca_pem)], TIMEOUT).unwrap();
        let err = client.query("example.com", QType::A).await.unwrap_err();
        assert!(matches!(err, DohError::BadResponse { .. }), "{err:?}");
    }
}

#[tokio::test]
async fn endpoints_are_tried_in_order() {
    let pki = pki();
    let (bad_port, bad_seen) = doh_server(Mode::Unavailable, pki.acceptor.clone()).await;
    let (good_port, good_seen) = doh_server(Mode::Answer, pki.acceptor.clone()).await;
    let client = DohClient::new(
        vec![
            endpoint(bad_port, &pki.ca_pem),
            endpoint(good_port, &pki.ca_pem),
        ],
        TIMEOUT,
    )
    .unwrap();
    let r = client.query("example.com", QType::A).await.unwrap();
    assert_eq!(r.ips, vec![IpAddr::from([192, 0, 2, 80])]);
    assert_eq!(bad_seen.lock().unwrap().len(), 1);
    assert_eq!(good_seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn silent_server_times_out() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accepts TCP and never speaks TLS.
    let hold = tokio::spawn(async move {
        let accepted = listener.accept().await;
        tokio::time::sleep(Duration::from_secs(5)).await;
        drop(accepted);
    });
    let pki = pki();
    let client = DohClient::new(
        vec![endpoint(port, &pki.ca_pem)],
        Duration::from_millis(300),
    )
    .unwrap();
    let err = client.query("example.com", QType::A).await.unwrap_err();
    assert!(matches!(err, DohError::Timeout { .. }), "{err:?}");
    hold.abort();
}

#[tokio::test]
async fn bootstrap_resolver_maps_only_the_endpoint_host() {
    use tower_service::Service as _;
    let ip = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 9));
    let mut resolver = BootstrapResolver::new("DoH.test", Some(ip));
    let addrs: Vec<SocketAddr> = resolver
        .call(Name::from_str("doh.test").unwrap())
        .await
        .unwrap()
        .collect();
    assert_eq!(addrs, vec![SocketAddr::new(ip, 0)]);
    assert!(
        resolver
            .call(Name::from_str("other.test").unwrap())
            .await
            .is_err()
    );
}

#[test]
fn config_errors() {
    let pki = pki();
    assert_eq!(
        DohClient::new(Vec::new(), TIMEOUT).unwrap_err(),
        DohError::NoEndpoints
    );
    let mut plain_http = endpoint(443, &pki.ca_pem);
    plain_http.url = url::Url::parse("http://doh.test/dns-query").unwrap();
    assert!(matches!(
        DohClient::new(vec![plain_http], TIMEOUT),
        Err(DohError::Config(_))
    ));
    let no_certs = endpoint(443, b"not a pem at all");
    assert!(matches!(
        DohClient::new(vec![no_certs], TIMEOUT),
        Err(DohError::Config(_))
    ));
    let broken = endpoint(
        443,
        b"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n",
    );
    assert!(matches!(
        DohClient::new(vec![broken], TIMEOUT),
        Err(DohError::Config(_))
    ));
    let ok = DohClient::new(vec![endpoint(443, &pki.ca_pem)], TIMEOUT).unwrap();
    assert!(format!("{ok:?}").contains("doh.test/dns-query"));
}

#[tokio::test]
async fn bad_name_fails_before_any_request() {
    let pki = pki();
    let (port, seen) = doh_server(Mode::Answer, pki.acceptor.clone()).await;
    let client = DohClient::new(vec![endpoint(port, &pki.ca_pem)], TIMEOUT).unwrap();
    let err = client.query("bad..name", QType::A).await.unwrap_err();
    assert!(
        matches!(err, DohError::Wire(WireError::BadName { .. })),
        "{err:?}"
    );
    assert!(seen.lock().unwrap().is_empty());
}
