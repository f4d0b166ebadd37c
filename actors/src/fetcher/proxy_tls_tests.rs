//! Tests that HTTPS with HTTP/2 runs through a SOCKS5 tunnel opened by the proxy-chain actor: a loopback TLS hyper
//! server (h2 + http/1.1 ALPN, certificate from a test CA) behind a minimal in-test SOCKS5 relay that records every
//! CONNECT, and pooled reuse of the tunnelled h2 connection.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::Actor as _;
use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::fetcher::http::tests::test_pki;
use crate::fetcher::http::{HttpClient, HttpSettings, ProxyHandle};
use crate::proxy::actor::ProxyChains;
use crawl_core::config::{ChainConfig, ProxyConfig, ProxyHop, ResolveAt};

/// Upper bound of connections any test server accepts.
const MAX_ACCEPTS: usize = 16;

/// A TLS hyper server (h2 + http/1.1 via ALPN and auto) answering 200 "secure"; returns its address.
async fn tls_server(leaf: CertificateDer<'static>, key: PrivateKeyDer<'static>) -> SocketAddr {
    let acceptor = crate::fetcher::http::tests::tls_acceptor(leaf, key);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        for _ in 0..MAX_ACCEPTS {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let svc = service_fn(|_req| async {
                    Ok::<_, Infallible>(http::Response::new(Full::new(Bytes::from_static(
                        b"secure",
                    ))))
                });
                if let Ok(stream) = acceptor.accept(tcp).await {
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                }
            });
        }
    });
    addr
}

/// A minimal no-auth SOCKS5 relay accepting IPv4 CONNECTs; records each CONNECT target as `ip:port`.
async fn socks_server() -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        for _ in 0..MAX_ACCEPTS {
            let Ok((c, _)) = listener.accept().await else {
                return;
            };
            let log = log.clone();
            tokio::spawn(async move {
                let _ = relay(c, log).await;
            });
        }
    });
    (addr, seen)
}

async fn relay(mut c: TcpStream, seen: Arc<Mutex<Vec<String>>>) -> std::io::Result<()> {
    let mut h = [0u8; 2];
    c.read_exact(&mut h).await?;
    let mut methods = vec![0u8; usize::from(h[1])];
    c.read_exact(&mut methods).await?;
    c.write_all(&[5, 0]).await?;
    let mut req = [0u8; 4];
    c.read_exact(&mut req).await?;
    if req[1] != 1 || req[3] != 1 {
        return c.write_all(&[5, 8, 0, 1, 0, 0, 0, 0, 0, 0]).await;
    }
    let mut a = [0u8; 6];
    c.read_exact(&mut a).await?;
    let dest = SocketAddr::from(([a[0], a[1], a[2], a[3]], u16::from_be_bytes([a[4], a[5]])));
    seen.lock().unwrap().push(dest.to_string());
    let Ok(mut out) = TcpStream::connect(dest).await else {
        return c.write_all(&[5, 5, 0, 1, 0, 0, 0, 0, 0, 0]).await;
    };
    c.write_all(&[5, 0, 0, 1, 127, 0, 0, 1, 0, 80]).await?;
    tokio::io::copy_bidirectional(&mut c, &mut out).await?;
    Ok(())
}

/// A config whose default routes every host to the one-hop chain `t` via `hop`.
fn chain_config(hop: SocketAddr) -> ProxyConfig {
    let chain = ChainConfig {
        hops: vec![ProxyHop {
            scheme: "socks5".into(),
            host: hop.ip().to_string(),
            port: hop.port(),
            username: None,
            password: None,
        }],
        resolve: ResolveAt::Remote,
    };
    ProxyConfig {
        default: vec!["t".into()],
        chains: BTreeMap::from([("t".to_owned(), chain)]),
        ..ProxyConfig::default()
    }
}

fn client(ca: CertificateDer<'static>, proxy: ProxyHandle) -> HttpClient {
    HttpClient::new(HttpSettings {
        connect_timeout: Duration::from_secs(2),
        header_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(5),
        total_timeout: Duration::from_secs(20),
        http2: true,
        allow_private_networks: true,
        extra_roots: vec![ca],
        proxy: Some(proxy),
        ..HttpSettings::default()
    })
    .unwrap()
}

#[test]
fn https_http2_through_socks5_chain_and_pooled_tunnel_reuse() {
    actix_rt::System::new().block_on(async {
        let (ca, leaf, key) = test_pki();
        let target = tls_server(leaf, key).await;
        let (hop, seen) = socks_server().await;
        let chains = ProxyChains::new(&chain_config(hop), None).start();
        let client = client(ca, ProxyHandle(chains.recipient()));
        let url = url::Url::parse(&format!("https://127.0.0.1:{}/", target.port())).unwrap();

        let resp = client.get(&url, None).await.unwrap();
        assert_eq!(resp.status, 200);
        assert_eq!(resp.version, http::Version::HTTP_2);
        assert_eq!(resp.body, Bytes::from_static(b"secure"));
        assert_eq!(resp.proxy.as_deref(), Some("t"));
        assert_eq!(*seen.lock().unwrap(), vec![target.to_string()]);

        let again = client.get(&url, None).await.unwrap();
        assert_eq!(again.status, 200);
        assert_eq!(again.version, http::Version::HTTP_2);
        assert_eq!(again.proxy.as_deref(), Some("t"));
        assert_eq!(
            seen.lock().unwrap().len(),
            1,
            "the second request must reuse the pooled tunnel"
        );
    });
}

#[test]
fn https_through_socks5_chain_still_verifies_certificate() {
    actix_rt::System::new().block_on(async {
        let (_, leaf, key) = test_pki();
        let (other_ca, _, _) = test_pki();
        let target = tls_server(leaf, key).await;
        let (hop, seen) = socks_server().await;
        let chains = ProxyChains::new(&chain_config(hop), None).start();
        // Trusting an unrelated CA: the handshake inside the tunnel must fail verification.
        let client = client(other_ca, ProxyHandle(chains.recipient()));
        let url = url::Url::parse(&format!("https://127.0.0.1:{}/", target.port())).unwrap();
        let err = client.get(&url, None).await.unwrap_err();
        assert!(
            matches!(err, crate::fetcher::error::FetchError::Tls(_)),
            "{err:?}"
        );
        assert_eq!(*seen.lock().unwrap(), vec![target.to_string()]);
    });
}
