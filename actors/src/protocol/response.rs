//! A response as the fetcher received it, handed to the parser (and, cut at the body limit, carried by the fetcher's
//! too-large error).

use bytes::Bytes;
use http::header::HeaderMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Durations measured for one request.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timings {
    /// When the request started (None in hand-made responses).
    pub started: Option<Instant>,
    /// Request start to response headers.
    pub headers: Duration,
    /// Response headers to the end of the body.
    pub body: Duration,
    /// Request start to the end of the body.
    pub total: Duration,
}

/// A response as received: status, headers and the body still content-encoded.
#[derive(Debug, Clone)]
pub struct RawResponse {
    pub status: u16,
    pub headers: HeaderMap,
    pub version: http::Version,
    /// Raw bytes as received, still content-encoded.
    pub body: Bytes,
    /// Peer address of the connection, when the connector reported it.
    pub remote_addr: Option<SocketAddr>,
    /// The headers the request was sent with (for the archive's request record; empty unless the client keeps
    /// request headers).
    pub request_headers: HeaderMap,
    /// When the request was sent (wall clock).
    pub sent_at: std::time::SystemTime,
    /// The body stops at `max_body_bytes`: the rest was not read (only in the fetcher's too-large error).
    pub truncated: bool,
    /// The request carried validators of an earlier fetch (`If-None-Match`, `If-Modified-Since`): only then is a
    /// `304 Not Modified` a valid answer.
    pub conditional: bool,
    /// The proxy chain the connection went through, or "direct"; None when no proxy is configured.
    pub proxy: Option<String>,
    pub timings: Timings,
}
