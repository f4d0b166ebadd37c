//! The HTTP(S) client of `crawl-engine ctl`: hyper-util's client with hyper-rustls, trusting the system's roots and
//! the `--ca-file` certificates; the bearer token in every request.

use super::ApiRequest;
use crate::error::EngineError;
use bytes::Bytes;
use crawl_core::config::Secret;
use http::StatusCode;
use http_body_util::{BodyExt as _, Full};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// How long one request may take, connection included.
const TIMEOUT: Duration = Duration::from_secs(30);

/// A client of one API.
pub struct ApiClient {
    base: String,
    token: Option<Secret>,
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    runtime: tokio::runtime::Runtime,
}

impl ApiClient {
    /// A client of the API at `base` (`http(s)://host:port`).
    pub fn new(
        base: &str,
        token: Option<Secret>,
        ca_file: Option<&Path>,
    ) -> Result<ApiClient, EngineError> {
        let url = url::Url::parse(base)
            .map_err(|e| EngineError::Usage(format!("ctl: --api {base}: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(EngineError::Usage(format!(
                "ctl: --api {base}: expected http://host:port or https://host:port"
            )));
        }
        let tls = tls_config(ca_file)?;
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .build();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| EngineError::Fatal(format!("ctl: cannot start a runtime: {e}")))?;
        let client = {
            let _in = runtime.enter();
            Client::builder(TokioExecutor::new()).build(connector)
        };
        Ok(ApiClient {
            base: base.trim_end_matches('/').to_owned(),
            token,
            client,
            runtime,
        })
    }

    /// The API's base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// Sends `req`; the answer's status and body, or why there is none.
    pub fn send(&self, req: &ApiRequest) -> Result<(StatusCode, Bytes), String> {
        let mut b = http::Request::builder()
            .method(req.method.clone())
            .uri(format!("{}{}", self.base, req.path))
            .header(http::header::ACCEPT, "application/json");
        if let Some(t) = &self.token {
            b = b.header(
                http::header::AUTHORIZATION,
                format!("Bearer {}", t.expose()),
            );
        }
        let body = match &req.body {
            Some(json) => {
                b = b.header(http::header::CONTENT_TYPE, "application/json");
                Full::new(Bytes::from(json.clone()))
            }
            None => Full::new(Bytes::new()),
        };
        // The token is in a header: an error here never shows it (only the URL and method are named).
        let request = b
            .body(body)
            .map_err(|_| format!("bad request URL {}{}", self.base, req.path))?;
        self.runtime.block_on(async {
            let exchange = async {
                let response = self
                    .client
                    .request(request)
                    .await
                    .map_err(|e| error_chain(&e))?;
                let status = response.status();
                let body = response
                    .into_body()
                    .collect()
                    .await
                    .map_err(|e| error_chain(&e))?
                    .to_bytes();
                Ok::<_, String>((status, body))
            };
            tokio::time::timeout(TIMEOUT, exchange)
                .await
                .map_err(|_| format!("no answer within {} s", TIMEOUT.as_secs()))?
        })
    }
}

/// An error with its causes, on one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let s = c.to_string();
        if !text.contains(&s) {
            text.push_str(": ");
            text.push_str(&s);
        }
        cause = c.source();
    }
    text
}

/// The system's roots and the certificates of `ca_file`.
fn tls_config(ca_file: Option<&Path>) -> Result<rustls::ClientConfig, EngineError> {
    let mut roots = rustls::RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    roots.add_parsable_certificates(native.certs);
    if let Some(path) = ca_file {
        let bad = |e: &dyn std::fmt::Display| {
            EngineError::Usage(format!("ctl: --ca-file {}: {e}", path.display()))
        };
        let certs = CertificateDer::pem_file_iter(path)
            .map_err(|e| bad(&e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad(&e))?;
        if certs.is_empty() {
            return Err(bad(&"no PEM certificate in the file"));
        }
        for c in certs {
            roots.add(c).map_err(|e| bad(&e))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    // The connector sets the ALPN protocols itself (http/1.1).
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| EngineError::Fatal(format!("ctl: tls: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(config)
}
