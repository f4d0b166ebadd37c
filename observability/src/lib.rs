//! crawl-observability: logging, OpenTelemetry tracing (the SDK and `opentelemetry-otlp`: OTLP/gRPC or OTLP/HTTP),
//! and Prometheus metrics for crawl-engine.
//!
//! # Layout
//! - [`init`]: installs the global `tracing` subscriber (text on a terminal, JSON otherwise, or as configured) with a
//!   reloadable filter, and the global OpenTelemetry tracer provider (exporting when an endpoint is set); returns a
//!   [`Guard`] to keep for the life of the process and to [`Guard::shutdown`] at the end (flushes spans).
//! - [`trace`]: one trace per URL ([`trace::TraceCtx`] travels in the actor messages), sampling ratio live.
//! - [`metrics`]: the process-wide Prometheus registry and its typed update helpers.
//! - [`server`]: the `/metrics` HTTP endpoint.
//! - [`redact`]: URLs as they may appear in spans and logs.
//! - [`usage`]: CPU time and memory of this process (the end-of-crawl report, the benchmark's sink).
//! - [`filter`]: the log filter in force, with the OTLP exporter's transport (h2, tonic, hyper, tower) and the
//!   OpenTelemetry SDK held at warn (h2 off) unless the user's filter names them.

pub mod console;
pub mod error_chain;
pub mod filter;
pub mod metrics;
pub mod redact;
pub mod server;
pub mod trace;
pub mod usage;

pub use trace::{Attr, AttrValue, Compression, Protocol};

use std::io::IsTerminal;
use std::net::SocketAddr;
use tracing_subscriber::fmt::writer::MakeWriterExt;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry, reload};

/// How log lines look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Text on a terminal, JSON otherwise.
    Auto,
    Text,
    Json,
}

/// Where and how spans are exported.
#[derive(Debug, Clone)]
pub struct OtlpSettings {
    /// `http(s)://host:port` of an OTLP collector (over OTLP/HTTP `/v1/traces` goes after it); None =
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else `OTEL_EXPORTER_OTLP_ENDPOINT`, else no export.
    pub endpoint: Option<String>,
    /// How spans are sent; None = `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, else `OTEL_EXPORTER_OTLP_PROTOCOL`, else
    /// OTLP/HTTP.
    pub protocol: Option<Protocol>,
    /// How export requests are compressed; None = `OTEL_EXPORTER_OTLP_TRACES_COMPRESSION`, else
    /// `OTEL_EXPORTER_OTLP_COMPRESSION`, else not at all.
    pub compression: Option<Compression>,
    /// `service.name` (OTEL_SERVICE_NAME, when set, wins).
    pub service_name: String,
    pub service_version: String,
    /// More resource attributes: what holds for every span of the process (the frontier's backend), sent once a
    /// batch instead of on every span.
    pub resource: Vec<(&'static str, String)>,
    /// Share of URL traces exported, 0..=1.
    pub sample_ratio: f64,
}

/// Telemetry settings.
#[derive(Debug, Clone)]
pub struct TelemetryConfig {
    /// An `EnvFilter` directive ("info", "crawl_actors=debug,info"); `RUST_LOG` overrides it when set.
    pub log_level: String,
    pub format: Format,
    /// Tracing; None = no tracer at all (records carry no trace id).
    pub otlp: Option<OtlpSettings>,
}

/// Errors of telemetry setup.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("invalid log filter {filter:?}: {detail}")]
    Filter { filter: String, detail: String },
    #[error("a global tracing subscriber is already installed")]
    AlreadyInstalled,
    #[error("otlp exporter for {endpoint}: {detail}")]
    Otlp { endpoint: String, detail: OtlpError },
    #[error("metrics listener {addr}: {detail}")]
    Listen { addr: SocketAddr, detail: String },
}

/// Why the span exporter of an endpoint ([`TelemetryError::Otlp`]) could not start.
#[derive(Debug, thiserror::Error)]
pub enum OtlpError {
    /// An `OTEL_EXPORTER_OTLP_*` variable names a protocol or compression that is not supported; `choices` are
    /// those that are.
    #[error("{var}={value:?} is not supported ({choices})")]
    Unsupported {
        var: &'static str,
        value: String,
        choices: &'static str,
    },
    /// The runtime that carries the exporter's connections could not start.
    #[error("{0}")]
    Runtime(std::io::Error),
    /// The OTLP exporter refused its settings (those of the environment included).
    #[error("{0}")]
    Build(opentelemetry_otlp::ExporterBuildError),
}

/// Changes the log filter of the running process.
#[derive(Clone)]
pub struct LogControl {
    handle: reload::Handle<EnvFilter, Registry>,
}

impl std::fmt::Debug for LogControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LogControl")
    }
}

/// Parses an EnvFilter directive into the filter in force: the directive plus the exporter transport's
/// ([`filter::with_transport_directives`]).
pub fn parse_filter(directive: &str) -> Result<EnvFilter, TelemetryError> {
    EnvFilter::try_new(filter::with_transport_directives(directive)).map_err(|e| {
        TelemetryError::Filter {
            filter: directive.to_owned(),
            detail: e.to_string(),
        }
    })
}

fn rust_log() -> Option<String> {
    std::env::var("RUST_LOG")
        .ok()
        .filter(|s| !s.trim().is_empty())
}

impl LogControl {
    /// Applies `directive` (ignored, with a note, while RUST_LOG is set: the environment wins).
    pub fn set(&self, directive: &str) -> Result<(), TelemetryError> {
        if rust_log().is_some() {
            tracing::info!("log level from RUST_LOG kept; config log_level not applied");
            return Ok(());
        }
        let filter = parse_filter(directive)?;
        self.handle
            .reload(filter)
            .map_err(|e| TelemetryError::Filter {
                filter: directive.to_owned(),
                detail: e.to_string(),
            })
    }
}

struct OtelPipeline {
    /// The span exporter and where it sends (None: trace ids only); outlives the actor system so the last spans
    /// still go out.
    exporter: Option<(trace::Exporter, ExportTarget)>,
}

/// Where spans are exported: the endpoint and protocol in use, each the configured one or the environment's, as
/// resolved once when the exporter started.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportTarget {
    pub endpoint: String,
    pub protocol: Protocol,
    pub compression: Compression,
    /// The batch processor's queue, as sized at start.
    pub queue: trace::ExportQueue,
}

/// Keeps telemetry alive; [`Guard::shutdown`] (or drop) flushes the spans still buffered.
pub struct Guard {
    pub json: bool,
    log: LogControl,
    otel: Option<OtelPipeline>,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("json", &self.json)
            .field("exporting", &self.exporting())
            .finish()
    }
}

impl Guard {
    /// The handle that changes the log filter live.
    pub fn log_control(&self) -> LogControl {
        self.log.clone()
    }

    /// Whether spans are exported.
    pub fn exporting(&self) -> bool {
        self.export_target().is_some()
    }

    /// Where spans are exported (None: no export).
    pub fn export_target(&self) -> Option<&ExportTarget> {
        self.otel
            .as_ref()
            .and_then(|o| o.exporter.as_ref())
            .map(|(_, target)| target)
    }

    /// Flushes and stops the exporter. Runs the SDK's blocking shutdown on a thread of its own: on a runtime
    /// thread (actix's current-thread runtime) it could not wait for the exports it starts.
    pub fn shutdown(&mut self) {
        let Some((exporter, _)) = self.otel.take().and_then(|o| o.exporter) else {
            return;
        };
        let joined = std::thread::Builder::new()
            .name("otel-shutdown".into())
            .spawn(move || exporter.shutdown())
            .map(|t| t.join());
        if joined.is_err() {
            eprintln!("warning: could not start the trace flush thread");
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The export protocol in use: the configured one, else `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, else
/// `OTEL_EXPORTER_OTLP_PROTOCOL` (`grpc` or `http/protobuf`), else OTLP/HTTP, the OpenTelemetry specification's
/// default; an error names a protocol of the environment that is not supported.
fn resolve_protocol(configured: Option<Protocol>) -> Result<Protocol, OtlpError> {
    configured_or_env(
        configured,
        (
            &[
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
                "OTEL_EXPORTER_OTLP_PROTOCOL",
            ],
            "grpc or http/protobuf",
        ),
        Protocol::parse,
        Protocol::HttpProtobuf,
    )
}

/// The compression in use: the configured one, else `OTEL_EXPORTER_OTLP_TRACES_COMPRESSION`, else
/// `OTEL_EXPORTER_OTLP_COMPRESSION` (`none` or `gzip`), else none; an error names a compression of the
/// environment that is not supported.
fn resolve_compression(configured: Option<Compression>) -> Result<Compression, OtlpError> {
    configured_or_env(
        configured,
        (
            &[
                "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
                "OTEL_EXPORTER_OTLP_COMPRESSION",
            ],
            "none or gzip",
        ),
        Compression::parse,
        Compression::None,
    )
}

/// The first of `vars` that is set and not blank.
fn first_env(vars: &[&'static str]) -> Option<(&'static str, String)> {
    vars.iter().find_map(|var| {
        std::env::var(var)
            .ok()
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .map(|v| (*var, v))
    })
}

/// `configured`, else the first environment variable of `vars` that is set, read by `parse` (a value it does not
/// know is an error that names the `choices`), else `default`.
fn configured_or_env<T>(
    configured: Option<T>,
    (vars, choices): (&[&'static str], &'static str),
    parse: fn(&str) -> Option<T>,
    default: T,
) -> Result<T, OtlpError> {
    if let Some(c) = configured {
        return Ok(c);
    }
    match first_env(vars) {
        Some((var, value)) => match parse(&value) {
            Some(t) => Ok(t),
            None => Err(OtlpError::Unsupported {
                var,
                value,
                choices,
            }),
        },
        None => Ok(default),
    }
}

impl ExportTarget {
    /// The fix to name when the endpoint's port is the well-known port of the other protocol (an endpoint left on
    /// 4317 from a gRPC setup, now that OTLP/HTTP is the default, would see every export fail): None when the port
    /// is another one or matches.
    pub fn port_mismatch(&self) -> Option<String> {
        port_mismatch(&self.endpoint, self.protocol)
    }
}

fn port_mismatch(endpoint: &str, protocol: Protocol) -> Option<String> {
    let port = endpoint.parse::<http::Uri>().ok()?.port_u16()?;
    let (expected, other) = (protocol.well_known_port(), protocol.other());
    if port != other.well_known_port() {
        return None;
    }
    Some(format!(
        "the otlp endpoint's port {port} is the collectors' {} port, but traces are sent over {}: set \
         [observability] otlp_protocol = \"{}\" (or OTEL_EXPORTER_OTLP_PROTOCOL), or use the collector's port {expected}",
        other.as_str(),
        protocol.as_str(),
        other.as_str(),
    ))
}

/// The collector endpoint in use: the configured one (a base, `/v1/traces` goes after it over OTLP/HTTP), else
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the whole URL), else `OTEL_EXPORTER_OTLP_ENDPOINT` (a base); with
/// whether it is the configured one.
fn resolve_endpoint(configured: Option<&str>) -> Option<(String, bool)> {
    if let Some(c) = configured.map(str::trim).filter(|s| !s.is_empty()) {
        return Some((c.to_owned(), true));
    }
    first_env(&[
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    ])
    .map(|(_, v)| (v, false))
}

fn otel_pipeline(s: &OtlpSettings) -> Result<OtelPipeline, TelemetryError> {
    trace::set_sample_ratio(s.sample_ratio);
    let Some((endpoint, configured)) = resolve_endpoint(s.endpoint.as_deref()) else {
        trace::install(trace::Tracer::Ids);
        return Ok(OtelPipeline { exporter: None });
    };
    let mut resource = opentelemetry_sdk::Resource::builder()
        .with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            s.service_version.clone(),
        ))
        .with_attributes(
            s.resource
                .iter()
                .map(|(k, v)| opentelemetry::KeyValue::new(*k, v.clone())),
        );
    if std::env::var("OTEL_SERVICE_NAME").map_or(true, |v| v.trim().is_empty()) {
        resource = resource.with_service_name(s.service_name.clone());
    }
    let otlp_error = |detail| TelemetryError::Otlp {
        endpoint: endpoint.clone(),
        detail,
    };
    let protocol = resolve_protocol(s.protocol).map_err(otlp_error)?;
    let compression = resolve_compression(s.compression).map_err(otlp_error)?;
    let target = trace::Target {
        endpoint: configured.then_some(endpoint.as_str()),
        protocol,
        compression,
    };
    let exporter =
        trace::Exporter::start(&target, resource.build(), s.sample_ratio).map_err(otlp_error)?;
    trace::install(exporter.tracer());
    let target = ExportTarget {
        endpoint,
        protocol,
        compression,
        queue: exporter.queue(),
    };
    Ok(OtelPipeline {
        exporter: Some((exporter, target)),
    })
}

/// Installs the global subscriber and tracer. Logs go to stderr so stdout stays free for the summary.
pub fn init(cfg: &TelemetryConfig) -> Result<Guard, TelemetryError> {
    let directive = rust_log().unwrap_or(cfg.log_level.clone());
    let filter = parse_filter(&directive)?;
    let json = match cfg.format {
        Format::Json => true,
        Format::Text => false,
        Format::Auto => !std::io::stderr().is_terminal(),
    };
    let otel = cfg.otlp.as_ref().map(otel_pipeline).transpose()?;
    let (filter_layer, handle) = reload::Layer::new(filter);
    let writer = console::Console.with_max_level(tracing::Level::TRACE);
    let fmt_layer = if json {
        tracing_subscriber::fmt::layer()
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_target(true)
            .with_writer(writer)
            .boxed()
    } else {
        tracing_subscriber::fmt::layer()
            .compact()
            .with_target(true)
            .with_writer(writer)
            .boxed()
    };
    tracing_subscriber::registry()
        .with(filter_layer)
        .with(fmt_layer)
        .try_init()
        .map_err(|_| TelemetryError::AlreadyInstalled)?;
    Ok(Guard {
        json,
        log: LogControl { handle },
        otel,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_filter_is_an_error_not_a_panic() {
        let cfg = TelemetryConfig {
            log_level: "info,[bad".into(),
            format: Format::Text,
            otlp: None,
        };
        if std::env::var("RUST_LOG").is_err() {
            assert!(matches!(init(&cfg), Err(TelemetryError::Filter { .. })));
        }
    }

    #[test]
    fn configured_endpoint_wins() {
        assert_eq!(
            resolve_endpoint(Some("http://127.0.0.1:4317")),
            Some(("http://127.0.0.1:4317".to_owned(), true))
        );
        assert_eq!(
            resolve_endpoint(Some("  ")),
            None.or_else(|| resolve_endpoint(None))
        );
    }

    #[test]
    fn configured_protocol_wins_and_otlp_http_is_the_default() {
        assert_eq!(
            resolve_protocol(Some(Protocol::Grpc)).ok(),
            Some(Protocol::Grpc)
        );
        assert_eq!(
            resolve_compression(Some(Compression::Gzip)).ok(),
            Some(Compression::Gzip)
        );
        if first_env(&[
            "OTEL_EXPORTER_OTLP_COMPRESSION",
            "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
        ])
        .is_none()
        {
            assert_eq!(resolve_compression(None).ok(), Some(Compression::None));
        }
        assert_eq!(Compression::parse(" gzip "), Some(Compression::Gzip));
        assert_eq!(Compression::parse("none"), Some(Compression::None));
        assert_eq!(Compression::parse("zstd"), None);
        // The environment is the process's: only judged when the test runs without the variable.
        if first_env(&[
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        ])
        .is_none()
        {
            assert_eq!(resolve_protocol(None).ok(), Some(Protocol::HttpProtobuf));
        }
    }

    /// A value of the environment that the parser does not know is an error naming the variable, its value and
    /// the choices. `PATH` stands for the variable: every test process has it, and a test cannot set one safely.
    #[test]
    fn an_unsupported_environment_value_names_the_variable_and_the_choices() {
        let Some((_, path)) = first_env(&["PATH"]) else {
            panic!("the test process has no PATH");
        };
        let never = |_: &str| None::<Protocol>;
        let e = configured_or_env(None, (&["PATH"], "a or b"), never, Protocol::Grpc)
            .err()
            .map(|e| e.to_string());
        assert_eq!(e, Some(format!("PATH={path:?} is not supported (a or b)")));
        let configured = configured_or_env(
            Some(Protocol::HttpProtobuf),
            (&["PATH"], "a or b"),
            never,
            Protocol::Grpc,
        );
        assert_eq!(configured.ok(), Some(Protocol::HttpProtobuf));
    }

    #[test]
    fn an_endpoint_on_the_other_protocol_s_port_is_named() {
        let mismatch = |endpoint: &str, protocol| {
            ExportTarget {
                endpoint: endpoint.to_owned(),
                protocol,
                compression: Compression::None,
                queue: trace::ExportQueue {
                    spans: 1,
                    sized_for: None,
                },
            }
            .port_mismatch()
        };
        let fix = mismatch("http://tempo:4317", Protocol::HttpProtobuf).unwrap_or_default();
        assert!(
            fix.contains("4317")
                && fix.contains("otlp_protocol = \"grpc\"")
                && fix.contains("4318"),
            "{fix}"
        );
        let fix = mismatch("https://tempo:4318/prefix", Protocol::Grpc).unwrap_or_default();
        assert!(
            fix.contains("otlp_protocol = \"http/protobuf\"") && fix.contains("4317"),
            "{fix}"
        );
        for (endpoint, protocol) in [
            ("http://tempo:4318", Protocol::HttpProtobuf),
            ("http://tempo:4317", Protocol::Grpc),
            ("http://tempo:9000", Protocol::HttpProtobuf),
            ("http://tempo", Protocol::Grpc),
            ("not a uri", Protocol::HttpProtobuf),
        ] {
            assert_eq!(mismatch(endpoint, protocol), None, "{endpoint}");
        }
    }
}
