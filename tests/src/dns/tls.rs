//! TLS for [`super::FakeDoh`]: a fresh test CA per server (rcgen), a server certificate signed by it for one DNS
//! name plus the IP 127.0.0.1, and rustls configs (ring provider, no process-wide provider needed).

use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::{ClientConfig, RootCertStore, ServerConfig};

use super::DnsError;

/// The CA and the server side of one fake DoH server.
pub(crate) struct TestTls {
    pub ca_pem: String,
    pub ca_der: CertificateDer<'static>,
    pub server: Arc<ServerConfig>,
}

pub(crate) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A new CA and a server certificate for `host` and 127.0.0.1 signed by it; the server offers h2 and http/1.1.
pub(crate) fn make(host: &str) -> Result<TestTls, DnsError> {
    let (ca_cert, cert, key) = crate::certs::issue("crawl-engine fake doh test ca", host)?;

    let key_der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    let mut server = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], key_der)?;
    server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TestTls {
        ca_pem: ca_cert.pem(),
        ca_der: ca_cert.der().clone(),
        server: Arc::new(server),
    })
}

/// A client config trusting only `roots` (none: every handshake fails), offering the given ALPN protocols.
pub(crate) fn client_config(
    roots: &[CertificateDer<'static>],
    alpn: &[&[u8]],
) -> Result<ClientConfig, DnsError> {
    let mut store = RootCertStore::empty();
    for der in roots {
        store.add(der.clone())?;
    }
    let mut cfg = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(store)
        .with_no_client_auth();
    cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(cfg)
}
