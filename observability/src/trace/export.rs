//! The span exporter: `opentelemetry-otlp`'s (OTLP/gRPC over tonic, or OTLP/HTTP with protobuf bodies over
//! hyper) behind the SDK's batch span processor, on a tokio runtime of its own (`otlp`) whose tasks carry the
//! connections. What the SDK reads from the environment it still reads: `OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_EXPORTER_OTLP_TIMEOUT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, the `OTEL_BSP_*` settings; the
//! configuration's endpoint, protocol and compression, when set, win over theirs as the SDK's own settings do.

use super::counting::{Admit, Counted};
use super::loss::Loss;
use super::protocol::{Compression, Protocol};
use super::{SCOPE, Tracer, sampler};
use crate::OtlpError;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _, WithTonicConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, Sampler, SdkTracer, SdkTracerProvider,
};
use std::sync::Arc;
use std::time::Duration;

/// Spans ended and not yet settled by an export at most at `sample_ratio = 1` (unless `OTEL_BSP_MAX_QUEUE_SIZE`
/// says otherwise); past that a span is dropped and counted. The benchmark crawl (`make bench-otlp`, some 115,000
/// spans a second at `sample_ratio = 1`) dropped none with this queue, and thousands with 8,192 or 4,096. The
/// batch processor's channel takes its room at start (a few hundred bytes a span, some MiB here), so a lower
/// ratio gets a queue in proportion ([`queue_for`]).
pub(crate) const QUEUE_SPANS: usize = 16_384;
/// The smallest queue, whatever the ratio.
const QUEUE_MIN: usize = 2_048;
/// Spans per export request at most (unless `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` says otherwise), and half the queue
/// at most, so that an export starts while the queue still has room.
pub(crate) const BATCH_SPANS: usize = 2_048;
/// Time between exports when no batch fills up (unless `OTEL_BSP_SCHEDULE_DELAY` says otherwise).
pub(crate) const EXPORT_EVERY: Duration = Duration::from_millis(500);
/// How long an export may take, retries included, when `OTEL_EXPORTER_OTLP_TIMEOUT` does not say: the SDK's
/// default.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long shutdown waits for the last exports.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// The OTLP/HTTP path of traces, after the endpoint's own path (as the SDK does for `OTEL_EXPORTER_OTLP_ENDPOINT`).
const HTTP_PATH: &str = "/v1/traces";

/// Where and how spans are sent, as [`Exporter::start`] takes them.
#[derive(Debug, Clone)]
pub(crate) struct Target<'a> {
    /// The configured endpoint (`http(s)://host:port`, a base as `OTEL_EXPORTER_OTLP_ENDPOINT` is); None: the
    /// SDK's, from the environment.
    pub(crate) endpoint: Option<&'a str>,
    pub(crate) protocol: Protocol,
    pub(crate) compression: Compression,
}

/// The running exporter: the tracer provider (batch processor and OTLP exporter), the account of lost spans and
/// the runtime of the connections.
pub(crate) struct Exporter {
    provider: SdkTracerProvider,
    tracer: &'static SdkTracer,
    sampler: &'static Sampler,
    queue: ExportQueue,
    loss: Arc<Loss>,
    runtime: tokio::runtime::Runtime,
}

impl std::fmt::Debug for Exporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exporter").finish_non_exhaustive()
    }
}

/// A `usize` from the environment variable `var`, else `default`.
fn env_usize(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// Milliseconds from the environment variable `var`, else None.
fn env_ms(var: &str) -> Option<Duration> {
    std::env::var(var)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .map(Duration::from_millis)
}

/// The export timeout: `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, else `OTEL_EXPORTER_OTLP_TIMEOUT`, else the SDK's
/// default (what the SDK resolves; the HTTP client is given the same).
fn export_timeout() -> Duration {
    env_ms("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
        .or_else(|| env_ms("OTEL_EXPORTER_OTLP_TIMEOUT"))
        .unwrap_or(EXPORT_TIMEOUT)
}

/// The queue for `ratio`, the sampling ratio at start: [`QUEUE_SPANS`] at 1 and in proportion below, rounded up
/// to a power of two, never under [`QUEUE_MIN`].
fn queue_for(ratio: f64) -> usize {
    let ratio = if ratio.is_nan() {
        0.0
    } else {
        ratio.clamp(0.0, 1.0)
    };
    let wanted = (QUEUE_SPANS as f64 * ratio).ceil() as usize;
    wanted.next_power_of_two().clamp(QUEUE_MIN, QUEUE_SPANS)
}

/// The batch processor's queue as sized at start: its spans and the sampling ratio it was sized for (None with
/// `OTEL_BSP_MAX_QUEUE_SIZE`, which the operator sized).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExportQueue {
    pub spans: usize,
    pub sized_for: Option<f64>,
}

impl ExportQueue {
    /// Whether the queue holds what `ratio` needs ([`queue_for`]); a queue the operator sized always does.
    pub fn fits(&self, ratio: f64) -> bool {
        self.sized_for.is_none() || queue_for(ratio) <= self.spans
    }
}

/// The batch processor's queue and batch sizes and export interval for `ratio`: the `OTEL_BSP_*` variables where
/// set, else the crawl's.
fn batch_sizes(ratio: f64) -> (ExportQueue, usize, Duration) {
    let queue = match env_usize("OTEL_BSP_MAX_QUEUE_SIZE", 0) {
        0 => ExportQueue {
            spans: queue_for(ratio),
            sized_for: Some(ratio),
        },
        set => ExportQueue {
            spans: set,
            sized_for: None,
        },
    };
    let batch = env_usize(
        "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
        BATCH_SPANS.min(queue.spans / 2),
    )
    .clamp(1, queue.spans);
    let every = env_ms("OTEL_BSP_SCHEDULE_DELAY").unwrap_or(EXPORT_EVERY);
    (queue, batch, every)
}

/// The HTTP client of OTLP/HTTP: hyper over rustls for `https://`, plain for `http://`. Only an `https://`
/// collector (`secure`) has the system's trust roots read (else the bundled Mozilla ones): reading and decoding
/// them is most of the exporter's start-up, wasted on a plain-http collector.
fn http_client(
    timeout: Duration,
    secure: bool,
) -> opentelemetry_http::hyper::HyperClient<HttpsConnector> {
    let mut connector = hyper_util::client::legacy::connect::HttpConnector::new();
    connector.set_connect_timeout(Some(timeout));
    connector.set_nodelay(true);
    connector.enforce_http(false);
    let native = secure
        .then(|| {
            hyper_rustls::HttpsConnectorBuilder::new()
                .with_native_roots()
                .ok()
        })
        .flatten();
    let tls =
        native.unwrap_or_else(|| hyper_rustls::HttpsConnectorBuilder::new().with_webpki_roots());
    let https = tls.https_or_http().enable_http1().wrap_connector(connector);
    opentelemetry_http::hyper::HyperClient::new(https, timeout, None)
}

/// Whether the collector is `https://`: the configured endpoint, else the environment's, as the SDK reads it.
fn https_endpoint(target: &Target<'_>) -> bool {
    let from_env = || {
        std::env::var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .or_else(|_| std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT"))
            .ok()
    };
    target
        .endpoint
        .map(str::to_owned)
        .or_else(from_env)
        .is_some_and(|e| {
            e.trim_start()
                .get(..6)
                .is_some_and(|p| p.eq_ignore_ascii_case("https:"))
        })
}

type HttpsConnector =
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>;

/// The OTLP exporter of `target` (inside the runtime that will carry its connections).
fn otlp(target: &Target<'_>) -> Result<opentelemetry_otlp::SpanExporter, OtlpError> {
    let gzip = target.compression == Compression::Gzip;
    let built = match target.protocol {
        Protocol::Grpc => {
            let mut b = opentelemetry_otlp::SpanExporter::builder()
                .with_tonic()
                .with_protocol(opentelemetry_otlp::Protocol::Grpc);
            if let Some(endpoint) = target.endpoint {
                b = b.with_endpoint(endpoint.to_owned());
            }
            if gzip {
                b = b.with_compression(opentelemetry_otlp::Compression::Gzip);
            }
            b.build()
        }
        Protocol::HttpProtobuf => {
            let mut b = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .with_http_client(http_client(export_timeout(), https_endpoint(target)));
            if let Some(endpoint) = target.endpoint {
                b = b.with_endpoint(format!("{}{HTTP_PATH}", endpoint.trim_end_matches('/')));
            }
            if gzip {
                b = b.with_compression(opentelemetry_otlp::Compression::Gzip);
            }
            b.build()
        }
    };
    built.map_err(OtlpError::Build)
}

impl Exporter {
    /// Starts exporting to `target`, spans carrying `resource`, on a runtime thread of its own.
    pub(crate) fn start(
        target: &Target<'_>,
        resource: Resource,
        ratio: f64,
    ) -> Result<Exporter, OtlpError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("otlp")
            .enable_all()
            .build()
            .map_err(OtlpError::Runtime)?;
        // Built inside the runtime whose tasks carry its connection.
        let otlp = {
            let _enter = runtime.enter();
            otlp(target)?
        };
        let (queue, batch, every) = batch_sizes(ratio);
        let loss = Loss::new();
        let exporter = Counted {
            inner: Arc::new(otlp),
            runtime: runtime.handle().clone(),
            loss: loss.clone(),
        };
        let config = BatchConfigBuilder::default()
            .with_max_queue_size(queue.spans)
            .with_max_export_batch_size(batch)
            .with_scheduled_delay(every)
            .build();
        let processor = Admit {
            inner: BatchSpanProcessor::new(exporter, config),
            loss: loss.clone(),
            limit: queue.spans as u64,
        };
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_sampler(sampler::sampler())
            .with_id_generator(sampler::DecidedIds)
            .with_resource(resource)
            .build();
        // One tracer and one sampler for the life of the process: the trace contexts in the actor messages refer
        // to the tracer without counting references, and roots are decided by the provider's sampler.
        let tracer: &'static SdkTracer = Box::leak(Box::new(provider.tracer(SCOPE)));
        let sampler: &'static Sampler = Box::leak(Box::new(sampler::sampler()));
        Ok(Exporter {
            provider,
            tracer,
            sampler,
            queue,
            loss,
            runtime,
        })
    }

    /// The batch processor's queue.
    pub(crate) fn queue(&self) -> ExportQueue {
        self.queue
    }

    /// The tracer whose spans go here, with the sampler of its roots.
    pub(crate) fn tracer(&self) -> Tracer {
        Tracer::Export(self.tracer, self.sampler)
    }

    /// Sends what is pending (waiting at most [`SHUTDOWN_WAIT`]), takes no more spans and counts what was not
    /// sent. Blocks: call it off any tokio runtime thread (the exports run on the exporter's runtime).
    pub(crate) fn shutdown(self) {
        if let Err(e) = self.provider.shutdown_with_timeout(SHUTDOWN_WAIT) {
            tracing::warn!(error = %e, "trace export did not finish at shutdown");
        }
        self.loss.close();
        self.runtime.shutdown_timeout(Duration::from_secs(2));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The queue follows the ratio at start, within its bounds, and the batch stays within half of it.
    #[test]
    fn the_queue_is_sized_for_the_ratio() {
        assert_eq!(queue_for(1.0), QUEUE_SPANS);
        assert_eq!(queue_for(0.5), 8_192);
        assert_eq!(queue_for(0.2), 4_096);
        assert_eq!(queue_for(0.1), QUEUE_MIN);
        assert_eq!(queue_for(0.0), QUEUE_MIN);
        assert_eq!(queue_for(f64::NAN), QUEUE_MIN);
        assert_eq!(queue_for(7.0), QUEUE_SPANS);
        // The environment of the test process sets no OTEL_BSP_* variable.
        let (queue, batch, _) = batch_sizes(0.1);
        assert_eq!(
            queue,
            ExportQueue {
                spans: QUEUE_MIN,
                sized_for: Some(0.1)
            }
        );
        assert_eq!(batch, QUEUE_MIN / 2);
        assert!(queue.fits(0.12), "2,048 spans carry up to 0.125");
        assert!(!queue.fits(0.2));
        let operator = ExportQueue {
            spans: 10,
            sized_for: None,
        };
        assert!(operator.fits(1.0));
        assert_eq!(batch_sizes(1.0).1, BATCH_SPANS);
    }

    /// A configured endpoint decides whether the trust roots are read: only an `https://` one (any case) does.
    #[test]
    fn only_an_https_collector_is_secure() {
        let target = |endpoint| Target {
            endpoint: Some(endpoint),
            protocol: Protocol::HttpProtobuf,
            compression: Compression::None,
        };
        assert!(https_endpoint(&target("https://collector.example:4318")));
        assert!(https_endpoint(&target("HTTPS://collector.example")));
        assert!(!https_endpoint(&target("http://127.0.0.1:4318")));
        assert!(!https_endpoint(&target("http")));
    }

    /// Both protocols take an `https://` collector (gRPC needs the exporter's TLS feature; OTLP/HTTP the rustls
    /// connector), with and without gzip.
    #[test]
    fn both_protocols_build_for_http_and_https_collectors() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let _enter = runtime.enter();
        for protocol in [Protocol::Grpc, Protocol::HttpProtobuf] {
            for endpoint in ["http://127.0.0.1:4317", "https://collector.example:443"] {
                for compression in [Compression::None, Compression::Gzip] {
                    let target = Target {
                        endpoint: Some(endpoint),
                        protocol,
                        compression,
                    };
                    if let Err(e) = otlp(&target) {
                        panic!("{protocol:?} {endpoint} {compression:?}: {e}");
                    }
                }
            }
        }
    }
}
