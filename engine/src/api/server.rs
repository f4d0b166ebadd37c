//! The control API's server: HTTP/1.1 (over TLS when configured) on a thread of its own with a current-thread
//! runtime, so a slow client never holds a crawl thread. At most [`MAX_CONNECTIONS`] connections at once (the next
//! waits in the accept queue); headers must arrive within [`HEADER_READ_TIMEOUT`], a TLS handshake within
//! [`HANDSHAKE_TIMEOUT`], a request is answered within its deadline, and no connection lives longer than
//! [`CONNECTION_LIFETIME`].

use super::handler::Api;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 64;
/// How long a client may take to send a request's headers (the next request's too, on a kept-alive connection).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a TLS handshake may take.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one connection may stay open, however busy.
pub const CONNECTION_LIFETIME: Duration = Duration::from_secs(300);

/// A running API server; it stops when dropped.
#[derive(Debug)]
pub struct ApiServer {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ApiServer {
    /// Serves `listener` (already bound) on a new thread; logs `api listening` with the bound address.
    pub fn start(
        listener: std::net::TcpListener,
        tls: Option<Arc<rustls::ServerConfig>>,
        api: Api,
    ) -> std::io::Result<ApiServer> {
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let https = tls.is_some();
        let thread = std::thread::Builder::new()
            .name("api".into())
            .spawn(move || rt.block_on(serve(listener, tls, Arc::new(api), rx)))?;
        tracing::info!(addr = %addr, tls = https, "api listening");
        Ok(ApiServer {
            addr,
            stop: Some(tx),
            thread: Some(thread),
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn serve(
    listener: std::net::TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    api: Arc<Api>,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, "api listener unusable");
            return;
        }
    };
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let slot = tokio::select! {
            _ = &mut stop => return,
            s = Arc::clone(&slots).acquire_owned() => match s {
                Ok(s) => s,
                Err(_) => return,
            },
        };
        let accepted = tokio::select! {
            _ = &mut stop => return,
            a = listener.accept() => a,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                tracing::debug!(error = %e, "api accept failed");
                continue;
            }
        };
        let api = Arc::clone(&api);
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let _slot = slot;
            match acceptor {
                Some(acceptor) => {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => connection(TokioIo::new(tls), peer, api).await,
                        Ok(Err(e)) => {
                            tracing::debug!(peer = %peer, error = %e, "api tls handshake failed");
                        }
                        Err(_) => tracing::debug!(peer = %peer, "api tls handshake timed out"),
                    }
                }
                None => connection(TokioIo::new(stream), peer, api).await,
            }
        });
    }
}

/// Serves one connection's requests until it closes, a timeout passes or its lifetime ends.
async fn connection<I>(io: I, peer: SocketAddr, api: Arc<Api>)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let svc = service_fn(move |req| {
        let api = Arc::clone(&api);
        async move { Ok::<_, std::convert::Infallible>(api.handle(req, peer).await) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .timer(TokioTimer::new())
        .serve_connection(io, svc);
    match tokio::time::timeout(CONNECTION_LIFETIME, conn).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::debug!(peer = %peer, error = %e, "api connection ended"),
        Err(_) => tracing::debug!(peer = %peer, "api connection closed after its lifetime"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::auth::Auth;
    use crate::api::dto::StatusDto;
    use crate::api::ops::{BoxFuture, CrawlOps, OpsError};
    use std::io::{Read as _, Write as _};

    /// A crawl that has ended: every call is 503.
    struct Ended;

    impl CrawlOps for Ended {
        fn status(&self) -> BoxFuture<Result<StatusDto, OpsError>> {
            Box::pin(async { Err(OpsError::Ended) })
        }
        fn hosts(
            &self,
            _: crate::api::ops::HostSort,
            _: usize,
        ) -> BoxFuture<Result<Vec<crate::api::dto::HostDto>, OpsError>> {
            Box::pin(async { Err(OpsError::Ended) })
        }
        fn host(&self, _: String) -> BoxFuture<Result<Option<crate::api::dto::HostDto>, OpsError>> {
            Box::pin(async { Err(OpsError::Ended) })
        }
        fn add_urls(
            &self,
            _: crate::api::dto::AddUrlsDto,
            _: crawl_core::control::Requester,
        ) -> BoxFuture<Result<Vec<crate::api::dto::UrlAnswerDto>, OpsError>> {
            Box::pin(async { Err(OpsError::Ended) })
        }
        fn pause(
            &self,
            _: Option<crawl_core::control::HostMatch>,
            _: crawl_core::control::Requester,
        ) -> BoxFuture<Result<crate::api::dto::ActionDto, OpsError>> {
            Box::pin(async { Err(OpsError::Ended) })
        }
        fn resume(
            &self,
            _: Option<crawl_core::control::HostMatch>,
            _: crawl_core::control::Requester,
        ) -> BoxFuture<Result<crate::api::dto::ActionDto, OpsError>> {
            Box::pin(async { Err(OpsError::Ended) })
        }
        fn politeness(
            &self,
            _: crawl_core::control::HostMatch,
            _: crate::api::dto::PolitenessDto,
            _: crawl_core::control::Requester,
        ) -> BoxFuture<Result<crate::api::dto::ActionDto, OpsError>> {
            Box::pin(async { Err(OpsError::Ended) })
        }
        fn drop_queue(
            &self,
            _: crawl_core::control::HostMatch,
            _: crawl_core::control::Requester,
        ) -> BoxFuture<Result<crate::api::dto::DropDto, OpsError>> {
            Box::pin(async { Err(OpsError::Ended) })
        }
        fn operator(&self) -> BoxFuture<Result<crawl_core::control::OperatorState, OpsError>> {
            Box::pin(async { Err(OpsError::Ended) })
        }
        fn operate(&self, _: crawl_core::control::Change) -> BoxFuture<Result<bool, OpsError>> {
            Box::pin(async { Err(OpsError::Ended) })
        }
        fn alert_actions(&self) -> Vec<crawl_core::control::alerts::AlertAction> {
            Vec::new()
        }
    }

    fn exchange(addr: SocketAddr, request: &str) -> String {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn serves_http_on_its_own_thread_and_stops_when_dropped() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let api = Api::new(Arc::new(Ended), None, Auth::open(), 64);
        let server = ApiServer::start(listener, None, api).unwrap();
        let addr = server.addr();
        let out = exchange(
            addr,
            "GET /v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        );
        assert!(out.starts_with("HTTP/1.1 503"), "{out}");
        assert!(
            out.contains(r#"{"error":{"code":"ended","message":"the crawl has ended"}}"#),
            "{out}"
        );
        // A chunked body past the cap.
        let chunk = "x".repeat(100);
        let out = exchange(
            addr,
            &format!(
                "POST /v1/urls HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n64\r\n{chunk}\r\n0\r\n\r\n"
            ),
        );
        assert!(out.starts_with("HTTP/1.1 413"), "{out}");
        drop(server);
        assert!(
            std::net::TcpStream::connect(addr).is_err(),
            "still listening"
        );
    }
}
