//! `otlpsink`: an OTLP/gRPC trace receiver on loopback that only counts what it is sent, for `make bench-otlp`.
//!
//! Listens on `127.0.0.1:0` (or `--port`), prints `otlpsink ready endpoint=http://127.0.0.1:PORT` once it accepts,
//! serves until SIGTERM/SIGINT, then prints `otlpsink received spans=N requests=N` and exits 0. Unlike the test
//! receiver (`crawl_tests::otlp`) it keeps no spans, so it costs the machine little while a benchmark runs.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use clap::Parser;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use tokio::signal::unix::{SignalKind, signal};

#[derive(Debug, Parser)]
#[command(
    name = "otlpsink",
    about = "Count the spans an OTLP/gRPC exporter sends to 127.0.0.1"
)]
struct Args {
    /// 0: a free port
    #[arg(long, default_value_t = 0)]
    port: u16,
}

#[derive(Default)]
struct Counts {
    spans: AtomicU64,
    requests: AtomicU64,
}

#[derive(Clone)]
struct Sink(Arc<Counts>);

#[tonic::async_trait]
impl TraceService for Sink {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let spans: usize = request
            .get_ref()
            .resource_spans
            .iter()
            .flat_map(|rs| &rs.scope_spans)
            .map(|ss| ss.spans.len())
            .sum();
        self.0.spans.fetch_add(spans as u64, Ordering::Relaxed);
        self.0.requests.fetch_add(1, Ordering::Relaxed);
        Ok(tonic::Response::new(ExportTraceServiceResponse {
            partial_success: None,
        }))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = Args::parse();
    let listener = match tokio::net::TcpListener::bind(("127.0.0.1", args.port)).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("otlpsink: bind 127.0.0.1:{}: {e}", args.port);
            return ExitCode::FAILURE;
        }
    };
    let addr = match listener.local_addr() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("otlpsink: local address: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (mut term, mut int) = match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(t), Ok(i)) => (t, i),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("otlpsink: signal handlers: {e}");
            return ExitCode::FAILURE;
        }
    };
    let counts = Arc::new(Counts::default());
    let svc = TraceServiceServer::new(Sink(counts.clone())).max_decoding_message_size(64 << 20);
    let server = tonic::transport::Server::builder()
        .add_service(svc)
        .serve_with_incoming_shutdown(
            tokio_stream::wrappers::TcpListenerStream::new(listener),
            async move {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            },
        );
    println!("otlpsink ready endpoint=http://{addr}");
    // The listener is bound: an exporter started after this line connects.
    if let Err(e) = server.await {
        eprintln!("otlpsink: server failed: {e}");
        return ExitCode::FAILURE;
    }
    println!(
        "otlpsink received spans={} requests={}",
        counts.spans.load(Ordering::Relaxed),
        counts.requests.load(Ordering::Relaxed)
    );
    ExitCode::SUCCESS
}
