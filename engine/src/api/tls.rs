//! HTTPS for the control API: the certificate chain and key of `[api] cert_file` and `key_file` (PEM), loaded at
//! start into a rustls server config (ring provider, HTTP/1.1). A file that cannot be read or used is a config
//! error naming its key.

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::sync::Arc;

/// The server config for `cert` and `key`; the error names the key at fault (`api.cert_file: ...`).
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<ServerConfig>, String> {
    let chain = CertificateDer::pem_file_iter(cert)
        .map_err(|e| format!("api.cert_file: {}: {e}", cert.display()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("api.cert_file: {}: {e}", cert.display()))?;
    if chain.is_empty() {
        return Err(format!(
            "api.cert_file: {}: no PEM certificate in the file",
            cert.display()
        ));
    }
    let private = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("api.key_file: {}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("api.cert_file: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|e| {
            format!(
                "api.key_file: {}: does not go with api.cert_file {}: {e}",
                key.display(),
                cert.display()
            )
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unusable_files_name_their_key() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let garbage = dir.path().join("garbage.pem");
        std::fs::write(&garbage, "not a certificate\n").unwrap();
        let e = server_config(&missing, &missing).unwrap_err();
        assert!(e.starts_with("api.cert_file: "), "{e}");
        let e = server_config(&garbage, &garbage).unwrap_err();
        assert!(
            e.starts_with("api.cert_file: ") && e.contains("no PEM certificate"),
            "{e}"
        );
    }
}
