//! Tests of `fetcher::http` against loopback servers started in each test.

use super::*;
use crate::fetcher::error::SettingsError;
use crawl_core::record::Reason;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};

use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Upper bound of connections any test server accepts.
const MAX_ACCEPTS: usize = 16;

type Handler = Arc<dyn Fn(&http::Request<Incoming>) -> http::Response<Full<Bytes>> + Send + Sync>;

fn settings() -> HttpSettings {
    HttpSettings {
        user_agent: "crawl-test/1.0 (+http://example.test/bot)".to_string(),
        connect_timeout: Duration::from_secs(2),
        header_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(5),
        total_timeout: Duration::from_secs(20),
        max_body_bytes: 1024 * 1024,
        allow_private_networks: true,
        ..HttpSettings::default()
    }
}

fn url(s: &str) -> url::Url {
    url::Url::parse(s).unwrap()
}

/// A hyper server (h1 + h2 via auto) counting accepted TCP connections, optionally behind TLS.
async fn hyper_server(
    handler: Handler,
    tls: Option<tokio_rustls::TlsAcceptor>,
) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepts = Arc::new(AtomicUsize::new(0));
    let counter = accepts.clone();
    tokio::spawn(async move {
        for _ in 0..MAX_ACCEPTS {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            counter.fetch_add(1, Ordering::SeqCst);
            let handler = handler.clone();
            let tls = tls.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req| {
                    let handler = handler.clone();
                    async move { Ok::<_, Infallible>(handler(&req)) }
                });
                let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                match tls {
                    Some(acceptor) => {
                        if let Ok(stream) = acceptor.accept(tcp).await {
                            let _ = builder.serve_connection(TokioIo::new(stream), svc).await;
                        }
                    }
                    None => {
                        let _ = builder.serve_connection(TokioIo::new(tcp), svc).await;
                    }
                }
            });
        }
    });
    (addr, accepts)
}

fn ok_handler(body: &'static str) -> Handler {
    Arc::new(move |req| {
        let seen = |name: header::HeaderName| {
            req.headers()
                .get(name)
                .cloned()
                .unwrap_or(HeaderValue::from_static("-"))
        };
        http::Response::builder()
            .status(200)
            .header("x-test", "yes")
            .header("x-seen-ua", seen(header::USER_AGENT))
            .header("x-seen-accept", seen(header::ACCEPT))
            .header("x-seen-ae", seen(header::ACCEPT_ENCODING))
            .header("x-seen-referer", seen(header::REFERER))
            .header(
                "x-seen-traceparent",
                seen(header::HeaderName::from_static("traceparent")),
            )
            .header("x-seen-host", seen(header::HOST))
            .body(Full::new(Bytes::from_static(body.as_bytes())))
            .unwrap()
    })
}

/// Reads a request head (bounded) from a raw connection.
async fn read_head(tcp: &mut TcpStream) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    while buf.len() < 64 * 1024 {
        match tcp.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        if buf.windows(4).any(|w| w == b"\r\n\r\n") {
            return;
        }
    }
}

/// A raw TCP server running `script` on each accepted connection after reading the request head.
async fn raw_server<F, Fut>(script: F) -> (SocketAddr, Arc<AtomicUsize>)
where
    F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepts = Arc::new(AtomicUsize::new(0));
    let counter = accepts.clone();
    let script = Arc::new(script);
    tokio::spawn(async move {
        for _ in 0..MAX_ACCEPTS {
            let Ok((mut tcp, _)) = listener.accept().await else {
                return;
            };
            counter.fetch_add(1, Ordering::SeqCst);
            let script = script.clone();
            tokio::spawn(async move {
                read_head(&mut tcp).await;
                script(tcp).await;
            });
        }
    });
    (addr, accepts)
}

async fn check_200(client: &HttpClient, addr: SocketAddr) {
    let target = url(&format!("http://127.0.0.1:{}/page?q=1#frag", addr.port()));
    let resp = client
        .get(&target, Some("http://example.test/from"))
        .await
        .unwrap();
    assert_eq!(resp.status, 200);
    assert_eq!(resp.body, Bytes::from_static(b"hello world"));
    assert_eq!(resp.version, http::Version::HTTP_11);
    assert_eq!(resp.headers["x-test"], "yes");
    assert_eq!(
        resp.headers["x-seen-ua"],
        "crawl-test/1.0 (+http://example.test/bot)"
    );
    assert_eq!(resp.headers["x-seen-accept"], ACCEPT_VALUE);
    assert_eq!(resp.headers["x-seen-ae"], "gzip, deflate, br, zstd");
    assert_eq!(resp.headers["x-seen-referer"], "http://example.test/from");
    assert_eq!(resp.headers["x-seen-traceparent"], "-");
    assert_eq!(
        resp.headers["x-seen-host"].to_str().unwrap(),
        format!("127.0.0.1:{}", addr.port())
    );
    assert_eq!(resp.remote_addr, Some(addr));
    assert!(resp.timings.total >= resp.timings.headers);
    assert!(resp.timings.total >= resp.timings.body);
}

#[tokio::test]
async fn get_200_with_body_and_headers() {
    let (addr, _) = hyper_server(ok_handler("hello world"), None).await;
    let client = HttpClient::new(settings()).unwrap();
    check_200(&client, addr).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_200_on_multi_thread_runtime() {
    let (addr, _) = hyper_server(ok_handler("hello world"), None).await;
    let client = HttpClient::new(settings()).unwrap();
    check_200(&client, addr).await;
}

#[test]
fn client_built_outside_runtime_works_on_current_thread_runtime() {
    let client = HttpClient::new(settings()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (addr, _) = hyper_server(ok_handler("hello world"), None).await;
        check_200(&client, addr).await;
    });
}

#[tokio::test]
async fn no_referer_header_when_none_given() {
    let (addr, _) = hyper_server(ok_handler("x"), None).await;
    let client = HttpClient::new(settings()).unwrap();
    let resp = client
        .get(&url(&format!("http://127.0.0.1:{}/", addr.port())), None)
        .await
        .unwrap();
    assert_eq!(resp.headers["x-seen-referer"], "-");
}

#[tokio::test]
async fn connection_is_reused() {
    let (addr, accepts) = hyper_server(ok_handler("hello world"), None).await;
    let client = HttpClient::new(settings()).unwrap();
    let target = url(&format!("http://127.0.0.1:{}/a", addr.port()));
    let first = client.get(&target, None).await.unwrap();
    assert_eq!(first.status, 200);
    // let the pool task put the connection back
    tokio::time::sleep(Duration::from_millis(50)).await;
    let second = client.get(&target, None).await.unwrap();
    assert_eq!(second.status, 200);
    assert_eq!(accepts.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn content_length_over_limit_is_rejected_without_reading() {
    let (addr, _) = raw_server(|mut tcp| async move {
        let head = "HTTP/1.1 200 OK\r\nContent-Length: 10000000\r\n\r\nabc";
        let _ = tcp.write_all(head.as_bytes()).await;
        // never send the rest: reading the body would end in an idle timeout
        tokio::time::sleep(Duration::from_secs(30)).await;
    })
    .await;
    let client = HttpClient::new(HttpSettings {
        idle_timeout: Duration::from_secs(10),
        ..settings()
    })
    .unwrap();
    let err = client
        .get(&url(&format!("http://127.0.0.1:{}/", addr.port())), None)
        .await
        .unwrap_err();
    assert!(
        matches!(err, FetchError::TooLarge { limit, .. } if limit == 1024 * 1024),
        "{err:?}"
    );
    assert_eq!(err.reason(), Some(Reason::TooLarge));
}

#[tokio::test]
async fn chunked_body_over_limit_is_too_large() {
    let (addr, _) = raw_server(|mut tcp| async move {
        let _ = tcp
            .write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            .await;
        let chunk = vec![b'a'; 64 * 1024];
        for _ in 0..32 {
            let mut frame = format!("{:x}\r\n", chunk.len()).into_bytes();
            frame.extend_from_slice(&chunk);
            frame.extend_from_slice(b"\r\n");
            if tcp.write_all(&frame).await.is_err() {
                return;
            }
        }
        let _ = tcp.write_all(b"0\r\n\r\n").await;
    })
    .await;
    let client = HttpClient::new(settings()).unwrap();
    let err = client
        .get(&url(&format!("http://127.0.0.1:{}/", addr.port())), None)
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::TooLarge { .. }), "{err:?}");
}

#[tokio::test]
async fn chunked_body_within_limit_is_collected() {
    let (addr, _) = raw_server(|mut tcp| async move {
        let _ = tcp
            .write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
            .await;
    })
    .await;
    let client = HttpClient::new(settings()).unwrap();
    let resp = client
        .get(&url(&format!("http://127.0.0.1:{}/", addr.port())), None)
        .await
        .unwrap();
    assert_eq!(resp.body, Bytes::from_static(b"hello world"));
}

#[tokio::test]
async fn stall_before_headers_is_header_timeout() {
    let (addr, _) = raw_server(|tcp| async move {
        // keep the connection open without answering
        let _hold = tcp;
        tokio::time::sleep(Duration::from_secs(30)).await;
    })
    .await;
    let client = HttpClient::new(HttpSettings {
        header_timeout: Duration::from_millis(300),
        ..settings()
    })
    .unwrap();
    let err = client
        .get(&url(&format!("http://127.0.0.1:{}/", addr.port())), None)
        .await
        .unwrap_err();
    assert!(
        matches!(err, FetchError::Timeout(TimeoutPhase::Headers)),
        "{err:?}"
    );
    assert!(err.is_retryable());
}

#[tokio::test]
async fn stall_mid_body_is_idle_timeout() {
    let (addr, _) = raw_server(|mut tcp| async move {
        let _ = tcp
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
            .await;
        tokio::time::sleep(Duration::from_secs(30)).await;
    })
    .await;
    let client = HttpClient::new(HttpSettings {
        idle_timeout: Duration::from_millis(300),
        ..settings()
    })
    .unwrap();
    let err = client
        .get(&url(&format!("http://127.0.0.1:{}/", addr.port())), None)
        .await
        .unwrap_err();
    assert!(
        matches!(err, FetchError::Timeout(TimeoutPhase::Idle)),
        "{err:?}"
    );
}

#[tokio::test]
async fn trickling_body_hits_total_timeout() {
    let (addr, _) = raw_server(|mut tcp| async move {
        let _ = tcp
            .write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            .await;
        for _ in 0..100 {
            if tcp.write_all(b"1\r\nx\r\n").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let _ = tcp.write_all(b"0\r\n\r\n").await;
    })
    .await;
    let client = HttpClient::new(HttpSettings {
        idle_timeout: Duration::from_secs(2),
        total_timeout: Duration::from_millis(500),
        ..settings()
    })
    .unwrap();
    let err = client
        .get(&url(&format!("http://127.0.0.1:{}/", addr.port())), None)
        .await
        .unwrap_err();
    assert!(
        matches!(err, FetchError::Timeout(TimeoutPhase::Total)),
        "{err:?}"
    );
}

#[tokio::test]
async fn early_close_mid_body_is_protocol_error() {
    let (addr, _) = raw_server(|mut tcp| async move {
        let _ = tcp
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
            .await;
    })
    .await;
    let client = HttpClient::new(settings()).unwrap();
    let err = client
        .get(&url(&format!("http://127.0.0.1:{}/", addr.port())), None)
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::Protocol(_)), "{err:?}");
    assert!(err.is_retryable());
}

#[tokio::test]
async fn connection_refused_is_connect_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let client = HttpClient::new(settings()).unwrap();
    let err = client
        .get(&url(&format!("http://127.0.0.1:{port}/")), None)
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::Connect(_)), "{err:?}");
    assert_eq!(err.reason(), Some(Reason::Connect));
    assert!(err.is_retryable());
}

#[tokio::test]
async fn unsupported_scheme_is_invalid_url() {
    let client = HttpClient::new(settings()).unwrap();
    let err = client
        .get(&url("ftp://127.0.0.1/file"), None)
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::InvalidUrl(_)), "{err:?}");
    assert!(!err.is_retryable());
}

#[test]
fn bad_user_agent_is_a_settings_error() {
    let err = HttpClient::new(HttpSettings {
        user_agent: "bad\nagent".to_string(),
        ..settings()
    })
    .unwrap_err();
    assert!(matches!(err, SettingsError::UserAgent(_)), "{err:?}");
}

/// A CA and a `localhost` / `127.0.0.1` leaf signed by it; returns (ca der, leaf der, leaf key).
pub(crate) fn test_pki() -> (
    CertificateDer<'static>,
    CertificateDer<'static>,
    PrivateKeyDer<'static>,
) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "crawl test ca");
    ca_params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);

    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let mut leaf_params =
        rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .unwrap();
    leaf_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "localhost");
    leaf_params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let leaf_cert = leaf_params.signed_by(&leaf_key, &issuer).unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    (ca_cert.der().clone(), leaf_cert.der().clone(), key)
}

/// A TLS acceptor for `leaf` offering h2 and http/1.1 (ALPN): the test servers of the fetcher's modules.
pub(crate) fn tls_acceptor(
    leaf: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
) -> tokio_rustls::TlsAcceptor {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![leaf], key)
        .unwrap();
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    tokio_rustls::TlsAcceptor::from(Arc::new(cfg))
}

#[tokio::test]
async fn https_negotiates_http2_with_extra_root() {
    let (ca, leaf, key) = test_pki();
    let (addr, accepts) = hyper_server(ok_handler("secure"), Some(tls_acceptor(leaf, key))).await;
    let client = HttpClient::new(HttpSettings {
        extra_roots: vec![ca],
        ..settings()
    })
    .unwrap();
    let target = url(&format!("https://localhost:{}/", addr.port()));
    let resp = client.get(&target, None).await.unwrap();
    assert_eq!(resp.status, 200);
    assert_eq!(resp.version, http::Version::HTTP_2);
    assert_eq!(resp.body, Bytes::from_static(b"secure"));
    assert_eq!(resp.remote_addr, Some(addr));
    // a second request multiplexes over the same h2 connection
    let again = client.get(&target, None).await.unwrap();
    assert_eq!(again.version, http::Version::HTTP_2);
    assert_eq!(accepts.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn https_without_http2_uses_http11() {
    let (ca, leaf, key) = test_pki();
    let (addr, _) = hyper_server(ok_handler("secure"), Some(tls_acceptor(leaf, key))).await;
    let client = HttpClient::new(HttpSettings {
        extra_roots: vec![ca],
        http2: false,
        ..settings()
    })
    .unwrap();
    let resp = client
        .get(&url(&format!("https://127.0.0.1:{}/", addr.port())), None)
        .await
        .unwrap();
    assert_eq!(resp.status, 200);
    assert_eq!(resp.version, http::Version::HTTP_11);
}

#[tokio::test]
async fn untrusted_certificate_is_tls_error() {
    let (_ca, leaf, key) = test_pki();
    let (addr, _) = hyper_server(ok_handler("secure"), Some(tls_acceptor(leaf, key))).await;
    let client = HttpClient::new(settings()).unwrap();
    let err = client
        .get(&url(&format!("https://localhost:{}/", addr.port())), None)
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::Tls(_)), "{err:?}");
    assert!(!err.is_retryable());
    assert_eq!(err.reason(), Some(Reason::Tls));
}

fn deny_private() -> HttpSettings {
    HttpSettings {
        allow_private_networks: false,
        ..settings()
    }
}

#[tokio::test]
async fn private_ip_literal_is_refused_before_connecting() {
    let (addr, accepts) = hyper_server(ok_handler("x"), None).await;
    let client = HttpClient::new(deny_private()).unwrap();
    let err = client
        .get(&url(&format!("http://127.0.0.1:{}/", addr.port())), None)
        .await
        .unwrap_err();
    match &err {
        FetchError::PrivateNetwork { host, addr: ip } => {
            assert_eq!(host, "127.0.0.1");
            assert_eq!(*ip, IpAddr::from([127, 0, 0, 1]));
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(!err.is_retryable());
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(accepts.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn private_ipv6_literal_is_refused() {
    let client = HttpClient::new(deny_private()).unwrap();
    let err = client.get(&url("http://[::1]:9/"), None).await.unwrap_err();
    assert!(
        matches!(err, FetchError::PrivateNetwork { addr, .. } if addr == IpAddr::from(std::net::Ipv6Addr::LOCALHOST)),
        "{err:?}"
    );
}

#[tokio::test]
async fn localhost_is_refused_by_resolver() {
    let (addr, accepts) = hyper_server(ok_handler("x"), None).await;
    let client = HttpClient::new(deny_private()).unwrap();
    let err = client
        .get(&url(&format!("http://localhost:{}/", addr.port())), None)
        .await
        .unwrap_err();
    match &err {
        FetchError::PrivateNetwork { host, addr: ip } => {
            assert_eq!(host, "localhost");
            assert!(ip.is_loopback(), "{ip}");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(err.reason(), Some(Reason::PrivateNetwork));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(accepts.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn localhost_is_allowed_when_private_networks_allowed() {
    let (addr, accepts) = hyper_server(ok_handler("hello"), None).await;
    let client = HttpClient::new(settings()).unwrap();
    let resp = client
        .get(&url(&format!("http://localhost:{}/", addr.port())), None)
        .await
        .unwrap();
    assert_eq!(resp.status, 200);
    assert_eq!(resp.body, Bytes::from_static(b"hello"));
    assert_eq!(accepts.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn redirects_are_not_followed() {
    let handler: Handler = Arc::new(|_req| {
        http::Response::builder()
            .status(302)
            .header(header::LOCATION, "/elsewhere")
            .body(Full::new(Bytes::new()))
            .unwrap()
    });
    let (addr, _) = hyper_server(handler, None).await;
    let client = HttpClient::new(settings()).unwrap();
    let resp = client
        .get(&url(&format!("http://127.0.0.1:{}/", addr.port())), None)
        .await
        .unwrap();
    assert_eq!(resp.status, 302);
    assert_eq!(resp.headers[header::LOCATION], "/elsewhere");
}
