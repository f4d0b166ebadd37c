//! Unit tests of [`Crawl::reconfigure`] (a SIGHUP reload): the politeness policy applies from the next lease, a new
//! exclude pattern records URLs still queued as excluded when they come up, and leases in flight are neither lost
//! nor duplicated. The harness is in the parent module.

use super::*;

fn scope_excluding(pattern: &str) -> Arc<ScopePolicy> {
    Arc::new(ScopePolicy::new(
        ScopeMode::Any,
        &[],
        Vec::new(),
        vec![regex::Regex::new(pattern).unwrap()],
        10,
    ))
}

fn same_scope() -> Arc<ScopePolicy> {
    Arc::new(ScopePolicy::new(
        ScopeMode::Any,
        &[],
        Vec::new(),
        Vec::new(),
        10,
    ))
}

#[test]
fn a_lower_delay_applies_from_the_next_lease() {
    let slow = PolitenessPolicy {
        min_delay: Duration::from_secs(10),
        ..policy(1)
    };
    let mut h = H::new(settings(), slow);
    for n in 1..=3 {
        h.seed(&format!("http://a.test/{n}"));
    }
    let j = h.one(0);
    h.done(&j, ok(Vec::new()), 0);
    // under the old policy the next request waits 10 s
    assert!(h.lease(1_000).0.is_empty());
    h.crawl.reconfigure(Some(policy(1)), Some(same_scope()));
    // released before the reload: its next start was computed with the old delay
    let j = h.one(10_000);
    h.done(&j, ok(Vec::new()), 10_000);
    // released after: no delay any more
    let j = h.one(10_001);
    h.done(&j, ok(Vec::new()), 10_001);
    h.flush();
    assert_eq!(h.file.len(), 3);
    h.assert_unique();
}

#[test]
fn a_new_exclude_pattern_records_queued_urls_excluded_and_keeps_leases() {
    let mut h = H::new(settings(), policy(2));
    h.seed("http://a.test/keep/1");
    h.seed("http://a.test/drop/1");
    h.seed("http://a.test/keep/2");
    let first = h.lease(0).0;
    assert_eq!(first.len(), 2);
    h.crawl
        .reconfigure(Some(policy(2)), Some(scope_excluding("/drop/")));
    // the leases in flight finish normally, whatever they are
    for j in &first {
        h.done(j, ok(Vec::new()), 1);
    }
    let rest = h.lease(2).0;
    for j in &rest {
        assert!(
            !j.entry.url.contains("/drop/"),
            "{} leased after the reload",
            j.entry.url
        );
        h.done(j, ok(Vec::new()), 3);
    }
    h.flush();
    h.assert_unique();
    assert_eq!(h.file.len(), 3, "{:?}", h.file);
    let dropped_leased = first.iter().any(|j| j.entry.url.contains("/drop/"));
    let r = h.record("http://a.test/drop/1");
    if dropped_leased {
        assert_eq!(
            r.outcome,
            Outcome::Fetched,
            "a lease in flight is not cancelled"
        );
    } else {
        assert_eq!(
            (r.outcome, r.reason),
            (Outcome::Excluded, Some(Reason::Filter))
        );
    }
    assert_eq!(h.record("http://a.test/keep/2").outcome, Outcome::Fetched);
}

#[test]
fn excluded_after_reload_even_when_queued_behind_a_lease() {
    let mut h = H::new(settings(), policy(1));
    h.seed("http://a.test/keep/1");
    h.seed("http://a.test/drop/1");
    let j = h.one(0);
    assert_eq!(j.entry.url, "http://a.test/keep/1");
    h.crawl
        .reconfigure(Some(policy(1)), Some(scope_excluding("/drop/")));
    h.done(
        &j,
        ok(vec![link("http://a.test/drop/2", ScopeVerdict::InScope)]),
        1,
    );
    // nothing is left to lease: the queued /drop/ URLs are recorded excluded as they come up
    assert!(h.lease(2).0.is_empty());
    h.flush();
    h.assert_unique();
    assert_eq!(
        h.record("http://a.test/drop/1").reason,
        Some(Reason::Filter)
    );
    assert_eq!(
        h.record("http://a.test/drop/2").reason,
        Some(Reason::Filter)
    );
    assert_eq!(h.crawl.finished(), Some(FinishReason::Completed));
}

#[test]
fn a_part_left_out_of_a_reload_is_kept() {
    let slow = PolitenessPolicy {
        min_delay: Duration::from_secs(10),
        ..policy(1)
    };
    // The politeness policy alone: the scope stays, and queued URLs are not judged again.
    let mut h = H::new(settings(), slow.clone());
    let scope = h.crawl.admission.scope().clone();
    h.crawl.reconfigure(Some(policy(2)), None);
    assert_eq!(h.crawl.windows.hosts().policy(), &policy(2));
    assert!(Arc::ptr_eq(h.crawl.admission.scope(), &scope));
    assert!(!h.crawl.admission.rescoping());

    // The scope alone: the politeness policy stays (the next request still waits 10 s).
    let mut h = H::new(settings(), slow.clone());
    for n in 1..=2 {
        h.seed(&format!("http://a.test/{n}"));
    }
    let j = h.one(0);
    h.done(&j, ok(Vec::new()), 0);
    h.crawl.reconfigure(None, Some(scope_excluding("/never/")));
    assert!(h.crawl.admission.rescoping());
    assert_eq!(h.crawl.windows.hosts().policy(), &slow);
    assert!(h.lease(5_000).0.is_empty(), "the delay was dropped");
    let j = h.one(10_000);
    h.done(&j, ok(Vec::new()), 10_000);
    h.flush();
    assert_eq!(h.file.len(), 2);
    h.assert_unique();
}
