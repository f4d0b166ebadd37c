//! TLS failures end to end with the real binary: an https seed whose server presents an expired certificate is
//! recorded `failed` with reason `tls` and the detail `tls: certificate expired` after one connection whose
//! handshake never completes, and a server that accepts TCP but never answers the handshake is recorded `tls: handshake timed out`
//! within `connect_timeout_ms`. Hosts use 127.0.0.135..=127.0.0.139.

use crate::ENGINE;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crawl_core::record::{Outcome, Reason, Record};
use crawl_tests::engine::TestCrawl;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Kill deadline of every crawl run.
const DEADLINE: Duration = Duration::from_secs(30);

/// A certificate for 127.0.0.135 and localhost valid from 2020-01-01 to 2021-01-01 only, signed by a test CA
/// (followed by it) that is valid until 2040; the binary trusts neither, and the leaf's validity is checked first.
const EXPIRED_CHAIN: &str = "\
-----BEGIN CERTIFICATE-----
MIIBdjCCAR2gAwIBAgIUS2hBXQ26vD2+MWBEIicwS0BbJlEwCgYIKoZIzj0EAwIw
LDEqMCgGA1UEAwwhY3Jhd2wgZXhwaXJlZC1jZXJ0aWZpY2F0ZSB0ZXN0IGNhMB4X
DTIwMDEwMTAwMDAwMFoXDTIxMDEwMTAwMDAwMFowFjEUMBIGA1UEAwwLMTI3LjAu
MC4xMzUwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAT6vg/1yXiE8kh5yndjMb5t
DXTPHsY1Aq3B79l/8ncjbLYrPnIx7PUUupq11sET3zJtyAwdbkb/O5X9IoCFM4Tr
ozMwMTAaBgNVHREEEzARhwR/AACHgglsb2NhbGhvc3QwEwYDVR0lBAwwCgYIKwYB
BQUHAwEwCgYIKoZIzj0EAwIDRwAwRAIgalYBVa4Bx1HdDZhksMrKbaIK4oHKo3ou
0G2jdK22U2kCIB6ZtvX327KQa8HRhkoQnGYe4N29XnLr4yUjzLe0ZUQ0
-----END CERTIFICATE-----
-----BEGIN CERTIFICATE-----
MIIBnDCCAUKgAwIBAgIUJq7wQef6dcWyaKYNqdk/Tpvj2LowCgYIKoZIzj0EAwIw
LDEqMCgGA1UEAwwhY3Jhd2wgZXhwaXJlZC1jZXJ0aWZpY2F0ZSB0ZXN0IGNhMB4X
DTIwMDEwMTAwMDAwMFoXDTQwMDEwMTAwMDAwMFowLDEqMCgGA1UEAwwhY3Jhd2wg
ZXhwaXJlZC1jZXJ0aWZpY2F0ZSB0ZXN0IGNhMFkwEwYHKoZIzj0CAQYIKoZIzj0D
AQcDQgAEh7qIkVWQQkS9hrSe2h/0fs5vYdHcLNtKfLhnM4Yqx0V3TuxdpSDX7s05
04TMHv0Z9wO5Icx0Df21A/dLfsZbB6NCMEAwDgYDVR0PAQH/BAQDAgKEMB0GA1Ud
DgQWBBQ8tkoFTsO/Wuqv3c5502a0TnjjIDAPBgNVHRMBAf8EBTADAQH/MAoGCCqG
SM49BAMCA0gAMEUCIDR9ZcRphoxBN3mOrENL1nCLaP5hh0Vb82bu6nv7nMRRAiEA
oNo5IMtaMVcQCNX5Co2WbebrpWROX+6hNIKH15s6HDg=
-----END CERTIFICATE-----
";

/// The key of the leaf in [`EXPIRED_CHAIN`] (a throwaway test key).
const EXPIRED_KEY: &str = "\
-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgWOK9yUYI7PY42g1e
gxMoYiC3u05hlT4ny5TKUNw/LZehRANCAAT6vg/1yXiE8kh5yndjMb5tDXTPHsY1
Aq3B79l/8ncjbLYrPnIx7PUUupq11sET3zJtyAwdbkb/O5X9IoCFM4Tr
-----END PRIVATE KEY-----
";

/// What a TLS server on a thread saw: one entry per connection, how its handshake ended.
type Seen = Arc<Mutex<Vec<String>>>;

/// A blocking rustls server on `127.0.0.{octet}:0` presenting [`EXPIRED_CHAIN`]; each connection's handshake
/// outcome is pushed to the returned list.
fn expired_server(octet: u8) -> (SocketAddr, Seen) {
    let chain: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(EXPIRED_CHAIN.as_bytes())
            .collect::<Result<_, _>>()
            .expect("test chain parses");
    let key = PrivateKeyDer::from_pem_slice(EXPIRED_KEY.as_bytes()).expect("test key parses");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("server certificate");
    let cfg = Arc::new(cfg);
    let listener =
        TcpListener::bind(("127.0.0.".to_string() + &octet.to_string(), 0)).expect("bind");
    let addr = listener.local_addr().expect("local addr");
    let seen: Seen = Arc::default();
    let log = seen.clone();
    std::thread::spawn(move || {
        for tcp in listener.incoming() {
            let Ok(mut tcp) = tcp else { return };
            let _ = tcp.set_read_timeout(Some(Duration::from_secs(10)));
            let mut conn = rustls::ServerConnection::new(cfg.clone()).expect("server connection");
            let outcome = loop {
                match conn.complete_io(&mut tcp) {
                    Ok(_) if !conn.is_handshaking() => break "handshake completed".to_string(),
                    Ok((0, 0)) => break "connection closed".to_string(),
                    Ok(_) => {}
                    Err(e) => break e.to_string(),
                }
            };
            log.lock().expect("seen lock").push(outcome);
        }
    });
    (addr, seen)
}

/// A server on `127.0.0.{octet}:0` that accepts TCP, reads what comes and never answers; returns how many
/// connections it accepted.
fn silent_server(octet: u8) -> (SocketAddr, Arc<Mutex<usize>>) {
    let listener =
        TcpListener::bind(("127.0.0.".to_string() + &octet.to_string(), 0)).expect("bind");
    let addr = listener.local_addr().expect("local addr");
    let accepted = Arc::new(Mutex::new(0usize));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for tcp in listener.incoming() {
            let Ok(tcp) = tcp else { return };
            *count.lock().expect("count lock") += 1;
            std::thread::spawn(move || drain(tcp));
        }
    });
    (addr, accepted)
}

fn drain(mut tcp: TcpStream) {
    let mut buf = [0u8; 1024];
    while let Ok(n) = tcp.read(&mut buf) {
        if n == 0 {
            return;
        }
    }
    let _ = tcp.flush();
}

fn record<'a>(records: &'a [Record], url: &str) -> &'a Record {
    records
        .iter()
        .find(|r| r.url == url)
        .unwrap_or_else(|| panic!("no record for {url}: {records:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_certificate_and_stalled_handshake_are_tls_failures() {
    let (expired_addr, seen) = expired_server(135);
    let (silent_addr, accepted) = silent_server(136);
    let expired = format!("https://127.0.0.135:{}/", expired_addr.port());
    let stalled = format!("https://127.0.0.136:{}/", silent_addr.port());
    let crawl = TestCrawl::new(
        ENGINE,
        &[expired.clone(), stalled.clone()],
        "[crawl]\nrespect_robots = false\n[fetch]\nconnect_timeout_ms = 500\nheader_timeout_ms = 8000\n\
         request_timeout_ms = 9000\nmax_retries = 2\n",
    ).expect("test crawl");
    let out = tokio::task::spawn_blocking(move || {
        let out = crawl.run(DEADLINE);
        (out, crawl)
    })
    .await
    .expect("join runner");
    let (out, crawl) = out;
    assert_eq!(out.code(), Some(0), "stderr:\n{}", out.stderr);
    let records = crawl.records();
    assert_eq!(records.len(), 2, "{records:?}");

    let r = record(&records, &expired);
    assert_eq!(
        (r.outcome, r.reason),
        (Outcome::Failed, Some(Reason::Tls)),
        "{r:?}"
    );
    assert_eq!(
        r.error.as_deref(),
        Some("tls: certificate expired"),
        "{r:?}"
    );
    assert_eq!(r.status, None);
    assert_eq!(r.attempts, 1, "a certificate failure is not retried: {r:?}");
    // the server thread notes the connection when the client has closed it
    crawl_tests::wait::until(
        Duration::from_secs(5),
        "the server thread noted the connection",
        || !seen.lock().expect("seen lock").is_empty(),
    )
    .await;
    let seen = seen.lock().expect("seen lock").clone();
    assert_eq!(seen.len(), 1, "one connection: {seen:?}");
    assert_ne!(
        seen[0], "handshake completed",
        "the client gave up in the handshake"
    );

    let r = record(&records, &stalled);
    assert_eq!(
        (r.outcome, r.reason),
        (Outcome::Failed, Some(Reason::Tls)),
        "{r:?}"
    );
    assert_eq!(
        r.error.as_deref(),
        Some("tls: handshake timed out"),
        "{r:?}"
    );
    let elapsed = r.elapsed_ms.expect("elapsed recorded");
    assert!(
        (500..3000).contains(&elapsed),
        "ends at connect_timeout_ms, long before header_timeout_ms: {elapsed} ms"
    );
    assert_eq!(*accepted.lock().expect("count lock"), 1);
}
