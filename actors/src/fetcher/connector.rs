//! The connector under the HTTP client: a direct TCP connection (HttpConnector with the guarded resolver), or a
//! tunnel opened by the proxy-chain actor. TLS (hyper-rustls) wraps either, so HTTPS and HTTP/2 run inside the tunnel
//! and hyper pools tunnelled connections like direct ones. The chain used is attached to the connection
//! (`ProxyUsed`), so every response says how it travelled.

use crate::proxy::messages::{OpenChain, Opened, ProxyFailure};
use crate::proxy::socks::ChainStream;
use actix::Recipient;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::TokioIo;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::net::TcpStream;

/// Which way a response's connection went: a chain name or "direct". Found in the response extensions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyUsed(pub String);

/// The error a proxied connect ends in; travels through hyper-util's error chain to `classify`.
#[derive(Debug, thiserror::Error)]
pub enum ProxyConnectError {
    /// Every chain tried failed with proxy faults, or none was healthy.
    #[error("{0}")]
    Proxy(String),
    /// The target could not be reached through the chain (SOCKS replies 03-06).
    #[error("{0}")]
    Target(String),
}

/// Direct or tunnelled.
pub enum Conn {
    Direct(TokioIo<TcpStream>, bool),
    Chain(TokioIo<ChainStream>, String),
}

impl Connection for Conn {
    fn connected(&self) -> Connected {
        match self {
            Conn::Direct(io, proxied_config) => {
                let c = io.connected();
                if *proxied_config {
                    c.extra(ProxyUsed("direct".into()))
                } else {
                    c
                }
            }
            Conn::Chain(_, chain) => Connected::new().extra(ProxyUsed(chain.clone())),
        }
    }
}

impl Read for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Direct(io, _) => Pin::new(io).poll_read(cx, buf),
            Conn::Chain(io, _) => Pin::new(io).poll_read(cx, buf),
        }
    }
}

impl Write for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Direct(io, _) => Pin::new(io).poll_write(cx, buf),
            Conn::Chain(io, _) => Pin::new(io).poll_write(cx, buf),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Direct(io, _) => Pin::new(io).poll_flush(cx),
            Conn::Chain(io, _) => Pin::new(io).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Direct(io, _) => Pin::new(io).poll_shutdown(cx),
            Conn::Chain(io, _) => Pin::new(io).poll_shutdown(cx),
        }
    }
}

/// Direct connections, or chains through the proxy-chain actor when one is configured.
#[derive(Clone)]
pub struct ProxyConnector<R: Clone> {
    pub direct: HttpConnector<R>,
    pub proxy: Option<Recipient<OpenChain>>,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl<R> tower_service::Service<http::Uri> for ProxyConnector<R>
where
    R: Clone + Send + Sync + 'static,
    HttpConnector<R>: tower_service::Service<http::Uri, Response = TokioIo<TcpStream>> + Send,
    <HttpConnector<R> as tower_service::Service<http::Uri>>::Error: Into<BoxError>,
    <HttpConnector<R> as tower_service::Service<http::Uri>>::Future: Send + 'static,
{
    type Response = Conn;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Conn, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.direct.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let mut direct = self.direct.clone();
        let Some(proxy) = self.proxy.clone() else {
            let fut = direct.call(uri);
            return Box::pin(async move {
                fut.await
                    .map(|io| Conn::Direct(io, false))
                    .map_err(Into::into)
            });
        };
        Box::pin(async move {
            let host = uri
                .host()
                .unwrap_or_default()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned();
            let port = uri
                .port_u16()
                .unwrap_or(if uri.scheme_str() == Some("https") {
                    443
                } else {
                    80
                });
            let mut tried: Vec<String> = Vec::new();
            loop {
                let msg = OpenChain {
                    host: host.clone(),
                    port,
                    tried: tried.clone(),
                    trace: crawl_observability::trace::current(),
                };
                match proxy.send(msg).await {
                    Ok(Ok(Opened::Chain { chain, stream })) => {
                        return Ok(Conn::Chain(TokioIo::new(stream), chain));
                    }
                    Ok(Ok(Opened::Direct { .. })) => {
                        return direct
                            .call(uri)
                            .await
                            .map(|io| Conn::Direct(io, true))
                            .map_err(Into::into);
                    }
                    Ok(Err(ProxyFailure::Fault { chain, detail })) => {
                        tracing::debug!(host, chain, detail, "proxy chain failed; trying another");
                        tried.push(chain);
                    }
                    Ok(Err(e @ ProxyFailure::Target { .. })) => {
                        return Err(Box::new(ProxyConnectError::Target(e.to_string())) as BoxError);
                    }
                    Ok(Err(e @ ProxyFailure::NoChain { .. })) => {
                        return Err(Box::new(ProxyConnectError::Proxy(e.to_string())) as BoxError);
                    }
                    Err(e) => {
                        return Err(Box::new(ProxyConnectError::Proxy(format!(
                            "proxy-chain actor unavailable: {e}"
                        ))) as BoxError);
                    }
                }
            }
        })
    }
}
