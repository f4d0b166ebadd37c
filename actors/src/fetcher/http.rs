//! The pooled HTTP(S) client used by the fetcher actor.
//!
//! [`HttpClient`] wraps hyper-util's legacy pooled client over hyper-rustls (ring provider,
//! webpki roots plus configurable extra roots, ALPN h2 + http/1.1) over the connector
//! (`super::connector`), whose direct connections come from `super::dial`: the SSRF guard
//! (`security.allow_private_networks`, `security.allow_cidrs`) is asked about every address right
//! before it is dialed, and a host whose addresses are all refused fails with
//! [`FetchError::PrivateNetwork`]; IP-literal hosts are checked before anything else. Redirects are not followed. Bodies are returned still content-encoded
//! (see `crate::parser::decode`), capped at `max_body_bytes`, with header / idle / total deadlines.
//! Works on both current-thread (actix arbiter) and multi-thread tokio runtimes.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use crawl_observability::trace::Stamp;
use http::header::{self, HeaderMap, HeaderValue};
use http_body::Body as _;
use http_body_util::{BodyExt as _, Empty};
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpInfo;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use rustls::pki_types::CertificateDer;

use super::dial::NameLookup;
use crate::fetcher::error::{FetchError, SettingsError, TimeoutPhase, classify};
use crate::protocol::{RawResponse, Timings};
use crawl_core::recrawl::Validators;

/// `Accept` header sent with every request.
pub const ACCEPT_VALUE: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
/// `Accept-Encoding` header sent with every request (all decodable by `parser::decode`).
pub const ACCEPT_ENCODING_VALUE: &str = "gzip, deflate, br, zstd";

/// Largest buffer reserved up front from a `Content-Length`.
const MAX_INITIAL_BUFFER: u64 = 4 * 1024 * 1024;

/// Client settings; see [`HttpSettings::default`] for the defaults.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    /// `User-Agent` header value.
    pub user_agent: String,
    /// TCP connect deadline (enforced by the connector), and separately the TLS handshake's deadline, counted from
    /// the moment the transport is up (a stalled handshake ends as `tls: handshake timed out`).
    pub connect_timeout: Duration,
    /// Deadline from request start to response headers (includes connect and TLS).
    pub header_timeout: Duration,
    /// Longest wait for the next body frame.
    pub idle_timeout: Duration,
    /// Deadline for the whole request including the body.
    pub total_timeout: Duration,
    /// Largest raw (still encoded) body accepted.
    pub max_body_bytes: u64,
    /// Offer h2 via ALPN on HTTPS (plain http always uses HTTP/1.1).
    pub http2: bool,
    /// Allow loopback / private / link-local and other non-public destinations.
    pub allow_private_networks: bool,
    /// Non-public blocks allowed even without `allow_private_networks` (`security.allow_cidrs`).
    pub allow_cidrs: Vec<crawl_core::netguard::Cidr>,
    /// Delay between the starts of two connection attempts to the addresses of one host (RFC 8305).
    pub attempt_delay: Duration,
    /// How long an idle pooled connection is kept.
    pub pool_idle_timeout: Duration,
    /// Idle connections kept per host.
    pub pool_max_idle_per_host: usize,
    /// Extra trusted root certificates (tests, private CAs), added to the webpki roots.
    pub extra_roots: Vec<CertificateDer<'static>>,
    /// Keep the headers each request was sent with in [`RawResponse::request_headers`] (for the archive).
    pub keep_request_headers: bool,
    /// Name resolution for new connections (the resolver actor); None = the system resolver.
    pub lookup: Option<NameLookup>,
    /// The proxy-chain actor, when chains are configured; None = always direct.
    pub proxy: Option<ProxyHandle>,
    /// `Authorization` / `Cookie` per origin: a request carries those of its own URL's origin only (a redirect
    /// target is a request of its own), marked sensitive.
    pub credentials: crawl_core::config::Credentials,
}

/// The proxy-chain actor's address, as the connector uses it.
#[derive(Clone)]
pub struct ProxyHandle(pub actix::Recipient<crate::proxy::messages::OpenChain>);

impl std::fmt::Debug for ProxyHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProxyHandle")
    }
}

impl HttpSettings {
    /// The SSRF guard these settings describe.
    pub fn guard(&self) -> crawl_core::netguard::NetGuard {
        crawl_core::netguard::NetGuard::new(self.allow_private_networks, self.allow_cidrs.clone())
    }
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            user_agent: concat!("crawl-engine/", env!("CARGO_PKG_VERSION")).to_string(),
            connect_timeout: Duration::from_secs(10),
            header_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(30),
            total_timeout: Duration::from_secs(120),
            max_body_bytes: 10 * 1024 * 1024,
            http2: true,
            allow_private_networks: false,
            allow_cidrs: Vec::new(),
            attempt_delay: super::dial::ATTEMPT_DELAY,
            pool_idle_timeout: Duration::from_secs(90),
            pool_max_idle_per_host: 8,
            extra_roots: Vec::new(),
            keep_request_headers: false,
            lookup: None,
            proxy: None,
            credentials: crawl_core::config::Credentials::default(),
        }
    }
}

type Connector = super::connector::Timed<HttpsConnector<super::connector::ProxyConnector>>;

/// Pooled HTTP/1.1 + HTTP/2 client; cheap to clone (clones share the pool).
#[derive(Clone)]
pub struct HttpClient {
    client: Client<Connector, Empty<Bytes>>,
    settings: Arc<HttpSettings>,
    guard: Arc<crawl_core::netguard::NetGuard>,
    /// Replaced by a config reload; shared by the clones of this client.
    user_agent: crate::live::Live<HeaderValue>,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

fn tls_config(settings: &HttpSettings) -> Result<rustls::ClientConfig, SettingsError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    for cert in &settings.extra_roots {
        roots.add(cert.clone()).map_err(SettingsError::ExtraRoot)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let webpki = rustls::client::WebPkiServerVerifier::builder_with_provider(
        Arc::new(roots),
        Arc::clone(&provider),
    )
    .build()?;
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(NamingVerifier(webpki)))
        .with_no_client_auth();
    Ok(config)
}

/// The webpki verifier, unchanged in what it accepts; an untrusted certificate that is its own issuer is reported as
/// self-signed ([`crate::fetcher::error::TlsCause::SelfSigned`]) instead of "unknown issuer".
#[derive(Debug)]
struct NamingVerifier(Arc<rustls::client::WebPkiServerVerifier>);

impl rustls::client::danger::ServerCertVerifier for NamingVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &rustls::pki_types::ServerName<'_>,
        ocsp_response: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        self.0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
            .map_err(|e| match e {
                rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer)
                    if intermediates.is_empty() && self_issued(end_entity) =>
                {
                    rustls::Error::InvalidCertificate(rustls::CertificateError::Other(
                        rustls::OtherError(Arc::new(crate::fetcher::error::TlsCause::SelfSigned)),
                    ))
                }
                other => other,
            })
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// One DER element read from the front of a buffer.
struct Der<'a> {
    tag: u8,
    /// The element with its tag and length.
    whole: &'a [u8],
    contents: &'a [u8],
    /// What follows the element.
    rest: &'a [u8],
}

fn der_element(input: &[u8]) -> Option<Der<'_>> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (len, &rest[n..])
    };
    if rest.len() < len {
        return None;
    }
    let header = input.len() - rest.len();
    Some(Der {
        tag,
        whole: &input[..header + len],
        contents: &rest[..len],
        rest: &rest[len..],
    })
}

/// Whether the certificate's issuer name equals its subject name (false when it cannot be read).
fn self_issued(cert: &CertificateDer<'_>) -> bool {
    const SEQUENCE: u8 = 0x30;
    const VERSION: u8 = 0xa0;
    let names = || -> Option<(&[u8], &[u8])> {
        let cert = der_element(cert.as_ref()).filter(|e| e.tag == SEQUENCE)?;
        let tbs = der_element(cert.contents).filter(|e| e.tag == SEQUENCE)?;
        let first = der_element(tbs.contents)?;
        let serial_rest = if first.tag == VERSION {
            der_element(first.rest)?.rest
        } else {
            first.rest
        };
        let algorithm = der_element(serial_rest)?;
        let issuer = der_element(algorithm.rest)?;
        let validity = der_element(issuer.rest)?;
        let subject = der_element(validity.rest)?;
        Some((issuer.whole, subject.whole))
    };
    names().is_some_and(|(issuer, subject)| issuer == subject)
}

/// What a request asks besides its URL.
#[derive(Clone, Copy)]
struct Ask<'a> {
    referer: Option<&'a str>,
    credential: Option<&'a crawl_core::config::Credential>,
    /// The validators of the URL's last fetch (a revisit).
    validators: Option<&'a Validators>,
}

/// Adds `If-None-Match` (the ETag as the server sent it) and `If-Modified-Since` (the Last-Modified time as an
/// IMF-fixdate) for the validators that have a value; true when either was added. An ETag that is not a valid
/// header value is left out (logged).
fn conditional_headers(v: &Validators, headers: &mut HeaderMap) -> bool {
    let mut added = false;
    if let Some(etag) = &v.etag {
        match HeaderValue::from_str(etag) {
            Ok(value) => {
                headers.insert(header::IF_NONE_MATCH, value);
                added = true;
            }
            Err(_) => {
                tracing::debug!(etag = %etag.escape_debug(), "dropping invalid etag validator")
            }
        }
    }
    if let Some(secs) = v.last_modified_s {
        let at = std::time::UNIX_EPOCH + Duration::from_secs(secs);
        // An IMF-fixdate is ASCII: always a valid header value.
        if let Ok(value) = HeaderValue::from_str(&httpdate::fmt_http_date(at)) {
            headers.insert(header::IF_MODIFIED_SINCE, value);
            added = true;
        }
    }
    added
}

/// The `User-Agent` header of `text`, or why it cannot be one.
pub fn user_agent(text: &str) -> Result<HeaderValue, SettingsError> {
    Ok(HeaderValue::from_str(text)?)
}

impl HttpClient {
    /// Builds the client. Needs no runtime; requests need a tokio runtime (any flavour).
    pub fn new(settings: HttpSettings) -> Result<HttpClient, SettingsError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let user_agent = user_agent(&settings.user_agent)?;
        let tls = tls_config(&settings)?;

        let direct = super::dial::Dialer {
            guard: Arc::new(settings.guard()),
            lookup: settings.lookup.clone(),
            connect_timeout: settings.connect_timeout,
            attempt_delay: settings.attempt_delay,
        };
        let proxied = super::connector::ProxyConnector {
            direct,
            proxy: settings.proxy.clone().map(|p| p.0),
        };
        let builder = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1();
        let https = if settings.http2 {
            builder.enable_http2().wrap_connector(proxied)
        } else {
            builder.wrap_connector(proxied)
        };

        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(settings.pool_idle_timeout)
            .pool_max_idle_per_host(settings.pool_max_idle_per_host)
            .pool_timer(TokioTimer::new())
            .timer(TokioTimer::new())
            .build(super::connector::Timed(https, settings.connect_timeout));

        Ok(HttpClient {
            client,
            guard: Arc::new(settings.guard()),
            settings: Arc::new(settings),
            user_agent: crate::live::Live::new(user_agent),
        })
    }

    /// Changes the User-Agent of this client and its clones from the next request.
    pub fn set_user_agent(&self, user_agent: HeaderValue) {
        self.user_agent.store(user_agent);
    }

    /// The settings this client was built with.
    pub fn settings(&self) -> &HttpSettings {
        &self.settings
    }

    /// GETs `url` once (no redirects) and reads the whole raw body.
    pub async fn get(
        &self,
        url: &url::Url,
        referer: Option<&str>,
    ) -> Result<RawResponse, FetchError> {
        self.get_conditional(url, referer, None).await
    }

    /// [`get`](Self::get), made conditional by the validators of `url`'s last fetch: `If-None-Match` with its
    /// ETag, `If-Modified-Since` with its Last-Modified time (as an IMF-fixdate). [`RawResponse::conditional`]
    /// says whether either was sent. The validators belong to `url`: a redirect target is requested without them.
    pub async fn get_conditional(
        &self,
        url: &url::Url,
        referer: Option<&str>,
        validators: Option<&Validators>,
    ) -> Result<RawResponse, FetchError> {
        let uri = self.prepare_uri(url)?;
        let credential = self.settings.credentials.for_url(url);
        let start = Instant::now();
        let ask = Ask {
            referer,
            credential,
            validators,
        };
        match tokio::time::timeout(self.settings.total_timeout, self.exchange(uri, ask, start))
            .await
        {
            Ok(result) => result,
            Err(_) => Err(FetchError::Timeout(TimeoutPhase::Total)),
        }
    }

    /// Checks scheme and IP-literal hosts and converts to a request URI (no fragment, no userinfo).
    fn prepare_uri(&self, url: &url::Url) -> Result<http::Uri, FetchError> {
        match url.scheme() {
            "http" | "https" => {}
            other => {
                return Err(FetchError::InvalidUrl(format!(
                    "unsupported scheme {other}"
                )));
            }
        }
        let literal = match url.host() {
            None => return Err(FetchError::InvalidUrl(format!("{url} has no host"))),
            Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
            Some(url::Host::Domain(_)) => None,
        };
        if let Some(addr) = literal
            && let Err(refused) = self.guard.check(addr)
        {
            tracing::debug!(host = url.host_str().unwrap_or_default(), addr = %addr, class = refused.0.as_str(), "guard refused ip literal");
            return Err(FetchError::PrivateNetwork {
                host: url.host_str().unwrap_or_default().to_string(),
                addr,
            });
        }
        let parse = |s: &str| {
            s.parse::<http::Uri>()
                .map_err(|e| FetchError::InvalidUrl(format!("{url}: {e}")))
        };
        // A canonical URL has neither fragment nor userinfo: it is sent as it is, without a copy.
        if url.fragment().is_none() && url.username().is_empty() && url.password().is_none() {
            return parse(url.as_str());
        }
        let mut clean = url.clone();
        clean.set_fragment(None);
        // Both only fail for URLs without a host, excluded above.
        let _ = clean.set_username("");
        let _ = clean.set_password(None);
        parse(clean.as_str())
    }

    /// The request, and whether it is conditional (carries `If-None-Match` or `If-Modified-Since`).
    fn build_request(
        &self,
        uri: http::Uri,
        ask: &Ask<'_>,
    ) -> Result<(http::Request<Empty<Bytes>>, bool), FetchError> {
        let Ask {
            referer,
            credential,
            validators,
        } = *ask;
        let mut req = http::Request::builder()
            .method(http::Method::GET)
            .uri(uri)
            .body(Empty::new())
            .map_err(|e| FetchError::InvalidUrl(e.to_string()))?;
        let headers = req.headers_mut();
        headers.insert(header::USER_AGENT, self.user_agent.load().as_ref().clone());
        headers.insert(header::ACCEPT, HeaderValue::from_static(ACCEPT_VALUE));
        headers.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_static(ACCEPT_ENCODING_VALUE),
        );
        if let Some(referer) = referer {
            match HeaderValue::from_str(referer) {
                Ok(value) => {
                    headers.insert(header::REFERER, value);
                }
                Err(_) => tracing::debug!(referer = %referer, "dropping invalid referer"),
            }
        }
        if let Some(c) = credential {
            for (name, value) in [
                (header::AUTHORIZATION, &c.authorization),
                (header::COOKIE, &c.cookie),
            ] {
                // Validated at load (visible ASCII): never fails.
                if let Some(Ok(mut v)) = value.as_ref().map(|v| HeaderValue::from_str(v.expose())) {
                    v.set_sensitive(true);
                    headers.insert(name, v);
                }
            }
        }
        let conditional = validators.is_some_and(|v| conditional_headers(v, headers));
        Ok((req, conditional))
    }

    async fn exchange(
        &self,
        uri: http::Uri,
        ask: Ask<'_>,
        start: Instant,
    ) -> Result<RawResponse, FetchError> {
        let (req, conditional) = self.build_request(uri, &ask)?;
        let request_headers = if self.settings.keep_request_headers {
            req.headers().clone()
        } else {
            HeaderMap::new()
        };
        let sent_at = std::time::SystemTime::now();
        // The fetch's trace when it is exported (the connectors record into the probe in the task's scope).
        let traced = super::connector::with_current_probe(|p| {
            p.reset();
            p.trace
        });
        let response = match tokio::time::timeout(
            self.settings.header_timeout,
            self.client.request(req),
        )
        .await
        {
            Err(_) => return Err(FetchError::Timeout(TimeoutPhase::Headers)),
            Ok(Err(e)) => return Err(classify(&e, e.is_connect())),
            Ok(Ok(response)) => response,
        };
        let headers_at = start.elapsed();
        if let Some(trace) = traced {
            let seen = super::connector::with_current_probe(super::connector::ConnProbe::times)
                .unwrap_or_default();
            // The start converted once: the end is an offset from it. A new connection's span starts when it was
            // usable.
            let started = Stamp::from(start);
            let from = seen.conn_done.unwrap_or(started);
            trace.span(
                "http.first_byte",
                from,
                started + headers_at,
                &[if seen.opened() {
                    crawl_observability::preset_bool!("net.connection.reused", false)
                } else {
                    crawl_observability::preset_bool!("net.connection.reused", true)
                }],
            );
        }
        let remote_addr = response
            .extensions()
            .get::<HttpInfo>()
            .map(HttpInfo::remote_addr);
        let proxy = response
            .extensions()
            .get::<super::connector::ProxyUsed>()
            .map(|p| p.0.clone());
        let (parts, body) = response.into_parts();
        let (body, truncated) = self.read_body(&parts.headers, body).await?;
        let total = start.elapsed();
        let resp = RawResponse {
            status: parts.status.as_u16(),
            headers: parts.headers,
            version: parts.version,
            body,
            remote_addr,
            request_headers,
            sent_at,
            truncated,
            conditional,
            proxy,
            timings: Timings {
                started: Some(start),
                headers: headers_at,
                body: total.saturating_sub(headers_at),
                total,
            },
        };
        if truncated {
            return Err(FetchError::TooLarge {
                limit: self.settings.max_body_bytes,
                partial: Some(Box::new(resp)),
            });
        }
        Ok(resp)
    }

    /// Collects the body frame by frame, each within `idle_timeout`, up to `max_body_bytes`. Past the limit it stops
    /// reading and says so (`true`), with what fits.
    async fn read_body(
        &self,
        headers: &HeaderMap,
        mut body: Incoming,
    ) -> Result<(Bytes, bool), FetchError> {
        let max = self.settings.max_body_bytes;
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        let lower = body.size_hint().lower();
        if declared.is_some_and(|len| len > max) || lower > max {
            return Ok((Bytes::new(), true));
        }
        let reserve = declared.unwrap_or(lower).min(MAX_INITIAL_BUFFER);
        let mut buf = BytesMut::with_capacity(usize::try_from(reserve).unwrap_or(0));
        loop {
            let frame = match tokio::time::timeout(self.settings.idle_timeout, body.frame()).await {
                Err(_) => return Err(FetchError::Timeout(TimeoutPhase::Idle)),
                Ok(None) => break,
                Ok(Some(Err(e))) => return Err(classify(&e, false)),
                Ok(Some(Ok(frame))) => frame,
            };
            if let Ok(data) = frame.into_data() {
                if (buf.len() as u64).saturating_add(data.len() as u64) > max {
                    let room = usize::try_from(max)
                        .unwrap_or(usize::MAX)
                        .saturating_sub(buf.len());
                    buf.extend_from_slice(&data[..room.min(data.len())]);
                    return Ok((buf.freeze(), true));
                }
                buf.extend_from_slice(&data);
            }
        }
        Ok((buf.freeze(), false))
    }
}

#[cfg(test)]
pub(crate) mod tests;

#[cfg(test)]
mod tls_tests;
