//! The revisit schedule: what a fetch means for a URL's next visit. Built from `[recrawl]`; pure (every time is
//! given), so the scheduler, the stores and the tests share one arithmetic.
//!
//! - `changed`: None on a first visit; a 304 is unchanged; a full body is unchanged when its payload digest is
//!   the last capture's (whatever the ETag says), else changed; a fetch without a body and without a 304 (an
//!   error body, a cut transfer) is unknown (None) and leaves the interval as it was.
//! - The interval: a matching rule's `interval_s`, else `interval_s`, on a first visit; then, when adaptive,
//!   × (1 + inc_rate) when unchanged and × (1 − dec_rate) when changed (Nutch's AdaptiveFetchSchedule without its
//!   sync-to-modification-time step), clamped to [floor, max_interval_s] where the floor is min_interval_s, or a
//!   rule's shorter interval_s for its URLs; a changed page whose interval would shrink to the floor backs off
//!   to [`BACKOFF_FACTOR`] × the floor instead (kept fresh, it would be fresh for a moment per visit). Intervals
//!   are kept in tenths of a second.
//! - The next due time: the fetch time plus the interval with a deterministic jitter of ±5 % (xxh3 of the URL and
//!   the visit number), clamped again to the bounds, so that pages found together spread over a window instead of
//!   all coming due in the same second; the stored interval is the unjittered one, so jitter never accumulates.

use super::dates::parse_http_date_s;
use super::{Capture, DigestKey, Prior, Validators};
use crate::config::RecrawlConfig;

/// The longest ETag kept (bytes); a longer one is dropped (the store keeps every URL's ETag).
pub const MAX_ETAG_BYTES: usize = 128;

/// The jitter's width, as a divisor of the interval: ±interval/20 (±5 %).
const JITTER_DIVISOR: u64 = 10;

/// Tenths of a second in a second: intervals are kept in tenths, so that a short one grows and shrinks by its
/// rates too (1 s × 1.2 is 1.2 s, not 1 s again).
const DS: u64 = 10;

/// Where a changed page's interval goes when shrinking it would reach the floor: the floor times this (an hour
/// for a floor of a minute), within max_interval_s. A page that changes between two visits at the floor changes
/// faster than the crawl may follow it; visiting it at the floor keeps it fresh for no longer than a moment and
/// spends the requests that keep slower pages fresh. From there it shrinks again by dec_rate per changed visit.
pub const BACKOFF_FACTOR: u64 = 60;

/// One rule as the policy applies it.
#[derive(Debug, Clone)]
struct Rule {
    pattern: regex::Regex,
    interval_s: u64,
    adaptive: bool,
}

/// The revisit schedule of `[recrawl]`.
#[derive(Debug, Clone)]
pub struct Policy {
    interval_s: u64,
    min_s: u64,
    max_s: u64,
    adaptive: bool,
    inc_rate: f64,
    dec_rate: f64,
    rules: Vec<Rule>,
}

/// What one fetch of a URL observed.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fetch<'a> {
    /// The HTTP status.
    pub status: u16,
    /// The response's `ETag` header.
    pub etag: Option<&'a str>,
    /// The response's `Last-Modified` header, as sent.
    pub last_modified: Option<&'a str>,
    /// The response's `Date` header, as sent (a Last-Modified after it is dropped; without it, after `now_ms`).
    pub date: Option<&'a str>,
    /// The payload digest (`sha1:…`) when a full body was read; None for a 304 and for a cut or failed body.
    pub digest: Option<&'a str>,
    /// When the fetch happened (Unix ms).
    pub now_ms: u64,
}

/// Something odd a fetch or a sitemap said, for a log line and the `recrawl_anomalies_total` metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Anomaly {
    /// A 304 to a request that sent no validators (no prior fetch, or one without validators): nothing to reuse;
    /// the next visit is unconditional, after the URL's interval as it was.
    NotModifiedWithoutPrior,
    /// A Last-Modified that is not an HTTP date: not kept.
    LastModifiedUnparseable,
    /// A Last-Modified later than the response's Date (or the fetch): not kept.
    LastModifiedInFuture,
    /// The ETag changed but the payload did not: counted unchanged.
    EtagUnstable,
    /// The validators sent matched but the server answered with the full (unchanged) body.
    ConditionalIgnored,
    /// An ETag longer than [`MAX_ETAG_BYTES`]: not kept.
    EtagTooLong,
    /// A sitemap `<lastmod>` that is not a W3C datetime: ignored.
    LastmodUnparseable,
    /// A sitemap `<lastmod>` in the future: ignored.
    LastmodInFuture,
    /// A sitemap said a page changed, but it was fetched less than its floor interval ago: it comes due at the
    /// end of that interval, not at once.
    HintBounded,
}

impl Anomaly {
    /// Every anomaly.
    pub const ALL: [Anomaly; 9] = [
        Anomaly::NotModifiedWithoutPrior,
        Anomaly::LastModifiedUnparseable,
        Anomaly::LastModifiedInFuture,
        Anomaly::EtagUnstable,
        Anomaly::ConditionalIgnored,
        Anomaly::EtagTooLong,
        Anomaly::LastmodUnparseable,
        Anomaly::LastmodInFuture,
        Anomaly::HintBounded,
    ];

    /// Lowercase name, for logs and metric labels.
    pub fn as_str(self) -> &'static str {
        match self {
            Anomaly::NotModifiedWithoutPrior => "not_modified_without_prior",
            Anomaly::LastModifiedUnparseable => "last_modified_unparseable",
            Anomaly::LastModifiedInFuture => "last_modified_in_future",
            Anomaly::EtagUnstable => "etag_unstable",
            Anomaly::ConditionalIgnored => "conditional_ignored",
            Anomaly::EtagTooLong => "etag_too_long",
            Anomaly::LastmodUnparseable => "lastmod_unparseable",
            Anomaly::LastmodInFuture => "lastmod_in_future",
            Anomaly::HintBounded => "hint_bounded",
        }
    }
}

/// What a fetch decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Visit {
    /// This fetch's number (1 for the first).
    pub visit: u32,
    /// None on a first visit (or when the fetch could not tell); else whether the payload changed.
    pub changed: Option<bool>,
    /// The previous fetch's time (Unix ms), None on a first visit.
    pub previous_fetched_at_ms: Option<u64>,
    /// When the URL comes due again (Unix ms).
    pub next_due_ms: u64,
    /// What to store for the next visit (its `interval_s` is the unjittered interval).
    pub prior: Prior,
    /// Odd things seen, each to be logged and counted.
    pub anomalies: Vec<Anomaly>,
}

impl Visit {
    /// The record fields of this fetch.
    pub fn record_fields(&self) -> crate::record::Revisit {
        crate::record::Revisit {
            visit: self.visit,
            changed: self.changed,
            previous_fetched_at: self.previous_fetched_at_ms.map(super::rfc3339_ms),
            next_due_at: Some(super::rfc3339_ms(self.next_due_ms)),
        }
    }
}

impl Policy {
    pub fn new(c: &RecrawlConfig) -> Policy {
        Policy {
            interval_s: c.interval.as_secs(),
            min_s: c.min_interval.as_secs().max(1),
            max_s: c.max_interval.as_secs().max(1),
            adaptive: c.adaptive,
            inc_rate: c.inc_rate,
            dec_rate: c.dec_rate,
            rules: c
                .rules
                .iter()
                .map(|r| Rule {
                    pattern: r.pattern.clone(),
                    interval_s: r.interval.as_secs().max(1),
                    adaptive: r.adaptive.unwrap_or(c.adaptive),
                })
                .collect(),
        }
    }

    /// `(first interval, adaptive, floor)` of `url`: its first matching rule's, else the section's.
    fn terms(&self, url: &str) -> (u64, bool, u64) {
        match self.rules.iter().find(|r| r.pattern.is_match(url)) {
            Some(r) => (r.interval_s, r.adaptive, r.interval_s.min(self.min_s)),
            None => (self.interval_s, self.adaptive, self.min_s),
        }
    }

    /// The shortest interval `url` may be revisited after (min_interval_s, or its rule's shorter interval).
    pub fn floor_s(&self, url: &str) -> u64 {
        self.terms(url).2
    }

    /// The longest interval.
    pub fn max_s(&self) -> u64 {
        self.max_s
    }

    /// What the fetch `f` of `url`, whose previous visit was `prior`, decides.
    pub fn visit(&self, url: &str, prior: Option<&Prior>, f: &Fetch<'_>) -> Visit {
        let mut anomalies = Vec::new();
        let (first_s, adaptive, floor_s) = self.terms(url);
        let visit = prior.map_or(1, |p| p.visits.saturating_add(1));
        let fresh = self.validators(f, &mut anomalies);
        let (changed, validators, capture) = if f.status == 304 {
            // A 304 answers a conditional request; to one that sent no validators it says nothing.
            match prior.filter(|p| !p.validators.is_empty()) {
                None => {
                    anomalies.push(Anomaly::NotModifiedWithoutPrior);
                    (
                        None,
                        Validators::default(),
                        prior.and_then(|p| p.capture.clone()),
                    )
                }
                // A 304 updates the stored validators it carries (RFC 9111, 4.3.4).
                Some(p) => (
                    Some(false),
                    Validators {
                        etag: fresh.etag.or_else(|| p.validators.etag.clone()),
                        last_modified_s: fresh.last_modified_s.or(p.validators.last_modified_s),
                    },
                    p.capture.clone(),
                ),
            }
        } else if let Some(digest) = f.digest {
            let key = DigestKey::of(digest);
            let last = prior.and_then(|p| p.capture.as_ref());
            let changed = prior.map(|_| last.is_none_or(|c| c.digest != key));
            if changed == Some(false)
                && let Some(p) = prior
            {
                let sent = &p.validators;
                if sent.etag.is_some() && fresh.etag.is_some() && sent.etag != fresh.etag {
                    anomalies.push(Anomaly::EtagUnstable);
                } else if !sent.is_empty()
                    && (sent.etag.is_none() || sent.etag == fresh.etag)
                    && (sent.last_modified_s.is_none()
                        || sent.last_modified_s == fresh.last_modified_s)
                {
                    anomalies.push(Anomaly::ConditionalIgnored);
                }
            }
            // An unchanged body keeps pointing at the original capture: a revisit refers to a response record.
            let capture = match last {
                Some(c) if changed == Some(false) => Some(c.clone()),
                _ => Some(Capture {
                    fetched_at_ms: f.now_ms,
                    digest: key,
                }),
            };
            // Validators are only reused from a success: a 404's ETag would make the next request conditional.
            let validators = if (200..300).contains(&f.status) {
                fresh
            } else {
                Validators::default()
            };
            (changed, validators, capture)
        } else {
            let p = prior.cloned().unwrap_or_default();
            (None, p.validators, p.capture)
        };
        let first_ds = first_s.saturating_mul(DS);
        let (floor_ds, max_ds) = (floor_s.saturating_mul(DS), self.max_s.saturating_mul(DS));
        let previous_ds = prior
            .map(|p| u64::from(p.interval_ds))
            .filter(|ds| *ds > 0)
            .unwrap_or(first_ds);
        let interval_ds = if !adaptive || prior.is_none() {
            first_ds
        } else {
            match changed {
                Some(false) => grow(previous_ds, 1.0 + self.inc_rate),
                Some(true) => match grow(previous_ds, 1.0 - self.dec_rate) {
                    // Changed again at the floor: it changes faster than it may be revisited.
                    ds if ds <= floor_ds => floor_ds.saturating_mul(BACKOFF_FACTOR),
                    ds => ds,
                },
                None => previous_ds,
            }
        }
        .clamp(floor_ds, max_ds);
        let due_ds = jitter(url, visit, interval_ds).clamp(floor_ds, max_ds);
        Visit {
            visit,
            changed,
            previous_fetched_at_ms: prior.map(|p| p.fetched_at_ms),
            next_due_ms: f.now_ms.saturating_add(due_ds.saturating_mul(100)),
            prior: Prior {
                visits: visit,
                fetched_at_ms: f.now_ms,
                interval_ds: u32::try_from(interval_ds).unwrap_or(u32::MAX),
                validators,
                capture,
            },
            anomalies,
        }
    }

    /// The validators of the response itself: the ETag verbatim (when not too long), the Last-Modified when it
    /// is an HTTP date not later than the response's Date (or the fetch time).
    fn validators(&self, f: &Fetch<'_>, anomalies: &mut Vec<Anomaly>) -> Validators {
        let etag = f
            .etag
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .and_then(|e| {
                if e.len() > MAX_ETAG_BYTES {
                    anomalies.push(Anomaly::EtagTooLong);
                    None
                } else {
                    Some(e.to_owned())
                }
            });
        let limit_s = f
            .date
            .and_then(parse_http_date_s)
            .unwrap_or(f.now_ms / 1000);
        let last_modified_s = f.last_modified.and_then(|v| match parse_http_date_s(v) {
            None => {
                anomalies.push(Anomaly::LastModifiedUnparseable);
                None
            }
            Some(s) if s > limit_s => {
                anomalies.push(Anomaly::LastModifiedInFuture);
                None
            }
            Some(s) => Some(s),
        });
        Validators {
            etag,
            last_modified_s,
        }
    }
}

/// `ds × factor`, rounded, at least 1.
fn grow(ds: u64, factor: f64) -> u64 {
    let v = (ds as f64 * factor).round();
    if v >= u64::MAX as f64 {
        u64::MAX
    } else {
        (v as u64).max(1)
    }
}

/// `interval` moved by a deterministic amount in [−interval/20, +interval/20], from the URL and visit number.
fn jitter(url: &str, visit: u32, interval: u64) -> u64 {
    let span = interval / JITTER_DIVISOR;
    if span == 0 {
        return interval;
    }
    let h = twox_hash::XxHash3_64::oneshot_with_seed(u64::from(visit), url.as_bytes());
    let offset = h % (span + 1);
    interval - span / 2 + offset
}

#[cfg(test)]
mod tests;
