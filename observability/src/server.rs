//! The `/metrics` endpoint: a small HTTP/1.1 server on its own thread, so scrapes never wait on the actors.

use crate::TelemetryError;
use crate::metrics::{OPENMETRICS_CONTENT_TYPE, TEXT_CONTENT_TYPE, metrics};
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use std::net::SocketAddr;

/// A running metrics server; it stops when dropped.
#[derive(Debug)]
pub struct MetricsServer {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl MetricsServer {
    /// Binds `addr` now (so a taken port is an error at startup) and serves on a thread of its own.
    pub fn start(addr: SocketAddr) -> Result<MetricsServer, TelemetryError> {
        let listener = std::net::TcpListener::bind(addr).map_err(|e| TelemetryError::Listen {
            addr,
            detail: e.to_string(),
        })?;
        let local = listener.local_addr().map_err(|e| TelemetryError::Listen {
            addr,
            detail: e.to_string(),
        })?;
        listener
            .set_nonblocking(true)
            .map_err(|e| TelemetryError::Listen {
                addr,
                detail: e.to_string(),
            })?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| TelemetryError::Listen {
                addr,
                detail: e.to_string(),
            })?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || rt.block_on(serve(listener, rx)))
            .map_err(|e| TelemetryError::Listen {
                addr,
                detail: e.to_string(),
            })?;
        tracing::info!(addr = %local, "metrics listening");
        Ok(MetricsServer {
            addr: local,
            stop: Some(tx),
            thread: Some(thread),
        })
    }

    /// The bound address (the real port when 0 was asked).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn serve(listener: std::net::TcpListener, mut stop: tokio::sync::oneshot::Receiver<()>) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, "metrics listener unusable");
            return;
        }
    };
    loop {
        let accepted = tokio::select! {
            _ = &mut stop => return,
            a = listener.accept() => a,
        };
        let Ok((stream, _)) = accepted else {
            continue;
        };
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            let svc =
                hyper::service::service_fn(
                    |req| async move { Ok::<_, hyper::Error>(answer(&req)) },
                );
            let conn = hyper::server::conn::http1::Builder::new()
                .header_read_timeout(std::time::Duration::from_secs(10))
                .timer(hyper_util::rt::TokioTimer::new())
                .serve_connection(io, svc);
            let _ = conn.await;
        });
    }
}

/// Whether an Accept header asks for OpenMetrics.
pub fn wants_openmetrics(accept: &str) -> bool {
    accept
        .split(',')
        .any(|part| part.trim().starts_with("application/openmetrics-text"))
}

fn answer(req: &Request<Incoming>) -> Response<Full<Bytes>> {
    let reply = |status: StatusCode, ctype: &str, body: String| {
        let mut r = Response::new(Full::new(Bytes::from(body)));
        *r.status_mut() = status;
        if let Ok(v) = hyper::header::HeaderValue::from_str(ctype) {
            r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
        }
        r
    };
    if req.method() != hyper::Method::GET && req.method() != hyper::Method::HEAD {
        return reply(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain",
            "GET only\n".into(),
        );
    }
    match req.uri().path() {
        "/metrics" => {
            let accept = req
                .headers()
                .get(hyper::header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            if wants_openmetrics(accept) {
                reply(
                    StatusCode::OK,
                    OPENMETRICS_CONTENT_TYPE,
                    metrics().openmetrics(),
                )
            } else {
                reply(
                    StatusCode::OK,
                    TEXT_CONTENT_TYPE,
                    metrics().prometheus_text(),
                )
            }
        }
        "/healthz" => reply(StatusCode::OK, "text/plain", "ok\n".into()),
        _ => reply(
            StatusCode::NOT_FOUND,
            "text/plain",
            "not found; try /metrics\n".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_negotiation() {
        assert!(wants_openmetrics(
            "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
        ));
        assert!(!wants_openmetrics("text/plain"));
        assert!(!wants_openmetrics(""));
    }

    #[test]
    fn serves_both_formats_on_an_ephemeral_port() {
        use std::io::{Read, Write};
        let server = MetricsServer::start("127.0.0.1:0".parse().expect("addr")).expect("start");
        let get = |accept: &str| {
            let mut s = std::net::TcpStream::connect(server.addr()).expect("connect");
            write!(
                s,
                "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"
            )
            .expect("write");
            let mut out = String::new();
            s.read_to_string(&mut out).expect("read");
            out
        };
        let om = get("application/openmetrics-text; version=1.0.0");
        assert!(om.contains("application/openmetrics-text"), "{om}");
        assert!(om.contains("# EOF"));
        let text = get("text/plain");
        assert!(text.contains("text/plain; version=0.0.4"));
        assert!(text.contains("crawl_build_info"));
        assert!(!text.contains("# EOF"));
    }
}
