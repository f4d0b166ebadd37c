//! Integration test of crawler traps (`[traps]`), run with the real `crawl-engine` binary against a loopback site
//! full of them: a calendar whose every month links the next one, a path that links itself one level deeper
//! (`/a/a/a/...`), a session id on every link to two pages, a template linking URLs that differ only in a number,
//! an overlong URL, and a second host linking more pages than its budget. The crawl must end on its own, every cut
//! URL recorded excluded with its rule's reason, and the session variants crawled once. Hosts use
//! 127.0.0.140..=127.0.0.149.

use crate::ENGINE;
use std::collections::BTreeMap;
use std::time::Duration;

use crawl_core::record::{Outcome, Reason, Record};
use crawl_tests::engine::TestCrawl;
use crawl_tests::site::{Route, Site, SiteSpec};

/// Kill deadline of the run: a crawl the traps do not end fails the test.
const DEADLINE: Duration = Duration::from_secs(60);

/// Pages of the item template admitted before `pattern_budget` cuts (`traps.max_urls_per_pattern`).
const PER_PATTERN: usize = 30;
/// Items the template's hub links (more than the pattern budget).
const ITEMS: usize = 50;
/// URLs admitted per host (`traps.max_urls_per_host`).
const PER_HOST: usize = 80;
/// Distinct pages (no digits, so each its own pattern) the second host links.
const WIDE: usize = 120;

/// The HTML of a page linking `hrefs`.
fn html<S: AsRef<str>>(hrefs: &[S]) -> String {
    let mut s = String::from("<!DOCTYPE html>\n<html><head><title>t</title></head><body>\n");
    for h in hrefs {
        s.push_str(&format!("<a href=\"{}\">link</a>\n", h.as_ref()));
    }
    s + "</body></html>\n"
}

/// A 200 page of the trap host linking `hrefs` and, like every page there, session-id variants of `/home` and `/`.
fn page<S: AsRef<str>>(id: &str, hrefs: &[S]) -> Route {
    let mut links: Vec<String> = hrefs.iter().map(|h| h.as_ref().to_owned()).collect();
    links.push(format!("/home;jsessionid=S{id}"));
    links.push(format!("/?PHPSESSID={id}&amp;utm_source=nav"));
    Route::ok(html(&links))
}

/// January of the current UTC year, as the engine sees it: the calendar starts there.
fn january() -> (i32, u32) {
    (crawl_core::traps::current_year(), 1)
}

fn next_month((y, m): (i32, u32)) -> (i32, u32) {
    if m == 12 { (y + 1, 1) } else { (y, m + 1) }
}

fn cal_path((y, m): (i32, u32)) -> String {
    format!("/cal/{y}/{m}/")
}

/// Names without digits: `/p/aa`, `/p/ab`, ...
fn wide_path(i: usize) -> String {
    let a = char::from(b'a' + (i / 26) as u8);
    let b = char::from(b'a' + (i % 26) as u8);
    format!("/p/{a}{b}")
}

async fn start() -> Site {
    let spec = SiteSpec {
        hosts: 2,
        pages_per_host: 1,
        links_per_page: 0,
        cross_host_ratio: 0.0,
        seed: 1,
        gzip: false,
        robots: false,
        sitemaps: false,
        redirects: false,
        missing: false,
        orphans: 0,
        first_octet: 140,
        port: 0,
        page_bytes: 256,
        log_requests: true,
        ..SiteSpec::default()
    };
    let long = format!("/long?q={}", "x".repeat(1100));
    let now = january();
    let mut b = Site::builder(spec).route(
        0,
        "/",
        page(
            "root",
            &[cal_path(now), "/a/".into(), "/items".into(), long],
        ),
    );
    b = b.route(0, "/home", page("home", &["/"]));
    // Five years of months from January, each linking the next: only the calendar rule stops the walk.
    let mut month = now;
    for _ in 0..60 {
        let next = next_month(month);
        b = b.route(0, &cal_path(month), page("cal", &[cal_path(next)]));
        month = next;
    }
    // A page linking itself one level deeper, without end.
    let mut path = String::from("/a/");
    for _ in 0..10 {
        b = b.route(0, &path, page("a", &["a/"]));
        path.push_str("a/");
    }
    let items: Vec<String> = (1..=ITEMS).map(|n| format!("/item/{n}")).collect();
    b = b.route(0, "/items", page("items", &items));
    for n in 1..=ITEMS {
        b = b.route(
            0,
            &format!("/item/{n}"),
            page(&format!("i{n}"), &[format!("/item/{}", n + 1000)]),
        );
    }
    let wide: Vec<String> = (0..WIDE).map(wide_path).collect();
    b = b.route(1, "/", Route::ok(html(&wide)));
    b.start().await.expect("site starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traps_are_cut_with_their_reasons_and_the_crawl_ends() {
    let site = start().await;
    let seeds = vec![site.url(0, "/"), site.url(1, "/")];
    let crawl = TestCrawl::new(
        ENGINE,
        &seeds,
        &format!(
            "[crawl]\nmax_depth = 1000\n[traps]\ncalendar_future_years = 1\n\
             max_urls_per_pattern = {PER_PATTERN}\nmax_urls_per_host = {PER_HOST}\n"
        ),
    )
    .expect("test crawl");
    let crawl = tokio::task::spawn_blocking(move || {
        let out = crawl.run(DEADLINE);
        assert_eq!(out.code(), Some(0), "stderr:\n{}", out.stderr);
        crawl
    })
    .await
    .expect("join runner");
    let mut m: BTreeMap<String, Record> = BTreeMap::new();
    for r in crawl.records() {
        let url = r.url.clone();
        assert!(m.insert(url.clone(), r).is_none(), "{url} recorded twice");
    }
    let excluded = |reason: Reason| -> Vec<&str> {
        m.values()
            .filter(|r| r.outcome == Outcome::Excluded && r.reason == Some(reason))
            .map(|r| r.url.as_str())
            .collect()
    };
    let rel = |host: usize, url: &str| url.strip_prefix(site.base(host)).map(str::to_owned);

    // Session and tracking variants collapse: each page fetched once, no variant recorded.
    assert_eq!(site.hits(0, "/"), 1);
    assert_eq!(site.hits(0, "/home"), 1);
    for url in m.keys() {
        let lower = url.to_ascii_lowercase();
        assert!(
            !lower.contains("sessionid") && !lower.contains("phpsessid") && !lower.contains("utm_"),
            "{url}"
        );
    }

    // Calendar: every month up to the end of next year fetched, the first month after it cut.
    let (year, _) = january();
    let mut month = january();
    while month.0 <= year + 1 {
        let url = site.url(0, &cal_path(month));
        assert_eq!(m[&url].outcome, Outcome::Fetched, "{url}");
        month = next_month(month);
    }
    let cut = site.url(0, &cal_path(month));
    assert_eq!(excluded(Reason::Calendar), [cut.as_str()]);
    assert_eq!(
        m[&cut].depth,
        m[&site.url(0, &cal_path((year + 1, 12)))].depth + 1
    );

    // Repeated segments: /a/a/a/ fetched, /a/a/a/a/ cut.
    for path in ["/a/", "/a/a/", "/a/a/a/"] {
        assert_eq!(m[&site.url(0, path)].outcome, Outcome::Fetched, "{path}");
    }
    assert_eq!(
        excluded(Reason::RepeatedPath),
        [site.url(0, "/a/a/a/a/").as_str()]
    );
    assert_eq!(site.hits(0, "/a/a/a/a/"), 0);

    // Long URLs.
    let long = excluded(Reason::LongUrl);
    assert_eq!(long.len(), 1, "{long:?}");
    assert!(long[0].starts_with(&site.url(0, "/long?q=xxx")));

    // The item template: PER_PATTERN items fetched, every other item URL cut by its pattern's budget.
    let items: Vec<&Record> = m
        .values()
        .filter(|r| rel(0, &r.url).is_some_and(|p| p.starts_with("/item/")))
        .collect();
    let fetched_items = items
        .iter()
        .filter(|r| r.outcome == Outcome::Fetched)
        .count();
    assert_eq!(fetched_items, PER_PATTERN);
    let pattern_cut = excluded(Reason::PatternBudget);
    assert_eq!(items.len(), fetched_items + pattern_cut.len());
    // The unfetched hub links plus one link from each fetched item.
    assert_eq!(pattern_cut.len(), (ITEMS - PER_PATTERN) + PER_PATTERN);
    assert!(pattern_cut.iter().all(|u| rel(0, u).is_some()));

    // The wide host: PER_HOST pages admitted (fetched, found or not), the rest cut by the host budget.
    let wide: Vec<&Record> = m
        .values()
        .filter(|r| rel(1, &r.url).is_some_and(|p| p.starts_with("/p/")))
        .collect();
    assert_eq!(wide.len(), WIDE);
    let host_cut = excluded(Reason::HostBudget);
    assert_eq!(host_cut.len(), WIDE - PER_HOST);
    assert!(host_cut.iter().all(|u| rel(1, u).is_some()));
    assert_eq!(
        wide.iter()
            .filter(|r| r.outcome == Outcome::Fetched)
            .count(),
        PER_HOST
    );

    // Nothing else was excluded, and nothing failed.
    let reasons: Vec<(Outcome, Option<Reason>)> = m
        .values()
        .filter(|r| r.outcome != Outcome::Fetched)
        .map(|r| (r.outcome, r.reason))
        .collect();
    assert!(
        reasons.iter().all(|(o, r)| *o == Outcome::Excluded
            && matches!(
                r,
                Some(
                    Reason::Calendar
                        | Reason::RepeatedPath
                        | Reason::LongUrl
                        | Reason::PatternBudget
                        | Reason::HostBudget
                )
            )),
        "{reasons:?}"
    );
}
