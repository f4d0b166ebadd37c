//! The HTTP client under the object store: the workspace's hyper and rustls (ring), plugged into `object_store`
//! through its [`HttpConnector`], so no second HTTP or TLS stack comes in with it.
//!
//! `timeout` bounds connecting, each request up to its response head (plus one second per MiB of request body,
//! so a part of a multipart upload has the time to go), and each wait for the next piece of a response body.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector as TcpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpRequestBody,
    HttpResponse, HttpResponseBody, HttpService,
};
use object_store::{ClientConfigKey, ClientOptions};

/// How long an idle pooled connection is kept.
const POOL_IDLE: Duration = Duration::from_secs(30);
/// The slowest upload rate a request body is given time for: one second per MiB on top of `timeout`.
const BODY_BYTES_PER_SECOND: u64 = 1 << 20;

/// Makes the [`HttpClient`] of an object store.
/// Plain `http://` is refused unless the options allow it (`allow_http`: a local test server; the cloud's
/// instance-metadata credentials, which `object_store` asks for over http itself).
#[derive(Debug, Clone)]
pub(crate) struct HyperConnector {
    timeout: Duration,
    /// The target is `https://`: read the system's trust roots (else the bundled Mozilla ones).
    secure: bool,
}

impl HyperConnector {
    pub(crate) fn new(timeout: Duration, secure: bool) -> HyperConnector {
        HyperConnector { timeout, secure }
    }
}

impl HttpConnector for HyperConnector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let allow_http = options
            .get_config_value(&ClientConfigKey::AllowHttp)
            .is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
        let mut tcp = TcpConnector::new();
        tcp.set_connect_timeout(Some(self.timeout));
        tcp.set_nodelay(true);
        tcp.enforce_http(false);
        let native = self
            .secure
            .then(|| {
                hyper_rustls::HttpsConnectorBuilder::new()
                    .with_native_roots()
                    .ok()
            })
            .flatten();
        let tls = native
            .unwrap_or_else(|| hyper_rustls::HttpsConnectorBuilder::new().with_webpki_roots());
        let tls = if allow_http {
            tls.https_or_http()
        } else {
            tls.https_only()
        };
        let https = tls.enable_http1().wrap_connector(tcp);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(POOL_IDLE)
            .pool_timer(TokioTimer::new())
            .build(https);
        Ok(HttpClient::new(HyperService {
            client,
            timeout: self.timeout,
        }))
    }
}

type Https = hyper_rustls::HttpsConnector<TcpConnector>;

struct HyperService {
    client: Client<Https, HttpRequestBody>,
    timeout: Duration,
}

impl std::fmt::Debug for HyperService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HyperService")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// Why a request gave up waiting.
#[derive(Debug, thiserror::Error)]
#[error("no answer within {0:?}")]
struct TimedOut(Duration);

#[async_trait::async_trait]
impl HttpService for HyperService {
    async fn call(&self, req: HttpRequest) -> Result<HttpResponse, HttpError> {
        let body_len = u64::try_from(req.body().content_length()).unwrap_or(u64::MAX);
        let within = self.timeout + Duration::from_secs(body_len / BODY_BYTES_PER_SECOND);
        let res = tokio::time::timeout(within, self.client.request(req))
            .await
            .map_err(|_| HttpError::new(HttpErrorKind::Timeout, TimedOut(within)))?
            .map_err(request_error)?;
        let (parts, body) = res.into_parts();
        let body = IdleBody {
            inner: body,
            idle: self.timeout,
            timer: Box::pin(tokio::time::sleep(self.timeout)),
        };
        Ok(HttpResponse::from_parts(parts, HttpResponseBody::new(body)))
    }
}

/// What kind of failure a request that got no response is: a failed connect is retried by `object_store` and
/// reported as such; a broken connection is a request error (retried too). The message carries the whole chain of
/// causes (hyper's own names only the step: "client error (Connect)").
fn request_error(e: hyper_util::client::legacy::Error) -> HttpError {
    let kind = if e.is_connect() {
        HttpErrorKind::Connect
    } else {
        HttpErrorKind::Request
    };
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    HttpError::new(kind, std::io::Error::other(text))
}

/// A response body that fails when no piece of it comes within `idle`.
struct IdleBody {
    inner: Incoming,
    idle: Duration,
    timer: Pin<Box<tokio::time::Sleep>>,
}

impl Body for IdleBody {
    type Data = Bytes;
    type Error = HttpError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, HttpError>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                let deadline = tokio::time::Instant::now() + this.idle;
                this.timer.as_mut().reset(deadline);
                Poll::Ready(
                    frame.map(|f| f.map_err(|e| HttpError::new(HttpErrorKind::Interrupted, e))),
                )
            }
            Poll::Pending => match this.timer.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(HttpError::new(
                    HttpErrorKind::Timeout,
                    TimedOut(this.idle),
                )))),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Collects a whole body (used by tests of this module).
#[cfg(test)]
async fn collect(body: HttpResponseBody) -> Result<Bytes, HttpError> {
    body.bytes().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// A server that answers one request with a head and part of a body, then goes silent.
    fn half_answer() -> std::net::SocketAddr {
        let l = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc")
                .unwrap();
            std::thread::sleep(Duration::from_secs(5));
        });
        addr
    }

    fn get(addr: &str) -> HttpRequest {
        http::Request::builder()
            .uri(addr)
            .body(HttpRequestBody::empty())
            .unwrap()
    }

    #[tokio::test]
    async fn a_refused_connect_is_a_connect_error_and_a_silent_body_times_out() {
        let client = HyperConnector::new(Duration::from_millis(300), false)
            .connect(&ClientOptions::new().with_allow_http(true))
            .unwrap();
        let free = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let closed = format!("http://{}/", free.local_addr().unwrap());
        drop(free);
        let e = client.execute(get(&closed)).await.unwrap_err();
        assert_eq!(e.kind(), HttpErrorKind::Connect, "{e}");
        assert!(e.to_string().contains("refused"), "{e}");

        let addr = half_answer();
        let started = std::time::Instant::now();
        let res = client
            .execute(get(&format!("http://{addr}/")))
            .await
            .unwrap();
        let e = collect(res.into_body()).await.unwrap_err();
        assert_eq!(e.kind(), HttpErrorKind::Timeout, "{e}");
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    #[tokio::test]
    async fn plain_http_is_refused_unless_allowed() {
        let client = HyperConnector::new(Duration::from_millis(300), false)
            .connect(&ClientOptions::new())
            .unwrap();
        // A server that would answer: only the scheme can fail the request.
        let addr = half_answer();
        let e = client
            .execute(get(&format!("http://{addr}/")))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("scheme"), "{e}");
    }
}
