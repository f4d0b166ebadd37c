//! Integration tests of failure handling, run with the real `crawl-engine` binary against loopback sites with
//! custom routes: injected panics in the parser and the fetcher (poison, re-driving, escalation and resume),
//! redirect loops and chains, body limits and decompression bombs, deadlines, private addresses, broken
//! connections and hostile page content. Hosts use 127.0.0.110..=127.0.0.129.

use crate::ENGINE;
use std::collections::BTreeMap;
use std::fs::File;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crawl_core::record::{Outcome, Reason, Record};
use crawl_tests::engine::{TestCrawl, wait_with_deadline};
use crawl_tests::site::{Route, Site, SiteSpec};

/// Kill deadline of every crawl run: a run that outlives it fails its test (the engine hung).
const DEADLINE: Duration = Duration::from_secs(30);

/// Records by URL.
type Records = BTreeMap<String, Record>;

/// Starts one host on `127.0.0.{octet}` without generated robots.txt, sitemaps or special links, serving `routes`
/// (path, route); every other path is the generator's page or 404.
async fn start(octet: u8, routes: Vec<(String, Route)>) -> Site {
    let spec = SiteSpec {
        hosts: 1,
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
        first_octet: octet,
        port: 0,
        page_bytes: 256,
        log_requests: true,
        ..SiteSpec::default()
    };
    let mut b = Site::builder(spec);
    for (path, route) in routes {
        b = b.route(0, &path, route);
    }
    b.start().await.expect("site starts")
}

/// The body of an HTML page with one anchor per href (written verbatim).
fn html<S: AsRef<str>>(hrefs: &[S]) -> String {
    let mut s = String::from("<!DOCTYPE html>\n<html><head><title>t</title></head><body>\n");
    for h in hrefs {
        s.push_str(&format!("<a href=\"{}\">link</a>\n", h.as_ref()));
    }
    s + "</body></html>\n"
}

/// A 200 `text/html` page linking `hrefs`.
fn page<S: AsRef<str>>(hrefs: &[S]) -> Route {
    Route::ok(html(hrefs))
}

/// How a run ended, with its stderr (logs, error line) and the --summary-json content when written.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    summary: Option<serde_json::Value>,
}

impl Run {
    fn assert_ok(&self) {
        let (out, err) = (&self.stdout, &self.stderr);
        assert_eq!(
            self.code,
            Some(0),
            "exit status\nstdout:\n{out}\nstderr:\n{err}"
        );
    }

    fn summary_u64(&self, key: &str) -> u64 {
        let s = self.summary.as_ref().expect("summary json written");
        s[key]
            .as_u64()
            .unwrap_or_else(|| panic!("summary key {key}: {s}"))
    }
}

/// Runs the binary (stderr to a file, so a chatty run never blocks on a full pipe) with `faults` as
/// CRAWL_ENGINE_FAULTS, killing it after [`DEADLINE`].
async fn run(crawl: &TestCrawl, faults: Option<&str>) -> Run {
    let summary_path = crawl.dir.path().join("summary.json");
    let stderr_path = crawl.dir.path().join("stderr.log");
    let _ = std::fs::remove_file(&summary_path);
    let mut cmd = crawl.command();
    cmd.arg("--summary-json").arg(&summary_path);
    cmd.stderr(Stdio::from(
        File::create(&stderr_path).expect("stderr file"),
    ));
    match faults {
        Some(f) => cmd.env("CRAWL_ENGINE_FAULTS", f),
        None => cmd.env_remove("CRAWL_ENGINE_FAULTS"),
    };
    let res = tokio::task::spawn_blocking(move || {
        let child = cmd
            .spawn()
            .expect("spawn crawl-engine (cargo build --workspace --bins)");
        wait_with_deadline(child, DEADLINE)
    })
    .await
    .expect("join runner");
    let summary = std::fs::read(&summary_path)
        .ok()
        .map(|b| serde_json::from_slice(&b).expect("summary json parses"));
    Run {
        code: res.code(),
        stdout: res.stdout,
        stderr: std::fs::read_to_string(&stderr_path).unwrap_or_default(),
        summary,
    }
}

/// The records by URL; a URL recorded twice fails the test.
fn index(records: Vec<Record>) -> Records {
    let mut m = BTreeMap::new();
    for r in records {
        let url = r.url.clone();
        if let Some(old) = m.insert(url.clone(), r) {
            panic!("{url} recorded more than once (earlier: {old:?})");
        }
    }
    m
}

fn rec<'a>(m: &'a Records, url: &str) -> &'a Record {
    m.get(url)
        .unwrap_or_else(|| panic!("no record for {url}; recorded: {:?}", m.keys()))
}

/// The record of `url`, asserted failed (or excluded) with `reason`.
fn failed<'a>(m: &'a Records, url: &str, reason: Reason) -> &'a Record {
    let r = rec(m, url);
    assert_eq!(
        (r.outcome, r.reason),
        (reason.outcome(), Some(reason)),
        "{r:?}"
    );
    r
}

/// The record of `url`, asserted fetched with `status`.
fn fetched<'a>(m: &'a Records, url: &str, status: u16) -> &'a Record {
    let r = rec(m, url);
    let got = (r.outcome, r.reason, r.status);
    assert_eq!(got, (Outcome::Fetched, None, Some(status)), "{r:?}");
    r
}

// ---------------------------------------------------------------------------------------------------------------
// 1. injected panics

/// The poisoned page is small, so it is parsed on the fetcher's thread: a panic there counts as a parser's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parser_panic_poisons_url_after_max_attempts_and_crawl_completes() {
    parser_panic_poisons(110, "").await;
}

/// The same with every page handed to the parser threads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parser_thread_panic_poisons_url_after_max_attempts_and_crawl_completes() {
    parser_panic_poisons(129, "[parser]\ninline_max_bytes = 0\n").await;
}

async fn parser_panic_poisons(octet: u8, extra: &str) {
    let mut root: Vec<String> = (0..10).map(|i| format!("/n/{i}")).collect();
    root.insert(4, "/poison/1".into());
    let mut routes = vec![
        ("/".into(), page(&root)),
        ("/poison/1".into(), page(&["/n/0"])),
    ];
    routes.extend((0..10).map(|i| (format!("/n/{i}"), page(&[format!("/n/{}", (i + 1) % 10)]))));
    let site = start(octet, routes).await;
    let crawl = TestCrawl::new(
        ENGINE,
        &[site.seed_url()],
        &format!("[supervisor]\nmax_attempts = 3\n{extra}"),
    )
    .expect("test crawl");
    let out = run(&crawl, Some("parser:/poison/")).await;
    out.assert_ok();
    let m = index(crawl.records());
    assert_eq!(m.len(), 12, "records: {:?}", m.keys());
    for path in std::iter::once("/".to_owned()).chain((0..10).map(|i| format!("/n/{i}"))) {
        let r = fetched(&m, &site.url(0, &path), 200);
        assert_eq!(r.attempts, 1, "{r:?}");
        assert_eq!(site.hits(0, &path), 1, "{path} requested once");
    }
    let p = failed(&m, &site.url(0, "/poison/1"), Reason::Poison);
    assert_eq!(
        site.hits(0, "/poison/1"),
        3,
        "each attempt re-fetches the url"
    );
    assert_eq!(out.summary_u64("panics"), 3);
    assert_eq!(
        out.summary_u64("restarts"),
        3,
        "one parser restart per panic"
    );
    assert!(
        out.stdout.contains("panics 3"),
        "summary text: {}",
        out.stdout
    );
    assert_eq!(p.attempts, 3, "attempts == supervisor.max_attempts: {p:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetcher_panic_redrives_in_flight_urls_and_loses_nothing() {
    const N: usize = 60;
    let mut root: Vec<String> = (0..N).map(|i| format!("/p/{i}")).collect();
    root.insert(10, "/poison/1".into());
    let mut routes = vec![
        ("/".into(), page(&root)),
        ("/poison/1".into(), page(&["/p/0"])),
    ];
    for i in 0..N {
        let links = [format!("/p/{}", (i * 7 + 3) % N), "/poison/1".into()];
        routes.push((
            format!("/p/{i}"),
            page(&links).delay(Duration::from_millis(150)),
        ));
    }
    let site = start(111, routes).await;
    let crawl = TestCrawl::new(
        ENGINE,
        &[site.seed_url()],
        "[supervisor]\nmax_attempts = 3\n[fetch]\nconcurrency = 8\nfetchers = 1\n\
         [politeness]\nper_host_concurrency = 8\n",
    )
    .expect("test crawl");
    let out = run(&crawl, Some("fetcher:/poison/")).await;
    out.assert_ok();
    let m = index(crawl.records());
    assert_eq!(m.len(), N + 2, "records: {:?}", m.keys());
    let mut page_hits = 0;
    for i in 0..N {
        let path = format!("/p/{i}");
        fetched(&m, &site.url(0, &path), 200);
        page_hits += site.hits(0, &path);
    }
    // jobs the stopped fetcher held are queued again (the scheduler logs how many): a request it had sent is then
    // sent twice, one it had not sent yet reaches the site once. With one fetcher, every job leased when the poison
    // URL panics is held by the fetcher that stops.
    let redriven: u64 = out
        .stderr
        .lines()
        .filter(|l| l.contains("jobs of a stopped fetcher queued again"))
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l)
                .ok()
                .and_then(|v| v["redriven"].as_u64())
                .expect("a json log line with redriven")
        })
        .sum();
    assert!(
        redriven > 0,
        "{page_hits} requests for {N} pages and nothing was re-driven: {}",
        out.stderr
    );
    assert!(page_hits >= N, "{page_hits} requests for {N} pages");
    let p = failed(&m, &site.url(0, "/poison/1"), Reason::Poison);
    assert_eq!(
        site.hits(0, "/poison/1"),
        0,
        "the fetcher panics before sending"
    );
    assert_eq!(out.summary_u64("panics"), 3);
    // the restart after the last panic may still be waiting out its backoff when the crawl ends
    let restarts = out.summary_u64("restarts");
    assert!((2..=3).contains(&restarts), "restarts {restarts}");
    assert_eq!(p.attempts, 3, "attempts == supervisor.max_attempts: {p:?}");
}

// ---------------------------------------------------------------------------------------------------------------
// 2. escalation, then resume

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_limit_escalates_with_exit_1_and_resume_completes_once() {
    let mut root: Vec<String> = (0..10).map(|i| format!("/n/{i}")).collect();
    root.extend((1..=5).map(|i| format!("/poison/{i}")));
    let mut routes = vec![("/".into(), page(&root))];
    for i in 0..10 {
        let next = [format!("/n/{}", (i + 3) % 10)];
        routes.push((
            format!("/n/{i}"),
            page(&next).delay(Duration::from_millis(50)),
        ));
    }
    routes.extend((1..=5).map(|i| (format!("/poison/{i}"), page(&["/n/0"]))));
    let site = start(112, routes).await;
    let crawl = TestCrawl::new(
        ENGINE,
        &[site.seed_url()],
        "[supervisor]\nmax_attempts = 3\nmax_restarts = 2\n",
    )
    .expect("test crawl");
    let first = run(&crawl, Some("parser:/poison/")).await;
    assert_eq!(
        first.code,
        Some(1),
        "escalation is fatal\nstderr:\n{}",
        first.stderr
    );
    let cause = first
        .stderr
        .lines()
        .find(|l| l.starts_with("crawl-engine: "))
        .unwrap_or_else(|| panic!("no error line on stderr:\n{}", first.stderr));
    let after_first = index(crawl.records());
    assert!(
        after_first.len() < 16,
        "the crawl stopped early: {:?}",
        after_first.keys()
    );

    let second = run(&crawl, None).await;
    second.assert_ok();
    let m = index(crawl.records());
    assert_eq!(
        m.len(),
        16,
        "every url exactly once over both runs: {:?}",
        m.keys()
    );
    for (url, r) in &after_first {
        assert_eq!(
            m.get(url),
            Some(r),
            "records of the first run stay as they were"
        );
    }
    for i in 0..10 {
        fetched(&m, &site.url(0, &format!("/n/{i}")), 200);
    }
    for i in 1..=5 {
        let url = site.url(0, &format!("/poison/{i}"));
        if !after_first.contains_key(&url) {
            fetched(&m, &url, 200);
        }
    }
    assert_eq!(second.summary_u64("panics"), 0);
    let reason = second.summary.as_ref().map(|s| s["reason"].clone());
    assert_eq!(reason, Some(serde_json::json!("completed")));
    let lower = cause.to_ascii_lowercase();
    assert!(
        lower.contains("restart"),
        "the cause names the restart limit: {cause}"
    );
}

// ---------------------------------------------------------------------------------------------------------------
// 3. redirects

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirect_loops_chains_relative_and_missing_location() {
    let mut routes = vec![
        (
            "/".into(),
            page(&["/loop/a", "/chain/0", "/rel/start", "/noloc"]),
        ),
        ("/loop/a".into(), Route::redirect(301, "/loop/b")),
        ("/loop/b".into(), Route::redirect(301, "/loop/a")),
        ("/chain/end".into(), page::<&str>(&[])),
        ("/rel/start".into(), Route::redirect(301, "target")),
        ("/rel/target".into(), page::<&str>(&[])),
        (
            "/noloc".into(),
            Route::new(301).header("content-type", "text/html"),
        ),
    ];
    for i in 0..5 {
        let next = if i == 4 {
            "/chain/end".to_owned()
        } else {
            format!("/chain/{}", i + 1)
        };
        routes.push((format!("/chain/{i}"), Route::redirect(301, &next)));
    }
    let site = start(113, routes).await;
    let crawl = TestCrawl::new(ENGINE, &[site.seed_url()], "[fetch]\nmax_redirects = 3\n")
        .expect("test crawl");
    run(&crawl, None).await.assert_ok();
    let m = index(crawl.records());
    let u = |p: &str| site.url(0, p);

    let a = fetched(&m, &u("/loop/a"), 301);
    assert_eq!(a.redirect_to.as_deref(), Some(u("/loop/b").as_str()));
    failed(&m, &u("/loop/b"), Reason::RedirectLoop);
    assert_eq!((site.hits(0, "/loop/a"), site.hits(0, "/loop/b")), (1, 1));

    for i in 0..3 {
        let r = fetched(&m, &u(&format!("/chain/{i}")), 301);
        assert_eq!(r.redirect_to, Some(u(&format!("/chain/{}", i + 1))));
    }
    failed(&m, &u("/chain/3"), Reason::TooManyRedirects);
    for p in ["/chain/4", "/chain/end"] {
        assert!(!m.contains_key(&u(p)), "{p} is past the redirect limit");
        assert_eq!(site.hits(0, p), 0, "{p} never requested");
    }

    let rs = fetched(&m, &u("/rel/start"), 301);
    assert_eq!(
        rs.redirect_to,
        Some(u("/rel/target")),
        "relative Location resolved"
    );
    let rt = fetched(&m, &u("/rel/target"), 200);
    assert_eq!(rt.parent, Some(u("/rel/start")));

    assert_eq!(fetched(&m, &u("/noloc"), 301).redirect_to, None);
}

// ---------------------------------------------------------------------------------------------------------------
// 4. body limits

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_over_the_limit_fail_too_large_and_memory_stays_low() {
    let big = ["/big/sized", "/big/chunked", "/bomb", "/bomb/small"];
    let site = start(
        114,
        vec![
            ("/".into(), page(&[&big[..], &["/small"]].concat())),
            ("/big/sized".into(), Route::large(1_000_000)),
            ("/big/chunked".into(), Route::large(1_000_000).chunked()),
            ("/bomb".into(), Route::gzip_bomb()),
            // about 50 KB on the wire, under the limit: only the decoder can catch it
            ("/bomb/small".into(), Route::gzip_bomb_of(50 * 1024 * 1024)),
            ("/small".into(), Route::large(50_000)),
        ],
    )
    .await;
    let crawl = TestCrawl::new(
        ENGINE,
        &[site.seed_url()],
        "[fetch]\nmax_body_bytes = 100000\n",
    )
    .expect("test crawl");
    let out = run(&crawl, None).await;
    out.assert_ok();
    let m = index(crawl.records());
    for p in big {
        let r = failed(&m, &site.url(0, p), Reason::TooLarge);
        assert_eq!(r.attempts, 1, "too_large is not retried: {r:?}");
        assert_eq!(site.hits(0, p), 1);
    }
    let small = fetched(&m, &site.url(0, "/small"), 200);
    assert_eq!(small.content_length, Some(50_000));
    let rss = out.summary_u64("peak_rss_bytes");
    assert!(rss < 200 * 1024 * 1024, "peak rss {rss} bytes");
}

// ---------------------------------------------------------------------------------------------------------------
// 5. deadlines

async fn deadlines(octet: u8, max_retries: u32) {
    let trickle = Route::large(20_000).trickle(200, Duration::from_millis(100));
    let routes = vec![
        (
            "/".into(),
            page(&["/slow/head", "/slow/stall", "/slow/trickle", "/fast"]),
        ),
        (
            "/slow/head".into(),
            page(&["/x"]).delay(Duration::from_secs(10)),
        ),
        ("/slow/stall".into(), Route::large(20_000).stall_after(100)),
        ("/slow/trickle".into(), trickle),
        ("/fast".into(), page::<&str>(&[])),
    ];
    let site = start(octet, routes).await;
    let crawl = TestCrawl::new(
        ENGINE,
        &[site.seed_url()],
        &format!(
            "[fetch]\nconnect_timeout_ms = 500\nheader_timeout_ms = 500\nidle_timeout_ms = 500\n\
             request_timeout_ms = 1000\nmax_retries = {max_retries}\nretry_base_ms = 50\n"
        ),
    )
    .expect("test crawl");
    run(&crawl, None).await.assert_ok();
    let m = index(crawl.records());
    let tries = max_retries + 1;
    for (p, phase) in [
        ("/slow/head", "headers"),
        ("/slow/stall", "idle"),
        ("/slow/trickle", "total"),
    ] {
        let r = failed(&m, &site.url(0, p), Reason::Timeout);
        assert_eq!(r.attempts, tries, "{r:?}");
        assert_eq!(site.hits(0, p), tries as usize, "{p} requests");
        let err = r.error.as_deref().unwrap_or("");
        assert!(
            err.contains(phase),
            "{p}: the {phase} deadline fired: {err}"
        );
    }
    let head = rec(&m, &site.url(0, "/slow/head"));
    let early = head.elapsed_ms.is_some_and(|ms| ms < 5_000);
    assert!(
        early,
        "the header deadline fires long before the 10 s stall: {head:?}"
    );
    fetched(&m, &site.url(0, "/fast"), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadlines_fire_without_retries() {
    deadlines(115, 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadlines_fire_and_each_retry_refetches() {
    deadlines(116, 2).await;
}

// ---------------------------------------------------------------------------------------------------------------
// 6. private addresses

/// A bare TCP listener on 127.0.0.1 (what `localhost` resolves to) that counts accepted connections.
async fn counting_listener() -> (u16, Arc<AtomicUsize>) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1");
    let port = l.local_addr().expect("addr").port();
    let n = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&n);
    tokio::spawn(async move {
        while let Ok((s, _)) = l.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            drop(s);
        }
    });
    (port, n)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_addresses_are_excluded_without_connecting() {
    let site = start(117, vec![("/".into(), page(&["/a"]))]).await;
    let (port, accepted) = counting_listener().await;
    let localhost = format!("http://localhost:{port}/");
    let crawl = TestCrawl::new(
        ENGINE,
        &[site.seed_url(), localhost.clone()],
        "[security]\nallow_private_networks = false\n[fetch]\nheader_timeout_ms = 2000\n",
    )
    .expect("test crawl");
    let out = run(&crawl, None).await;
    out.assert_ok();
    let m = index(crawl.records());
    for url in [site.seed_url(), localhost] {
        failed(&m, &url, Reason::PrivateNetwork);
    }
    assert_eq!(m.len(), 2, "{:?}", m.keys());
    assert_eq!(site.connections(0), 0, "no tcp connection to 127.0.0.117");
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        0,
        "no tcp connection for localhost"
    );
    assert_eq!(out.summary_u64("excluded"), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_addresses_are_fetched_when_allowed() {
    let site = start(
        118,
        vec![
            ("/".into(), page(&["/a"])),
            ("/a".into(), page::<&str>(&[])),
        ],
    )
    .await;
    let crawl = TestCrawl::new(
        ENGINE,
        &[site.seed_url()],
        "[security]\nallow_private_networks = true\n",
    )
    .expect("test crawl");
    run(&crawl, None).await.assert_ok();
    let m = index(crawl.records());
    fetched(&m, &site.seed_url(), 200);
    fetched(&m, &site.url(0, "/a"), 200);
    assert!(site.connections(0) >= 1);
}

// ---------------------------------------------------------------------------------------------------------------
// 7. broken connections

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_connections_and_refused_ports_fail_after_retries() {
    let dead = std::net::TcpListener::bind("127.0.0.119:0").expect("bind");
    let refused = format!(
        "http://127.0.0.119:{}/x",
        dead.local_addr().expect("addr").port()
    );
    drop(dead); // nothing listens there any more
    let routes = vec![
        ("/".into(), page(&["/close", refused.as_str()])),
        ("/close".into(), Route::close()),
    ];
    let site = start(119, routes).await;
    // robots.txt is not consulted, so the refused port is judged by the page fetch itself
    let crawl = TestCrawl::new(
        ENGINE,
        &[site.seed_url()],
        "[crawl]\nrespect_robots = false\n[fetch]\nmax_retries = 2\nretry_base_ms = 50\n",
    )
    .expect("test crawl");
    run(&crawl, None).await.assert_ok();
    let m = index(crawl.records());
    let c = rec(&m, &site.url(0, "/close"));
    assert_eq!(c.outcome, Outcome::Failed, "{c:?}");
    assert!(
        matches!(c.reason, Some(Reason::Protocol | Reason::Connect)),
        "{c:?}"
    );
    assert_eq!(c.attempts, 3, "{c:?}");
    assert_eq!(site.hits(0, "/close"), 3);
    let r = failed(&m, &refused, Reason::Connect);
    assert_eq!(r.attempts, 3, "{r:?}");
}

mod hostile;
mod stages;
