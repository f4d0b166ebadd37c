//! Unit tests of [`Crawl`] (continued): what operators set through the control API — the crawl and hosts paused
//! (nothing new starts, in-flight work finishes, resumed where it stood), a host's queue dropped (every URL recorded
//! `excluded`/`operator`, the drop cleared once durable), URLs added (answered once committed: queued, known or
//! excluded with the reason), and the views of hosts.

use super::*;
use crate::protocol::{AddUrls, HostSort, UrlVerdict};
use crawl_core::control::{Change, HostMatch, OperatorState, Requester};

fn api() -> Requester {
    Requester::Api {
        peer: "127.0.0.1:9".into(),
    }
}

fn state(changes: &[Change]) -> OperatorState {
    let mut s = OperatorState::default();
    for c in changes {
        s.apply(c);
    }
    s
}

fn pause(host: Option<&str>) -> Change {
    Change::Pause {
        host: host.map(|h| HostMatch::parse(h).unwrap()),
        at_ms: 1,
        by: api(),
    }
}

fn seeded(urls: &[&str]) -> H {
    let mut h = H::new(settings(), policy(1));
    for u in urls {
        h.seed(u);
    }
    h
}

#[test]
fn a_paused_crawl_starts_nothing_and_resumes_where_it_stood() {
    let mut h = seeded(&["http://a.test/"]);
    let first = h.one(0);
    h.done(
        &first,
        ok(inscope(&["http://a.test/1", "http://a.test/2"])),
        0,
    );
    h.flush();
    let first = h.one(0);
    assert!(h.crawl.operator_state(1, state(&[pause(None)]), h.t0, 0));
    assert!(h.crawl.status_view().waiting_for.is_some());
    // In flight finishes; nothing new starts, and the crawl does not end.
    h.done(&first, ok(Vec::new()), 1);
    h.flush();
    h.idle(10);
    assert!(h.crawl.finished().is_none());
    assert!(h.crawl.operator_state(2, OperatorState::default(), h.t0, 0));
    let next = h.one(20);
    assert_ne!(next.entry.url, first.entry.url);
}

#[test]
fn a_paused_host_waits_while_the_others_go() {
    let mut h = seeded(&["http://a.test/", "http://b.test/"]);
    h.crawl
        .operator_state(1, state(&[pause(Some("a.test"))]), h.t0, 0);
    let job = h.one(0);
    assert_eq!(job.entry.url, "http://b.test/");
    h.done(&job, ok(Vec::new()), 0);
    h.flush();
    h.idle(5);
    assert!(h.crawl.finished().is_none(), "a.test's URL waits");
    let v = h.crawl.host_view("a.test", h.t0).unwrap();
    assert!(v.rule.as_ref().is_some_and(|r| r.paused.is_some()));
    assert_eq!(v.queued, Some(1));
    h.crawl.operator_state(2, OperatorState::default(), h.t0, 0);
    assert_eq!(h.one(6).entry.url, "http://a.test/");
}

#[test]
fn an_authority_pause_holds_its_urls_only() {
    let mut h = seeded(&["http://a.test:8080/", "http://c.test/"]);
    h.crawl
        .operator_state(1, state(&[pause(Some("a.test:8080"))]), h.t0, 0);
    let job = h.one(0);
    assert_eq!(job.entry.url, "http://c.test/");
    h.crawl.operator_state(2, OperatorState::default(), h.t0, 0);
    assert_eq!(h.one(1).entry.url, "http://a.test:8080/");
}

#[test]
fn a_domain_pause_holds_the_site_whatever_its_subdomains() {
    let mut h = seeded(&["http://www.a.test/", "http://a.test/", "http://b.test/"]);
    h.crawl
        .operator_state(1, state(&[pause(Some("*.a.test"))]), h.t0, 0);
    let (jobs, _) = h.lease(0);
    let urls: Vec<&str> = jobs.iter().map(|j| j.entry.url.as_str()).collect();
    assert_eq!(urls, ["http://b.test/"]);
    h.crawl.operator_state(2, OperatorState::default(), h.t0, 0);
    let (jobs, _) = h.lease(1);
    assert_eq!(jobs.len(), 2, "both a.test hosts go again: {jobs:?}");
}

#[test]
fn a_dropped_queue_is_recorded_excluded_and_the_drop_cleared_once_durable() {
    let mut h = seeded(&["http://a.test/"]);
    let root = h.one(0);
    let links: Vec<String> = (0..10).map(|i| format!("http://a.test/{i}")).collect();
    let refs: Vec<&str> = links.iter().map(String::as_str).collect();
    h.done(&root, ok(inscope(&refs)), 0);
    h.flush();
    let drop = Change::Drop {
        host: HostMatch::parse("a.test").unwrap(),
        at_ms: 5,
        by: api(),
    };
    h.crawl.operator_state(1, state(&[drop]), h.t0, 0);
    // The window holds 4 at a time: the drop reads the queue to its end.
    for ms in 1..10 {
        let (jobs, _) = h.lease(ms);
        assert!(
            jobs.is_empty(),
            "nothing of a dropped host starts: {jobs:?}"
        );
        h.flush();
    }
    for l in &links {
        let r = h.record(l);
        assert_eq!(
            (r.outcome, r.reason),
            (Outcome::Excluded, Some(Reason::Operator))
        );
    }
    let done = h.crawl.take_operator_done();
    assert!(
        matches!(
            &done[..],
            [Change::Dropped {
                requested_ms: 5,
                ..
            }]
        ),
        "{done:?}"
    );
    assert_eq!(h.crawl.finished(), Some(FinishReason::Completed));
    h.assert_unique();
}

#[test]
fn added_urls_are_answered_once_committed() {
    let mut h = seeded(&["http://a.test/"]);
    let scope = ScopePolicy::new(
        ScopeMode::Host,
        &[url::Url::parse("http://a.test/").unwrap()],
        Vec::new(),
        Vec::new(),
        3,
    );
    h.crawl.admission = Admission::new(Arc::new(scope));
    h.crawl.add_urls(
        7,
        AddUrls {
            urls: vec![
                "http://a.test/new".into(),
                "HTTP://A.TEST/".into(),
                "http://elsewhere.test/".into(),
                "http://a.test/deep".into(),
                "not a url".into(),
            ],
            depth: 0,
            force: false,
        },
        h.t0,
    );
    assert!(
        h.crawl.take_add_answers().is_empty(),
        "not before the commit"
    );
    h.flush();
    let answers = h.crawl.take_add_answers();
    assert_eq!(answers.len(), 1);
    let (token, a) = &answers[0];
    assert_eq!(*token, 7);
    let v: Vec<_> = a.iter().map(|a| a.verdict.clone()).collect();
    assert_eq!(v[0], UrlVerdict::Queued);
    assert_eq!(v[1], UrlVerdict::Known, "the seed, as canonicalised");
    assert_eq!(a[1].canonical.as_deref(), Some("http://a.test/"));
    assert_eq!(v[2], UrlVerdict::Excluded(Reason::Scope));
    assert_eq!(v[3], UrlVerdict::Queued);
    assert!(matches!(v[4], UrlVerdict::Invalid(_)));
    // Too deep for max_depth 3.
    h.crawl.add_urls(
        8,
        AddUrls {
            urls: vec!["http://a.test/x".into()],
            depth: 9,
            force: false,
        },
        h.t0,
    );
    h.flush();
    let (_, a) = &h.crawl.take_add_answers()[0];
    assert_eq!(a[0].verdict, UrlVerdict::Excluded(Reason::Depth));
    // Leased like any URL.
    let mut urls = Vec::new();
    loop {
        let (jobs, _) = h.lease(0);
        if jobs.is_empty() {
            break;
        }
        for j in jobs {
            urls.push(j.entry.url.clone());
            h.done(&j, ok(Vec::new()), 0);
        }
        h.flush();
    }
    assert!(urls.contains(&"http://a.test/new".to_owned()));
    assert_eq!(
        h.record("http://elsewhere.test/").reason,
        Some(Reason::Scope)
    );
}

#[test]
fn host_views_sort_and_count() {
    let mut h = seeded(&["http://a.test/", "http://b.test/"]);
    let (jobs, _) = h.lease(0);
    let host = "b.test";
    for j in jobs {
        let links = if j.entry.url.contains(host) {
            inscope(&["http://b.test/0", "http://b.test/1", "http://b.test/2"])
        } else {
            Vec::new()
        };
        h.done(&j, ok(links), 0);
    }
    h.flush();
    let views = h.crawl.host_views(HostSort::Queued, 10, h.t0);
    assert_eq!(views.len(), 2);
    assert_eq!(views[0].host, host);
    assert_eq!(views[0].queued, Some(3));
    let by_name = h.crawl.host_views(HostSort::Name, 1, h.t0);
    assert_eq!(by_name.len(), 1);
    assert_eq!(by_name[0].host, "a.test");
    assert!(h.crawl.host_view("nowhere.test", h.t0).is_none());
}
