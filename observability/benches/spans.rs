//! Benchmarks the spans of one fetched URL as the engine makes them, exported over OTLP/HTTP to a loopback sink:
//! the root (URL, kind and depth when it starts; outcome, attempt and status when its record is made; its JSONL
//! line when it ends), the `frontier.wait`, `http.first_byte`, `http.body` and `parse` children, and a group
//! commit's `frontier.commit` span (16 records a commit). What the exporter costs a URL on the threads that end
//! spans, apart from the crawl; under `valgrind --tool=callgrind` (`--bench`, one sample) a count that does not
//! move with the load of the machine.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

use std::convert::Infallible;
use std::hint::black_box;
use std::time::{Duration, Instant};

use crawl_observability::trace::{self, Alike, Stamp, Trace};
use crawl_observability::{
    Format, OtlpSettings, Protocol, TelemetryConfig, keyed_i64, keyed_str, preset_bool, preset_str,
};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};

/// The engine's allocator: what a span allocates and frees costs what it costs in a crawl.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Records a commit holds.
const GROUP: usize = 16;

/// The pause after each commit, not counted.
const PACE: Duration = Duration::from_micros(400);

/// An OTLP/HTTP receiver on 127.0.0.1 that reads each request whole and answers it with an empty
/// `ExportTraceServiceResponse`, on a runtime of its own; its endpoint.
fn sink() -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(r) => r,
            Err(e) => panic!("sink runtime: {e}"),
        };
        runtime.block_on(async move {
            let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
                Ok(l) => l,
                Err(e) => panic!("sink bind: {e}"),
            };
            let addr = listener
                .local_addr()
                .map(|a| a.to_string())
                .unwrap_or_default();
            let _ = tx.send(format!("http://{addr}"));
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(|req: Request<Incoming>| async move {
                        let _ = req.into_body().collect().await;
                        let mut answer = Response::new(Full::new(Bytes::new()));
                        answer.headers_mut().insert(
                            hyper::header::CONTENT_TYPE,
                            hyper::header::HeaderValue::from_static("application/x-protobuf"),
                        );
                        Ok::<_, Infallible>(answer)
                    });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, service)
                        .await;
                });
            }
        });
    });
    match rx.recv_timeout(Duration::from_secs(10)) {
        Ok(endpoint) => endpoint,
        Err(e) => panic!("sink did not start: {e}"),
    }
}

/// The spans of one fetched URL up to its record (the root stays open until its commit).
#[inline(never)]
fn url_spans(url: &str, queued: Instant) -> Trace {
    let mut t = trace::root("crawl.url", queued, &[]);
    if t.is_sampled() {
        t.set_attributes(&[
            keyed_str!("url.full", url),
            preset_str!("crawl.kind", "page"),
            keyed_i64!("crawl.depth", 3),
        ]);
        t.ctx().span(
            "frontier.wait",
            queued,
            Instant::now(),
            &[
                keyed_str!("crawl.host", "127.0.0.30"),
                preset_str!("robots.verdict", "allowed"),
            ],
        );
    }
    let ctx = t.ctx();
    let started = Stamp::from(Instant::now());
    ctx.span(
        "http.first_byte",
        started,
        started + Duration::from_micros(50),
        &[preset_bool!("net.connection.reused", true)],
    );
    ctx.span(
        "http.body",
        started + Duration::from_micros(50),
        started + Duration::from_micros(90),
        &[
            keyed_i64!("http.response.body.size", 4_000),
            preset_str!("network.protocol.version", "1.1"),
            keyed_i64!("crawl.decoded_bytes", 4_000),
        ],
    );
    let parse_start = Stamp::now();
    ctx.span(
        "parse",
        parse_start,
        Stamp::now(),
        &[
            keyed_i64!("crawl.links_found", 12),
            keyed_i64!("crawl.links_followed", 3),
        ],
    );
    if t.is_sampled() {
        t.set_attributes(&[
            preset_str!("crawl.outcome", "fetched"),
            keyed_i64!("crawl.attempt", 1),
            keyed_i64!("http.response.status_code", 200),
        ]);
    }
    t
}

/// A group commit of `traces`: each gets the commit's span, then its JSONL line and its end.
#[inline(never)]
fn commit(traces: &mut Vec<Trace>, line: &mut i64, started: Instant) {
    let mut span = Alike::new("frontier.commit", started, Instant::now());
    for t in traces.iter() {
        span.add(&t.ctx());
    }
    let end = Stamp::now();
    for mut t in traces.drain(..) {
        *line += 1;
        t.set_attributes(&[keyed_i64!("crawl.jsonl_line", *line)]);
        t.end(end);
    }
}

fn bench_spans(c: &mut Criterion) {
    let endpoint = sink();
    let mut guard = match crawl_observability::init(&TelemetryConfig {
        // The exporter's line at shutdown tells the spans dropped (none, at this pace).
        log_level: "warn,crawl_observability::trace=info".into(),
        format: Format::Json,
        otlp: Some(OtlpSettings {
            endpoint: Some(endpoint),
            protocol: Some(Protocol::HttpProtobuf),
            compression: None,
            service_name: "spans-bench".into(),
            service_version: "0".into(),
            resource: Vec::new(),
            sample_ratio: 1.0,
        }),
    }) {
        Ok(g) => g,
        Err(e) => panic!("telemetry: {e}"),
    };
    trace::set_sample_ratio(1.0);
    let url = "http://127.0.0.30:8080/section-12/page-000345.html";
    let mut group = c.benchmark_group("spans");
    group.throughput(Throughput::Elements(GROUP as u64));
    group.bench_function("a commit of 16 fetched URLs, 7 spans each", |b| {
        let mut traces = Vec::with_capacity(GROUP);
        let mut line = 0;
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                let started = Instant::now();
                for _ in 0..GROUP {
                    traces.push(url_spans(black_box(url), started));
                }
                commit(&mut traces, &mut line, started);
                spent += started.elapsed();
                // Spans at about a crawl's rate (a few hundred thousand a second), not as fast as they can be
                // made: faster, they would pass the pending bound and be dropped (a cheaper path) instead of sent.
                std::thread::sleep(PACE);
            }
            spent
        });
    });
    group.finish();
    guard.shutdown();
}

criterion_group!(benches, bench_spans);
criterion_main!(benches);
