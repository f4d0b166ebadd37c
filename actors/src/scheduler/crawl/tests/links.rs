//! Unit tests of [`Crawl`] (continued): link admission, redirects (chains, loops, limits, unusable targets) and
//! per-host and global concurrency. The harness is in the parent module.

use super::*;
use crate::protocol::RedirectError;
use crawl_core::canon::CanonError;

#[test]
fn links_are_admitted_or_excluded_and_recorded_once() {
    let mut h = H::new(settings(), policy(1));
    h.seed("http://a.test/");
    let root = h.one(0);
    assert_eq!((root.entry.depth, root.entry.parent.as_deref()), (0, None));
    let links = vec![
        link("http://a.test/x", ScopeVerdict::InScope),
        link("http://b.test/", ScopeVerdict::OutOfScope),
        link("http://a.test/logout", ScopeVerdict::Filtered),
        link("http://a.test/deep", ScopeVerdict::TooDeep),
        link("http://a.test/x", ScopeVerdict::InScope),
        link("http://b.test/", ScopeVerdict::OutOfScope),
        link("http://a.test/", ScopeVerdict::InScope),
    ];
    h.done(&root, ok(links), 0);
    let new = h.flush();
    assert_eq!(new.len(), 4, "{new:?}");
    for (url, reason) in [
        ("http://b.test/", Reason::Scope),
        ("http://a.test/logout", Reason::Filter),
        ("http://a.test/deep", Reason::Depth),
    ] {
        let r = h.record(url);
        assert_eq!((r.outcome, r.reason), (Outcome::Excluded, Some(reason)));
        assert_eq!((r.depth, r.parent.as_deref()), (1, Some("http://a.test/")));
    }
    let x = h.one(0);
    assert_eq!(x.entry.url, "http://a.test/x");
    assert_eq!(
        (x.entry.depth, x.entry.parent.as_deref()),
        (1, Some("http://a.test/"))
    );
    let again = vec![
        link("http://a.test/", ScopeVerdict::InScope),
        link("http://a.test/x", ScopeVerdict::InScope),
        link("http://b.test/", ScopeVerdict::OutOfScope),
        link("http://a.test/deep", ScopeVerdict::TooDeep),
        link("http://a.test/y", ScopeVerdict::InScope),
    ];
    h.done(&x, ok(again), 0);
    let y = h.one(0);
    assert_eq!(
        (y.entry.url.as_str(), y.entry.depth),
        ("http://a.test/y", 2)
    );
    h.done(&y, ok(inscope(&["http://a.test/x", "http://a.test/y"])), 0);
    assert!(h.lease(0).0.is_empty());
    h.flush();
    h.assert_unique();
    assert_eq!(h.file.len(), 6);
    let r = h.record("http://a.test/");
    assert_eq!((r.status, r.links, r.attempts), (Some(200), Some(7), 1));
    assert_eq!(h.crawl.stats().known, 6);
    assert_eq!(h.crawl.finished(), Some(FinishReason::Completed));
}

#[test]
fn links_of_non_2xx_pages_are_not_followed() {
    let mut h = H::new(settings(), policy(1));
    h.seed("http://a.test/");
    let j = h.one(0);
    let mut out = PageOutcome {
        status: 404,
        links: inscope(&["http://a.test/from-404"]),
        ..PageOutcome::default()
    };
    out.links_found = 1;
    h.done(&j, JobResult::Page(Box::new(out)), 0);
    assert!(h.lease(0).0.is_empty());
    h.flush();
    assert_eq!(h.file.len(), 1);
    assert_eq!(h.record("http://a.test/").status, Some(404));
}

#[test]
fn redirects_follow_chain_detect_loops_and_limits() {
    let mut h = H::new(settings(), policy(1));
    h.seed("http://a.test/a");
    let a = h.one(0);
    h.done(&a, redirect("http://a.test/b"), 0);
    let b = h.one(0);
    assert_eq!(b.entry.url, "http://a.test/b");
    assert_eq!(b.entry.depth, 0, "a redirect keeps the depth");
    assert_eq!(b.entry.parent.as_deref(), Some("http://a.test/a"));
    assert_eq!(b.entry.redirect_chain, ["http://a.test/a"]);
    h.done(&b, redirect("http://a.test/a"), 0);
    assert!(h.lease(0).0.is_empty());
    h.flush();
    let ra = h.record("http://a.test/a");
    assert_eq!((ra.outcome, ra.status), (Outcome::Fetched, Some(301)));
    assert_eq!(ra.redirect_to.as_deref(), Some("http://a.test/b"));
    let rb = h.record("http://a.test/b");
    assert_eq!(
        (rb.outcome, rb.reason),
        (Outcome::Failed, Some(Reason::RedirectLoop))
    );

    // max_redirects = 2: c -> d -> e are followed, the third hop (e -> f) is one too many
    h.seed("http://a.test/c");
    let mut chain = Vec::new();
    for (from, to) in [("c", "d"), ("d", "e"), ("e", "f")] {
        let j = h.one(0);
        assert_eq!(j.entry.url, format!("http://a.test/{from}"));
        assert_eq!(j.entry.redirect_chain, chain);
        chain.push(j.entry.url.clone());
        h.done(&j, redirect(&format!("http://a.test/{to}")), 0);
    }
    assert!(h.lease(0).0.is_empty(), "f is not queued");
    h.flush();
    let re = h.record("http://a.test/e");
    assert_eq!(
        (re.outcome, re.reason),
        (Outcome::Failed, Some(Reason::TooManyRedirects))
    );
    assert_eq!(h.record("http://a.test/d").outcome, Outcome::Fetched);
    assert!(!h.file.iter().any(|r| r.url == "http://a.test/f"));

    // a redirect to a known URL adds nothing
    h.seed("http://a.test/g");
    let g = h.one(0);
    h.done(&g, redirect("http://a.test/a"), 0);
    assert!(h.lease(0).0.is_empty());
    h.flush();
    assert_eq!(
        h.record("http://a.test/g").redirect_to.as_deref(),
        Some("http://a.test/a")
    );
    h.assert_unique();
    assert_eq!(h.file.len(), 6);
    assert_eq!(h.crawl.finished(), Some(FinishReason::Completed));
}

#[test]
fn unusable_redirect_and_out_of_scope_target() {
    let mut h = H::new(settings(), policy(1));
    h.seed("http://a.test/bad");
    h.seed("http://a.test/out");
    let j = h.one(0);
    let out = PageOutcome {
        status: 302,
        redirect_to: Some(Err(RedirectError::unusable(
            "http://[::1",
            CanonError::Parse(url::ParseError::InvalidIpv6Address),
        ))),
        ..PageOutcome::default()
    };
    h.done(&j, JobResult::Page(Box::new(out)), 0);
    let j = h.one(0);
    let out = PageOutcome {
        status: 302,
        redirect_to: Some(Ok(link("http://z.test/", ScopeVerdict::OutOfScope))),
        ..PageOutcome::default()
    };
    h.done(&j, JobResult::Page(Box::new(out)), 0);
    assert!(h.lease(0).0.is_empty());
    h.flush();
    let bad = h.record("http://a.test/bad");
    assert_eq!((bad.status, bad.redirect_to.as_deref()), (Some(302), None));
    assert_eq!(
        bad.error.as_deref(),
        Some("unusable Location \"http://[::1\": invalid url: invalid IPv6 address")
    );
    let z = h.record("http://z.test/");
    assert_eq!(z.reason, Some(Reason::Scope));
    assert_eq!(z.parent.as_deref(), Some("http://a.test/out"));
}

#[test]
fn per_host_and_global_concurrency_limit_leases() {
    let s = CrawlSettings {
        concurrency: 3,
        ..settings()
    };
    let mut h = H::new(s, policy(2));
    for i in 0..4 {
        h.seed(&format!("http://a.test/{i}"));
        h.seed(&format!("http://b.test/{i}"));
    }
    let (jobs, _) = h.lease(0);
    assert_eq!(jobs.len(), 3, "global limit");
    for host in [0, 1] {
        assert!(jobs.iter().filter(|j| j.host == host).count() <= 2);
    }
    assert!(h.lease(0).0.is_empty());
    assert_eq!(h.crawl.in_flight(), 3);
    h.done(&jobs[0], ok(Vec::new()), 0);
    assert_eq!(h.lease(0).0.len(), 1);

    let s = CrawlSettings {
        concurrency: 10,
        ..settings()
    };
    let mut h = H::new(s, policy(2));
    for i in 0..4 {
        h.seed(&format!("http://a.test/{i}"));
        h.seed(&format!("http://b.test/{i}"));
    }
    let (jobs, _) = h.lease(0);
    assert_eq!(jobs.len(), 4, "two per host");
    let a = jobs
        .iter()
        .filter(|j| j.entry.url.contains("a.test"))
        .count();
    assert_eq!(a, 2);
    let first_a = jobs
        .iter()
        .find(|j| j.entry.url.contains("a.test"))
        .unwrap();
    h.done(first_a, ok(Vec::new()), 0);
    let (more, _) = h.lease(0);
    assert_eq!(more.len(), 1);
    assert!(
        more[0].entry.url.contains("a.test"),
        "the freed slot is a.test's"
    );
}
