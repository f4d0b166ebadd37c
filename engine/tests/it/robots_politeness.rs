//! Integration tests of robots.txt handling (the RFC 9309 status matrix, redirects, size limit, Crawl-delay) and of
//! per-host politeness (delay, concurrency, 429/503 back-off), run against the real `crawl-engine` binary and
//! loopback test sites whose `/robots.txt` (and a few pages) are overridden with [`Route`]s. Politeness is measured
//! where it matters: at the fake server, from its request log.
//!
//! Hosts use `127.0.0.70` to `127.0.0.89`, one octet per test.

use crate::ENGINE;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crawl_core::record::{Outcome, Reason, Record};
use crawl_tests::engine::{RunResult, TestCrawl};
use crawl_tests::site::{ExpectOptions, Expected, RequestLog, Route, Site, SiteSpec};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

const RULES: &str = "User-agent: *\nDisallow: /private/\n";
const DEADLINE: Duration = Duration::from_secs(20);

/// One host, `pages` pages, same-host links only, no sitemaps, plain (not gzipped) bodies.
fn tiny(first_octet: u8, pages: usize) -> SiteSpec {
    SiteSpec {
        hosts: 1,
        pages_per_host: pages,
        links_per_page: 2,
        cross_host_ratio: 0.0,
        seed: 11,
        gzip: false,
        robots: true,
        sitemaps: false,
        redirects: false,
        missing: false,
        orphans: 0,
        first_octet,
        port: 0,
        page_bytes: 300,
        log_requests: true,
        ..SiteSpec::default()
    }
}

/// A small site with redirects and 404s too, for the exact status-matrix checks.
fn matrix(first_octet: u8) -> SiteSpec {
    SiteSpec {
        pages_per_host: 8,
        redirects: true,
        missing: true,
        ..tiny(first_octet, 8)
    }
}

fn opts(respect_robots: bool) -> ExpectOptions {
    ExpectOptions {
        respect_robots,
        follow_sitemaps: false,
        max_depth: None,
    }
}

/// Runs the binary to its end (blocking wait off the runtime) and checks it exited 0.
async fn crawl(seeds: &[String], overrides: &str) -> (TestCrawl, RunResult) {
    let c = TestCrawl::new(ENGINE, seeds, overrides).expect("test crawl");
    let (c, r) = tokio::task::spawn_blocking(move || {
        let r = c.run(DEADLINE);
        (c, r)
    })
    .await
    .expect("join crawl");
    assert_eq!(
        r.code(),
        Some(0),
        "crawl-engine exit status {:?}\nstdout: {}\nstderr: {}",
        r.status,
        r.stdout,
        tail(&r.stderr)
    );
    (c, r)
}

fn tail(s: &str) -> &str {
    let start = s.len().saturating_sub(4000);
    let start = (start..s.len())
        .find(|i| s.is_char_boundary(*i))
        .unwrap_or(s.len());
    &s[start..]
}

/// Records by URL; every URL must appear once.
fn by_url(records: &[Record]) -> BTreeMap<String, Record> {
    let mut map = BTreeMap::new();
    for r in records {
        assert!(
            map.insert(r.url.clone(), r.clone()).is_none(),
            "duplicate record for {}",
            r.url
        );
    }
    map
}

/// The records are exactly what a correct crawl gives for `exp`.
fn assert_expected(records: &[Record], exp: &Expected) {
    let map = by_url(records);
    for u in &exp.fetched_ok {
        let r = map.get(u).unwrap_or_else(|| panic!("no record for {u}"));
        assert_eq!(
            (r.outcome, r.status),
            (Outcome::Fetched, Some(200)),
            "{r:?}"
        );
    }
    for (u, to) in &exp.redirects {
        let r = map.get(u).unwrap_or_else(|| panic!("no record for {u}"));
        assert_eq!(
            (r.outcome, r.status),
            (Outcome::Fetched, Some(301)),
            "{r:?}"
        );
        assert_eq!(r.redirect_to.as_deref(), Some(to.as_str()), "{r:?}");
    }
    for u in &exp.not_found {
        let r = map.get(u).unwrap_or_else(|| panic!("no record for {u}"));
        assert_eq!(
            (r.outcome, r.status),
            (Outcome::Fetched, Some(404)),
            "{r:?}"
        );
    }
    for u in &exp.robots_excluded {
        let r = map.get(u).unwrap_or_else(|| panic!("no record for {u}"));
        assert_eq!(
            (r.outcome, r.reason, r.status),
            (Outcome::Excluded, Some(Reason::Robots), None),
            "{r:?}"
        );
    }
    for u in &exp.never {
        assert!(!map.contains_key(u), "nofollow target recorded: {u}");
    }
    let want = exp.fetch_count() + exp.robots_excluded.len();
    assert_eq!(
        map.len(),
        want,
        "records: {:?}",
        map.keys().collect::<Vec<_>>()
    );
}

fn is_robots_path(r: &RequestLog) -> bool {
    r.path_only() == "/robots.txt"
}

/// Requests on `host` other than robots.txt (and other paths listed in `skip`), by start time.
fn page_requests(site: &Site, host: usize, skip: &[&str]) -> Vec<RequestLog> {
    let mut v: Vec<RequestLog> = site
        .requests()
        .into_iter()
        .filter(|r| r.host == host && !is_robots_path(r) && !skip.contains(&r.path_only()))
        .collect();
    v.sort_by_key(|r| r.start);
    v
}

fn gaps(reqs: &[RequestLog]) -> Vec<Duration> {
    reqs.windows(2)
        .map(|w| w[1].start.saturating_duration_since(w[0].start))
        .collect()
}

fn private_requests(site: &Site) -> usize {
    site.requests()
        .iter()
        .filter(|r| r.path.starts_with("/private/"))
        .count()
}

/// GET over a fresh HTTP/1.1 connection; returns the body of a 200 answer.
async fn raw_get(addr: SocketAddr, path: &str) -> Vec<u8> {
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.expect("write");
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await.expect("read");
    let end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("response head");
    assert!(buf.starts_with(b"HTTP/1.1 200"), "raw GET {path} not 200");
    buf[end + 4..].to_vec()
}

// ---------------------------------------------------------------- A: robots.txt status matrix

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn robots_200_disallowed_urls_are_excluded_and_never_requested() {
    let site = Site::builder(matrix(70))
        .route(0, "/robots.txt", Route::text(200, RULES))
        .start()
        .await
        .expect("site");
    let (c, _) = crawl(&[site.seed_url()], "").await;
    let exp = site.expected(opts(true));
    assert!(!exp.robots_excluded.is_empty() && !exp.redirects.is_empty());
    assert_expected(&c.records(), &exp);
    assert_eq!(private_requests(&site), 0, "a disallowed url was requested");
    assert_eq!(site.hits(0, "/robots.txt"), 1);
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn robots_redirect_chain_is_followed_and_its_target_rules_apply() {
    let site = Site::builder(matrix(71))
        .route(0, "/robots.txt", Route::redirect(301, "/r1"))
        .route(0, "/r1", Route::redirect(302, "/r2"))
        .route(0, "/r2", Route::text(200, RULES))
        .start()
        .await
        .expect("site");
    let (c, _) = crawl(&[site.seed_url()], "").await;
    // allow-all would fetch /private/, unavailable would fetch nothing: only the rules of /r2 give this result
    assert_expected(&c.records(), &site.expected(opts(true)));
    assert_eq!(private_requests(&site), 0);
    assert_eq!(
        (
            site.hits(0, "/robots.txt"),
            site.hits(0, "/r1"),
            site.hits(0, "/r2")
        ),
        (1, 1, 1)
    );
    site.shutdown().await;
}

/// More than 5 redirects: the engine follows 5 hops (MAX_ROBOTS_REDIRECTS), gets a 3xx at the end and treats
/// robots.txt as unavailable (parser::logic::process_robots, StatusClass::Redirect), i.e. like a 5xx: the host's
/// URLs wait, robots.txt is retried, and after robots_max_attempts they are recorded failed (robots_unavailable).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn robots_redirect_chain_longer_than_five_hops_is_unavailable() {
    let mut b = Site::builder(matrix(72)).route(0, "/robots.txt", Route::redirect(301, "/r1"));
    for i in 1..6 {
        b = b.route(
            0,
            &format!("/r{i}"),
            Route::redirect(302, &format!("/r{}", i + 1)),
        );
    }
    let site = b
        .route(0, "/r6", Route::text(200, RULES))
        .start()
        .await
        .expect("site");
    let overrides = "[crawl]\nrobots_max_attempts = 2\nrobots_retry_ms = 100\n";
    let (c, _) = crawl(&[site.seed_url()], overrides).await;
    assert_eq!(site.hits(0, "/r6"), 0, "the 6th hop must not be followed");
    assert_eq!(site.hits(0, "/robots.txt"), 2, "one chain per attempt");
    assert_eq!(site.hits(0, "/r5"), 2);
    assert_eq!(private_requests(&site), 0);
    assert!(
        page_requests(&site, 0, &["/r1", "/r2", "/r3", "/r4", "/r5"]).is_empty(),
        "no page may be fetched without usable rules"
    );
    let records = c.records();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0].url, site.seed_url());
    assert_eq!(
        (records[0].outcome, records[0].reason),
        (Outcome::Failed, Some(Reason::RobotsUnavailable))
    );
    site.shutdown().await;
}

async fn allow_all_on(first_octet: u8, route: Route) {
    let site = Site::builder(matrix(first_octet))
        .route(0, "/robots.txt", route)
        .start()
        .await
        .expect("site");
    let (c, _) = crawl(&[site.seed_url()], "").await;
    let exp = site.expected(opts(false));
    assert_expected(&c.records(), &exp);
    let private = exp
        .fetched_ok
        .iter()
        .filter(|u| u.contains("/private/"))
        .count();
    assert!(private > 0);
    assert_eq!(private_requests(&site), private, "each /private/ page once");
    assert_eq!(site.hits(0, "/robots.txt"), 1);
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn robots_404_allows_all() {
    allow_all_on(73, Route::not_found()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn robots_403_allows_all() {
    allow_all_on(74, Route::text(403, "forbidden\n")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn robots_500_disallows_all_until_a_later_attempt_succeeds() {
    let robots = Route::sequence(vec![
        Route::text(500, "oops\n"),
        Route::text(500, "oops\n"),
        Route::text(200, RULES),
    ]);
    let site = Site::builder(matrix(75))
        .route(0, "/robots.txt", robots)
        .start()
        .await
        .expect("site");
    let (c, _) = crawl(&[site.seed_url()], "[crawl]\nrobots_retry_ms = 100\n").await;
    let robots: Vec<RequestLog> = site.requests().into_iter().filter(is_robots_path).collect();
    let statuses: Vec<u16> = robots.iter().map(|r| r.status).collect();
    assert_eq!(statuses, vec![500, 500, 200]);
    let answered = robots[2].end.unwrap_or(robots[2].start);
    let pages = page_requests(&site, 0, &[]);
    assert!(!pages.is_empty());
    for p in &pages {
        assert!(
            p.start >= answered,
            "{} requested before robots.txt answered 200",
            p.path
        );
    }
    // the URLs waited; none was dropped
    assert_expected(&c.records(), &site.expected(opts(true)));
    assert_eq!(private_requests(&site), 0);
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn robots_503_forever_fails_the_urls_after_max_attempts() {
    let site = Site::builder(matrix(76))
        .route(0, "/robots.txt", Route::text(503, "down\n"))
        .start()
        .await
        .expect("site");
    let overrides = "[crawl]\nrobots_max_attempts = 3\nrobots_retry_ms = 100\n";
    let (c, _) = crawl(&[site.seed_url()], overrides).await;
    assert_eq!(site.hits(0, "/robots.txt"), 3);
    assert!(
        page_requests(&site, 0, &[]).is_empty(),
        "a page was fetched"
    );
    let records = c.records();
    assert_eq!(records.len(), 1, "{records:?}");
    let r = &records[0];
    assert_eq!(r.url, site.seed_url());
    assert_eq!(
        (r.outcome, r.reason, r.status),
        (Outcome::Failed, Some(Reason::RobotsUnavailable), None)
    );
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn robots_unreachable_host_fails_the_seed_without_hanging() {
    // a loopback port where nothing listens
    let listener = std::net::TcpListener::bind("127.0.0.77:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    let seed = format!("http://{addr}/");
    let overrides = "[crawl]\nrobots_max_attempts = 2\nrobots_retry_ms = 100\n";
    let started = Instant::now();
    let (c, _) = crawl(std::slice::from_ref(&seed), overrides).await;
    assert!(started.elapsed() < DEADLINE, "the crawl hung");
    let records = c.records();
    assert_eq!(records.len(), 1, "{records:?}");
    let r = &records[0];
    assert_eq!(r.url, seed);
    assert_eq!(
        (r.outcome, r.reason, r.status),
        (Outcome::Failed, Some(Reason::RobotsUnavailable), None)
    );
}

fn pad_to(s: &mut String, len: usize) {
    while s.len() < len {
        s.push_str("# padding padding padding padding padding padding padding pad\n");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn robots_larger_than_512_kib_is_read_up_to_the_limit() {
    let mut body = String::from("User-agent: *\n");
    pad_to(&mut body, 480 * 1024);
    let first = body.len();
    body.push_str("Disallow: /private/\n");
    pad_to(&mut body, 530 * 1024);
    let second = body.len();
    body.push_str("Disallow: /page/\n");
    pad_to(&mut body, 600 * 1024);
    assert!(first < 500 * 1024 && second > 512 * 1024);
    let site = Site::builder(matrix(78))
        .route(0, "/robots.txt", Route::text(200, body))
        .start()
        .await
        .expect("site");
    let (c, _) = crawl(&[site.seed_url()], "").await;
    // /private/ excluded (first rule), /page/ fetched (second rule beyond 512 KiB ignored)
    let exp = site.expected(opts(true));
    assert!(exp.fetched_ok.iter().any(|u| u.contains("/page/")));
    assert_expected(&c.records(), &exp);
    assert_eq!(private_requests(&site), 0);
    site.shutdown().await;
}

/// Crawls 4 pages under `Crawl-delay: 1` with one request at a time and no min_delay; returns the page requests.
async fn crawl_delay_run(first_octet: u8, extra: &str) -> (Site, Vec<RequestLog>) {
    let rules = format!("{RULES}Crawl-delay: 1\n");
    let site = Site::builder(tiny(first_octet, 4))
        .route(0, "/robots.txt", Route::text(200, rules))
        .start()
        .await
        .expect("site");
    let overrides = format!("[politeness]\nmin_delay_ms = 0\nper_host_concurrency = 1\n{extra}");
    let (c, _) = crawl(&[site.seed_url()], &overrides).await;
    assert_expected(&c.records(), &site.expected(opts(true)));
    let pages = page_requests(&site, 0, &[]);
    assert_eq!(pages.len(), 4, "{pages:?}");
    (site, pages)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crawl_delay_spaces_requests_to_the_host() {
    let (site, pages) = crawl_delay_run(79, "").await;
    for g in gaps(&pages) {
        assert!(g >= Duration::from_secs(1), "inter-arrival {g:?} < 1 s");
    }
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crawl_delay_is_capped_by_max_crawl_delay() {
    let (site, pages) = crawl_delay_run(80, "max_crawl_delay_ms = 300\n").await;
    let g = gaps(&pages);
    for d in &g {
        assert!(
            *d >= Duration::from_millis(300),
            "inter-arrival {d:?} < 300 ms"
        );
    }
    // an uncapped 1 s delay makes 3 gaps last at least 3 s
    let span = pages[3].start.saturating_duration_since(pages[0].start);
    assert!(span < Duration::from_secs(3), "delay not capped: {g:?}");
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn respect_robots_false_fetches_disallowed_pages() {
    let site = Site::builder(matrix(81))
        .route(0, "/robots.txt", Route::text(200, RULES))
        .start()
        .await
        .expect("site");
    let (c, _) = crawl(&[site.seed_url()], "[crawl]\nrespect_robots = false\n").await;
    let exp = site.expected(opts(false));
    assert_expected(&c.records(), &exp);
    let private = exp
        .fetched_ok
        .iter()
        .filter(|u| u.contains("/private/"))
        .count();
    assert!(private > 0);
    assert_eq!(private_requests(&site), private);
    site.shutdown().await;
}

// ---------------------------------------------------------------- B: politeness at the server

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_request_at_a_time_with_min_delay_and_hosts_in_parallel() {
    let spec = SiteSpec {
        hosts: 2,
        ..tiny(82, 6)
    };
    let site = Site::builder(spec)
        .route(0, "/robots.txt", Route::text(200, RULES))
        .route(1, "/robots.txt", Route::text(200, RULES))
        .start()
        .await
        .expect("site");
    let overrides = "[politeness]\nper_host_concurrency = 1\nmin_delay_ms = 200\n\
                     [fetch]\nconcurrency = 16\n";
    let (c, _) = crawl(&site.all_seed_urls(), overrides).await;
    assert_expected(&c.records(), &site.expected_from(opts(true), &[0, 1]));
    let mut spans = Vec::new();
    for h in 0..2 {
        let gap = site.min_inter_arrival(h).expect("several requests");
        assert!(gap >= Duration::from_millis(200), "host {h}: {gap:?}");
        assert_eq!(site.max_concurrency(h), 1, "host {h}");
        let mut starts: Vec<Instant> = site
            .requests()
            .iter()
            .filter(|r| r.host == h)
            .map(|r| r.start)
            .collect();
        starts.sort();
        assert_eq!(starts.len(), 7, "robots.txt + 6 pages on host {h}");
        spans.push((starts[0], starts[6]));
    }
    // serial would need the sum of both spans; in parallel the hosts' busy periods overlap
    let first = spans[0].0.min(spans[1].0);
    let last = spans[0].1.max(spans[1].1);
    let total = last.saturating_duration_since(first);
    let serial: Duration = spans
        .iter()
        .map(|(a, b)| b.saturating_duration_since(*a))
        .sum();
    assert!(
        total.as_secs_f64() < 0.75 * serial.as_secs_f64(),
        "hosts not crawled in parallel: total {total:?}, sum of host spans {serial:?}"
    );
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_host_concurrency_is_reached_but_never_exceeded() {
    const SLOW: usize = 12;
    let mut hub = String::from("<!DOCTYPE html>\n<html><body>\n");
    for i in 0..SLOW {
        hub.push_str(&format!("<a href=\"/slow/{i}\">slow {i}</a>\n"));
    }
    hub.push_str("</body></html>\n");
    let mut b = Site::builder(tiny(84, 1))
        .route(0, "/robots.txt", Route::text(200, RULES))
        .route(0, "/", Route::ok(hub));
    for i in 0..SLOW {
        let leaf =
            Route::ok("<html><body>slow leaf</body></html>\n").delay(Duration::from_millis(200));
        b = b.route(0, &format!("/slow/{i}"), leaf);
    }
    let site = b.start().await.expect("site");
    let overrides = "[politeness]\nper_host_concurrency = 3\nmin_delay_ms = 0\n\
                     [fetch]\nconcurrency = 32\n";
    let (c, _) = crawl(&[site.seed_url()], overrides).await;
    let map = by_url(&c.records());
    assert_eq!(map.len(), SLOW + 1, "{:?}", map.keys().collect::<Vec<_>>());
    for r in map.values() {
        assert_eq!(
            (r.outcome, r.status),
            (Outcome::Fetched, Some(200)),
            "{r:?}"
        );
    }
    assert_eq!(
        site.max_concurrency(0),
        3,
        "per-host concurrency must reach 3 and stay <= 3"
    );
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_429_pauses_the_host_then_the_page_is_fetched() {
    let site = Site::start(tiny(85, 4)).await.expect("site");
    site.set_route(0, "/robots.txt", Route::text(200, RULES));
    // the page's own content for the second answer, so the crawl stays the generated one
    let page2 = raw_get(site.addr(0).expect("addr"), "/page/2").await;
    site.set_route(
        0,
        "/page/2",
        Route::sequence(vec![Route::retry_after(429, "1"), Route::ok(page2)]),
    );
    site.clear_requests();
    let overrides = "[politeness]\nper_host_concurrency = 1\nmin_delay_ms = 0\n";
    let (c, _) = crawl(&[site.seed_url()], overrides).await;
    assert_expected(&c.records(), &site.expected(opts(true)));
    let reqs: Vec<RequestLog> = {
        let mut v: Vec<RequestLog> = site
            .requests()
            .into_iter()
            .filter(|r| r.host == 0)
            .collect();
        v.sort_by_key(|r| r.start);
        v
    };
    let i = reqs
        .iter()
        .position(|r| r.path == "/page/2")
        .expect("page 2 requested");
    assert_eq!(reqs[i].status, 429);
    let next = reqs.get(i + 1).expect("a request after the 429");
    let quiet = next.start.saturating_duration_since(reqs[i].start);
    assert!(
        quiet >= Duration::from_secs(1),
        "host asked again after {quiet:?}"
    );
    let again: Vec<u16> = reqs
        .iter()
        .filter(|r| r.path == "/page/2")
        .map(|r| r.status)
        .collect();
    assert_eq!(again, vec![429, 200]);
    let map = by_url(&c.records());
    let r = &map[&site.page_url(0, 2)];
    assert_eq!((r.status, r.attempts), (Some(200), 2), "{r:?}");
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_503_backs_off_then_records_the_last_answer() {
    let site = Site::builder(tiny(86, 1))
        .route(0, "/robots.txt", Route::text(200, RULES))
        .route(0, "/", Route::text(503, "busy\n"))
        .start()
        .await
        .expect("site");
    let overrides = "[politeness]\nper_host_concurrency = 1\nbackoff_base_ms = 200\n\
                     [fetch]\nmax_retries = 2\n";
    let (c, _) = crawl(&[site.seed_url()], overrides).await;
    let tries = page_requests(&site, 0, &[]);
    assert_eq!(tries.len(), 3, "1 try + max_retries: {tries:?}");
    let g = gaps(&tries);
    assert!(g[0] >= Duration::from_millis(200), "first back-off {g:?}");
    assert!(
        g[1] >= Duration::from_millis(400),
        "back-off must double: {g:?}"
    );
    let records = c.records();
    assert_eq!(records.len(), 1, "{records:?}");
    let r = &records[0];
    assert_eq!(
        (r.outcome, r.status, r.attempts),
        (Outcome::Fetched, Some(503), 3),
        "{r:?}"
    );
    site.shutdown().await;
}
