//! Sitemap hints: a `<lastmod>` after a URL's last fetch brings its next visit forward, never sooner than its
//! floor interval after that fetch (so a sitemap claiming every page changed a second ago cannot start a revisit
//! storm: each page waits its floor, and the host budget paces the rest); `<changefreq>` brings it forward to
//! the last fetch plus the period it names. A hint never moves a visit later; a `<lastmod>` that says the page
//! did not change since the last fetch overrides `<changefreq>`.

use super::dates::parse_w3c_datetime_ms;
use super::{Anomaly, Policy, Prior};

/// A sitemap's `<changefreq>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Changefreq {
    Always,
    Hourly,
    Daily,
    Weekly,
    Monthly,
    Yearly,
    Never,
}

impl Changefreq {
    /// The value as written in a sitemap (case-insensitive, trimmed); None for anything else.
    pub fn parse(value: &str) -> Option<Changefreq> {
        let v = value.trim().to_ascii_lowercase();
        Some(match v.as_str() {
            "always" => Changefreq::Always,
            "hourly" => Changefreq::Hourly,
            "daily" => Changefreq::Daily,
            "weekly" => Changefreq::Weekly,
            "monthly" => Changefreq::Monthly,
            "yearly" => Changefreq::Yearly,
            "never" => Changefreq::Never,
            _ => return None,
        })
    }

    /// The period it names in seconds (`always`: 0, the floor applies; `never`: none).
    fn period_s(self) -> Option<u64> {
        match self {
            Changefreq::Always => Some(0),
            Changefreq::Hourly => Some(3_600),
            Changefreq::Daily => Some(86_400),
            Changefreq::Weekly => Some(7 * 86_400),
            Changefreq::Monthly => Some(30 * 86_400),
            Changefreq::Yearly => Some(365 * 86_400),
            Changefreq::Never => None,
        }
    }
}

/// What a sitemap entry says about a URL's next visit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Hint {
    /// The new due time (Unix ms), earlier than the current one; None: leave it.
    pub due_ms: Option<u64>,
    pub anomaly: Option<Anomaly>,
}

impl Policy {
    /// The hint of a sitemap entry (`lastmod`, `changefreq` as written) for `url`, fetched before as `prior` and
    /// due at `due_ms`, at `now_ms`.
    pub fn sitemap_hint(
        &self,
        url: &str,
        prior: &Prior,
        due_ms: u64,
        lastmod: Option<&str>,
        changefreq: Option<&str>,
        now_ms: u64,
    ) -> Hint {
        let floor_ms = prior
            .fetched_at_ms
            .saturating_add(self.floor_s(url).saturating_mul(1000));
        let earlier = |target: u64, anomaly: Option<Anomaly>| Hint {
            due_ms: (target < due_ms).then_some(target),
            anomaly: anomaly.filter(|_| target < due_ms),
        };
        if let Some(text) = lastmod {
            return match parse_w3c_datetime_ms(text) {
                None => Hint {
                    due_ms: None,
                    anomaly: Some(Anomaly::LastmodUnparseable),
                },
                Some(t) if t > now_ms => Hint {
                    due_ms: None,
                    anomaly: Some(Anomaly::LastmodInFuture),
                },
                Some(t) if t > prior.fetched_at_ms => {
                    let bounded = (floor_ms > now_ms).then_some(Anomaly::HintBounded);
                    earlier(floor_ms.max(now_ms), bounded)
                }
                Some(_) => Hint::default(),
            };
        }
        let Some(period_s) = changefreq
            .and_then(Changefreq::parse)
            .and_then(Changefreq::period_s)
        else {
            return Hint::default();
        };
        let period_ms = period_s.min(self.max_s()).saturating_mul(1000);
        let target = prior
            .fetched_at_ms
            .saturating_add(period_ms)
            .max(floor_ms)
            .max(now_ms);
        earlier(target, None)
    }
}
