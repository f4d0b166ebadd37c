//! `[observability]`: logs, traces (the OTLP export) and metrics.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// Chosen at startup from whether stderr is a terminal.
    #[default]
    Auto,
    Text,
    Json,
}

impl LogFormat {
    /// The name used in the config file.
    pub fn as_str(self) -> &'static str {
        match self {
            LogFormat::Auto => "auto",
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        }
    }
}

impl fmt::Display for LogFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How traces go to the collector (`observability.otlp_protocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtlpProtocol {
    /// OTLP/gRPC (the collector's port 4317).
    Grpc,
    /// OTLP/HTTP with protobuf bodies, POSTed to the endpoint's `/v1/traces` (port 4318).
    HttpProtobuf,
}

impl OtlpProtocol {
    /// The name used in the config file (and in `OTEL_EXPORTER_OTLP_PROTOCOL`).
    pub fn as_str(self) -> &'static str {
        match self {
            OtlpProtocol::Grpc => "grpc",
            OtlpProtocol::HttpProtobuf => "http/protobuf",
        }
    }
}

/// How export requests are compressed (`observability.otlp_compression`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtlpCompression {
    /// Sent as they are.
    None,
    /// gzip (`Content-Encoding: gzip` over OTLP/HTTP, the gRPC message's compressed flag and `grpc-encoding: gzip`).
    Gzip,
}

impl OtlpCompression {
    /// The name used in the config file (and in `OTEL_EXPORTER_OTLP_COMPRESSION`).
    pub fn as_str(self) -> &'static str {
        match self {
            OtlpCompression::None => "none",
            OtlpCompression::Gzip => "gzip",
        }
    }
}

/// Default `observability.service_name`.
pub const DEFAULT_SERVICE_NAME: &str = "crawl-engine";

/// Default `observability.metrics_listen`: loopback only. A non-loopback address is served only
/// when written explicitly in the file; no default ever exposes the metrics beyond the host.
pub const DEFAULT_METRICS_LISTEN: SocketAddr =
    SocketAddr::new(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 9464);

/// `[observability]` (docs/OBSERVABILITY.md).
#[derive(Debug, Clone, PartialEq)]
pub struct ObservabilityConfig {
    /// EnvFilter-style directives, e.g. `info` or `warn,crawl_core=debug`.
    pub log_level: String,
    pub log_format: LogFormat,
    /// Progress log-line interval when stderr is not a TTY.
    pub progress_interval: Duration,
    /// OTLP collector, `http(s)://host:port` with an explicit port and no path; `None`
    /// (`""` in the file) = use `OTEL_EXPORTER_OTLP_ENDPOINT` if set, else no export.
    pub otlp_endpoint: Option<url::Url>,
    /// How spans are sent; `None` (`""` in the file) = `OTEL_EXPORTER_OTLP_PROTOCOL` if set, else OTLP/HTTP (the
    /// OpenTelemetry specification's default).
    pub otlp_protocol: Option<OtlpProtocol>,
    /// How export requests are compressed; `None` (`""` in the file) = `OTEL_EXPORTER_OTLP_COMPRESSION` if set,
    /// else not at all.
    pub otlp_compression: Option<OtlpCompression>,
    /// The `service.name` resource attribute (non-empty, no control characters).
    pub service_name: String,
    /// Share of URL traces exported, `0.0..=1.0`.
    pub sample_ratio: f64,
    /// Prometheus `/metrics` listener; `None` (`""` in the file) = off. Port 0 picks a free
    /// port. Defaults to [`DEFAULT_METRICS_LISTEN`] (loopback); any other address, including a
    /// non-loopback one, comes only from the file.
    pub metrics_listen: Option<SocketAddr>,
}

impl Default for ObservabilityConfig {
    fn default() -> Self {
        Self {
            log_level: "info".to_owned(),
            log_format: LogFormat::Auto,
            progress_interval: Duration::from_secs(10),
            otlp_endpoint: None,
            otlp_protocol: None,
            otlp_compression: None,
            service_name: DEFAULT_SERVICE_NAME.to_owned(),
            sample_ratio: 1.0,
            metrics_listen: Some(DEFAULT_METRICS_LISTEN),
        }
    }
}
