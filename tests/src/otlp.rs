//! An in-process OTLP trace receiver for tests: a tonic `TraceService` on `127.0.0.1:0`, and OTLP/HTTP (protobuf
//! bodies POSTed to `/v1/traces`) on a port of its own, that keeps every span it is sent, flattened into
//! [`SpanRecord`]s (ids as lowercase hex, attributes and resource attributes as maps).
//!
//! Two ways to start it:
//! - [`OtlpReceiver::start`] from async code: the server runs as a task of the caller's tokio runtime;
//! - [`OtlpReceiver::start_background`] from a plain `#[test]` (the integration tests run the real binary and are
//!   synchronous): the server gets its own tokio runtime on its own thread.
//!
//! Point the engine at [`OtlpReceiver::http_endpoint`] (OTLP/HTTP, the engine's default protocol) or
//! [`OtlpReceiver::endpoint`] (gRPC) (`observability.otlp_endpoint` or `OTEL_EXPORTER_OTLP_ENDPOINT`),
//! then read [`OtlpReceiver::spans`] or wait with [`OtlpReceiver::wait_for`]. Dropping the receiver stops the server.
//! [`OtlpReceiver::refuse_next`] makes the OTLP/HTTP side answer a few exports as an overloaded collector does,
//! [`OtlpReceiver::require_authorization`] makes both sides refuse exports without a given `authorization` header
//! (as an authenticated Tempo or Grafana Cloud does), and [`OtlpReceiver::delay_exports`] makes both sides slow.

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// How long a dropped receiver waits for its connections to close (after a GOAWAY) before it cuts them.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// A span or resource attribute value.
#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    Str(String),
    Int(i64),
    Bool(bool),
    Double(f64),
    /// Arrays, key-value lists, bytes and empty values, rendered with `Debug`.
    Other(String),
}

impl AttrValue {
    fn from_proto(v: Option<&AnyValue>) -> AttrValue {
        match v.and_then(|v| v.value.as_ref()) {
            Some(any_value::Value::StringValue(s)) => AttrValue::Str(s.clone()),
            Some(any_value::Value::IntValue(i)) => AttrValue::Int(*i),
            Some(any_value::Value::BoolValue(b)) => AttrValue::Bool(*b),
            Some(any_value::Value::DoubleValue(d)) => AttrValue::Double(*d),
            Some(other) => AttrValue::Other(format!("{other:?}")),
            None => AttrValue::Other(String::new()),
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            AttrValue::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            AttrValue::Int(i) => Some(*i),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            AttrValue::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_double(&self) -> Option<f64> {
        match self {
            AttrValue::Double(d) => Some(*d),
            _ => None,
        }
    }
}

/// One received span.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanRecord {
    /// 32 lowercase hex digits.
    pub trace_id: String,
    /// 16 lowercase hex digits.
    pub span_id: String,
    /// `None` for a root span (an empty parent id on the wire).
    pub parent_span_id: Option<String>,
    pub name: String,
    pub start_unix_nanos: u64,
    pub end_unix_nanos: u64,
    pub attributes: BTreeMap<String, AttrValue>,
    /// The attributes of the span's resource (`service.name`, ...).
    pub resource: BTreeMap<String, AttrValue>,
    /// The span's status code is `Error`.
    pub status_error: bool,
    /// The status message (empty when none).
    pub status_message: String,
    /// The instrumentation scope's name (the tracer's name).
    pub scope_name: String,
}

impl SpanRecord {
    pub fn attr(&self, key: &str) -> Option<&AttrValue> {
        self.attributes.get(key)
    }

    /// A string attribute (`None` when missing or of another type).
    pub fn attr_str(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).and_then(AttrValue::as_str)
    }

    /// An integer attribute (`None` when missing or of another type).
    pub fn attr_int(&self, key: &str) -> Option<i64> {
        self.attributes.get(key).and_then(AttrValue::as_int)
    }

    /// A boolean attribute (`None` when missing or of another type).
    pub fn attr_bool(&self, key: &str) -> Option<bool> {
        self.attributes.get(key).and_then(AttrValue::as_bool)
    }

    /// A string resource attribute, e.g. `resource_str("service.name")`.
    pub fn resource_str(&self, key: &str) -> Option<&str> {
        self.resource.get(key).and_then(AttrValue::as_str)
    }

    pub fn is_root(&self) -> bool {
        self.parent_span_id.is_none()
    }

    /// `end - start` (zero when the end is before the start).
    pub fn duration(&self) -> Duration {
        Duration::from_nanos(self.end_unix_nanos.saturating_sub(self.start_unix_nanos))
    }
}

/// The spans grouped by trace id, each trace's spans in the order they were received.
pub fn traces(spans: &[SpanRecord]) -> BTreeMap<String, Vec<SpanRecord>> {
    let mut out: BTreeMap<String, Vec<SpanRecord>> = BTreeMap::new();
    for s in spans {
        out.entry(s.trace_id.clone()).or_default().push(s.clone());
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 0xf) as usize] as char);
    }
    s
}

fn attr_map(kvs: &[KeyValue]) -> BTreeMap<String, AttrValue> {
    kvs.iter()
        .map(|kv| (kv.key.clone(), AttrValue::from_proto(kv.value.as_ref())))
        .collect()
}

/// Flattens one export request into records.
fn records(req: &ExportTraceServiceRequest) -> Vec<SpanRecord> {
    let mut out = Vec::new();
    for rs in &req.resource_spans {
        let resource = rs
            .resource
            .as_ref()
            .map(|r| attr_map(&r.attributes))
            .unwrap_or_default();
        for ss in &rs.scope_spans {
            let scope_name = ss
                .scope
                .as_ref()
                .map(|s| s.name.clone())
                .unwrap_or_default();
            for s in &ss.spans {
                let status = s.status.as_ref();
                out.push(SpanRecord {
                    trace_id: hex(&s.trace_id),
                    span_id: hex(&s.span_id),
                    parent_span_id: s
                        .parent_span_id
                        .iter()
                        .any(|b| *b != 0)
                        .then(|| hex(&s.parent_span_id)),
                    name: s.name.clone(),
                    start_unix_nanos: s.start_time_unix_nano,
                    end_unix_nanos: s.end_time_unix_nano,
                    attributes: attr_map(&s.attributes),
                    resource: resource.clone(),
                    status_error: status.is_some_and(|st| st.code == StatusCode::Error as i32),
                    status_message: status.map(|st| st.message.clone()).unwrap_or_default(),
                    scope_name: scope_name.clone(),
                });
            }
        }
    }
    out
}

/// What the service and the waiting tests share.
#[derive(Default)]
struct Store {
    spans: Mutex<Vec<SpanRecord>>,
    changed: Condvar,
    /// OTLP/HTTP exports still to refuse (503, `Retry-After: 0`), as an overloaded collector does.
    refuse: std::sync::atomic::AtomicUsize,
    /// OTLP/HTTP exports refused so far.
    refused: std::sync::atomic::AtomicUsize,
    /// OTLP/HTTP exports kept that came gzip-compressed.
    gzipped: std::sync::atomic::AtomicUsize,
    /// The `authorization` header an export must carry to be kept (None: any export is).
    authorization: Mutex<Option<String>>,
    /// Exports refused for want of that header (either protocol).
    unauthorized: std::sync::atomic::AtomicUsize,
    /// How long each export is held before it is answered (either protocol), in milliseconds.
    delay_ms: std::sync::atomic::AtomicU64,
}

impl Store {
    fn lock(&self) -> MutexGuard<'_, Vec<SpanRecord>> {
        // A test that panicked while holding the lock must not hide the spans from the others.
        self.spans.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether an export with the `authorization` header `given` is let in (counted when it is not).
    fn authorized(&self, given: Option<&str>) -> bool {
        let want = self
            .authorization
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let ok = want.is_none_or(|w| given == Some(w.as_str()));
        if !ok {
            self.unauthorized
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        ok
    }

    /// Holds an export as long as [`OtlpReceiver::delay_exports`] said.
    async fn hold(&self) {
        let ms = self.delay_ms.load(std::sync::atomic::Ordering::SeqCst);
        if ms > 0 {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
    }

    /// Keeps the spans of an export (from either protocol) and wakes the waiting tests.
    fn keep(&self, request: &ExportTraceServiceRequest) {
        self.lock().extend(records(request));
        self.changed.notify_all();
    }
}

#[derive(Clone)]
struct Service(Arc<Store>);

#[tonic::async_trait]
impl TraceService for Service {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        self.0.hold().await;
        let given = request
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok());
        if !self.0.authorized(given) {
            return Err(tonic::Status::unauthenticated("authorization required"));
        }
        self.0.keep(request.get_ref());
        Ok(tonic::Response::new(ExportTraceServiceResponse {
            partial_success: None,
        }))
    }
}

/// Serves OTLP/HTTP (protobuf bodies POSTed to `/v1/traces`, HTTP/1.1) on `listener` into `store`, until the
/// future is dropped.
/// `body` as it was before `Content-Encoding: gzip` when `gzip`; None when it does not inflate.
fn gunzip_if(gzip: bool, body: bytes::Bytes) -> Option<bytes::Bytes> {
    if !gzip {
        return Some(body);
    }
    use std::io::Read as _;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&body[..])
        .read_to_end(&mut out)
        .ok()?;
    Some(out.into())
}

async fn serve_http(listener: tokio::net::TcpListener, store: Arc<Store>) {
    use http_body_util::BodyExt as _;
    use prost::Message as _;
    while let Ok((stream, _)) = listener.accept().await {
        let store = store.clone();
        let service =
            hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                let store = store.clone();
                async move {
                    let answer = |status: u16| {
                        let mut resp =
                            http::Response::new(http_body_util::Full::new(bytes::Bytes::new()));
                        *resp.status_mut() = http::StatusCode::from_u16(status)
                            .unwrap_or(http::StatusCode::BAD_REQUEST);
                        resp
                    };
                    let is_protobuf = req
                        .headers()
                        .get(http::header::CONTENT_TYPE)
                        .is_some_and(|v| v == "application/x-protobuf");
                    if req.method() != http::Method::POST || req.uri().path() != "/v1/traces" {
                        return Ok::<_, std::convert::Infallible>(answer(404));
                    }
                    store.hold().await;
                    let given = req
                        .headers()
                        .get(http::header::AUTHORIZATION)
                        .and_then(|v| v.to_str().ok());
                    if !store.authorized(given) {
                        return Ok(answer(401));
                    }
                    if !is_protobuf {
                        return Ok(answer(415));
                    }
                    let gzip = req
                        .headers()
                        .get(http::header::CONTENT_ENCODING)
                        .is_some_and(|v| v == "gzip");
                    let Ok(body) = req.into_body().collect().await else {
                        return Ok(answer(400));
                    };
                    let Some(body) = gunzip_if(gzip, body.to_bytes()) else {
                        return Ok(answer(400));
                    };
                    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
                        return Ok(answer(400));
                    };
                    use std::sync::atomic::Ordering::SeqCst;
                    if store
                        .refuse
                        .fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1))
                        .is_ok()
                    {
                        store.refused.fetch_add(1, SeqCst);
                        let mut resp = answer(503);
                        resp.headers_mut().insert(
                            http::header::RETRY_AFTER,
                            http::HeaderValue::from_static("0"),
                        );
                        return Ok(resp);
                    }
                    if gzip {
                        store.gzipped.fetch_add(1, SeqCst);
                    }
                    store.keep(&request);
                    Ok(answer(200))
                }
            });
        tokio::spawn(
            hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service),
        );
    }
}

/// Binds the listeners (OTLP/gRPC, and OTLP/HTTP on a port of its own) and returns the server future (ends when
/// `stop` fires or is dropped).
async fn bind(
    store: Arc<Store>,
    stop: oneshot::Receiver<()>,
) -> std::io::Result<(
    (SocketAddr, SocketAddr),
    impl Future<Output = Result<(), tonic::transport::Error>>,
)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let http_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let http_addr = http_listener.local_addr()?;
    let http = serve_http(http_listener, store.clone());
    let svc = TraceServiceServer::new(Service(store)).max_decoding_message_size(64 << 20);
    let server = tonic::transport::Server::builder()
        .add_service(svc)
        .serve_with_incoming_shutdown(
            tokio_stream::wrappers::TcpListenerStream::new(listener),
            async move {
                let _ = stop.await;
            },
        );
    // The HTTP side ends with the gRPC one.
    let both = async move {
        tokio::select! {
            r = server => r,
            () = http => Ok(()),
        }
    };
    Ok(((addr, http_addr), both))
}

enum Runner {
    /// A task on the caller's runtime.
    Task(tokio::task::JoinHandle<()>),
    /// A thread with its own runtime; it ends when the stop signal fires.
    Thread(std::thread::JoinHandle<()>),
}

/// An OTLP trace receiver: gRPC on `127.0.0.1:PORT` and OTLP/HTTP on a port of its own. Dropping it stops the
/// server.
pub struct OtlpReceiver {
    addr: SocketAddr,
    http_addr: SocketAddr,
    store: Arc<Store>,
    stop: Option<oneshot::Sender<()>>,
    runner: Option<Runner>,
}

impl OtlpReceiver {
    /// Starts the receiver as a task of the current tokio runtime (panics outside one, or when it can't bind).
    pub async fn start() -> OtlpReceiver {
        let store = Arc::new(Store::default());
        let (stop_tx, stop_rx) = oneshot::channel();
        let ((addr, http_addr), server) = match bind(store.clone(), stop_rx).await {
            Ok(bound) => bound,
            Err(e) => panic!("OTLP receiver: bind 127.0.0.1:0: {e}"),
        };
        let task = tokio::spawn(async move {
            if let Err(e) = server.await {
                eprintln!("OTLP receiver: server failed: {e}");
            }
        });
        OtlpReceiver {
            addr,
            http_addr,
            store,
            stop: Some(stop_tx),
            runner: Some(Runner::Task(task)),
        }
    }

    /// Starts the receiver on its own thread with its own tokio runtime, for synchronous tests (panics when it
    /// can't start).
    pub fn start_background() -> OtlpReceiver {
        let store = Arc::new(Store::default());
        let (stop_tx, stop_rx) = oneshot::channel();
        let (ready_tx, ready_rx) =
            std::sync::mpsc::channel::<std::io::Result<(SocketAddr, SocketAddr)>>();
        let thread_store = store.clone();
        let thread = match std::thread::Builder::new()
            .name("otlp-receiver".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("otlp-receiver-rt")
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                rt.block_on(async move {
                    let (addrs, server) = match bind(thread_store, stop_rx).await {
                        Ok(x) => x,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    let _ = ready_tx.send(Ok(addrs));
                    // After the stop signal the server drains its connections; cut them after a grace period.
                    let server = tokio::spawn(server);
                    match server.await {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => eprintln!("OTLP receiver: server failed: {e}"),
                        Err(e) => eprintln!("OTLP receiver: server task failed: {e}"),
                    }
                });
                // Dropping the runtime cancels what is left (connection tasks that did not close in time).
                rt.shutdown_timeout(DRAIN_GRACE);
            }) {
            Ok(thread) => thread,
            Err(e) => panic!("OTLP receiver: spawn its thread: {e}"),
        };
        let (addr, http_addr) = match ready_rx.recv() {
            Ok(Ok(addrs)) => addrs,
            Ok(Err(e)) => panic!("OTLP receiver: start (runtime, bind 127.0.0.1:0): {e}"),
            Err(_) => panic!("OTLP receiver: its thread ended before it was ready"),
        };
        OtlpReceiver {
            addr,
            http_addr,
            store,
            stop: Some(stop_tx),
            runner: Some(Runner::Thread(thread)),
        }
    }

    /// `http://127.0.0.1:PORT`, for `observability.otlp_endpoint` or `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT` of the OTLP/HTTP side (the engine's default protocol).
    pub fn http_endpoint(&self) -> String {
        format!("http://{}", self.http_addr)
    }

    /// Makes the OTLP/HTTP side refuse the next `n` exports with 503 and `Retry-After: 0` (their spans are not
    /// kept), as an overloaded collector does.
    pub fn refuse_next(&self, n: usize) {
        self.store
            .refuse
            .store(n, std::sync::atomic::Ordering::SeqCst);
    }

    /// Makes both sides refuse (gRPC `UNAUTHENTICATED`, HTTP 401) every export whose `authorization` header is
    /// not `value`.
    pub fn require_authorization(&self, value: &str) {
        *self
            .store
            .authorization
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(value.to_owned());
    }

    /// Exports refused so far for want of the `authorization` header [`OtlpReceiver::require_authorization`]
    /// asks for.
    pub fn unauthorized(&self) -> usize {
        self.store
            .unauthorized
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Makes both sides hold each export `delay` before answering it, as a slow collector does.
    pub fn delay_exports(&self, delay: Duration) {
        self.store.delay_ms.store(
            u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            std::sync::atomic::Ordering::SeqCst,
        );
    }

    /// OTLP/HTTP exports kept that came gzip-compressed (`Content-Encoding: gzip`).
    pub fn gzipped(&self) -> usize {
        self.store.gzipped.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// OTLP/HTTP exports refused so far ([`OtlpReceiver::refuse_next`]).
    pub fn refused(&self) -> usize {
        self.store.refused.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every span received so far, in the order received.
    pub fn spans(&self) -> Vec<SpanRecord> {
        self.store.lock().clone()
    }

    /// Forgets the spans received so far.
    pub fn clear(&self) {
        self.store.lock().clear();
    }

    /// Blocks until `pred(spans received so far)` holds (true) or `timeout` passes (false; `pred` is checked once
    /// more at the end). For synchronous tests: on a current-thread runtime that also runs the receiver started by
    /// [`OtlpReceiver::start`] this would block the server, use [`OtlpReceiver::wait_for_async`] there.
    pub fn wait_for(&self, pred: impl Fn(&[SpanRecord]) -> bool, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut spans = self.store.lock();
        loop {
            if pred(&spans) {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            spans = self
                .store
                .changed
                .wait_timeout(spans, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// [`OtlpReceiver::wait_for`] for async tests: polls every 10 ms without blocking the runtime.
    pub async fn wait_for_async(
        &self,
        pred: impl Fn(&[SpanRecord]) -> bool,
        timeout: Duration,
    ) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if pred(&self.store.lock()) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.runner.take() {
            // The listener closes as soon as the task sees the signal; its connections get a GOAWAY.
            Some(Runner::Task(task)) => drop(task),
            Some(Runner::Thread(thread)) => {
                let _ = thread.join();
            }
            None => {}
        }
    }
}

#[cfg(test)]
mod tests;
