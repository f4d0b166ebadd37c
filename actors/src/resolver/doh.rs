//! DNS over HTTPS (RFC 8484) client for the resolver.
//!
//! [`DohClient`] POSTs `application/dns-message` queries (id 0, as RFC 8484 recommends) over the
//! same stack as page fetches: hyper-util's pooled legacy client over hyper-rustls (ring provider,
//! ALPN h2 then http/1.1). Each endpoint has its own connection pool and trust store (webpki roots
//! plus the endpoint's PEM CAs). The endpoint host is never resolved through plain DNS when a
//! bootstrap IP is configured: a connector resolver maps it to that IP; only endpoints without a
//! bootstrap use the system resolver. Endpoints are tried in order until one answers.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use crawl_observability::error_chain::chain_message;
use http::header::{self, HeaderValue};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::dns::Name;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;

use crate::resolver::wire::{self, QType, Response, WireError};

/// RFC 8484 media type.
pub const DNS_MESSAGE: &str = "application/dns-message";
/// Largest response body accepted (the largest DNS message).
const MAX_BODY: usize = 65_535;
/// Idle pooled connections kept per endpoint.
const POOL_IDLE: Duration = Duration::from_secs(60);

/// One configured DoH endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DohEndpoint {
    /// `https://host[:port]/path`.
    pub url: url::Url,
    /// Connect to this address instead of resolving the URL's host.
    pub bootstrap: Option<IpAddr>,
    /// PEM CA certificates trusted for this endpoint, in addition to the webpki roots.
    pub ca_pem: Option<Vec<u8>>,
}

/// Errors of the DoH client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DohError {
    /// Bad endpoint configuration (URL, CA PEM, TLS setup).
    #[error("doh config: {0}")]
    Config(String),
    /// The client was built without endpoints.
    #[error("no doh endpoints configured")]
    NoEndpoints,
    /// The query could not be encoded.
    #[error(transparent)]
    Wire(#[from] WireError),
    /// No complete answer within the timeout.
    #[error("doh {endpoint}: timed out")]
    Timeout { endpoint: String },
    /// The TLS handshake failed (certificate not trusted, wrong name, ...).
    #[error("doh {endpoint}: tls: {detail}")]
    Tls { endpoint: String, detail: String },
    /// Resolving the endpoint host, connecting, or the HTTP exchange failed.
    #[error("doh {endpoint}: connection: {detail}")]
    Connect { endpoint: String, detail: String },
    /// A non-2xx status.
    #[error("doh {endpoint}: http status {status}")]
    Status { endpoint: String, status: u16 },
    /// The body is not a DNS response to the query.
    #[error("doh {endpoint}: bad response: {detail}")]
    BadResponse { endpoint: String, detail: String },
}

/// Connector resolver: the endpoint host maps to its bootstrap IP; without a bootstrap, the
/// system resolver (`tokio::net::lookup_host`) is used.
#[derive(Debug, Clone)]
pub struct BootstrapResolver {
    host: String,
    bootstrap: Option<IpAddr>,
}

impl BootstrapResolver {
    /// A resolver for `host` (case-insensitive).
    pub fn new(host: &str, bootstrap: Option<IpAddr>) -> BootstrapResolver {
        BootstrapResolver {
            host: host.to_ascii_lowercase(),
            bootstrap,
        }
    }
}

impl tower_service::Service<Name> for BootstrapResolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, std::io::Error>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), std::io::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let asked = name.as_str().to_ascii_lowercase();
        let bootstrap = self.bootstrap;
        let host = self.host.clone();
        Box::pin(async move {
            match bootstrap {
                Some(ip) if asked == host => Ok(vec![SocketAddr::new(ip, 0)].into_iter()),
                Some(_) => Err(std::io::Error::other(format!(
                    "{asked} is not the bootstrapped doh host {host}"
                ))),
                None => {
                    let found: Vec<SocketAddr> = tokio::net::lookup_host((asked.as_str(), 0))
                        .await?
                        .collect();
                    if found.is_empty() {
                        return Err(std::io::Error::other(format!("{asked}: no addresses")));
                    }
                    Ok(found.into_iter())
                }
            }
        })
    }
}

type Connector = HttpsConnector<HttpConnector<BootstrapResolver>>;

struct Endpoint {
    label: String,
    uri: http::Uri,
    client: Client<Connector, Full<Bytes>>,
}

/// Pooled DoH client over one or more endpoints; cheap to clone (clones share the pools).
#[derive(Clone)]
pub struct DohClient {
    endpoints: Arc<Vec<Endpoint>>,
    timeout: Duration,
}

impl std::fmt::Debug for DohClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let labels: Vec<&str> = self.endpoints.iter().map(|e| e.label.as_str()).collect();
        f.debug_struct("DohClient")
            .field("endpoints", &labels)
            .field("timeout", &self.timeout)
            .finish()
    }
}

fn tls_config(endpoint: &DohEndpoint) -> Result<rustls::ClientConfig, DohError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(pem) = &endpoint.ca_pem {
        let mut added = 0usize;
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert =
                cert.map_err(|e| DohError::Config(format!("{}: bad ca pem: {e}", endpoint.url)))?;
            roots.add(cert).map_err(|e| {
                DohError::Config(format!("{}: bad ca certificate: {e}", endpoint.url))
            })?;
            added += 1;
        }
        if added == 0 {
            return Err(DohError::Config(format!(
                "{}: ca pem holds no certificate",
                endpoint.url
            )));
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| DohError::Config(format!("tls setup: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

fn build_endpoint(endpoint: &DohEndpoint, timeout: Duration) -> Result<Endpoint, DohError> {
    let url = &endpoint.url;
    if url.scheme() != "https" {
        return Err(DohError::Config(format!("{url}: doh needs an https url")));
    }
    let host = match url.host() {
        Some(url::Host::Domain(d)) => d.to_string(),
        Some(url::Host::Ipv4(ip)) => ip.to_string(),
        Some(url::Host::Ipv6(ip)) => ip.to_string(),
        None => return Err(DohError::Config(format!("{url}: no host"))),
    };
    let mut clean = url.clone();
    clean.set_fragment(None);
    let uri: http::Uri = clean
        .as_str()
        .parse()
        .map_err(|e| DohError::Config(format!("{url}: {e}")))?;

    let mut http =
        HttpConnector::new_with_resolver(BootstrapResolver::new(&host, endpoint.bootstrap));
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(timeout));
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls_config(endpoint)?)
        .https_only()
        .enable_http1()
        .enable_http2()
        .wrap_connector(http);
    let client = Client::builder(TokioExecutor::new())
        .pool_idle_timeout(POOL_IDLE)
        .pool_max_idle_per_host(2)
        .pool_timer(TokioTimer::new())
        .timer(TokioTimer::new())
        .build(https);
    Ok(Endpoint {
        label: format!("{}{}", url.host_str().unwrap_or_default(), url.path()),
        uri,
        client,
    })
}

/// The rustls error somewhere in an error chain, also inside (nested) `io::Error`s, as text.
fn tls_cause(err: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut stack: Vec<&(dyn std::error::Error + 'static)> = vec![err];
    for _ in 0..32 {
        let e = stack.pop()?;
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(tls.to_string());
        }
        if let Some(source) = e.source() {
            stack.push(source);
        }
        // `io::Error::source` skips the wrapped error itself; look inside it too.
        if let Some(inner) = e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            stack.push(inner);
        }
    }
    None
}

impl DohClient {
    /// Builds one pooled client per endpoint. Needs no runtime; queries need a tokio runtime.
    pub fn new(endpoints: Vec<DohEndpoint>, timeout: Duration) -> Result<DohClient, DohError> {
        if endpoints.is_empty() {
            return Err(DohError::NoEndpoints);
        }
        let _ = rustls::crypto::ring::default_provider().install_default();
        let built = endpoints
            .iter()
            .map(|e| build_endpoint(e, timeout))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(DohClient {
            endpoints: Arc::new(built),
            timeout,
        })
    }

    /// The endpoints as logged (`host/path`, no query or credentials), in order of preference.
    pub fn endpoint_labels(&self) -> Vec<&str> {
        self.endpoints.iter().map(|e| e.label.as_str()).collect()
    }

    /// Resolves `name` / `qtype`, trying the endpoints in order; returns the first valid answer
    /// (whatever its rcode) or the last endpoint's error.
    pub async fn query(&self, name: &str, qtype: QType) -> Result<Response, DohError> {
        let packet = Bytes::from(wire::build_query(0, name, qtype)?);
        let mut last = DohError::NoEndpoints;
        for endpoint in self.endpoints.iter() {
            match self.query_one(endpoint, packet.clone(), name, qtype).await {
                Ok(response) => return Ok(response),
                Err(e) => {
                    tracing::debug!(endpoint = %endpoint.label, name = %name, qtype = qtype.as_str(), error = %e, "doh query failed");
                    last = e;
                }
            }
        }
        Err(last)
    }

    async fn query_one(
        &self,
        endpoint: &Endpoint,
        packet: Bytes,
        name: &str,
        qtype: QType,
    ) -> Result<Response, DohError> {
        match tokio::time::timeout(self.timeout, exchange(endpoint, packet)).await {
            Err(_) => Err(DohError::Timeout {
                endpoint: endpoint.label.clone(),
            }),
            Ok(Err(e)) => Err(e),
            Ok(Ok(body)) => {
                let bad = |detail: String| DohError::BadResponse {
                    endpoint: endpoint.label.clone(),
                    detail,
                };
                let response = wire::parse_response(&body).map_err(|e| bad(e.to_string()))?;
                if response.id != 0 || !response.answers(name, qtype) {
                    return Err(bad("answer does not match the query".to_string()));
                }
                Ok(response)
            }
        }
    }
}

/// One POST; returns the body of a 2xx `application/dns-message` response.
async fn exchange(endpoint: &Endpoint, packet: Bytes) -> Result<Bytes, DohError> {
    let label = || endpoint.label.clone();
    let request = http::Request::builder()
        .method(http::Method::POST)
        .uri(endpoint.uri.clone())
        .header(header::CONTENT_TYPE, HeaderValue::from_static(DNS_MESSAGE))
        .header(header::ACCEPT, HeaderValue::from_static(DNS_MESSAGE))
        .body(Full::new(packet))
        .map_err(|e| DohError::Config(e.to_string()))?;
    let response = endpoint
        .client
        .request(request)
        .await
        .map_err(|e| match tls_cause(&e) {
            Some(detail) => DohError::Tls {
                endpoint: label(),
                detail,
            },
            None => DohError::Connect {
                endpoint: label(),
                detail: chain_message(&e),
            },
        })?;
    let status = response.status();
    if !status.is_success() {
        return Err(DohError::Status {
            endpoint: label(),
            status: status.as_u16(),
        });
    }
    if let Some(ct) = response.headers().get(header::CONTENT_TYPE) {
        let ct = ct.to_str().unwrap_or_default();
        let media = ct.split(';').next().unwrap_or_default().trim();
        if !media.eq_ignore_ascii_case(DNS_MESSAGE) {
            return Err(DohError::BadResponse {
                endpoint: label(),
                detail: format!("content-type {ct:?}"),
            });
        }
    }
    let body = Limited::new(response.into_body(), MAX_BODY)
        .collect()
        .await
        .map_err(|e| DohError::BadResponse {
            endpoint: label(),
            detail: format!("body: {e}"),
        })?;
    Ok(body.to_bytes())
}

#[cfg(test)]
mod tests;
