//! TLS failures against loopback TLS servers, one per case: each ends as reason `tls` with the exact detail naming
//! the cause (expired, self-signed, wrong host, unknown issuer, protocol version), and a handshake the server never
//! answers ends as `tls: handshake timed out` after `connect_timeout`.

use super::*;
use crawl_core::record::Reason;
use std::convert::Infallible;
use std::net::SocketAddr;

use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A TLS alert record, fatal (2) `protocol_version` (70), as a server rejecting the offered versions sends it.
const PROTOCOL_VERSION_ALERT: [u8; 7] = [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x46];

fn settings() -> HttpSettings {
    HttpSettings {
        connect_timeout: Duration::from_secs(2),
        header_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(5),
        total_timeout: Duration::from_secs(20),
        allow_private_networks: true,
        ..HttpSettings::default()
    }
}

fn url(s: &str) -> url::Url {
    url::Url::parse(s).unwrap()
}

/// A CA (certificate der, issuer for signing leaves).
fn ca(
    name: &str,
) -> (
    CertificateDer<'static>,
    rcgen::Issuer<'static, rcgen::KeyPair>,
) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let cert = params.self_signed(&key).unwrap();
    (cert.der().clone(), rcgen::Issuer::new(params, key))
}

/// Parameters of a server leaf for `names`.
fn leaf_params(names: &[&str]) -> rcgen::CertificateParams {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut params = rcgen::CertificateParams::new(names.clone()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, names[0].as_str());
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    params
}

/// A leaf signed by `issuer`: (certificate, key).
fn signed_leaf(
    params: rcgen::CertificateParams,
    issuer: &rcgen::Issuer<'static, rcgen::KeyPair>,
) -> (CertificateDer<'static>, PrivateKeyDer<'static>) {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, issuer).unwrap();
    let der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    (cert.der().clone(), der)
}

/// A hyper server behind TLS with `leaf`, answering 200 "secure" after `delay`; accepts connections until dropped.
async fn tls_server(
    leaf: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
    delay: Duration,
) -> SocketAddr {
    let acceptor = super::tests::tls_acceptor(leaf, key);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(stream) = acceptor.accept(tcp).await else {
                    return;
                };
                let svc = service_fn(move |_req| async move {
                    tokio::time::sleep(delay).await;
                    Ok::<_, Infallible>(http::Response::new(Full::new(Bytes::from_static(
                        b"secure",
                    ))))
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    addr
}

/// GETs `target` expecting a TLS failure; returns its detail.
async fn tls_failure(settings: HttpSettings, target: &str) -> String {
    let client = HttpClient::new(settings).unwrap();
    let err = client.get(&url(target), None).await.unwrap_err();
    assert_eq!(err.reason(), Some(Reason::Tls), "{err:?}");
    assert!(matches!(err, FetchError::Tls(_)), "{err:?}");
    assert!(!err.is_retryable());
    err.to_string()
}

#[tokio::test]
async fn expired_certificate_from_a_trusted_ca() {
    let (ca_der, issuer) = ca("expiry test ca");
    let mut params = leaf_params(&["localhost", "127.0.0.1"]);
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = rcgen::date_time_ymd(2021, 1, 1);
    let (leaf, key) = signed_leaf(params, &issuer);
    let addr = tls_server(leaf, key, Duration::ZERO).await;
    let target = format!("https://localhost:{}/", addr.port());
    let trusted = HttpSettings {
        extra_roots: vec![ca_der],
        ..settings()
    };
    assert_eq!(
        tls_failure(trusted, &target).await,
        "tls: certificate expired"
    );
    // the validity of the leaf is checked before its issuer: untrusted, it still says expired
    assert_eq!(
        tls_failure(settings(), &target).await,
        "tls: certificate expired"
    );
}

#[tokio::test]
async fn untrusted_self_signed_leaf() {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = leaf_params(&["localhost", "127.0.0.1"])
        .self_signed(&key)
        .unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    let addr = tls_server(cert.der().clone(), key, Duration::ZERO).await;
    assert_eq!(
        tls_failure(settings(), &format!("https://127.0.0.1:{}/", addr.port())).await,
        "tls: self-signed certificate"
    );
}

#[tokio::test]
async fn certificate_for_another_host() {
    let (ca_der, issuer) = ca("name test ca");
    let (leaf, key) = signed_leaf(leaf_params(&["other.test"]), &issuer);
    let addr = tls_server(leaf, key, Duration::ZERO).await;
    let trusted = || HttpSettings {
        extra_roots: vec![ca_der.clone()],
        ..settings()
    };
    assert_eq!(
        tls_failure(trusted(), &format!("https://127.0.0.1:{}/", addr.port())).await,
        "tls: certificate not valid for host 127.0.0.1"
    );
    assert_eq!(
        tls_failure(trusted(), &format!("https://localhost:{}/", addr.port())).await,
        "tls: certificate not valid for host localhost"
    );
}

#[tokio::test]
async fn leaf_from_an_unknown_ca() {
    let (_ca_der, issuer) = ca("unknown test ca");
    let (leaf, key) = signed_leaf(leaf_params(&["localhost", "127.0.0.1"]), &issuer);
    let addr = tls_server(leaf, key, Duration::ZERO).await;
    // another CA is trusted, not this one
    let (other_ca, _) = ca("trusted test ca");
    let s = HttpSettings {
        extra_roots: vec![other_ca],
        ..settings()
    };
    assert_eq!(
        tls_failure(s, &format!("https://localhost:{}/", addr.port())).await,
        "tls: unknown issuer"
    );
}

#[tokio::test]
async fn protocol_version_alert() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (mut tcp, _) = listener.accept().await.unwrap();
        // the record header of the ClientHello: handshake (22), then the rest of the record
        let mut header = [0u8; 5];
        tcp.read_exact(&mut header).await.unwrap();
        let len = usize::from(u16::from_be_bytes([header[3], header[4]]));
        let mut hello = vec![0u8; len];
        tcp.read_exact(&mut hello).await.unwrap();
        tcp.write_all(&PROTOCOL_VERSION_ALERT).await.unwrap();
        tcp.flush().await.unwrap();
        header[0]
    });
    assert_eq!(
        tls_failure(settings(), &format!("https://127.0.0.1:{}/", addr.port())).await,
        "tls: protocol version not supported"
    );
    assert_eq!(
        server.await.unwrap(),
        22,
        "the client sent a handshake record"
    );
}

/// A server that accepts TCP and then reads without ever answering.
async fn silent_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                while let Ok(n) = tcp.read(&mut buf).await {
                    if n == 0 {
                        return;
                    }
                }
            });
        }
    });
    addr
}

// Real time: the crate's tokio has no test-util (paused time), so a short deadline with an upper bound.
#[tokio::test]
async fn stalled_handshake_ends_at_connect_timeout() {
    let addr = silent_server().await;
    let connect_timeout = Duration::from_millis(300);
    let s = HttpSettings {
        connect_timeout,
        header_timeout: Duration::from_secs(10),
        total_timeout: Duration::from_secs(20),
        ..settings()
    };
    let start = Instant::now();
    let detail = tls_failure(s, &format!("https://127.0.0.1:{}/", addr.port())).await;
    let took = start.elapsed();
    assert_eq!(detail, "tls: handshake timed out");
    assert!(took >= connect_timeout, "{took:?}");
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[tokio::test]
async fn handshake_deadline_does_not_cover_the_request() {
    let (ca_der, issuer) = ca("slow answer ca");
    let (leaf, key) = signed_leaf(leaf_params(&["localhost"]), &issuer);
    let connect_timeout = Duration::from_millis(300);
    let addr = tls_server(leaf, key, connect_timeout * 3).await;
    let client = HttpClient::new(HttpSettings {
        connect_timeout,
        extra_roots: vec![ca_der],
        ..settings()
    })
    .unwrap();
    let resp = client
        .get(&url(&format!("https://localhost:{}/", addr.port())), None)
        .await
        .unwrap();
    assert_eq!(resp.status, 200);
    assert_eq!(resp.body, Bytes::from_static(b"secure"));
}

#[test]
fn self_issued_reads_issuer_and_subject() {
    let key = rcgen::KeyPair::generate().unwrap();
    let own = leaf_params(&["a.test"]).self_signed(&key).unwrap();
    assert!(self_issued(own.der()));
    let (_, issuer) = ca("issuer ca");
    let (leaf, _) = signed_leaf(leaf_params(&["a.test"]), &issuer);
    assert!(!self_issued(&leaf));
    assert!(!self_issued(&CertificateDer::from(vec![0x30, 0x82, 0xff])));
}
