//! Per-origin credentials as the HTTP client sends them: `Authorization` and `Cookie` go to the origin they were
//! given for and to no other, whether the other differs by host, port or scheme (an https credential never goes out
//! over http, on the same port either), and a redirect's target is judged as the request it is. Servers record the
//! headers of every request.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::header;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::CertificateDer;
use tokio::net::TcpListener;

use crate::fetcher::http::tests::test_pki;
use crate::fetcher::http::{HttpClient, HttpSettings};
use crawl_core::config::{Credential, Credentials, Secret};

/// Upper bound of connections any test server accepts.
const MAX_ACCEPTS: usize = 16;

const AUTH: &str = "Bearer origin-a-token";
const COOKIE: &str = "session=origin-a-cookie";

/// One request as a server saw it.
#[derive(Debug, Clone)]
struct Seen {
    tls: bool,
    path: String,
    authorization: Option<String>,
    cookie: Option<String>,
}

type Log = Arc<Mutex<Vec<Seen>>>;

/// A server on 127.0.0.1:0 answering every request with `status` and `location` (when given), recording what it
/// was sent. With `tls`, a connection whose first byte is a TLS handshake record is served over TLS and any other
/// over plain HTTP: one port, two origins (`https://` and `http://`).
async fn server(
    status: u16,
    location: Option<String>,
    tls: Option<tokio_rustls::TlsAcceptor>,
) -> (SocketAddr, Log) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let log: Log = Arc::default();
    let seen = log.clone();
    tokio::spawn(async move {
        for _ in 0..MAX_ACCEPTS {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let (log, location, tls) = (seen.clone(), location.clone(), tls.clone());
            tokio::spawn(async move {
                let mut first = [0u8; 1];
                let is_tls = tls.is_some()
                    && matches!(tcp.peek(&mut first).await, Ok(1) if first[0] == 0x16);
                let svc = service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    let get = |name| {
                        req.headers()
                            .get(name)
                            .map(|v: &http::HeaderValue| v.to_str().unwrap().to_owned())
                    };
                    log.lock().unwrap().push(Seen {
                        tls: is_tls,
                        path: req.uri().path().to_owned(),
                        authorization: get(header::AUTHORIZATION),
                        cookie: get(header::COOKIE),
                    });
                    let mut resp = http::Response::builder().status(status);
                    if let Some(l) = &location {
                        resp = resp.header(header::LOCATION, l.as_str());
                    }
                    let resp = resp.body(Full::new(Bytes::from_static(b"ok"))).unwrap();
                    async move { Ok::<_, Infallible>(resp) }
                });
                let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                match tls {
                    Some(acceptor) if is_tls => {
                        if let Ok(stream) = acceptor.accept(tcp).await {
                            let _ = builder.serve_connection(TokioIo::new(stream), svc).await;
                        }
                    }
                    _ => {
                        let _ = builder.serve_connection(TokioIo::new(tcp), svc).await;
                    }
                }
            });
        }
    });
    (addr, log)
}

fn url(s: &str) -> url::Url {
    url::Url::parse(s).unwrap()
}

fn credentials_for(origin: &str) -> Credentials {
    [Credential::new(
        &url(origin),
        Some(Secret::new(AUTH)),
        Some(Secret::new(COOKIE)),
    )
    .unwrap()]
    .into_iter()
    .collect()
}

fn client(credentials: Credentials, extra_roots: Vec<CertificateDer<'static>>) -> HttpClient {
    HttpClient::new(HttpSettings {
        allow_private_networks: true,
        keep_request_headers: true,
        extra_roots,
        credentials,
        ..HttpSettings::default()
    })
    .unwrap()
}

fn only(log: &Log) -> Seen {
    let seen = log.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    seen.into_iter().next().unwrap()
}

#[tokio::test]
async fn a_redirect_to_another_port_of_the_same_host_carries_no_credentials() {
    let (b, b_log) = server(200, None, None).await;
    let target = format!("http://127.0.0.1:{}/landing", b.port());
    let (a, a_log) = server(302, Some(target.clone()), None).await;
    let client = client(
        credentials_for(&format!("http://127.0.0.1:{}", a.port())),
        Vec::new(),
    );

    let first = client
        .get(&url(&format!("http://127.0.0.1:{}/start", a.port())), None)
        .await
        .unwrap();
    assert_eq!(first.status, 302);
    let at_a = only(&a_log);
    assert_eq!(at_a.authorization.as_deref(), Some(AUTH));
    assert_eq!(at_a.cookie.as_deref(), Some(COOKIE));
    // Kept for the archive, marked sensitive (HPACK never indexes them, Debug hides them).
    for name in [header::AUTHORIZATION, header::COOKIE] {
        assert!(first.request_headers[&name].is_sensitive(), "{name}");
    }

    // The Location is fetched as the crawler fetches a redirect target: a request of its own.
    let location = first.headers[header::LOCATION].to_str().unwrap();
    let second = client
        .get(&url(location), Some("http://127.0.0.1/start"))
        .await
        .unwrap();
    assert_eq!(second.status, 200);
    let at_b = only(&b_log);
    assert_eq!(at_b.path, "/landing");
    assert_eq!((at_b.authorization, at_b.cookie), (None, None));
    assert!(!second.request_headers.contains_key(header::AUTHORIZATION));
}

#[tokio::test]
async fn another_host_name_for_the_same_address_is_another_origin() {
    let (a, a_log) = server(200, None, None).await;
    let client = client(
        credentials_for(&format!("http://127.0.0.1:{}", a.port())),
        Vec::new(),
    );
    client
        .get(&url(&format!("http://localhost:{}/", a.port())), None)
        .await
        .unwrap();
    let seen = only(&a_log);
    assert_eq!((seen.authorization, seen.cookie), (None, None));
}

#[tokio::test]
async fn an_https_credential_never_goes_out_over_http_on_the_same_port() {
    let (ca, leaf, key) = test_pki();
    let (a, log) = server(
        200,
        None,
        Some(crate::fetcher::http::tests::tls_acceptor(leaf, key)),
    )
    .await;
    let client = client(
        credentials_for(&format!("https://localhost:{}", a.port())),
        vec![ca],
    );

    client
        .get(
            &url(&format!("https://localhost:{}/secure", a.port())),
            None,
        )
        .await
        .unwrap();
    client
        .get(&url(&format!("http://localhost:{}/plain", a.port())), None)
        .await
        .unwrap();
    let seen = log.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    let secure = seen.iter().find(|s| s.path == "/secure").unwrap();
    assert!(secure.tls);
    assert_eq!(secure.authorization.as_deref(), Some(AUTH));
    assert_eq!(secure.cookie.as_deref(), Some(COOKIE));
    let plain = seen.iter().find(|s| s.path == "/plain").unwrap();
    assert!(!plain.tls);
    assert_eq!(
        (plain.authorization.clone(), plain.cookie.clone()),
        (None, None)
    );
}

#[tokio::test]
async fn an_http_credential_is_not_sent_to_https_after_an_upgrade_redirect() {
    let (ca, leaf, key) = test_pki();
    let (a, log) = server(
        200,
        None,
        Some(crate::fetcher::http::tests::tls_acceptor(leaf, key)),
    )
    .await;
    let client = client(
        credentials_for(&format!("http://localhost:{}", a.port())),
        vec![ca],
    );
    client
        .get(&url(&format!("http://localhost:{}/plain", a.port())), None)
        .await
        .unwrap();
    client
        .get(
            &url(&format!("https://localhost:{}/secure", a.port())),
            None,
        )
        .await
        .unwrap();
    let seen = log.lock().unwrap().clone();
    let plain = seen.iter().find(|s| s.path == "/plain").unwrap();
    assert_eq!(plain.authorization.as_deref(), Some(AUTH));
    let secure = seen.iter().find(|s| s.path == "/secure").unwrap();
    assert!(secure.tls);
    assert_eq!(
        (secure.authorization.clone(), secure.cookie.clone()),
        (None, None)
    );
}

#[tokio::test]
async fn a_url_with_userinfo_sends_only_the_configured_credential() {
    // The request URI never carries userinfo; what the URL held is not sent unless it was made a credential.
    let (a, log) = server(200, None, None).await;
    let client = client(Credentials::default(), Vec::new());
    client
        .get(
            &url(&format!("http://user:pw@127.0.0.1:{}/", a.port())),
            None,
        )
        .await
        .unwrap();
    let seen = only(&log);
    assert_eq!((seen.authorization, seen.cookie), (None, None));
}
