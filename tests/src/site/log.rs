//! Observation of a running site: the request log, per-host counters (connections, in-flight peak, bytes) and the
//! in-flight guard that closes a log entry when its response body is fully sent or dropped.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use hyper::Version;

/// One request as the site saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestLog {
    /// index of the host (0-based) that received it
    pub host: usize,
    pub method: String,
    /// path and query, as sent (`/page/3?x=1`)
    pub path: String,
    pub version: Version,
    pub user_agent: Option<String>,
    pub referer: Option<String>,
    pub accept_encoding: Option<String>,
    /// a `traceparent` or `tracestate` header (a crawler must never send one to a site)
    pub trace_header: Option<String>,
    /// when the request head arrived
    pub start: Instant,
    /// when the response body was fully sent or dropped; `None` while in flight
    pub end: Option<Instant>,
    /// status sent; 0 when the connection was closed without a response
    pub status: u16,
    /// the request carried `If-None-Match` or `If-Modified-Since`
    pub conditional: bool,
    /// it was answered 304 Not Modified
    pub not_modified: bool,
    pub if_none_match: Option<String>,
    pub if_modified_since: Option<String>,
}

impl RequestLog {
    /// The path without the query.
    pub fn path_only(&self) -> &str {
        self.path
            .split_once('?')
            .map_or(self.path.as_str(), |(p, _)| p)
    }
}

#[derive(Default)]
pub(crate) struct HostStats {
    pub in_flight: AtomicUsize,
    pub peak: AtomicUsize,
    pub connections: AtomicUsize,
    /// connections accepted and not yet closed
    pub open: AtomicUsize,
    pub requests: AtomicU64,
    pub bytes: AtomicU64,
}

#[derive(Default)]
struct LogState {
    /// bumped by `clear` so guards of older entries don't touch new ones
    epoch: u64,
    entries: Vec<RequestLog>,
}

/// Shared counters and log of one site.
pub(crate) struct Recorder {
    pub hosts: Vec<HostStats>,
    enabled: bool,
    log: Mutex<LogState>,
}

impl Recorder {
    pub fn new(hosts: usize, enabled: bool) -> Self {
        Self {
            hosts: (0..hosts).map(|_| HostStats::default()).collect(),
            enabled,
            log: Mutex::default(),
        }
    }

    fn log(&self) -> MutexGuard<'_, LogState> {
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    pub fn stats(&self, host: usize) -> Option<&HostStats> {
        self.hosts.get(host)
    }

    /// Counts a request start; the returned guard must live until the response body is done.
    pub fn begin(self: &Arc<Self>, host: usize) -> InFlight {
        if let Some(s) = self.hosts.get(host) {
            let now = s.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            s.peak.fetch_max(now, Ordering::SeqCst);
            s.requests.fetch_add(1, Ordering::Relaxed);
        }
        InFlight {
            rec: Arc::clone(self),
            host,
            slot: None,
        }
    }

    /// Appends an entry (when logging is on) and ties it to `guard`, which fills in `end` on drop.
    pub fn record(&self, guard: &mut InFlight, entry: RequestLog) {
        if !self.enabled {
            return;
        }
        let mut log = self.log();
        guard.slot = Some((log.epoch, log.entries.len()));
        log.entries.push(entry);
    }

    pub fn add_bytes(&self, host: usize, n: usize) {
        if let Some(s) = self.hosts.get(host) {
            s.bytes.fetch_add(n as u64, Ordering::Relaxed);
        }
    }

    pub fn snapshot(&self) -> Vec<RequestLog> {
        self.log().entries.clone()
    }

    pub fn clear(&self) {
        let mut log = self.log();
        log.epoch += 1;
        log.entries.clear();
    }

    pub fn hits(&self, host: usize, path: &str) -> usize {
        self.log()
            .entries
            .iter()
            .filter(|e| e.host == host && (e.path == path || e.path_only() == path))
            .count()
    }

    pub fn min_inter_arrival(&self, host: usize) -> Option<Duration> {
        let mut starts: Vec<Instant> = self
            .log()
            .entries
            .iter()
            .filter(|e| e.host == host)
            .map(|e| e.start)
            .collect();
        starts.sort();
        starts
            .windows(2)
            .map(|w| w[1].saturating_duration_since(w[0]))
            .min()
    }

    pub fn total_requests(&self) -> u64 {
        self.hosts
            .iter()
            .map(|h| h.requests.load(Ordering::Relaxed))
            .sum()
    }

    pub fn total_bytes(&self) -> u64 {
        self.hosts
            .iter()
            .map(|h| h.bytes.load(Ordering::Relaxed))
            .sum()
    }

    fn finish(&self, slot: (u64, usize)) {
        let end = Instant::now();
        let mut log = self.log();
        if log.epoch == slot.0
            && let Some(e) = log.entries.get_mut(slot.1)
        {
            e.end = Some(end);
        }
    }
}

/// Held from a request's start until its response body is fully sent or dropped.
pub(crate) struct InFlight {
    rec: Arc<Recorder>,
    host: usize,
    slot: Option<(u64, usize)>,
}

impl InFlight {
    /// Counts body bytes handed to hyper.
    pub fn sent(&self, n: usize) {
        self.rec.add_bytes(self.host, n);
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(s) = self.rec.hosts.get(self.host) {
            s.in_flight.fetch_sub(1, Ordering::SeqCst);
        }
        if let Some(slot) = self.slot.take() {
            self.rec.finish(slot);
        }
    }
}
