//! `otlpsink`: an OTLP trace receiver on loopback (gRPC, and OTLP/HTTP with protobuf bodies at `/v1/traces`, on
//! the same port) that only counts what it is sent, for `make bench-otlp`.
//!
//! Listens on `127.0.0.1:0` (or `--port`), prints `otlpsink ready endpoint=http://127.0.0.1:PORT` once it accepts,
//! serves until SIGTERM/SIGINT, then prints `otlpsink received spans=N requests=N bytes=N cpu_s=S` and exits 0.
//!
//! It stands for a collector on another machine, so it should take as little as possible of the cores the crawl
//! being measured runs on: it serves with hyper and counts the spans of each
//! `ExportTraceServiceRequest` by walking the protobuf fields down to `ScopeSpans.spans`, without decoding a span
//! (decoding every span with prost cost it a tenth of the crawler's CPU). A gzip request (`Content-Encoding: gzip`,
//! or a gRPC message flagged compressed) is inflated first. A request that is not well-formed protobuf is answered
//! with an error and counted apart.

use std::convert::Infallible;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::{Buf as _, Bytes};
use clap::Parser;
use http::{HeaderMap, HeaderValue, Request, Response};
use http_body_util::{BodyExt as _, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo};
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
    bytes: AtomicU64,
    rejected: AtomicU64,
}

/// The one method served over gRPC.
const EXPORT_PATH: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";
/// The one path served over OTLP/HTTP.
const HTTP_PATH: &str = "/v1/traces";

/// Protobuf wire types.
const VARINT: u64 = 0;
const FIXED64: u64 = 1;
const LEN: u64 = 2;
const FIXED32: u64 = 5;

/// Why a request body is not a well-formed export request (answered with an error, counted apart).
#[derive(Debug, thiserror::Error)]
enum Malformed {
    #[error("truncated varint")]
    TruncatedVarint,
    #[error("varint longer than 10 bytes")]
    LongVarint,
    #[error("length too large")]
    LengthTooLarge,
    #[error("truncated field")]
    TruncatedField,
    #[error("wire type {wire} of field {field}")]
    WireType { wire: u64, field: u64 },
    #[error("truncated grpc frame")]
    TruncatedFrame,
    #[error("truncated grpc message")]
    TruncatedMessage,
    #[error("unknown compressed flag {0}")]
    CompressedFlag(u8),
    #[error("gzip: {0}")]
    Gzip(std::io::Error),
}

/// Reads a varint at the front of `buf`.
fn varint(buf: &mut &[u8]) -> Result<u64, Malformed> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let Some((&b, rest)) = buf.split_first() else {
            return Err(Malformed::TruncatedVarint);
        };
        *buf = rest;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Ok(v);
        }
    }
    Err(Malformed::LongVarint)
}

/// Calls `f(field, payload)` for each length-delimited field of the message `buf`, skipping the others.
fn each_len_field(
    mut buf: &[u8],
    mut f: impl FnMut(u64, &[u8]) -> Result<(), Malformed>,
) -> Result<(), Malformed> {
    while !buf.is_empty() {
        let key = varint(&mut buf)?;
        let (field, wire) = (key >> 3, key & 7);
        let skip = match wire {
            VARINT => {
                varint(&mut buf)?;
                0
            }
            FIXED64 => 8,
            FIXED32 => 4,
            LEN => {
                let n =
                    usize::try_from(varint(&mut buf)?).map_err(|_| Malformed::LengthTooLarge)?;
                let payload = buf.get(..n).ok_or(Malformed::TruncatedField)?;
                f(field, payload)?;
                n
            }
            wire => return Err(Malformed::WireType { wire, field }),
        };
        buf = buf.get(skip..).ok_or(Malformed::TruncatedField)?;
    }
    Ok(())
}

/// The spans in an encoded `ExportTraceServiceRequest`: `resource_spans` (1) → `scope_spans` (2) → `spans` (2).
fn count_spans(request: &[u8]) -> Result<u64, Malformed> {
    let mut spans = 0u64;
    each_len_field(request, |f, resource_spans| {
        if f != 1 {
            return Ok(());
        }
        each_len_field(resource_spans, |f, scope_spans| {
            if f != 2 {
                return Ok(());
            }
            each_len_field(scope_spans, |f, _span| {
                spans += u64::from(f == 2);
                Ok(())
            })
        })
    })?;
    Ok(spans)
}

/// `bytes` inflated from gzip.
fn gunzip(bytes: &[u8]) -> Result<Vec<u8>, Malformed> {
    use std::io::Read as _;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .map_err(Malformed::Gzip)?;
    Ok(out)
}

/// The spans of a gRPC request body: length-prefixed messages (a flag byte, 0 for uncompressed and 1 for gzip,
/// and a big-endian length).
fn count_body(mut body: Bytes) -> Result<u64, Malformed> {
    let mut spans = 0;
    while body.has_remaining() {
        if body.remaining() < 5 {
            return Err(Malformed::TruncatedFrame);
        }
        let compressed = body.get_u8();
        let len = body.get_u32() as usize;
        if body.remaining() < len {
            return Err(Malformed::TruncatedMessage);
        }
        let message = body.split_to(len);
        spans += match compressed {
            0 => count_spans(&message)?,
            1 => count_spans(&gunzip(&message)?)?,
            flag => return Err(Malformed::CompressedFlag(flag)),
        };
    }
    Ok(spans)
}

type Reply = Response<
    StreamBody<futures_util::stream::Iter<std::vec::IntoIter<Result<Frame<Bytes>, Infallible>>>>,
>;

/// A gRPC answer: an empty `ExportTraceServiceResponse` when `status` is 0, then the status in the trailers.
fn reply(status: u32, message: &str) -> Reply {
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from(status));
    if !message.is_empty()
        && let Ok(v) = HeaderValue::from_str(message)
    {
        trailers.insert("grpc-message", v);
    }
    let mut frames = Vec::with_capacity(2);
    if status == 0 {
        frames.push(Ok(Frame::data(Bytes::from_static(&[0, 0, 0, 0, 0]))));
    }
    frames.push(Ok(Frame::trailers(trailers)));
    let mut resp = Response::new(StreamBody::new(futures_util::stream::iter(frames)));
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    resp
}

/// An OTLP/HTTP answer: 200 with an empty `ExportTraceServiceResponse`, or `status` with the reason as text.
fn http_reply(status: u16, message: &str) -> Reply {
    let frames = if message.is_empty() {
        Vec::new()
    } else {
        vec![Ok(Frame::data(Bytes::from(message.to_owned())))]
    };
    let mut resp = Response::new(StreamBody::new(futures_util::stream::iter(frames)));
    *resp.status_mut() =
        http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::BAD_REQUEST);
    let kind = if status == 200 {
        "application/x-protobuf"
    } else {
        "text/plain"
    };
    resp.headers_mut()
        .insert(http::header::CONTENT_TYPE, HeaderValue::from_static(kind));
    resp
}

async fn handle(counts: Arc<Counts>, req: Request<Incoming>) -> Result<Reply, Infallible> {
    let grpc = match req.uri().path() {
        EXPORT_PATH => true,
        HTTP_PATH => false,
        _ => req.version() == http::Version::HTTP_2,
    };
    // The answer in the request's protocol: a gRPC status, or an HTTP one.
    let answer = |grpc_status: u32, http_status: u16, message: &str| {
        Ok(if grpc {
            reply(grpc_status, message)
        } else {
            http_reply(http_status, message)
        })
    };
    if !matches!(req.uri().path(), EXPORT_PATH | HTTP_PATH) {
        return answer(12, 404, "only trace export is served");
    }
    let gzip = req
        .headers()
        .get(http::header::CONTENT_ENCODING)
        .is_some_and(|v| v == "gzip");
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return answer(13, 400, &format!("reading the request: {e}")),
    };
    let len = body.len() as u64;
    let counted = if grpc {
        count_body(body)
    } else if gzip {
        gunzip(&body).and_then(|b| count_spans(&b))
    } else {
        count_spans(&body)
    };
    match counted {
        Ok(spans) => {
            counts.spans.fetch_add(spans, Ordering::Relaxed);
            counts.requests.fetch_add(1, Ordering::Relaxed);
            counts.bytes.fetch_add(len, Ordering::Relaxed);
            answer(0, 200, "")
        }
        Err(e) => {
            counts.rejected.fetch_add(1, Ordering::Relaxed);
            answer(3, 400, &e.to_string())
        }
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
    println!("otlpsink ready endpoint=http://{addr}");
    // The listener is bound: an exporter started after this line connects.
    loop {
        let stream = tokio::select! {
            _ = term.recv() => break,
            _ = int.recv() => break,
            accepted = listener.accept() => match accepted {
                Ok((s, _)) => s,
                Err(e) => {
                    // Out of descriptors and the like: wait a little rather than spin.
                    eprintln!("otlpsink: accept: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let counts = counts.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req| handle(counts.clone(), req));
            // HTTP/2 with prior knowledge (gRPC) or HTTP/1.1 (OTLP/HTTP), told apart by the connection's preface.
            let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            if let Err(e) = builder.serve_connection(TokioIo::new(stream), svc).await {
                eprintln!("otlpsink: connection: {e}");
            }
        });
    }
    println!(
        "otlpsink received spans={} requests={} bytes={} rejected={} cpu_s={:.2}",
        counts.spans.load(Ordering::Relaxed),
        counts.requests.load(Ordering::Relaxed),
        counts.bytes.load(Ordering::Relaxed),
        counts.rejected.load(Ordering::Relaxed),
        crawl_observability::usage::cpu_seconds().unwrap_or(-1.0)
    );
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
    use prost::Message as _;

    fn span(name: &str) -> Span {
        Span {
            trace_id: vec![1; 16],
            span_id: vec![2; 8],
            name: name.into(),
            start_time_unix_nano: 5,
            end_time_unix_nano: 9,
            attributes: vec![KeyValue {
                key: "k".into(),
                value: Some(AnyValue {
                    value: Some(any_value::Value::IntValue(-3)),
                }),
                ..KeyValue::default()
            }],
            ..Span::default()
        }
    }

    fn request(shape: &[&[usize]]) -> Vec<u8> {
        ExportTraceServiceRequest {
            resource_spans: shape
                .iter()
                .map(|scopes| ResourceSpans {
                    scope_spans: scopes
                        .iter()
                        .map(|&n| ScopeSpans {
                            spans: (0..n).map(|i| span(&format!("s{i}"))).collect(),
                            schema_url: "x".into(),
                            ..ScopeSpans::default()
                        })
                        .collect(),
                    ..ResourceSpans::default()
                })
                .collect(),
        }
        .encode_to_vec()
    }

    fn framed(messages: &[Vec<u8>]) -> Bytes {
        let mut out = Vec::new();
        for m in messages {
            out.push(0);
            out.extend_from_slice(&(m.len() as u32).to_be_bytes());
            out.extend_from_slice(m);
        }
        Bytes::from(out)
    }

    #[test]
    fn spans_are_counted_across_resources_scopes_and_messages() {
        assert_eq!(count_spans(&request(&[&[3, 0, 2], &[5]])).ok(), Some(10));
        assert_eq!(count_spans(&request(&[])).ok(), Some(0));
        let body = framed(&[request(&[&[4]]), request(&[&[1, 1]])]);
        assert_eq!(count_body(body).ok(), Some(6));
    }

    #[test]
    fn malformed_requests_are_errors_and_gzip_ones_are_counted() {
        use std::io::Write as _;
        let whole = request(&[&[2]]);
        let cut = whole[..whole.len() - 3].to_vec();
        assert!(
            matches!(count_spans(&cut), Err(Malformed::TruncatedField)),
            "a truncated message"
        );
        let e = count_spans(&[0x0b]).unwrap_err();
        assert!(
            matches!(e, Malformed::WireType { wire: 3, field: 1 }),
            "{e:?}"
        );
        assert_eq!(e.to_string(), "wire type 3 of field 1");
        assert!(
            matches!(count_spans(&[0x0a, 0x80]), Err(Malformed::TruncatedVarint)),
            "a truncated length"
        );
        assert!(
            matches!(count_spans(&[0x08; 1]), Err(Malformed::TruncatedVarint)),
            "a varint field without its value"
        );
        assert!(
            matches!(count_spans(&[0x80; 11]), Err(Malformed::LongVarint)),
            "an endless varint"
        );
        assert!(
            matches!(
                count_body(Bytes::from_static(&[0, 0, 0])),
                Err(Malformed::TruncatedFrame)
            ),
            "a truncated frame"
        );
        assert!(
            matches!(
                count_body(Bytes::from_static(&[0, 0, 0, 0, 9, 1])),
                Err(Malformed::TruncatedMessage)
            ),
            "a frame longer than the body"
        );
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&whole).unwrap();
        let zipped = gz.finish().unwrap();
        assert_eq!(gunzip(&zipped).ok(), Some(whole.clone()));
        let mut framed_gzip = framed(std::slice::from_ref(&zipped)).to_vec();
        framed_gzip[0] = 1;
        assert_eq!(
            count_body(Bytes::from(framed_gzip)).ok(),
            Some(2),
            "a gzip message"
        );
        let mut not_gzip = framed(&[whole]).to_vec();
        not_gzip[0] = 1;
        let e = count_body(Bytes::from(not_gzip)).unwrap_err();
        assert!(matches!(e, Malformed::Gzip(_)), "flagged, not gzip: {e:?}");
        assert!(e.to_string().starts_with("gzip: "), "{e}");
        let mut unknown = framed(&[zipped]).to_vec();
        unknown[0] = 2;
        assert!(
            matches!(
                count_body(Bytes::from(unknown)),
                Err(Malformed::CompressedFlag(2))
            ),
            "an unknown flag"
        );
    }
}
