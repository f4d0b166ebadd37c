//! Unit tests of [`Crawl`] (continued): crawler traps at link admission: session parameters stripped (variants
//! collapse into one URL), the per-host and per-pattern budgets (cut links recorded excluded with their reason, a
//! known URL never cut), and the trap verdicts of the scope recorded with theirs.

use super::*;
use crawl_core::config::TrapsConfig;
use crawl_core::traps::TrapRules;

fn with_traps(h: &mut H, traps: TrapsConfig) {
    let seed = url::Url::parse("http://a.test/").unwrap();
    let scope = ScopePolicy::new(ScopeMode::Host, &[seed], Vec::new(), Vec::new(), 10)
        .with_traps(TrapRules::new(&traps, 2026));
    h.crawl.admission = Admission::new(Arc::new(scope));
}

#[test]
fn session_variants_collapse_and_budgets_cut_links() {
    let mut h = H::new(settings(), policy(1));
    with_traps(
        &mut h,
        TrapsConfig {
            max_urls_per_host: 4,
            max_urls_per_pattern: 2,
            ..TrapsConfig::default()
        },
    );
    h.seed("http://a.test/");
    let root = h.one(0);
    let links = inscope(&[
        "http://a.test/item/1?jsessionid=AB12",
        "http://a.test/item/1?JSESSIONID=CD34",
        "http://a.test/item/2",
        "http://a.test/item/3",
        "http://a.test/shop;jsessionid=0F?utm_source=x",
        "http://a.test/shop",
        "http://a.test/about",
        "http://a.test/contact",
        "http://a.test/item/1",
    ]);
    h.done(&root, ok(links), 0);
    h.flush();
    for (url, reason) in [
        ("http://a.test/item/3", Reason::PatternBudget),
        ("http://a.test/contact", Reason::HostBudget),
    ] {
        let r = h.record(url);
        assert_eq!((r.outcome, r.reason), (Outcome::Excluded, Some(reason)));
        assert_eq!((r.depth, r.parent.as_deref()), (1, Some("http://a.test/")));
    }
    let mut fetched = Vec::new();
    loop {
        let (jobs, _) = h.lease(0);
        if jobs.is_empty() {
            break;
        }
        for j in jobs {
            fetched.push(j.entry.url.clone());
            h.done(&j, ok(Vec::new()), 0);
        }
        h.flush();
    }
    fetched.sort();
    assert_eq!(
        fetched,
        [
            "http://a.test/about",
            "http://a.test/item/1",
            "http://a.test/item/2",
            "http://a.test/shop",
        ]
    );
    h.assert_unique();
    assert!(h.file.iter().all(|r| !r.url.contains("sessionid")));
    assert_eq!(h.file.len(), 7);
    assert_eq!(h.crawl.finished(), Some(FinishReason::Completed));
}

#[test]
fn trap_verdicts_are_recorded_with_their_reason() {
    let mut h = H::new(settings(), policy(1));
    with_traps(&mut h, TrapsConfig::default());
    h.seed("http://a.test/");
    let root = h.one(0);
    let trap = |url: &str, r: Reason| link(url, ScopeVerdict::Trap(r));
    let links = vec![
        trap("http://a.test/x/x/x/x", Reason::RepeatedPath),
        trap("http://a.test/cal/2099/1/", Reason::Calendar),
        trap("http://a.test/q?a=1&b=2", Reason::LongUrl),
        // A stripped URL is judged again: without its session id it is no trap.
        trap("http://a.test/ok?sid=1&b=2", Reason::LongUrl),
        link("http://a.test/x/x/x/x/x?sid=2", ScopeVerdict::InScope),
    ];
    h.done(&root, ok(links), 0);
    h.flush();
    for (url, reason) in [
        ("http://a.test/x/x/x/x", Reason::RepeatedPath),
        ("http://a.test/cal/2099/1/", Reason::Calendar),
        ("http://a.test/q?a=1&b=2", Reason::LongUrl),
        ("http://a.test/x/x/x/x/x", Reason::RepeatedPath),
    ] {
        let r = h.record(url);
        assert_eq!((r.outcome, r.reason), (Outcome::Excluded, Some(reason)));
    }
    let next = h.one(0);
    assert_eq!(next.entry.url, "http://a.test/ok?b=2");
}

#[test]
fn after_a_restart_a_hosts_pending_urls_count_against_its_budget() {
    let traps = TrapsConfig {
        max_urls_per_host: 3,
        ..TrapsConfig::default()
    };
    let mut h = H::new(settings(), policy(1));
    with_traps(&mut h, traps.clone());
    h.seed("http://a.test/");
    let root = h.one(0);
    let links = inscope(&["http://a.test/x", "http://a.test/y", "http://a.test/z"]);
    h.done(&root, ok(links), 0);
    h.flush();
    let (dir, file) = h.close();
    let (_store, rec) = open(dir.path());
    assert_eq!(rec.counters.pending, 3);
    let jsonl = JsonlCheckpoint {
        lines: file.len() as u64,
        bytes: rec.checkpoint.map_or(0, |c| c.bytes),
    };
    let seed = url::Url::parse("http://a.test/").unwrap();
    let scope = ScopePolicy::new(ScopeMode::Host, &[seed], Vec::new(), Vec::new(), 10)
        .with_traps(TrapRules::new(&traps, 2026));
    let mut crawl = Crawl::new(
        settings(),
        Arc::new(scope),
        HostQueues::new(policy(1)),
        rec,
        jsonl,
        Instant::now(),
    );
    let mut new = link("http://a.test/new", ScopeVerdict::InScope);
    crawl.admission.screen(&mut new, 1);
    assert_eq!(new.verdict, ScopeVerdict::Trap(Reason::HostBudget));
    let mut other = link("http://b.test/new", ScopeVerdict::InScope);
    crawl.admission.screen(&mut other, 1);
    assert_eq!(other.verdict, ScopeVerdict::InScope);
}
