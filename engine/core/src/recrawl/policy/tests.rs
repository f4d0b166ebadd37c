//! The schedule with injected time: changed or not, growth and shrink within bounds, rules, jitter, bad input,
//! and sitemap hints.

use std::time::Duration;

use super::*;
use crate::config::{RecrawlConfig, RecrawlRule};
use crate::recrawl::{DigestKey, Hint, http_date};

const NOW: u64 = 1_796_515_200_000; // 2026-12-06T00:00:00Z
const URL: &str = "https://a.example/page";
const DAY: u64 = 86_400;

fn config() -> RecrawlConfig {
    RecrawlConfig {
        enabled: true,
        ..RecrawlConfig::default()
    }
}

fn policy() -> Policy {
    Policy::new(&config())
}

fn body(digest: &str, now_ms: u64) -> Fetch<'_> {
    Fetch {
        status: 200,
        digest: Some(digest),
        now_ms,
        ..Fetch::default()
    }
}

/// The due time's distance from the fetch, in seconds.
fn due_s(v: &Visit, now_ms: u64) -> u64 {
    (v.next_due_ms - now_ms) / 1000
}

fn within_jitter(got: u64, interval: u64) -> bool {
    let span = interval / 10;
    got + span / 2 >= interval && got <= interval + span - span / 2
}

#[test]
fn a_first_visit_has_no_change_and_the_first_interval() {
    let v = policy().visit(URL, None, &body("sha1:A", NOW));
    assert_eq!(
        (v.visit, v.changed, v.previous_fetched_at_ms),
        (1, None, None)
    );
    assert_eq!(v.prior.visits, 1);
    assert_eq!(v.prior.interval_ds, 864_000);
    assert!(within_jitter(due_s(&v, NOW), DAY), "{}", due_s(&v, NOW));
    let c = v.prior.capture.as_ref().expect("captured");
    assert_eq!((c.fetched_at_ms, c.digest), (NOW, DigestKey::of("sha1:A")));
    assert!(v.anomalies.is_empty());
    let fields = v.record_fields();
    assert_eq!(fields.visit, 1);
    assert_eq!(fields.previous_fetched_at, None);
    assert!(
        fields
            .next_due_at
            .as_deref()
            .is_some_and(|t| t.starts_with("2026-12-0"))
    );
}

#[test]
fn unchanged_grows_changed_shrinks_within_bounds() {
    let p = policy();
    let first = p.visit(URL, None, &body("sha1:A", NOW));
    let t2 = NOW + DAY * 1000;
    let same = p.visit(URL, Some(&first.prior), &body("sha1:A", t2));
    assert_eq!((same.visit, same.changed), (2, Some(false)));
    assert_eq!(same.previous_fetched_at_ms, Some(NOW));
    assert_eq!(same.prior.interval_ds, 1_036_800, "× 1.2");
    // Unchanged: the capture stays the original one, which a revisit record refers to.
    assert_eq!(same.prior.capture, first.prior.capture);
    let t3 = t2 + 103_680_000;
    let changed = p.visit(URL, Some(&same.prior), &body("sha1:B", t3));
    assert_eq!(changed.changed, Some(true));
    assert_eq!(changed.prior.interval_ds, 725_760, "× 0.7");
    assert_eq!(
        changed.prior.capture.as_ref().map(|c| c.fetched_at_ms),
        Some(t3)
    );

    // Growth stops at max_interval_s.
    let mut prior = first.prior.clone();
    for _ in 0..60 {
        prior = p.visit(URL, Some(&prior), &body("sha1:A", NOW)).prior;
    }
    assert_eq!(u64::from(prior.interval_ds), 30 * DAY * 10);
    assert_eq!(prior.visits, 61);
}

#[test]
fn short_intervals_move_by_their_rates_too() {
    let mut c = config();
    c.interval = Duration::from_secs(2);
    c.min_interval = Duration::from_secs(1);
    let p = Policy::new(&c);
    let first = p.visit(URL, None, &body("sha1:A", NOW));
    assert_eq!(first.prior.interval_ds, 20);
    let v = p.visit(URL, Some(&first.prior), &body("sha1:A", NOW));
    assert_eq!(v.prior.interval_ds, 24, "2 s × 1.2, not 2 s again");
    let v = p.visit(URL, Some(&first.prior), &body("sha1:B", NOW));
    assert_eq!(v.prior.interval_ds, 14, "2 s × 0.7");
    assert_eq!(
        v.next_due_ms,
        NOW + 1_400,
        "due after 1.4 s (no jitter below 1 s of span)"
    );
}

#[test]
fn a_page_changing_at_the_floor_backs_off() {
    let p = policy();
    let mut prior = p.visit(URL, None, &body("sha1:A", NOW)).prior;
    // Changed on every visit: 24 h × 0.7ⁿ comes down to the floor, a minute.
    let mut intervals = Vec::new();
    for i in 0..40 {
        let d = format!("sha1:{i}");
        prior = p.visit(URL, Some(&prior), &body(&d, NOW)).prior;
        intervals.push(u64::from(prior.interval_ds));
    }
    let least = intervals.iter().copied().min().unwrap();
    assert!(least > 600 && least <= 857, "closest to the floor: {least}");
    let at = intervals
        .iter()
        .position(|ds| *ds == 60 * BACKOFF_FACTOR * 10)
        .expect("backed off");
    assert_eq!(intervals[at - 1], least, "right after its closest approach");
    assert!(
        intervals[..at].windows(2).all(|w| w[1] < w[0]),
        "{intervals:?}"
    );
    assert!(
        intervals[at + 1] < intervals[at],
        "and shrinks again from there"
    );

    // Within max_interval_s.
    let mut c = config();
    c.max_interval = Duration::from_secs(600);
    c.interval = Duration::from_secs(75);
    let p = Policy::new(&c);
    let first = p.visit(URL, None, &body("sha1:A", NOW));
    let v = p.visit(URL, Some(&first.prior), &body("sha1:B", NOW));
    assert_eq!(v.prior.interval_ds, 6_000);

    // A page that is unchanged at the floor stays near it.
    let mut c = config();
    c.interval = Duration::from_secs(60);
    let p = Policy::new(&c);
    let first = p.visit(URL, None, &body("sha1:A", NOW));
    let v = p.visit(URL, Some(&first.prior), &body("sha1:A", NOW));
    assert_eq!(v.prior.interval_ds, 720);
}

#[test]
fn a_fixed_schedule_and_rules() {
    let mut c = config();
    c.adaptive = false;
    c.rules = vec![
        RecrawlRule {
            pattern: regex::Regex::new("/live/").unwrap(),
            interval: Duration::from_secs(10),
            adaptive: None,
        },
        RecrawlRule {
            pattern: regex::Regex::new("/feed").unwrap(),
            interval: Duration::from_secs(3_600),
            adaptive: Some(true),
        },
    ];
    let p = Policy::new(&c);
    let first = p.visit(URL, None, &body("sha1:A", NOW));
    let v = p.visit(URL, Some(&first.prior), &body("sha1:A", NOW));
    assert_eq!(v.prior.interval_ds, 864_000, "not adaptive: pinned");

    // A hot page's rule goes below min_interval_s, and stays pinned.
    let live = "https://a.example/live/score";
    let first = p.visit(live, None, &body("sha1:A", NOW));
    assert_eq!(first.prior.interval_ds, 100);
    assert_eq!(p.floor_s(live), 10);
    let v = p.visit(live, Some(&first.prior), &body("sha1:B", NOW));
    assert_eq!(v.prior.interval_ds, 100);
    assert!(within_jitter(due_s(&v, NOW), 10));

    // An adaptive rule starts at its interval and adapts.
    let feed = "https://a.example/feed.xml";
    let first = p.visit(feed, None, &body("sha1:A", NOW));
    let v = p.visit(feed, Some(&first.prior), &body("sha1:A", NOW));
    assert_eq!(
        (first.prior.interval_ds, v.prior.interval_ds),
        (36_000, 43_200)
    );

    // A stored interval out of today's bounds (a reload lowered max) is clamped.
    let mut prior = first.prior;
    prior.interval_ds = 90 * 864_000;
    let v = p.visit(feed, Some(&prior), &body("sha1:A", NOW));
    assert_eq!(u64::from(v.prior.interval_ds), 30 * DAY * 10);
}

#[test]
fn jitter_is_deterministic_bounded_and_spreads_urls() {
    let p = policy();
    let mut dues = std::collections::BTreeSet::new();
    for i in 0..200 {
        let url = format!("https://a.example/{i}");
        let a = p.visit(&url, None, &body("sha1:A", NOW));
        let b = p.visit(&url, None, &body("sha1:A", NOW));
        assert_eq!(a.next_due_ms, b.next_due_ms, "deterministic");
        let s = due_s(&a, NOW);
        assert!(within_jitter(s, DAY), "{s}");
        dues.insert(s);
    }
    assert!(dues.len() > 150, "only {} distinct due seconds", dues.len());
    // The jitter never takes a visit below the floor nor past the maximum.
    let mut c = config();
    c.interval = Duration::from_secs(60);
    let p = Policy::new(&c);
    for i in 0..100 {
        let v = p.visit(
            &format!("https://b.example/{i}"),
            None,
            &body("sha1:A", NOW),
        );
        assert!(due_s(&v, NOW) >= 60);
    }
}

#[test]
fn not_modified_reuses_the_prior() {
    let p = policy();
    let first = p.visit(
        URL,
        None,
        &Fetch {
            etag: Some("\"v1\""),
            last_modified: Some("Sun, 06 Nov 1994 08:49:37 GMT"),
            ..body("sha1:A", NOW)
        },
    );
    assert_eq!(first.prior.validators.etag.as_deref(), Some("\"v1\""));
    assert_eq!(
        first.prior.validators.if_modified_since().as_deref(),
        Some("Sun, 06 Nov 1994 08:49:37 GMT")
    );
    let t2 = NOW + DAY * 1000;
    let v = p.visit(
        URL,
        Some(&first.prior),
        &Fetch {
            status: 304,
            etag: Some("\"v2\""),
            now_ms: t2,
            ..Fetch::default()
        },
    );
    assert_eq!(v.changed, Some(false));
    assert_eq!(
        v.prior.validators.etag.as_deref(),
        Some("\"v2\""),
        "a 304 updates it"
    );
    assert_eq!(v.prior.validators.last_modified_s, Some(784_111_777));
    assert_eq!(v.prior.capture, first.prior.capture);
    assert_eq!(v.prior.interval_ds, 1_036_800);
}

#[test]
fn bad_input_has_a_defined_outcome() {
    let p = policy();
    // 304 without a prior: nothing to reuse, no validators kept, the first interval, an anomaly.
    let v = p.visit(
        URL,
        None,
        &Fetch {
            status: 304,
            etag: Some("\"x\""),
            now_ms: NOW,
            ..Fetch::default()
        },
    );
    assert_eq!((v.changed, v.prior.capture.clone()), (None, None));
    assert!(v.prior.validators.is_empty());
    assert_eq!(v.prior.interval_ds, 864_000);
    assert_eq!(v.anomalies, [Anomaly::NotModifiedWithoutPrior]);

    // Last-Modified in the future (after Date, or after now without Date), or unparseable: dropped.
    let later = http_date(NOW / 1000 + 3_600);
    for (lm, date, anomaly) in [
        (later.as_str(), None, Anomaly::LastModifiedInFuture),
        (
            later.as_str(),
            Some(http_date(NOW / 1000)),
            Anomaly::LastModifiedInFuture,
        ),
        ("last tuesday", None, Anomaly::LastModifiedUnparseable),
    ] {
        let v = p.visit(
            URL,
            None,
            &Fetch {
                last_modified: Some(lm),
                date: date.as_deref(),
                ..body("sha1:A", NOW)
            },
        );
        assert_eq!(v.prior.validators.last_modified_s, None, "{lm}");
        assert_eq!(v.anomalies, [anomaly]);
    }
    // A server clock ahead of ours: a Last-Modified before its Date is kept.
    let v = p.visit(
        URL,
        None,
        &Fetch {
            last_modified: Some(&later),
            date: Some(&http_date(NOW / 1000 + 7_200)),
            ..body("sha1:A", NOW)
        },
    );
    assert_eq!(v.prior.validators.last_modified_s, Some(NOW / 1000 + 3_600));

    // An ETag changing on every response with the same body: unchanged, and noted.
    let first = p.visit(
        URL,
        None,
        &Fetch {
            etag: Some("\"1\""),
            ..body("sha1:A", NOW)
        },
    );
    let v = p.visit(
        URL,
        Some(&first.prior),
        &Fetch {
            etag: Some("\"2\""),
            ..body("sha1:A", NOW)
        },
    );
    assert_eq!(v.changed, Some(false));
    assert_eq!(v.anomalies, [Anomaly::EtagUnstable]);
    assert_eq!(v.prior.validators.etag.as_deref(), Some("\"2\""));

    // A server ignoring the validators sent: a full unchanged body, counted unchanged, and noted.
    let v = p.visit(
        URL,
        Some(&first.prior),
        &Fetch {
            etag: Some("\"1\""),
            ..body("sha1:A", NOW)
        },
    );
    assert_eq!(
        (v.changed, v.anomalies.as_slice()),
        (Some(false), &[Anomaly::ConditionalIgnored][..])
    );

    // An oversized ETag is not kept.
    let long = format!("\"{}\"", "x".repeat(MAX_ETAG_BYTES));
    let v = p.visit(
        URL,
        None,
        &Fetch {
            etag: Some(&long),
            ..body("sha1:A", NOW)
        },
    );
    assert_eq!(
        (v.prior.validators.etag.clone(), v.anomalies.as_slice()),
        (None, &[Anomaly::EtagTooLong][..])
    );

    // No body and no 304 (a cut transfer): unknown, the prior kept, the interval unchanged.
    let v = p.visit(
        URL,
        Some(&first.prior),
        &Fetch {
            status: 200,
            now_ms: NOW,
            ..Fetch::default()
        },
    );
    assert_eq!(v.changed, None);
    assert_eq!(v.prior.capture, first.prior.capture);
    assert_eq!(v.prior.validators, first.prior.validators);
    assert_eq!(v.prior.interval_ds, first.prior.interval_ds);

    // A 404 body: changed, and its validators are not reused.
    let v = p.visit(
        URL,
        Some(&first.prior),
        &Fetch {
            status: 404,
            etag: Some("\"e\""),
            ..body("sha1:N", NOW)
        },
    );
    assert_eq!(v.changed, Some(true));
    assert!(v.prior.validators.is_empty());
}

#[test]
fn sitemap_hints_move_visits_forward_within_the_floor() {
    let p = policy();
    let fetched = NOW - 3_600_000;
    let prior = p.visit(URL, None, &body("sha1:A", fetched)).prior;
    let due = fetched + DAY * 1000;
    let hint = |lastmod: Option<&str>, changefreq: Option<&str>, now: u64| {
        p.sitemap_hint(URL, &prior, due, lastmod, changefreq, now)
    };
    // Changed after the last fetch: due now.
    assert_eq!(
        hint(Some("2026-12-05T23:30:00Z"), None, NOW),
        Hint {
            due_ms: Some(NOW),
            anomaly: None
        }
    );
    // Not changed since: left alone, even with a changefreq.
    assert_eq!(
        hint(Some("2026-12-05T22:00:00Z"), Some("hourly"), NOW),
        Hint::default()
    );
    // In the future or unparseable: ignored, and noted.
    assert_eq!(
        hint(Some("2027-01-01"), None, NOW).anomaly,
        Some(Anomaly::LastmodInFuture)
    );
    assert_eq!(hint(Some("2027-01-01"), None, NOW).due_ms, None);
    assert_eq!(
        hint(Some("yesterday"), None, NOW).anomaly,
        Some(Anomaly::LastmodUnparseable)
    );
    // A sitemap saying the page changed a second ago, right after a fetch: no sooner than min_interval_s.
    let just = fetched + 1_000;
    let h = hint(
        Some(&crate::recrawl::rfc3339_ms(just + 500)),
        None,
        just + 1_000,
    );
    assert_eq!(
        h,
        Hint {
            due_ms: Some(fetched + 60_000),
            anomaly: Some(Anomaly::HintBounded)
        }
    );
    // changefreq: the last fetch plus its period, when earlier than the current due time.
    assert_eq!(hint(None, Some("hourly"), NOW).due_ms, Some(NOW));
    assert_eq!(
        hint(None, Some(" Hourly "), NOW - 1_800_000).due_ms,
        Some(NOW)
    );
    assert_eq!(hint(None, Some("always"), NOW).due_ms, Some(NOW));
    assert_eq!(
        hint(None, Some("weekly"), NOW),
        Hint::default(),
        "never later"
    );
    assert_eq!(hint(None, Some("never"), NOW), Hint::default());
    assert_eq!(hint(None, Some("sometimes"), NOW), Hint::default());
    assert_eq!(hint(None, None, NOW), Hint::default());
}
