//! Certificates for tests of TLS servers: a fresh test CA and a server certificate it signed for a name and
//! 127.0.0.1 — as PEM text to write into files (the control API), or as rcgen objects (the fake DoH server).

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use std::net::{IpAddr, Ipv4Addr};

/// A test CA and a server certificate it signed, in PEM.
#[derive(Debug, Clone)]
pub struct TestCert {
    /// The CA's certificate (what a client trusts).
    pub ca_pem: String,
    /// The server's certificate.
    pub cert_pem: String,
    /// The server's private key (PKCS#8).
    pub key_pem: String,
}

/// A new test CA (named `ca_name`), a server certificate it signed for `host` and 127.0.0.1, and that
/// certificate's key: the one way the test kit makes certificates (the control API's tests, the fake DoH server).
pub(crate) fn issue(
    ca_name: &str,
    host: &str,
) -> Result<(rcgen::Certificate, rcgen::Certificate, KeyPair), rcgen::Error> {
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, ca_name);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = KeyPair::generate()?;
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, ca_key);

    let mut params = CertificateParams::new(vec![host.to_owned()])?;
    params
        .subject_alt_names
        .push(SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)));
    params.distinguished_name.push(DnType::CommonName, host);
    params.use_authority_key_identifier_extension = true;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, &issuer)?;
    Ok((ca_cert, cert, key))
}

/// A new CA and a certificate for `host` and 127.0.0.1 signed by it.
pub fn server_cert(host: &str) -> Result<TestCert, rcgen::Error> {
    let (ca_cert, cert, key) = issue("crawl-engine test ca", host)?;
    Ok(TestCert {
        ca_pem: ca_cert.pem(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}
