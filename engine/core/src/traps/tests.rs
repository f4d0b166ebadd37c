use super::*;

fn u(s: &str) -> Url {
    canon::canonicalize(s).unwrap()
}

/// Rules with every default, the calendar centred on 2026.
fn rules() -> TrapRules {
    TrapRules::new(&TrapsConfig::default(), 2026)
}

fn with(f: impl FnOnce(&mut TrapsConfig)) -> TrapRules {
    let mut c = TrapsConfig::default();
    f(&mut c);
    TrapRules::new(&c, 2026)
}

#[test]
fn ordinary_urls_pass() {
    let r = rules();
    for s in [
        "http://a.com/",
        "http://a.com/blog/2026/11/a-post",
        "http://a.com/archive/2001/05/",
        "http://a.com/item/2099",
        "http://a.com/docs/v1/docs/v2/docs/",
        "http://a.com/search?q=x&page=7&year=2024",
        "http://a.com/p?date=2025-02-28",
        "http://a.com/1234/5678/",
    ] {
        assert_eq!(r.check(&u(s)), None, "{s}");
    }
}

#[test]
fn repeated_segments() {
    let r = rules();
    assert_eq!(r.check(&u("http://a.com/x/x/x")), None);
    assert_eq!(
        r.check(&u("http://a.com/x/x/x/x")),
        Some(Reason::RepeatedPath)
    );
    assert_eq!(r.check(&u("http://a.com/a/b/a/b/a/b")), None);
    assert_eq!(
        r.check(&u("http://a.com/a/b/a/b/a/b/a/")),
        Some(Reason::RepeatedPath)
    );
    // Empty segments (`//`) do not count.
    assert_eq!(r.check(&u("http://a.com/a//////a/")), None);
    let strict = with(|c| c.max_repeated_segments = 1);
    assert_eq!(
        strict.check(&u("http://a.com/a/b/a")),
        Some(Reason::RepeatedPath)
    );
    let off = with(|c| c.max_repeated_segments = 0);
    assert_eq!(off.check(&u("http://a.com/x/x/x/x/x/x")), None);
}

#[test]
fn long_paths_and_queries() {
    let r = with(|c| {
        c.max_path_bytes = 20;
        c.max_query_bytes = 16;
        c.max_query_params = 3;
    });
    // The path is measured with its leading slash: `/` + 19 bytes = 20.
    assert_eq!(
        r.check(&u(&format!("http://a.com/{}", "p".repeat(19)))),
        None
    );
    assert_eq!(
        r.check(&u(&format!("http://a.com/{}", "p".repeat(20)))),
        Some(Reason::LongUrl)
    );
    assert_eq!(r.check(&u("http://a.com/?q=0123456789abcd")), None);
    assert_eq!(
        r.check(&u("http://a.com/?q=0123456789abcde")),
        Some(Reason::LongUrl)
    );
    assert_eq!(r.check(&u("http://a.com/?a&b=1&c")), None);
    assert_eq!(
        r.check(&u("http://a.com/?a&b=1&c&d")),
        Some(Reason::LongUrl)
    );
    let off = with(|c| {
        c.max_path_bytes = 0;
        c.max_query_bytes = 0;
        c.max_query_params = 0;
    });
    let long = format!("http://a.com/{}?{}", "p".repeat(1500), "k=v&".repeat(100));
    assert_eq!(off.check(&u(&long)), None);
    // The defaults cut it.
    assert_eq!(rules().check(&u(&long)), Some(Reason::LongUrl));
}

#[test]
fn calendars_outside_the_window() {
    // Defaults: 30 years back, 3 ahead of 2026.
    let r = rules();
    for s in [
        "http://a.com/cal/2030/1/",
        "http://a.com/cal/1995/12/",
        "http://a.com/events/2099-01-01",
        "http://a.com/events/2031-12",
        "http://a.com/cal?date=2099-01-01",
        "http://a.com/cal?Year=2031&month=2",
        "http://a.com/cal?startDate=20991231",
        "http://a.com/cal?y=1900",
    ] {
        assert_eq!(r.check(&u(s)), Some(Reason::Calendar), "{s}");
    }
    for s in [
        "http://a.com/cal/2029/12/",
        "http://a.com/cal/1996/1/",
        "http://a.com/cal/2031/13/",
        "http://a.com/cal/2031/",
        "http://a.com/cal?id=20991231",
        "http://a.com/cal?date=2099-13-01",
        "http://a.com/cal?date=2099-01-32",
        "http://a.com/cal?month=99",
    ] {
        assert_eq!(r.check(&u(s)), None, "{s}");
    }
    // The window follows the injected year and the configured widths.
    let later = TrapRules::new(&TrapsConfig::default(), 2040);
    assert_eq!(later.check(&u("http://a.com/cal/2030/1/")), None);
    let narrow = with(|c| {
        c.calendar_past_years = 0;
        c.calendar_future_years = 0;
    });
    assert_eq!(narrow.check(&u("http://a.com/cal/2026/6/")), None);
    assert_eq!(
        narrow.check(&u("http://a.com/cal/2025/6/")),
        Some(Reason::Calendar)
    );
    let off = with(|c| c.calendar = false);
    assert_eq!(off.check(&u("http://a.com/cal/2999/1/")), None);
}

#[test]
fn current_year_is_plausible() {
    let y = current_year();
    assert!((2024..3000).contains(&y), "{y}");
}

#[test]
fn off_rules_cut_nothing() {
    let off = TrapRules::off();
    assert_eq!(off.check(&u("http://a.com/x/x/x/x/x/x/x")), None);
    let mut url = u("http://a.com/?sid=1");
    assert!(!off.strip(&mut url));
    let mut url = u("http://a.com/p;JSESSIONID=1?utm_source=x&k=1");
    assert!(rules().strip(&mut url));
    assert_eq!(url.as_str(), "http://a.com/p?k=1");
}

#[test]
fn patterns_ignore_digits_and_query_values() {
    let p = |s: &str| url_pattern(&u(s));
    assert_eq!(p("http://a.com/item/123/page2"), "/item/{n}/page{n}");
    assert_eq!(p("http://a.com/item/9/page77"), "/item/{n}/page{n}");
    assert_eq!(p("http://a.com/list?page=3&sort=asc"), "/list?page&sort");
    assert_ne!(p("http://a.com/list?page=3"), p("http://a.com/list?sort=3"));
    assert_ne!(p("http://a.com/a/1"), p("http://a.com/b/1"));
    assert_eq!(p("http://a.com/"), "/");
}

#[test]
fn host_budget_counts_distinct_urls_per_host() {
    let mut b = Budgets::new(&TrapsConfig {
        max_urls_per_host: 3,
        ..TrapsConfig::default()
    });
    assert!(b.is_on());
    for s in ["http://a.com/x", "http://a.com/y", "http://a.com/x"] {
        assert_eq!(b.admit("a.com", &u(s)), None, "{s}");
    }
    assert_eq!(b.admit("a.com", &u("http://a.com/z")), None);
    assert_eq!(
        b.admit("a.com", &u("http://a.com/w")),
        Some(Reason::HostBudget)
    );
    // Known URLs stay admitted (the store drops them as duplicates); other hosts have budgets of their own.
    assert_eq!(b.admit("a.com", &u("http://a.com/y")), None);
    assert_eq!(b.admit("b.com", &u("http://b.com/w")), None);
    // A restart: pending URLs count against the budget.
    let mut b = Budgets::new(&TrapsConfig {
        max_urls_per_host: 3,
        ..TrapsConfig::default()
    });
    b.resume("a.com", 2);
    assert_eq!(b.admit("a.com", &u("http://a.com/1")), None);
    assert_eq!(
        b.admit("a.com", &u("http://a.com/2")),
        Some(Reason::HostBudget)
    );
}

#[test]
fn pattern_budget_per_host_and_pattern() {
    let mut b = Budgets::new(&TrapsConfig {
        max_urls_per_pattern: 2,
        ..TrapsConfig::default()
    });
    assert_eq!(b.admit("a.com", &u("http://a.com/item/1")), None);
    assert_eq!(b.admit("a.com", &u("http://a.com/item/2")), None);
    assert_eq!(b.admit("a.com", &u("http://a.com/item/1")), None);
    assert_eq!(
        b.admit("a.com", &u("http://a.com/item/3")),
        Some(Reason::PatternBudget)
    );
    assert_eq!(
        b.admit("a.com", &u("http://a.com/item/44")),
        Some(Reason::PatternBudget)
    );
    assert_eq!(b.admit("a.com", &u("http://a.com/list?p=1")), None);
    assert_eq!(b.admit("a.com", &u("http://a.com/list?p=2")), None);
    assert_eq!(
        b.admit("a.com", &u("http://a.com/list?p=3")),
        Some(Reason::PatternBudget)
    );
    assert_eq!(b.admit("b.com", &u("http://b.com/item/3")), None);
    // Without budgets nothing is counted or cut.
    let mut off = Budgets::new(&TrapsConfig::default());
    assert!(!off.is_on());
    for n in 0..100 {
        assert_eq!(
            off.admit("a.com", &u(&format!("http://a.com/item/{n}"))),
            None
        );
    }
}

#[test]
fn both_budgets_cut_by_the_first_that_is_full() {
    let mut b = Budgets::new(&TrapsConfig {
        max_urls_per_host: 3,
        max_urls_per_pattern: 1,
        ..TrapsConfig::default()
    });
    assert_eq!(b.admit("a.com", &u("http://a.com/item/1")), None);
    // Cut by its pattern: not counted against the host.
    assert_eq!(
        b.admit("a.com", &u("http://a.com/item/2")),
        Some(Reason::PatternBudget)
    );
    assert_eq!(b.admit("a.com", &u("http://a.com/a")), None);
    assert_eq!(b.admit("a.com", &u("http://a.com/b")), None);
    assert_eq!(
        b.admit("a.com", &u("http://a.com/c")),
        Some(Reason::HostBudget)
    );
}

#[test]
fn trap_kinds_are_stored_and_recorded_with_their_reason() {
    use crate::frontier::{JobKind, TrapKind};
    use crate::scope::ScopeVerdict;
    let traps = [
        Reason::HostBudget,
        Reason::RepeatedPath,
        Reason::LongUrl,
        Reason::Calendar,
        Reason::PatternBudget,
    ];
    let mut codes = std::collections::HashSet::new();
    for r in traps {
        let kind = JobKind::from_verdict(ScopeVerdict::Trap(r));
        assert_eq!(kind, JobKind::Trap(TrapKind::from_reason(r).unwrap()));
        assert_eq!(kind.excluded(), Some(r));
        assert!(!kind.is_fetched());
        assert!(codes.insert(kind.code()));
        assert_eq!(JobKind::from_code(kind.code()), Some(kind));
    }
    assert_eq!(TrapKind::from_reason(Reason::Depth), None);
    assert_eq!(JobKind::excluded_for(Reason::Depth), JobKind::TooDeep);
}
