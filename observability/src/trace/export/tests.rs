//! The transports against servers on loopback that answer as a collector would, or would not. gRPC (HTTP/2): the
//! request as it arrives (path, headers, the message prefix and every part of the body), a status in the
//! trailers or in a trailers-only answer, an HTTP error, and endpoints that cannot be used. OTLP/HTTP (HTTP/1.1):
//! the request as it arrives, on one kept-alive connection, and an HTTP error.

use super::otlp::{EXPORT_PATH, USER_AGENT};
use super::retry::Retry;
use super::*;
use http_body_util::BodyExt as _;
use hyper::body::{Frame, Incoming};
use std::pin::Pin;
use std::task::{Context, Poll};

/// How the test collector answers.
#[derive(Clone, Copy)]
enum Answer {
    /// 200, an empty message, `grpc-status: 0` in the trailers.
    Ok,
    /// 200 with `grpc-status: 14` and a message in the headers, nothing else (trailers-only).
    Unavailable,
    /// HTTP 503.
    Http503,
}

/// A response body of the given frames.
struct Reply(VecDeque<Frame<bytes::Bytes>>);

impl hyper::body::Body for Reply {
    type Data = bytes::Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<bytes::Bytes>, Self::Error>>> {
        Poll::Ready(self.get_mut().0.pop_front().map(Ok))
    }
}

fn reply(answer: Answer) -> http::Response<Reply> {
    let grpc = http::Response::builder().header("content-type", "application/grpc");
    match answer {
        Answer::Ok => {
            let mut trailers = http::HeaderMap::new();
            trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
            let frames = [
                Frame::data(bytes::Bytes::from_static(&[0, 0, 0, 0, 0])),
                Frame::trailers(trailers),
            ];
            grpc.body(Reply(frames.into_iter().collect()))
        }
        Answer::Unavailable => grpc
            .header("grpc-status", "14")
            .header("grpc-message", "overloaded")
            .body(Reply(VecDeque::new())),
        Answer::Http503 => http::Response::builder()
            .status(503)
            .body(Reply(VecDeque::new())),
    }
    .unwrap()
}

/// What the collector saw of each request: path, content type, te, user agent, the body's encoding
/// (`grpc-encoding` over gRPC, `Content-Encoding` over OTLP/HTTP), body.
type Seen = Arc<Mutex<Vec<(String, String, String, String, String, Vec<u8>)>>>;

async fn collector(answer: Answer) -> (String, Seen) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen: Seen = Arc::default();
    let keep = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let seen = keep.clone();
            let service = hyper::service::service_fn(move |req: http::Request<Incoming>| {
                let seen = seen.clone();
                async move {
                    let header = |n: http::header::HeaderName| {
                        let v = req.headers().get(n).and_then(|v| v.to_str().ok());
                        v.unwrap_or("").to_owned()
                    };
                    let (path, ct, te, ua, encoding) = (
                        req.uri().path().to_owned(),
                        header(http::header::CONTENT_TYPE),
                        header(http::header::TE),
                        header(http::header::USER_AGENT),
                        header(http::HeaderName::from_static("grpc-encoding")),
                    );
                    let body = req.into_body().collect().await.unwrap().to_bytes();
                    let got = (path, ct, te, ua, encoding, body.to_vec());
                    seen.lock().unwrap().push(got);
                    Ok::<_, std::convert::Infallible>(reply(answer))
                }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            tokio::spawn(
                hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                    .serve_connection(io, service),
            );
        }
    });
    (format!("http://{addr}"), seen)
}

/// A client of `endpoint` over `protocol` that waits 5 s for an answer.
fn client(endpoint: &str, protocol: Protocol) -> Otlp {
    Otlp::new(
        endpoint,
        protocol,
        Compression::None,
        Duration::from_secs(5),
    )
    .unwrap()
}

fn request() -> Request {
    Request::of(b"HEAD".to_vec(), vec![vec![7; 30_000], vec![8; 40_000]])
}

#[tokio::test]
async fn a_request_arrives_whole_with_the_grpc_prefix_and_an_ok_is_ok() {
    let (endpoint, seen) = collector(Answer::Ok).await;
    let grpc = client(&endpoint, Protocol::Grpc);
    for _ in 0..3 {
        grpc.send(&request()).await.unwrap();
    }
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 3);
    for (path, ct, te, ua, encoding, body) in seen.iter() {
        assert_eq!(path, EXPORT_PATH);
        assert_eq!(encoding, "", "no grpc-encoding");
        assert_eq!((ct.as_str(), te.as_str()), ("application/grpc", "trailers"));
        assert_eq!(ua, USER_AGENT, "the exporter, its language and version");
        let len = 4 + 70_000u32;
        assert_eq!(body[0], 0, "not compressed");
        assert_eq!(body[1..5], len.to_be_bytes());
        assert_eq!(&body[5..9], b"HEAD");
        assert_eq!(body.len(), 5 + len as usize);
        // Both chunks, in order.
        assert!(body[9..30_009].iter().all(|b| *b == 7));
        assert!(body[30_009..].iter().all(|b| *b == 8));
    }
}

#[tokio::test]
async fn a_refusal_in_a_trailers_only_answer_and_an_http_error_are_errors() {
    let (endpoint, _) = collector(Answer::Unavailable).await;
    let grpc = client(&endpoint, Protocol::Grpc);
    let err = grpc.send(&request()).await.unwrap_err();
    assert!(
        err.detail.contains("grpc-status 14") && err.detail.contains("overloaded"),
        "{err:?}"
    );
    assert_eq!(err.retry, Retry::Backoff, "UNAVAILABLE may pass");
    let (endpoint, _) = collector(Answer::Http503).await;
    let grpc = client(&endpoint, Protocol::Grpc);
    let err = grpc.send(&request()).await.unwrap_err();
    assert!(err.detail.contains("HTTP 503"), "{err:?}");
    assert_eq!(err.retry, Retry::Backoff);
}

#[tokio::test]
async fn a_collector_that_does_not_listen_is_unavailable() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let grpc = client(&format!("http://{addr}"), Protocol::Grpc);
    let err = grpc.send(&request()).await.unwrap_err();
    assert!(err.detail.starts_with("collector unavailable"), "{err:?}");
    assert_eq!(err.retry, Retry::Backoff, "it may come up");
}

#[test]
fn endpoints_that_cannot_be_used_are_refused_with_the_reason() {
    for (endpoint, says) in [
        ("grpc://collector:4317", "unsupported scheme \"grpc\""),
        ("collector:4317", "no scheme"),
        ("http://", "invalid endpoint"),
        ("not a uri", "invalid endpoint"),
    ] {
        let err = Otlp::new(
            endpoint,
            Protocol::Grpc,
            Compression::None,
            Duration::from_secs(1),
        )
        .unwrap_err();
        assert!(err.contains(says), "{endpoint}: {err}");
    }
    Otlp::new(
        "http://127.0.0.1:4317/some/path",
        Protocol::Grpc,
        Compression::None,
        Duration::from_secs(1),
    )
    .unwrap();
}

#[tokio::test]
async fn an_https_endpoint_is_spoken_to_in_tls() {
    // A collector that only reads what comes: an https endpoint must open with a TLS handshake record.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let first = tokio::spawn(async move {
        use tokio::io::AsyncReadExt as _;
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut head = [0u8; 3];
        stream.read_exact(&mut head).await.unwrap();
        head
    });
    let grpc = Otlp::new(
        &format!("https://{addr}"),
        Protocol::Grpc,
        Compression::None,
        Duration::from_millis(500),
    )
    .unwrap();
    let err = grpc.send(&request()).await.unwrap_err();
    assert!(!err.detail.is_empty());
    let head = first.await.unwrap();
    assert_eq!(head[0], 0x16, "a TLS handshake record, not {head:?}");
    assert_eq!(head[1], 0x03);
}

/// An OTLP/HTTP collector (HTTP/1.1) answering the `answers` in turn (a status and a `Retry-After`; the last one
/// from then on), each answer held until `together` requests are open: its endpoint, what it saw (path, content
/// type, body) and how many connections it accepted.
async fn http_collector(
    answers: &[(u16, Option<&'static str>)],
    together: usize,
) -> (String, Seen, Arc<std::sync::atomic::AtomicUsize>) {
    let answers: Arc<Vec<_>> = Arc::new(answers.to_vec());
    let barrier = Arc::new(tokio::sync::Barrier::new(together));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen: Seen = Arc::default();
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (keep, count) = (seen.clone(), accepted.clone());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            let (seen, barrier, answers) = (keep.clone(), barrier.clone(), answers.clone());
            let service = hyper::service::service_fn(move |req: http::Request<Incoming>| {
                let (seen, barrier, answers) = (seen.clone(), barrier.clone(), answers.clone());
                async move {
                    barrier.wait().await;
                    let header = |n: http::header::HeaderName| {
                        let v = req.headers().get(n).and_then(|v| v.to_str().ok());
                        v.unwrap_or("").to_owned()
                    };
                    let (ct, ua, encoding) = (
                        header(http::header::CONTENT_TYPE),
                        header(http::header::USER_AGENT),
                        header(http::header::CONTENT_ENCODING),
                    );
                    let path = req.uri().path().to_owned();
                    let body = req.into_body().collect().await.unwrap().to_bytes();
                    let got = (path, ct, String::new(), ua, encoding, body.to_vec());
                    seen.lock().unwrap().push(got);
                    let (status, retry_after) = {
                        let seen = seen.lock().unwrap();
                        answers[(seen.len() - 1).min(answers.len() - 1)]
                    };
                    let mut resp = http::Response::new(Reply(VecDeque::new()));
                    *resp.status_mut() = http::StatusCode::from_u16(status).unwrap();
                    if let Some(after) = retry_after {
                        resp.headers_mut()
                            .insert(http::header::RETRY_AFTER, after.parse().unwrap());
                    }
                    Ok::<_, std::convert::Infallible>(resp)
                }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            tokio::spawn(hyper::server::conn::http1::Builder::new().serve_connection(io, service));
        }
    });
    (format!("http://{addr}"), seen, accepted)
}

#[tokio::test]
async fn over_http_a_request_is_posted_whole_to_v1_traces_on_one_kept_alive_connection() {
    let (endpoint, seen, accepted) = http_collector(&[(200, None)], 1).await;
    let http = client(&endpoint, Protocol::HttpProtobuf);
    for _ in 0..3 {
        http.send(&request()).await.unwrap();
    }
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        1,
        "one connection, kept alive"
    );
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 3);
        for (path, ct, _, ua, encoding, body) in seen.iter() {
            assert_eq!(path, "/v1/traces");
            assert_eq!(encoding, "", "no Content-Encoding");
            assert_eq!(ct, "application/x-protobuf");
            assert_eq!(ua, USER_AGENT);
            // No gRPC prefix: the message itself, both chunks in order.
            assert_eq!(&body[..4], b"HEAD");
            assert_eq!(body.len(), 4 + 70_000);
            assert!(body[4..30_004].iter().all(|b| *b == 7));
            assert!(body[30_004..].iter().all(|b| *b == 8));
        }
    }
    // A path in the endpoint (a collector behind a proxy) goes before the signal's.
    let (endpoint, seen, _) = http_collector(&[(200, None)], 1).await;
    let http = client(&format!("{endpoint}/otlp/"), Protocol::HttpProtobuf);
    http.send(&request()).await.unwrap();
    assert_eq!(seen.lock().unwrap()[0].0, "/otlp/v1/traces");
}

#[tokio::test]
async fn over_http_an_error_status_is_an_error_and_any_success_is_not() {
    let (endpoint, _, _) = http_collector(&[(503, None)], 1).await;
    let http = client(&endpoint, Protocol::HttpProtobuf);
    let err = http.send(&request()).await.unwrap_err();
    assert!(err.detail.contains("HTTP 503"), "{err:?}");
    assert_eq!(err.retry, Retry::Backoff);
    let (endpoint, _, _) = http_collector(&[(400, None)], 1).await;
    let http = client(&endpoint, Protocol::HttpProtobuf);
    let err = http.send(&request()).await.unwrap_err();
    assert_eq!(err.retry, Retry::Never, "a bad request stays bad");
    let (endpoint, _, _) = http_collector(&[(202, None)], 1).await;
    let http = client(&endpoint, Protocol::HttpProtobuf);
    http.send(&request()).await.unwrap();
}

#[tokio::test]
async fn over_http_an_overloaded_collector_gets_the_same_request_again() {
    // Both refusals ask for no wait (the waits themselves are tested with paused time in `retry`).
    let (endpoint, seen, _) =
        http_collector(&[(503, Some("0")), (429, Some("0")), (200, None)], 1).await;
    let http = client(&endpoint, Protocol::HttpProtobuf);
    retry::send(&http, &request(), &retry::Halt::default())
        .await
        .unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 3, "sent three times");
    assert!(
        seen.iter()
            .all(|(_, _, _, _, _, body)| *body == seen[0].5 && body.len() == 4 + 70_000),
        "the same request each time"
    );
}

#[tokio::test]
async fn over_http_each_request_in_flight_keeps_its_connection_for_the_next() {
    // Every answer waits until IN_FLIGHT requests are open: each round needs IN_FLIGHT connections at once.
    let (endpoint, seen, accepted) = http_collector(&[(200, None)], IN_FLIGHT).await;
    let http = client(&endpoint, Protocol::HttpProtobuf);
    assert_eq!(IN_FLIGHT, 4, "four sends at once below");
    for _ in 0..2 {
        let req = request();
        let (a, b, c, d) = tokio::join!(
            http.send(&req),
            http.send(&req),
            http.send(&req),
            http.send(&req)
        );
        for result in [a, b, c, d] {
            result.unwrap();
        }
    }
    assert_eq!(seen.lock().unwrap().len(), 2 * IN_FLIGHT);
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        IN_FLIGHT,
        "the second round reuses the first round's connections"
    );
}

#[test]
fn protocols_are_named_as_the_environment_names_them() {
    for p in [Protocol::Grpc, Protocol::HttpProtobuf] {
        assert_eq!(Protocol::parse(p.as_str()), Some(p));
    }
    assert_eq!(
        Protocol::parse(" http/protobuf "),
        Some(Protocol::HttpProtobuf)
    );
    assert_eq!(Protocol::parse("http/json"), None);
}

#[tokio::test]
async fn a_collector_speaking_the_other_protocol_is_named_with_the_fix() {
    let (h2, _) = collector(Answer::Ok).await;
    let (h1, _, _) = http_collector(&[(200, None)], 1).await;
    // Each protocol's exports to the other's collector fail; the collector's first bytes tell why.
    assert!(
        client(&h2, Protocol::HttpProtobuf)
            .send(&request())
            .await
            .is_err()
    );
    let fix = client(&h2, Protocol::HttpProtobuf).other_protocol().await;
    let fix = fix.unwrap_or_default();
    assert!(fix.contains("otlp_protocol = \"grpc\""), "{fix}");
    assert!(client(&h1, Protocol::Grpc).send(&request()).await.is_err());
    let fix = client(&h1, Protocol::Grpc).other_protocol().await;
    let fix = fix.unwrap_or_default();
    assert!(fix.contains("otlp_protocol = \"http/protobuf\""), "{fix}");
    // The matching protocols, and a collector that does not listen: nothing to name.
    assert_eq!(client(&h2, Protocol::Grpc).other_protocol().await, None);
    assert_eq!(
        client(&h1, Protocol::HttpProtobuf).other_protocol().await,
        None
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let gone = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    assert_eq!(
        client(&gone, Protocol::HttpProtobuf).other_protocol().await,
        None
    );
    assert_eq!(client(&gone, Protocol::Grpc).other_protocol().await, None);
}

fn gunzip(body: &[u8]) -> Vec<u8> {
    use std::io::Read as _;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(body)
        .read_to_end(&mut out)
        .unwrap();
    out
}

#[tokio::test]
async fn a_gzip_request_says_so_and_inflates_to_the_request() {
    let plain = request();
    let mut whole = plain.head.to_vec();
    for piece in &plain.spans {
        whole.extend_from_slice(piece);
    }
    for protocol in [Protocol::HttpProtobuf, Protocol::Grpc] {
        let (endpoint, seen) = match protocol {
            Protocol::Grpc => collector(Answer::Ok).await,
            Protocol::HttpProtobuf => {
                let (endpoint, seen, _) = http_collector(&[(200, None)], 1).await;
                (endpoint, seen)
            }
        };
        let gzip = Otlp::new(
            &endpoint,
            protocol,
            Compression::Gzip,
            Duration::from_secs(5),
        );
        let gzip = gzip.unwrap();
        let prepared = gzip.prepare(request());
        assert!(prepared.gzip && prepared.spans.is_empty());
        assert!(
            prepared.head.len() < whole.len() / 20,
            "{}",
            prepared.head.len()
        );
        gzip.send(&prepared).await.unwrap();
        // Without compression the request goes as it is and says nothing of an encoding.
        let none = client(&endpoint, protocol);
        let prepared = none.prepare(request());
        assert!(!prepared.gzip);
        assert_eq!(prepared.spans.len(), 2);
        none.send(&prepared).await.unwrap();
        let seen = seen.lock().unwrap();
        let (_, _, _, _, plain_encoding, plain_body) = &seen[1];
        assert_eq!(plain_encoding, "");
        assert!(plain_body.ends_with(&whole), "{protocol:?}");
        let (_, _, _, _, encoding, body) = &seen[0];
        assert_eq!(encoding, "gzip", "{protocol:?}");
        let inflated = match protocol {
            Protocol::Grpc => {
                assert_eq!(body[0], 1, "the message's compressed flag");
                let len = u32::from_be_bytes(body[1..5].try_into().unwrap()) as usize;
                assert_eq!(len, body.len() - 5);
                gunzip(&body[5..])
            }
            Protocol::HttpProtobuf => gunzip(body),
        };
        assert_eq!(inflated, whole, "{protocol:?}");
    }
}
