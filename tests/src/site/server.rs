//! The HTTP side of a test site: one hyper listener per host (HTTP/1.1 and h2c), request dispatch to override
//! routes or generated content, and the task group that lets `Site::shutdown` stop everything it spawned.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::{self, HeaderName, HeaderValue};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::{Notify, watch};

use super::changing::{Misbehavior, PageKey, Schedule};
use super::conditional::{http_date, not_modified};
use super::graph::{Kind, Target, wide_ok};
use super::log::{InFlight, Recorder, RequestLog};
use super::render::{self, NOT_FOUND, Renderer, accepts_gzip, gzip};
use super::routes::{Resolved, Route, SiteBody};

/// State shared by all hosts of a site.
pub(crate) struct Shared {
    pub render: Renderer,
    pub rec: Arc<Recorder>,
    /// per host: exact path (or path+query) -> override
    pub routes: Vec<RwLock<HashMap<String, Arc<Route>>>>,
    /// per host: the override of every path without one of its own
    pub host_routes: Vec<RwLock<Option<Arc<Route>>>>,
    pub has_routes: AtomicBool,
}

impl Shared {
    fn route(&self, host: usize, path_and_query: &str, path: &str) -> Option<Arc<Route>> {
        if !self.has_routes.load(Ordering::Acquire) {
            return None;
        }
        let exact = {
            let map = self
                .routes
                .get(host)?
                .read()
                .unwrap_or_else(|e| e.into_inner());
            map.get(path_and_query).or_else(|| map.get(path)).cloned()
        };
        exact.or_else(|| {
            self.host_routes
                .get(host)?
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .clone()
        })
    }
}

/// The connection was closed on purpose (`Route::close`).
#[derive(Debug, thiserror::Error)]
#[error("connection closed by test route")]
pub(crate) struct Closed;

/// Every task a site spawns, so shutdown can stop them all and wait until none is left.
#[derive(Clone)]
pub(crate) struct Tasks {
    stop: watch::Receiver<bool>,
    live: Arc<AtomicUsize>,
    idle: Arc<Notify>,
}

struct LiveGuard {
    live: Arc<AtomicUsize>,
    idle: Arc<Notify>,
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        if self.live.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.idle.notify_waiters();
        }
    }
}

impl Tasks {
    pub fn new(stop: watch::Receiver<bool>) -> Self {
        Self {
            stop,
            live: Arc::new(AtomicUsize::new(0)),
            idle: Arc::new(Notify::new()),
        }
    }

    pub fn live(&self) -> usize {
        self.live.load(Ordering::Acquire)
    }

    /// Runs `fut` until it ends or the site stops (then it is dropped).
    pub fn spawn<F: Future<Output = ()> + Send + 'static>(&self, fut: F) {
        self.live.fetch_add(1, Ordering::AcqRel);
        let guard = LiveGuard {
            live: Arc::clone(&self.live),
            idle: Arc::clone(&self.idle),
        };
        let mut stop = self.stop.clone();
        tokio::spawn(async move {
            let _guard = guard;
            tokio::select! {
                biased;
                _ = stop.wait_for(|s| *s) => {}
                () = fut => {}
            }
        });
    }

    /// Waits until no task is left, at most `limit`. Returns whether none is left.
    pub async fn drained(&self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let notified = self.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.live() == 0 {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.live() == 0;
            }
        }
    }
}

/// hyper's executor (HTTP/2 streams) spawning into the site's task group.
#[derive(Clone)]
struct Exec(Tasks);

impl<F> hyper::rt::Executor<F> for Exec
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, fut: F) {
        self.0.spawn(async move {
            let _ = fut.await;
        });
    }
}

/// Counts a connection as open until its task ends (the peer closed it, it failed, or the site stopped).
struct OpenConnection {
    shared: Arc<Shared>,
    host: usize,
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        if let Some(s) = self.shared.rec.stats(self.host) {
            s.open.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Accepts connections for `host` until the site stops.
pub(crate) async fn accept_loop(
    listener: TcpListener,
    host: usize,
    shared: Arc<Shared>,
    tasks: Tasks,
) {
    loop {
        match listener.accept().await {
            Ok((stream, _peer)) => {
                let _ = stream.set_nodelay(true);
                if let Some(s) = shared.rec.stats(host) {
                    s.connections.fetch_add(1, Ordering::Relaxed);
                    s.open.fetch_add(1, Ordering::SeqCst);
                }
                let shared = Arc::clone(&shared);
                let exec = Exec(tasks.clone());
                let open = OpenConnection {
                    shared: Arc::clone(&shared),
                    host,
                };
                tasks.spawn(async move {
                    let _open = open;
                    let builder = auto::Builder::new(exec);
                    let svc = hyper::service::service_fn(move |req| {
                        handle(Arc::clone(&shared), host, req)
                    });
                    if let Err(e) = builder.serve_connection(TokioIo::new(stream), svc).await {
                        tracing::debug!(host, error = %e, "test site connection ended with error");
                    }
                });
            }
            Err(e) => {
                // e.g. too many open files: back off instead of spinning
                tracing::warn!(host, error = %e, "test site accept failed");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

fn header_str(req: &Request<Incoming>, name: header::HeaderName) -> Option<String> {
    req.headers()
        .get(name)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

async fn handle(
    shared: Arc<Shared>,
    host: usize,
    req: Request<Incoming>,
) -> Result<Response<SiteBody>, Closed> {
    let start = Instant::now();
    if shared.render.spec.delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(shared.render.spec.delay_ms)).await;
    }
    let mut guard = shared.rec.begin(host);
    let path_and_query = req.uri().path_and_query().map_or("/", |p| p.as_str());
    let path = req.uri().path();
    let route = shared.route(host, path_and_query, path);
    let step = route.as_deref().map(Route::resolve);
    let reply = match &step {
        Some(Resolved::Reply(r)) => Some((*r).clone()),
        _ => None,
    };
    let close = matches!(step, Some(Resolved::Close));
    let cond = Cond {
        if_none_match: header_str(&req, header::IF_NONE_MATCH),
        if_modified_since: header_str(&req, header::IF_MODIFIED_SINCE),
    };
    let generated = if route.is_none() {
        let gz = shared.render.spec.gzip
            && req
                .headers()
                .get(header::ACCEPT_ENCODING)
                .and_then(|v| v.to_str().ok())
                .is_some_and(accepts_gzip);
        Some(generate(&shared.render, host, path, gz, &cond))
    } else {
        None
    };
    if shared.rec.enabled() {
        let status = match (&reply, &generated) {
            (Some(r), _) => r.status.as_u16(),
            (None, Some(g)) => g.status().as_u16(),
            _ => 0,
        };
        let entry = RequestLog {
            host,
            method: req.method().as_str().to_owned(),
            path: path_and_query.to_owned(),
            version: req.version(),
            user_agent: header_str(&req, header::USER_AGENT),
            referer: header_str(&req, header::REFERER),
            accept_encoding: header_str(&req, header::ACCEPT_ENCODING),
            trace_header: req
                .headers()
                .get("traceparent")
                .or_else(|| req.headers().get("tracestate"))
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
            start,
            end: None,
            status,
            conditional: cond.if_none_match.is_some() || cond.if_modified_since.is_some(),
            not_modified: status == 304,
            if_none_match: cond.if_none_match,
            if_modified_since: cond.if_modified_since,
        };
        shared.rec.record(&mut guard, entry);
    }
    drop(req);
    if close {
        return Err(Closed);
    }
    if let Some(r) = reply {
        if let Some(d) = r.delay {
            tokio::time::sleep(d).await;
        }
        let mut resp = Response::new(SiteBody::scripted(&r, guard));
        *resp.status_mut() = r.status;
        let headers = resp.headers_mut();
        for (k, v) in r.headers {
            headers.append(k, v);
        }
        return Ok(resp);
    }
    match generated {
        Some(g) => Ok(g.into_response(guard)),
        None => Err(Closed),
    }
}

/// A generated response before the body type is attached.
pub(crate) struct Generated {
    status: StatusCode,
    content_type: &'static str,
    body: Bytes,
    location: Option<String>,
    gzipped: bool,
    vary: bool,
    /// more headers (validators and `Date` in changing mode)
    extra: Vec<(HeaderName, HeaderValue)>,
}

impl Generated {
    fn status(&self) -> StatusCode {
        self.status
    }

    fn into_response(self, guard: InFlight) -> Response<SiteBody> {
        let mut resp = Response::new(SiteBody::full(self.body, guard));
        *resp.status_mut() = self.status;
        let h = resp.headers_mut();
        if !self.content_type.is_empty() {
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(self.content_type),
            );
        }
        if self.vary {
            h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
        }
        if self.gzipped {
            h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        }
        if let Some(loc) = self.location.and_then(|l| HeaderValue::from_str(&l).ok()) {
            h.insert(header::LOCATION, loc);
        }
        for (k, v) in self.extra {
            h.append(k, v);
        }
        resp
    }
}

const HTML: &str = "text/html; charset=utf-8";

/// Parses a canonical decimal number (no sign, no leading zeros).
fn num(s: &str) -> Option<usize> {
    let ok =
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'));
    if ok { s.parse().ok() } else { None }
}

fn ok(content_type: &'static str, body: Bytes, gz: bool) -> Generated {
    let (body, gzipped) = match gz.then(|| gzip(&body)).flatten() {
        Some(z) => (z, true),
        None => (body, false),
    };
    Generated {
        status: StatusCode::OK,
        content_type,
        body,
        location: None,
        gzipped,
        vary: true,
        extra: Vec::new(),
    }
}

fn not_found() -> Generated {
    Generated {
        status: StatusCode::NOT_FOUND,
        content_type: HTML,
        body: Bytes::from_static(NOT_FOUND),
        location: None,
        gzipped: false,
        vary: false,
        extra: Vec::new(),
    }
}

/// The conditional headers of a request.
pub(crate) struct Cond {
    pub if_none_match: Option<String>,
    pub if_modified_since: Option<String>,
}

/// The generated answer for `path` on `host`.
pub(crate) fn generate(r: &Renderer, host: usize, path: &str, gz: bool, cond: &Cond) -> Generated {
    if r.spec.changing.is_some()
        && let Some(g) = changing_page(r, host, path, gz, cond)
    {
        return g;
    }
    let spec = &r.spec;
    let pages = spec.pages_per_host;
    let leaf = |kind: Kind, n: usize| ok(HTML, r.leaf(&Target { host, kind, n }), gz);
    if spec.embeds
        && let Some((content_type, body)) = render::static_file(spec, path)
    {
        return ok(content_type, body, false);
    }
    if path == "/" {
        return ok(HTML, r.page(host, 0), gz);
    }
    let (dir, rest) = match path.get(1..).and_then(|p| p.split_once('/')) {
        Some((d, rest)) => (d, rest),
        None => (path.get(1..).unwrap_or(""), ""),
    };
    let n = num(rest);
    match (dir, n) {
        ("page", Some(n)) if n > 0 && n < pages => ok(HTML, r.page(host, n), gz),
        ("private", Some(n)) if n < pages => leaf(Kind::Private, n),
        ("nofollow", Some(n)) if n < pages => leaf(Kind::Nofollow, n),
        ("orphan", Some(n)) if spec.sitemaps && n < spec.orphans => leaf(Kind::Orphan, n),
        ("w", Some(n)) if wide_ok(spec, host, n) => ok(HTML, r.wide_page(host, n), gz),
        ("old", Some(n)) if spec.redirects && n < pages => {
            let mut loc = r.bases.get(host).cloned().unwrap_or_default();
            Target::page(host, n).write_path(&mut loc);
            Generated {
                status: StatusCode::MOVED_PERMANENTLY,
                content_type: HTML,
                body: Bytes::from_static(b"<!DOCTYPE html>\n<html><body>moved</body></html>\n"),
                location: Some(loc),
                gzipped: false,
                vary: false,
                extra: Vec::new(),
            }
        }
        ("robots.txt", None) if rest.is_empty() && spec.robots && path == "/robots.txt" => {
            ok("text/plain; charset=utf-8", r.robots(host), gz)
        }
        ("sitemap.xml", None) if spec.sitemaps && path == "/sitemap.xml" => {
            ok("application/xml", r.sitemap_index(host), gz)
        }
        ("sitemap-pages.xml", None) if spec.sitemaps && path == "/sitemap-pages.xml" => {
            ok("application/xml", r.sitemap_pages(host), gz)
        }
        _ => not_found(),
    }
}

fn header(name: HeaderName, value: &str) -> Option<(HeaderName, HeaderValue)> {
    HeaderValue::from_str(value).ok().map(|v| (name, v))
}

/// A page with a change schedule in changing mode: its current version with validators, a 304 when the request's
/// conditions say so, or a 404 before the page is born. `None` when `path` is not such a page.
fn changing_page(
    r: &Renderer,
    host: usize,
    path: &str,
    gz: bool,
    cond: &Cond,
) -> Option<Generated> {
    let spec = &r.spec;
    let ch = spec.changing.as_ref()?;
    let key = PageKey::parse(host, path)?;
    if !r.has_schedule(&key) {
        return None;
    }
    let now = r.clock.now_s();
    let sched = Schedule::of(spec, ch, &key);
    let Some((version, since)) = sched.version_at(now) else {
        return Some(not_found());
    };
    let misbehavior = ch.misbehavior(host);
    let mut etag = Some(sched.etag(version, gz));
    let mut last_modified = Some(since);
    let mut lm_text = Some(http_date(since));
    match misbehavior {
        Some(Misbehavior::EtagChurn) => {
            let n = r.churn.fetch_add(1, Ordering::Relaxed);
            etag = Some(format!(
                "\"{}-r{n}\"",
                sched.etag(version, gz).trim_matches('"')
            ));
        }
        Some(Misbehavior::FutureLastModified) => {
            let future = now.saturating_add(86_400);
            last_modified = Some(future);
            lm_text = Some(http_date(future));
        }
        Some(Misbehavior::BadLastModified) => {
            last_modified = None;
            lm_text = Some("not a date".to_owned());
        }
        Some(Misbehavior::NoValidators) => {
            etag = None;
            last_modified = None;
            lm_text = None;
        }
        _ => {}
    }
    let unchanged = match misbehavior {
        Some(Misbehavior::AlwaysNotModified) => true,
        Some(Misbehavior::IgnoreConditional | Misbehavior::NoValidators) => false,
        _ => not_modified(
            cond.if_none_match.as_deref(),
            cond.if_modified_since.as_deref(),
            etag.as_deref(),
            last_modified,
            now,
        ),
    };
    let mut extra: Vec<(HeaderName, HeaderValue)> = Vec::with_capacity(3);
    extra.extend(header(header::DATE, &http_date(now)));
    if let Some(e) = &etag {
        extra.extend(header(header::ETAG, e));
    }
    if let Some(lm) = &lm_text {
        extra.extend(header(header::LAST_MODIFIED, lm));
    }
    if unchanged {
        return Some(Generated {
            status: StatusCode::NOT_MODIFIED,
            content_type: "",
            body: Bytes::new(),
            location: None,
            gzipped: false,
            vary: spec.gzip,
            extra,
        });
    }
    let body = r.changing_body(&key, version, since);
    let mut g = ok(HTML, body, gz);
    g.extra = extra;
    Some(g)
}
