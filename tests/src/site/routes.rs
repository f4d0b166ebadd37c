//! Override routes for specific tests (status, headers, body, delay, stall, trickle, close, sequences, gzip bomb)
//! and the response body type that plays them out while keeping the in-flight guard alive.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use flate2::{Compress, Compression, Crc, FlushCompress};
use hyper::StatusCode;
use hyper::body::{Body, Frame, SizeHint};
use hyper::header::{HeaderName, HeaderValue};
use tokio::time::Sleep;

use super::log::InFlight;

/// Size of [`Route::gzip_bomb`] once decompressed: 100 MiB of zeros.
pub const GZIP_BOMB_SIZE: usize = 100 * 1024 * 1024;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Stall {
    pub after: usize,
    /// `None`: hang until the connection is closed
    pub pause: Option<Duration>,
}

/// A fixed reply, possibly with timing effects.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    pub status: StatusCode,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub body: Bytes,
    pub delay: Option<Duration>,
    pub stall: Option<Stall>,
    pub trickle: Option<(usize, Duration)>,
    pub sized: bool,
}

#[derive(Debug)]
enum RouteKind {
    Reply(Reply),
    Close,
    Sequence {
        steps: Vec<Route>,
        next: AtomicUsize,
    },
}

/// What a host answers on one path instead of the generated content. Build with the constructors, then adjust
/// with the modifiers (which apply to plain replies; on `close()` and `sequence()` they do nothing).
#[derive(Debug)]
pub struct Route {
    kind: RouteKind,
}

/// The step a route resolves to for one request.
pub(crate) enum Resolved<'a> {
    Reply(&'a Reply),
    Close,
}

impl Route {
    /// A reply with `status`, no headers and an empty body. An invalid status code gives 500.
    pub fn new(status: u16) -> Self {
        let status = StatusCode::from_u16(status).unwrap_or_else(|_| {
            tracing::warn!(status, "invalid status code in test route, using 500");
            StatusCode::INTERNAL_SERVER_ERROR
        });
        Self {
            kind: RouteKind::Reply(Reply {
                status,
                headers: Vec::new(),
                body: Bytes::new(),
                delay: None,
                stall: None,
                trickle: None,
                sized: true,
            }),
        }
    }

    /// 200 `text/html` with `body`.
    pub fn ok(body: impl Into<Bytes>) -> Self {
        Self::new(200)
            .header("content-type", "text/html; charset=utf-8")
            .body(body)
    }

    /// `status` with a `text/plain` body.
    pub fn text(status: u16, body: impl Into<Bytes>) -> Self {
        Self::new(status)
            .header("content-type", "text/plain; charset=utf-8")
            .body(body)
    }

    /// 404 with a small HTML body.
    pub fn not_found() -> Self {
        Self::new(404)
            .header("content-type", "text/html; charset=utf-8")
            .body(super::render::NOT_FOUND)
    }

    /// A redirect (`status` 301, 302, 303, 307 or 308) to `location`, used verbatim (absolute or relative).
    pub fn redirect(status: u16, location: &str) -> Self {
        Self::new(status)
            .header("location", location)
            .header("content-type", "text/html; charset=utf-8")
    }

    /// `status` (typically 503 or 429) with `Retry-After: value` (seconds like `"2"` or an HTTP date).
    pub fn retry_after(status: u16, value: &str) -> Self {
        Self::text(status, "try again later\n").header("retry-after", value)
    }

    /// 200 with `Content-Encoding: gzip`: 100 MiB of zeros compressed to about 100 KB. Built once per process.
    pub fn gzip_bomb() -> Self {
        static BOMB: OnceLock<Bytes> = OnceLock::new();
        let body = BOMB.get_or_init(|| gzip_zeros(GZIP_BOMB_SIZE)).clone();
        Self::bomb_reply(body)
    }

    /// Like [`Route::gzip_bomb`] with `uncompressed` zero bytes (built on each call).
    pub fn gzip_bomb_of(uncompressed: usize) -> Self {
        Self::bomb_reply(gzip_zeros(uncompressed))
    }

    fn bomb_reply(body: Bytes) -> Self {
        Self::ok(body).header("content-encoding", "gzip")
    }

    /// 200 `text/html` with a body of exactly `len` bytes of HTML-ish text.
    pub fn large(len: usize) -> Self {
        Self::ok(large_body(len))
    }

    /// Close the connection without sending a response.
    pub fn close() -> Self {
        Self {
            kind: RouteKind::Close,
        }
    }

    /// Step `i` answers the `i`-th hit; the last step repeats. An empty list answers 404.
    pub fn sequence(steps: Vec<Route>) -> Self {
        if steps.is_empty() {
            return Self::not_found();
        }
        Self {
            kind: RouteKind::Sequence {
                steps,
                next: AtomicUsize::new(0),
            },
        }
    }

    fn map(mut self, f: impl FnOnce(&mut Reply)) -> Self {
        if let RouteKind::Reply(r) = &mut self.kind {
            f(r);
        }
        self
    }

    /// Sets the status. An invalid code is ignored.
    pub fn status(self, status: u16) -> Self {
        self.map(|r| {
            if let Ok(s) = StatusCode::from_u16(status) {
                r.status = s;
            }
        })
    }

    /// Sets a header, replacing earlier values of the same name. Invalid names or values are ignored.
    pub fn header(self, name: &str, value: &str) -> Self {
        self.map(|r| {
            if let Some((n, v)) = header_pair(name, value) {
                r.headers.retain(|(k, _)| *k != n);
                r.headers.push((n, v));
            }
        })
    }

    /// Adds a header value, keeping earlier values of the same name.
    pub fn add_header(self, name: &str, value: &str) -> Self {
        self.map(|r| {
            if let Some(pair) = header_pair(name, value) {
                r.headers.push(pair);
            }
        })
    }

    pub fn body(self, body: impl Into<Bytes>) -> Self {
        let body = body.into();
        self.map(|r| r.body = body)
    }

    /// gzip-compresses the current body and sets `Content-Encoding: gzip`.
    pub fn gzip_body(self) -> Self {
        self.map(|r| {
            if let Some(z) = super::render::gzip(&r.body) {
                r.body = z;
                r.headers
                    .retain(|(k, _)| *k != hyper::header::CONTENT_ENCODING);
                r.headers.push((
                    hyper::header::CONTENT_ENCODING,
                    HeaderValue::from_static("gzip"),
                ));
            }
        })
    }

    /// Waits `d` before sending the response head.
    pub fn delay(self, d: Duration) -> Self {
        self.map(|r| r.delay = Some(d))
    }

    /// Sends the first `bytes` of the body, then hangs until the connection is closed.
    pub fn stall_after(self, bytes: usize) -> Self {
        self.map(|r| {
            r.stall = Some(Stall {
                after: bytes,
                pause: None,
            })
        })
    }

    /// Sends the first `bytes` of the body, pauses for `pause`, then sends the rest.
    pub fn stall_after_for(self, bytes: usize, pause: Duration) -> Self {
        self.map(|r| {
            r.stall = Some(Stall {
                after: bytes,
                pause: Some(pause),
            })
        })
    }

    /// Sends the body `chunk` bytes at a time, waiting `every` between chunks.
    pub fn trickle(self, chunk: usize, every: Duration) -> Self {
        self.map(|r| r.trickle = Some((chunk.max(1), every)))
    }

    /// Sends no `Content-Length` (chunked on HTTP/1.1).
    pub fn chunked(self) -> Self {
        self.map(|r| r.sized = false)
    }

    /// The step for this request (advances sequences).
    pub(crate) fn resolve(&self) -> Resolved<'_> {
        match &self.kind {
            RouteKind::Reply(r) => Resolved::Reply(r),
            RouteKind::Close => Resolved::Close,
            RouteKind::Sequence { steps, next } => {
                let i = next
                    .fetch_add(1, Ordering::SeqCst)
                    .min(steps.len().saturating_sub(1));
                match steps.get(i) {
                    Some(step) => step.resolve(),
                    None => Resolved::Close,
                }
            }
        }
    }
}

fn header_pair(name: &str, value: &str) -> Option<(HeaderName, HeaderValue)> {
    match (
        HeaderName::from_bytes(name.as_bytes()),
        HeaderValue::from_str(value),
    ) {
        (Ok(n), Ok(v)) => Some((n, v)),
        _ => {
            tracing::warn!(name, value, "invalid header in test route, ignored");
            None
        }
    }
}

/// Exactly `len` bytes: an HTML frame around repeated text when it fits.
fn large_body(len: usize) -> Bytes {
    const HEAD: &[u8] = b"<!DOCTYPE html>\n<html><body><p>";
    const TAIL: &[u8] = b"</p></body></html>\n";
    const TEXT: &[u8] = b"large body text for size limits. ";
    let mut v = Vec::with_capacity(len);
    let framed = len >= HEAD.len() + TAIL.len();
    if framed {
        v.extend_from_slice(HEAD);
    }
    let fill_to = if framed { len - TAIL.len() } else { len };
    while v.len() < fill_to {
        let take = (fill_to - v.len()).min(TEXT.len());
        v.extend_from_slice(&TEXT[..take]);
    }
    if framed {
        v.extend_from_slice(TAIL);
    }
    Bytes::from(v)
}

/// Raw deflate of `len` zeros from a fresh compressor, ended by a sync flush (byte-aligned, not final), so the
/// blocks only refer to their own data and can be repeated.
fn deflate_zeros(len: usize) -> Vec<u8> {
    let zeros = vec![0u8; len];
    let mut c = Compress::new(Compression::best(), false);
    let mut out: Vec<u8> = Vec::with_capacity(len / 256 + 4096);
    for _ in 0..10_000 {
        if out.capacity() - out.len() < 1024 {
            out.reserve(64 * 1024);
        }
        let done_in = c.total_in() as usize;
        let input = zeros.get(done_in..).unwrap_or(&[]);
        if c.compress_vec(input, &mut out, FlushCompress::Sync)
            .is_err()
        {
            break;
        }
        // the flush is complete once all input is in and the output did not fill up
        if c.total_in() as usize >= len && out.len() < out.capacity() {
            break;
        }
    }
    out
}

/// A valid gzip member whose content is `len` zero bytes, built from one repeated 1 MiB deflate segment.
fn gzip_zeros(len: usize) -> Bytes {
    const SEG: usize = 1024 * 1024;
    let seg = deflate_zeros(SEG.min(len.max(1)));
    let full = len / SEG;
    let rest = len % SEG;
    let tail = if rest > 0 && full > 0 {
        deflate_zeros(rest)
    } else {
        Vec::new()
    };
    let mut out = Vec::with_capacity(seg.len() * full.max(1) + tail.len() + 32);
    out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]);
    let mut crc = Crc::new();
    let zero_seg = vec![0u8; SEG.min(len)];
    if full == 0 {
        if len > 0 {
            out.extend_from_slice(&seg);
            crc.update(&zero_seg[..len]);
        }
    } else {
        for _ in 0..full {
            out.extend_from_slice(&seg);
            crc.update(&zero_seg);
        }
        out.extend_from_slice(&tail);
        crc.update(&zero_seg[..rest]);
    }
    // final empty fixed-Huffman block
    out.extend_from_slice(&[0x03, 0x00]);
    out.extend_from_slice(&crc.sum().to_le_bytes());
    out.extend_from_slice(&(len as u32).to_le_bytes());
    Bytes::from(out)
}

/// Timing script of an override reply's body.
struct Script {
    stall: Option<Stall>,
    stalled: bool,
    hang: bool,
    trickle: Option<(usize, Duration)>,
    wait_next: bool,
    sleep: Option<Pin<Box<Sleep>>>,
}

/// The response body of every request: a whole buffer, or one played out by a [`Script`]. It owns the in-flight
/// guard, so dropping it (fully sent or abandoned) ends the request in the log.
pub(crate) struct SiteBody {
    data: Bytes,
    pos: usize,
    sized: bool,
    script: Option<Box<Script>>,
    guard: Option<InFlight>,
}

impl SiteBody {
    pub fn full(data: Bytes, guard: InFlight) -> Self {
        Self {
            data,
            pos: 0,
            sized: true,
            script: None,
            guard: Some(guard),
        }
    }

    pub fn scripted(reply: &Reply, guard: InFlight) -> Self {
        let script = (reply.stall.is_some() || reply.trickle.is_some()).then(|| {
            Box::new(Script {
                stall: reply.stall,
                stalled: false,
                hang: false,
                trickle: reply.trickle,
                wait_next: false,
                sleep: None,
            })
        });
        Self {
            data: reply.body.clone(),
            pos: 0,
            sized: reply.sized,
            script,
            guard: Some(guard),
        }
    }

    fn emit(&mut self, end: usize) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let end = end.min(self.data.len());
        let chunk = self.data.slice(self.pos..end);
        self.pos = end;
        if let Some(g) = &self.guard {
            g.sent(chunk.len());
        }
        if self.pos >= self.data.len() && self.script.is_none() {
            // whole buffer sent: end the request now rather than when hyper drops the body
            self.guard = None;
        }
        Poll::Ready(Some(Ok(Frame::data(chunk))))
    }
}

impl Body for SiteBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        let len = this.data.len();
        let Some(script) = this.script.as_mut() else {
            if this.pos >= len {
                this.guard = None;
                return Poll::Ready(None);
            }
            return this.emit(len);
        };
        loop {
            if let Some(sleep) = script.sleep.as_mut() {
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                script.sleep = None;
            }
            if script.hang {
                // until the connection goes away; nothing will wake us
                return Poll::Pending;
            }
            if let Some(stall) = script.stall
                && !script.stalled
                && this.pos >= stall.after
                && this.pos < len
            {
                script.stalled = true;
                match stall.pause {
                    None => script.hang = true,
                    Some(d) => script.sleep = Some(Box::pin(tokio::time::sleep(d))),
                }
                continue;
            }
            if this.pos >= len {
                this.guard = None;
                return Poll::Ready(None);
            }
            let mut end = len;
            if let Some(stall) = script.stall
                && !script.stalled
            {
                end = end.min(stall.after.max(this.pos + 1));
            }
            if let Some((chunk, every)) = script.trickle {
                if script.wait_next {
                    script.wait_next = false;
                    script.sleep = Some(Box::pin(tokio::time::sleep(every)));
                    continue;
                }
                script.wait_next = true;
                end = end.min(this.pos + chunk);
            }
            return this.emit(end);
        }
    }

    fn is_end_stream(&self) -> bool {
        self.pos >= self.data.len()
    }

    fn size_hint(&self) -> SizeHint {
        if self.sized {
            SizeHint::with_exact((self.data.len() - self.pos.min(self.data.len())) as u64)
        } else {
            SizeHint::default()
        }
    }
}
