//! The transport to a collector: OTLP/gRPC or OTLP/HTTP over one pooled hyper client ([`Otlp`]), requests
//! optionally gzip-compressed ([`Compression`]), their bodies the encoded chunks as they are ([`Frames`]).

use super::{Failure, IN_FLIGHT, Request, Transport, mismatch, retry};
use crate::error_chain::chain_message;
use std::collections::VecDeque;
use std::future::Future;
use std::time::Duration;

/// The gRPC method of OTLP trace export.
pub(crate) const EXPORT_PATH: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";
/// The path of OTLP/HTTP trace export, after the endpoint's.
const HTTP_PATH: &str = "/v1/traces";
/// The `User-Agent` of export requests: the exporter, its language and its version, as the OTLP specification asks.
pub(crate) const USER_AGENT: &str = concat!(
    "OTel-OTLP-Exporter-Rust-crawl-engine/",
    env!("CARGO_PKG_VERSION")
);

type Connector = hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>;

/// How spans go to the collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// OTLP/gRPC: HTTP/2, the request in a gRPC message, the status in the trailers (the collector's port 4317).
    Grpc,
    /// OTLP/HTTP with protobuf bodies: a POST to `/v1/traces` over HTTP/1.1 (port 4318). A batch goes out in a
    /// few large writes, where HTTP/2 cuts it into frames of the collector's size (16 KiB), each a write and
    /// its own pass through flow control.
    HttpProtobuf,
}

impl Protocol {
    /// The protocol named as `OTEL_EXPORTER_OTLP_PROTOCOL` names it (`grpc`, `http/protobuf`).
    pub fn parse(name: &str) -> Option<Protocol> {
        match name.trim() {
            "grpc" => Some(Protocol::Grpc),
            "http/protobuf" => Some(Protocol::HttpProtobuf),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Grpc => "grpc",
            Protocol::HttpProtobuf => "http/protobuf",
        }
    }

    /// The collectors' well-known port of the protocol: 4317 takes OTLP/gRPC, 4318 OTLP/HTTP.
    pub fn well_known_port(self) -> u16 {
        match self {
            Protocol::Grpc => 4317,
            Protocol::HttpProtobuf => 4318,
        }
    }

    /// The other of the two protocols.
    pub fn other(self) -> Protocol {
        match self {
            Protocol::Grpc => Protocol::HttpProtobuf,
            Protocol::HttpProtobuf => Protocol::Grpc,
        }
    }
}

/// How export requests are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Sent as they are.
    None,
    /// gzip: `Content-Encoding: gzip` over OTLP/HTTP; over gRPC the message's compressed flag and
    /// `grpc-encoding: gzip`.
    Gzip,
}

impl Compression {
    /// The compression named as `OTEL_EXPORTER_OTLP_COMPRESSION` names it (`none`, `gzip`).
    pub fn parse(name: &str) -> Option<Compression> {
        match name.trim() {
            "none" => Some(Compression::None),
            "gzip" => Some(Compression::Gzip),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
        }
    }
}

/// OTLP over one pooled connection (hyper; `http://` in the clear, HTTP/2 with prior knowledge for gRPC;
/// `https://` over rustls with the system's trust roots, else the bundled Mozilla ones), the request already
/// encoded: its head and its chunks of spans go out as the pieces of its body.
#[derive(Debug, Clone)]
pub(crate) struct Otlp {
    client: hyper_util::client::legacy::Client<Connector, Frames>,
    uri: http::Uri,
    protocol: Protocol,
    compression: Compression,
    timeout: Duration,
}

impl Otlp {
    /// A lazily connecting client of `endpoint` (`http(s)://host:port`; for gRPC any path is ignored, for
    /// OTLP/HTTP `/v1/traces` goes after it); must be called inside a tokio runtime, whose tasks then carry the
    /// connection.
    pub(crate) fn new(
        endpoint: &str,
        protocol: Protocol,
        compression: Compression,
        timeout: Duration,
    ) -> Result<Otlp, String> {
        let base: http::Uri = endpoint
            .parse()
            .map_err(|e| format!("invalid endpoint: {e}"))?;
        let scheme = match base.scheme_str() {
            Some(s @ ("http" | "https")) => s.to_owned(),
            Some(other) => return Err(format!("unsupported scheme {other:?} (http or https)")),
            None => return Err("invalid endpoint: no scheme (expected http(s)://host:port)".into()),
        };
        let Some(authority) = base.authority().cloned() else {
            return Err("invalid endpoint: no host".into());
        };
        let path = match protocol {
            Protocol::Grpc => EXPORT_PATH.to_owned(),
            Protocol::HttpProtobuf => format!("{}{HTTP_PATH}", base.path().trim_end_matches('/')),
        };
        let uri = http::Uri::builder()
            .scheme(scheme.as_str())
            .authority(authority)
            .path_and_query(path)
            .build()
            .map_err(|e| format!("invalid endpoint: {e}"))?;
        let mut connector = hyper_util::client::legacy::connect::HttpConnector::new();
        connector.set_connect_timeout(Some(timeout));
        connector.set_nodelay(true);
        connector.enforce_http(false);
        // Trust roots are read (the system's bundle: a few milliseconds) only for an https endpoint.
        let tls = if scheme == "https" {
            match hyper_rustls::HttpsConnectorBuilder::new().with_native_roots() {
                Ok(b) => b,
                Err(_) => hyper_rustls::HttpsConnectorBuilder::new().with_webpki_roots(),
            }
        } else {
            hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(
                rustls::ClientConfig::builder()
                    .with_root_certificates(rustls::RootCertStore::empty())
                    .with_no_client_auth(),
            )
        };
        let tls = tls.https_or_http();
        let mut builder =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new());
        let client = match protocol {
            // One HTTP/2 connection carries every request in flight.
            Protocol::Grpc => builder
                .pool_max_idle_per_host(1)
                .http2_only(true)
                .build(tls.enable_http2().wrap_connector(connector)),
            // HTTP/1.1 carries one request at a time: a connection for each request in flight stays open.
            Protocol::HttpProtobuf => builder
                .pool_max_idle_per_host(IN_FLIGHT)
                .build(tls.enable_http1().wrap_connector(connector)),
        };
        Ok(Otlp {
            client,
            uri,
            protocol,
            compression,
            timeout,
        })
    }

    /// The HTTP request of `request` (its pieces shared, not copied).
    fn http_request(&self, request: &Request) -> Result<http::Request<Frames>, Failure> {
        let pieces = |head: bytes::Bytes| {
            Frames(
                std::iter::once(head)
                    .chain(request.spans.iter().cloned())
                    .filter(|f| !f.is_empty())
                    .collect(),
            )
        };
        match self.protocol {
            Protocol::Grpc => {
                let len = request.head.len() + request.spans_len();
                let len = u32::try_from(len)
                    .map_err(|_| Failure::fatal(format!("request of {len} bytes is too large")))?;
                // The gRPC message prefix: whether it is compressed, then the length.
                let mut head = Vec::with_capacity(5 + request.head.len());
                head.push(u8::from(request.gzip));
                head.extend_from_slice(&len.to_be_bytes());
                head.extend_from_slice(&request.head);
                let req = http::Request::post(self.uri.clone())
                    .header(http::header::USER_AGENT, USER_AGENT)
                    .header(http::header::CONTENT_TYPE, "application/grpc")
                    .header(http::header::TE, "trailers");
                let req = if request.gzip {
                    req.header("grpc-encoding", "gzip")
                } else {
                    req
                };
                req.body(pieces(head.into()))
            }
            Protocol::HttpProtobuf => {
                let req = http::Request::post(self.uri.clone())
                    .header(http::header::USER_AGENT, USER_AGENT)
                    .header(http::header::CONTENT_TYPE, "application/x-protobuf");
                let req = if request.gzip {
                    req.header(http::header::CONTENT_ENCODING, "gzip")
                } else {
                    req
                };
                req.body(pieces(request.head.clone()))
            }
        }
        .map_err(|e| Failure::fatal(e.to_string()))
    }

    async fn call(&self, req: http::Request<Frames>) -> Result<(), Failure> {
        let resp = self.client.request(req).await.map_err(|e| {
            Failure::transient(format!("collector unavailable: {}", chain_message(&e)))
        })?;
        let status = resp.status();
        let (parts, body) = resp.into_parts();
        let collected = http_body_util::BodyExt::collect(body)
            .await
            .map_err(|e| Failure::transient(format!("collector answer cut short: {e}")))?;
        let http_error = || Failure {
            detail: format!("collector answered HTTP {status}"),
            retry: retry::http_retry(status, &parts.headers),
        };
        if self.protocol == Protocol::HttpProtobuf {
            // Any 2xx is a success (its body, an ExportTraceServiceResponse, may only report a partial one).
            return if status.is_success() {
                Ok(())
            } else {
                Err(http_error())
            };
        }
        if status != http::StatusCode::OK {
            return Err(http_error());
        }
        // A trailers-only answer carries the status in its headers.
        let trailers = collected.trailers();
        let grpc = |name: &str| {
            trailers
                .and_then(|t| t.get(name))
                .or_else(|| parts.headers.get(name))
                .and_then(|v| v.to_str().ok())
        };
        match grpc("grpc-status") {
            Some("0") => Ok(()),
            Some(code) => Err(Failure {
                detail: format!(
                    "collector refused the spans: grpc-status {code}: {}",
                    grpc("grpc-message").unwrap_or("")
                ),
                retry: retry::grpc_retry(code),
            }),
            None => Err(Failure::fatal("collector answered without a grpc-status")),
        }
    }
}

impl Transport for Otlp {
    fn prepare(&self, request: Request) -> Request {
        match self.compression {
            Compression::Gzip => request.gzipped(),
            Compression::None => request,
        }
    }

    fn other_protocol(&self) -> impl Future<Output = Option<String>> + Send {
        let uri = self.uri.clone();
        let protocol = self.protocol;
        async move { mismatch::other_protocol(&uri, protocol).await }
    }

    fn send(&self, request: &Request) -> impl Future<Output = Result<(), Failure>> + Send {
        let this = self.clone();
        let req = self.http_request(request);
        async move {
            match tokio::time::timeout(this.timeout, this.call(req?)).await {
                Ok(result) => result,
                Err(_) => Err(Failure::transient(format!(
                    "the collector did not answer within {} ms",
                    this.timeout.as_millis()
                ))),
            }
        }
    }
}

/// A request body: the head, then the spans in the chunks the threads encoded them in, each a piece of the body
/// (no copy: HTTP/2 cuts them into DATA frames of its own size and writes them out as they are). A chunk holds
/// [`CHUNK_SPANS`] spans, tens of kilobytes, so that a batch is a handful of pieces: every piece costs the sender
/// its own pass through flow control and framing.
#[derive(Debug)]
pub(crate) struct Frames(VecDeque<bytes::Bytes>);

impl hyper::body::Body for Frames {
    type Data = bytes::Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<bytes::Bytes>, Self::Error>>> {
        std::task::Poll::Ready(
            self.get_mut()
                .0
                .pop_front()
                .map(|b| Ok(hyper::body::Frame::data(b))),
        )
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_empty()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        hyper::body::SizeHint::with_exact(self.0.iter().map(|b| b.len() as u64).sum())
    }
}
