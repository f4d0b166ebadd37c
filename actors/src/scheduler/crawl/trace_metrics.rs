//! The scheduler's part of a URL's trace and of the metrics: the root span (from when the URL was queued), the
//! `frontier.wait` span at lease time (with the robots verdict that let the URL go), the root's outcome attributes
//! and the per-record metrics when the record is made, and the end of the trace once the record is in the JSONL.
//! Attributes are only built for traces that are exported.

use crawl_core::frontier::{Entry, JobKind};
use crawl_core::record::{Outcome, Reason, Record};
use crawl_observability::Attr;
use crawl_observability::metrics::metrics;
use crawl_observability::redact::redact_url;
use crawl_observability::trace::{self, Stamp, Trace};
use crawl_observability::{keyed_i64, keyed_str, preset_str};
use std::time::{Duration, Instant};

/// Root-span attributes of a URL (`url` redacted). The attributes of a few fixed values are encoded when compiling
/// ([`preset_str!`]), here and below.
fn url_attributes(url: &str, kind: JobKind, depth: u32) -> [Attr<'_>; 3] {
    let kind = match kind {
        JobKind::Page => preset_str!("crawl.kind", "page"),
        JobKind::Embed => preset_str!("crawl.kind", "embed"),
        JobKind::Robots => preset_str!("crawl.kind", "robots"),
        JobKind::Sitemap => preset_str!("crawl.kind", "sitemap"),
        JobKind::OutOfScope | JobKind::Filtered | JobKind::TooDeep | JobKind::Trap(_) => {
            preset_str!("crawl.kind", "excluded")
        }
    };
    [
        keyed_str!("url.full", url),
        kind,
        keyed_i64!("crawl.depth", i64::from(depth)),
    ]
}

/// The root's `crawl.outcome` (the JSONL's outcome).
fn outcome_attribute(outcome: Outcome) -> Attr<'static> {
    match outcome {
        Outcome::Fetched => preset_str!("crawl.outcome", "fetched"),
        Outcome::Failed => preset_str!("crawl.outcome", "failed"),
        Outcome::Excluded => preset_str!("crawl.outcome", "excluded"),
    }
}

/// The root's attributes of a record, set in one call: its outcome and attempt, its reason (when it has one) and
/// its status (when it has one), in that order, as the first `n` of the array.
fn record_attributes(
    outcome: Outcome,
    attempts: u32,
    reason: &str,
    status: Option<u16>,
) -> ([Attr<'_>; 4], usize) {
    let outcome = outcome_attribute(outcome);
    let mut attributes = [outcome; 4];
    attributes[1] = keyed_i64!("crawl.attempt", i64::from(attempts));
    let mut n = 2;
    if !reason.is_empty() {
        attributes[n] = keyed_str!("crawl.reason", reason);
        n += 1;
    }
    if let Some(status) = status {
        attributes[n] = keyed_i64!("http.response.status_code", i64::from(status));
        n += 1;
    }
    (attributes, n)
}

/// A new root span for a URL, started at `start`.
fn root_span(url: &str, kind: JobKind, depth: u32, start: impl Into<Stamp>) -> Trace {
    let mut t = trace::root("crawl.url", start, &[]);
    if t.is_sampled() {
        t.set_attributes(&url_attributes(&redact_url(url), kind, depth));
    }
    t
}

/// The registrable domain of a URL's host (the IP for IP hosts), for per-site metric labels.
pub(super) fn host_group(url: &str) -> String {
    let host = url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default();
    // The scope's registrable domain: an IP host stays whole (the public suffix list alone made 127.0.0.20 "0.20").
    crawl_core::scope::registrable_domain(&host).unwrap_or(host)
}

/// The trace of a job being leased: the one of its earlier tries (`retried`), or a new root from when it was
/// queued; with its queue-wait span on `host` and, for pages, the robots verdict that let it go.
pub(super) fn lease_trace(
    retried: Option<Trace>,
    host: &str,
    entry: &Entry,
    respect_robots: bool,
    now: Instant,
) -> Trace {
    let queued = Stamp::from(entry.queued_at.unwrap_or(now));
    let t = retried.unwrap_or_else(|| root_span(&entry.url, entry.kind, entry.depth, queued));
    if t.is_sampled() {
        let host = keyed_str!("crawl.host", host);
        if entry.kind.is_fetched() {
            let verdict = if respect_robots {
                preset_str!("robots.verdict", "allowed")
            } else {
                preset_str!("robots.verdict", "not_checked")
            };
            t.ctx().span("frontier.wait", queued, now, &[host, verdict]);
        } else {
            t.ctx().span("frontier.wait", queued, now, &[host]);
        }
    }
    t
}

/// The trace of a URL the robots gate dropped without a lease (`reason` robots or why robots.txt never came).
pub(super) fn dropped_trace(entry: &Entry, reason: Reason) -> Trace {
    let now = Stamp::now();
    let queued = entry.queued_at.map_or(now, Stamp::from);
    let t = root_span(&entry.url, entry.kind, entry.depth, queued);
    if t.is_sampled() {
        let verdict = if reason == Reason::Robots {
            preset_str!("robots.verdict", "disallowed")
        } else {
            preset_str!("robots.verdict", "unavailable")
        };
        t.ctx().span("frontier.wait", queued, now, &[verdict]);
    }
    t
}

/// The trace of a record made without a lease (an excluded link): a root span of its own.
pub(super) fn record_trace(record: &Record) -> Trace {
    root_span(&record.url, JobKind::Page, record.depth, Stamp::now())
}

/// The latency histogram's sample of a fetch that made `record`, taken `now`: the measured duration in seconds
/// (not the record's whole milliseconds), by the record's outcome, with the trace id as exemplar when it is
/// exported.
pub(super) fn observe_latency(
    record: &Record,
    latency: Duration,
    trace: Option<&Trace>,
    now: Instant,
) {
    let exemplar = trace.and_then(Trace::exported_id).map(|id| (id, now));
    metrics().fetch_duration(record.outcome.as_str(), latency.as_secs_f64(), exemplar);
}

/// Metrics and root-span attributes of a record.
pub(super) fn observe(record: &Record, trace: &mut Trace) {
    let m = metrics();
    let reason = record.reason.map_or("", Reason::as_str);
    m.record(record.outcome.as_str(), reason);
    if record.outcome == Outcome::Fetched
        && let Some(status) = record.status
    {
        m.response(status, record.content_length.unwrap_or(0));
    }
    if matches!(record.reason, Some(Reason::TooLarge | Reason::Decode)) {
        m.parse_failure(reason);
    }
    if !trace.is_sampled() {
        return;
    }
    let (attributes, n) = record_attributes(record.outcome, record.attempts, reason, record.status);
    trace.set_attributes(&attributes[..n]);
    if record.outcome == Outcome::Failed {
        trace.set_error(record.error.as_deref().unwrap_or(reason));
    }
}

/// Milliseconds since the Unix epoch at `t` on the wall clock (0 before the epoch), as shared with other processes.
pub(super) fn wall_ms(t: Instant) -> u64 {
    unix_ms(trace::wall(t))
}

/// Milliseconds since the Unix epoch (0 before it).
pub(super) fn unix_ms(t: std::time::SystemTime) -> u64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Ends the traces of records now in the JSONL, with their line number on the root: the root ends when the record
/// is written, so the time after its `frontier.commit` span is the write (no span of its own).
pub(super) fn end_written(written: impl Iterator<Item = (u64, Trace)>) {
    let end = Stamp::now();
    for (seq, mut t) in written {
        if t.is_sampled() {
            t.set_attributes(&[keyed_i64!(
                "crawl.jsonl_line",
                i64::try_from(seq).unwrap_or(i64::MAX)
            )]);
        }
        t.end(end);
    }
}

#[cfg(test)]
mod host_group_tests {
    use super::host_group;

    #[test]
    fn a_host_group_is_the_registrable_domain_and_an_ip_stays_whole() {
        assert_eq!(host_group("http://127.0.0.20:8080/a"), "127.0.0.20");
        assert_eq!(host_group("http://[::1]/"), "[::1]");
        assert_eq!(
            host_group("https://www.docs.example.co.uk/x"),
            "example.co.uk"
        );
        assert_eq!(host_group("https://a.b.example.com/"), "example.com");
        assert_eq!(host_group("http://localhost/"), "localhost");
    }
}

#[cfg(test)]
mod preset_tests {
    use super::*;
    use crawl_observability::AttrValue;

    /// The value of a preset attribute.
    fn preset_value(a: &Attr<'_>) -> &'static str {
        match a.value {
            AttrValue::Preset(kv) => kv,
            other => panic!("a preset: {other:?}"),
        }
    }

    /// A record's root attributes are its outcome, its attempt, its reason and its status, each only when it has
    /// one, in that order and with their values.
    #[test]
    fn a_records_attributes_are_those_it_has_in_order() {
        for (reason, status, keys) in [
            ("", None, &["crawl.outcome", "crawl.attempt"][..]),
            (
                "",
                Some(404),
                &[
                    "crawl.outcome",
                    "crawl.attempt",
                    "http.response.status_code",
                ],
            ),
            (
                "robots",
                None,
                &["crawl.outcome", "crawl.attempt", "crawl.reason"],
            ),
            (
                "http_status",
                Some(503),
                &[
                    "crawl.outcome",
                    "crawl.attempt",
                    "crawl.reason",
                    "http.response.status_code",
                ],
            ),
        ] {
            let (attributes, n) = record_attributes(Outcome::Failed, 3, reason, status);
            let got: Vec<_> = attributes[..n].iter().map(|a| a.key).collect();
            assert_eq!(got, keys, "{reason:?} {status:?}");
            for a in &attributes[..n] {
                let want = match a.key {
                    "crawl.attempt" => AttrValue::I64(3),
                    "crawl.reason" => AttrValue::Str(reason),
                    "http.response.status_code" => {
                        AttrValue::I64(i64::from(status.unwrap_or_default()))
                    }
                    _ => outcome_attribute(Outcome::Failed).value,
                };
                assert_eq!(a.value, want, "{}", a.key);
            }
        }
    }

    #[test]
    fn the_outcome_and_kind_attributes_name_them_as_the_record_does() {
        for o in [Outcome::Fetched, Outcome::Failed, Outcome::Excluded] {
            let a = outcome_attribute(o);
            assert_eq!(a.key, "crawl.outcome");
            assert_eq!(preset_value(&a), o.as_str());
        }
        for (kind, name) in [
            (JobKind::Page, "page"),
            (JobKind::Embed, "embed"),
            (JobKind::Robots, "robots"),
            (JobKind::Sitemap, "sitemap"),
            (JobKind::OutOfScope, "excluded"),
        ] {
            let [url, k, depth] = url_attributes("http://a.test/", kind, 2);
            assert_eq!(
                (url.key, k.key, depth.key),
                ("url.full", "crawl.kind", "crawl.depth")
            );
            assert_eq!(preset_value(&k), name);
        }
    }
}
