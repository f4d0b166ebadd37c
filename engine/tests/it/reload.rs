//! SIGHUP with the real binary: a lower `min_delay_ms` shows in the inter-arrival times at the site; an invalid
//! file and a change to `frontier.data_dir` are rejected while the crawl goes on; a burst of 20 SIGHUPs leaves the
//! last file's User-Agent in force; a reload turns sampling on and raises the log level (its success line is at
//! warn). Every crawl still ends with each URL recorded exactly once.
//!
//! Hosts use 127.0.0.200..=209 (this file's range).

use crate::ENGINE;
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crawl_core::record::Record;
use crawl_tests::engine::{RunResult, Running, TestCrawl};
use crawl_tests::otlp::OtlpReceiver;
use crawl_tests::prom;
use crawl_tests::site::{ExpectOptions, RequestLog, Site, SiteSpec};

const DEADLINE: Duration = Duration::from_secs(90);

fn chain_site(first_octet: u8, pages: usize) -> SiteSpec {
    SiteSpec {
        hosts: 1,
        pages_per_host: pages,
        links_per_page: 0,
        cross_host_ratio: 0.0,
        robots: false,
        sitemaps: false,
        redirects: false,
        missing: false,
        orphans: 0,
        gzip: false,
        first_octet,
        log_requests: true,
        ..SiteSpec::default()
    }
}

/// Config overrides: one request at a time with `delay_ms` between, robots.txt ignored, `crawl` lines added to
/// `[crawl]` and `tail` (other sections) at the end.
fn politeness(delay_ms: u64, crawl: &str, tail: &str) -> String {
    format!(
        "[crawl]\nrespect_robots = false\nmax_depth = 1000\n{crawl}\n[politeness]\nper_host_concurrency = 1\nmin_delay_ms = {delay_ms}\n{tail}"
    )
}

fn page_requests(site: &Site) -> Vec<RequestLog> {
    let mut v: Vec<RequestLog> = site
        .requests()
        .into_iter()
        .filter(|r| r.path_only() != "/robots.txt")
        .collect();
    v.sort_by_key(|r| r.start);
    v
}

/// Waits (off the runtime) until the site has seen `n` page requests.
async fn wait_requests(site: &Site, n: usize) {
    let start = Instant::now();
    while page_requests(site).len() < n {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "site saw {} requests",
            page_requests(site).len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `crawl_config_reloads_total{outcome}` of a running crawl, once it has counted one reload.
async fn reloads(addr: SocketAddr, outcome: &'static str) -> f64 {
    let start = Instant::now();
    loop {
        let text = tokio::task::spawn_blocking(move || prom::scrape(addr, None))
            .await
            .expect("join")
            .expect("scrape");
        let scrape = prom::parse(&text.1).expect("parse");
        let total = scrape.sum("crawl_config_reloads_total");
        if total >= 1.0 || start.elapsed() > Duration::from_secs(5) {
            return scrape
                .value("crawl_config_reloads_total", &[("outcome", outcome)])
                .unwrap_or(0.0);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn finish(child: Running) -> RunResult {
    tokio::task::spawn_blocking(move || child.wait(DEADLINE))
        .await
        .expect("join")
}

/// The 150 ms delay of the running config still separates every request after `hup`.
fn assert_delay_kept(site: &Site, hup: Instant, what: &str) {
    let reqs = page_requests(site);
    let after: Vec<&RequestLog> = reqs.iter().filter(|r| r.start > hup).collect();
    for w in after.windows(2) {
        assert!(
            w[1].start - w[0].start >= Duration::from_millis(120),
            "{what}"
        );
    }
}

/// A config tail with a metrics listener on a port the system picks (the crawl reports it: [`metrics_addr`]).
const METRICS: &str = "[observability]\nmetrics_listen = \"127.0.0.1:0\"\n";

/// The address a running crawl's metrics listener bound.
fn metrics_addr(child: &Running) -> SocketAddr {
    tokio::task::block_in_place(|| child.metrics_addr(Duration::from_secs(10)))
}

/// Every URL the site expects recorded exactly once, and each requested once.
fn assert_complete(records: &[Record], site: &Site) {
    let urls: BTreeSet<&str> = records.iter().map(|r| r.url.as_str()).collect();
    assert_eq!(urls.len(), records.len(), "a url was recorded twice");
    let exp = site.expected(ExpectOptions {
        respect_robots: false,
        follow_sitemaps: false,
        max_depth: None,
    });
    assert_eq!(
        page_requests(site).len(),
        exp.fetch_count(),
        "a url was fetched twice or never"
    );
    for u in &exp.fetched_ok {
        assert!(urls.contains(u.as_str()), "{u} not recorded");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_lowering_min_delay_shows_in_inter_arrival_times() {
    const PAGES: usize = 30;
    let site = Site::builder(chain_site(200, PAGES))
        .start()
        .await
        .expect("site");
    let c = TestCrawl::new(ENGINE, &[site.page_url(0, 0)], &politeness(700, "", ""))
        .expect("test crawl");
    let child = c.start();
    wait_requests(&site, 3).await;
    c.rewrite(&politeness(10, "", "")).expect("rewrite config");
    child.signal("HUP");
    let hup = Instant::now();
    let run = finish(child).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert!(run.stderr.contains("config reloaded"), "{}", run.stderr);
    let reqs = page_requests(&site);
    let before: Vec<&RequestLog> = reqs.iter().filter(|r| r.start < hup).collect();
    // The first request after the signal may still have been scheduled under the old delay.
    let after: Vec<&RequestLog> = reqs.iter().filter(|r| r.start > hup).skip(1).collect();
    let gaps = |v: &[&RequestLog]| -> Vec<Duration> {
        v.windows(2).map(|w| w[1].start - w[0].start).collect()
    };
    let slow = gaps(&before);
    assert!(
        !slow.is_empty() && slow.iter().all(|g| *g >= Duration::from_millis(650)),
        "before: {slow:?}"
    );
    let fast = gaps(&after);
    assert!(
        fast.len() >= 10,
        "only {} requests after the reload",
        after.len()
    );
    let mut sorted = fast.clone();
    sorted.sort();
    assert!(
        sorted[sorted.len() / 2] < Duration::from_millis(300),
        "after: {fast:?}"
    );
    assert_complete(&c.records(), &site);
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_with_an_invalid_file_keeps_the_running_config() {
    const PAGES: usize = 20;
    let site = Site::builder(chain_site(201, PAGES))
        .start()
        .await
        .expect("site");
    let c = TestCrawl::new(
        ENGINE,
        &[site.page_url(0, 0)],
        &politeness(150, "", METRICS),
    )
    .expect("test crawl");
    let child = c.start();
    wait_requests(&site, 2).await;
    c.write_raw("[politeness]\nmin_delay_ms = \"fast\"\nno_such_key = 1\n")
        .expect("write config");
    child.signal("HUP");
    let hup = Instant::now();
    assert_eq!(reloads(metrics_addr(&child), "invalid").await, 1.0);
    let run = finish(child).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert!(
        run.stderr.contains("config reload failed"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("no_such_key"),
        "every error is logged: {}",
        run.stderr
    );
    assert!(!run.stderr.contains("config reloaded"));
    // The old delay is still in force after the failed reload.
    assert_delay_kept(&site, hup, "the delay changed");
    assert_complete(&c.records(), &site);
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_changing_data_dir_is_rejected_whole() {
    const PAGES: usize = 20;
    let site = Site::builder(chain_site(202, PAGES))
        .start()
        .await
        .expect("site");
    let c = TestCrawl::new(
        ENGINE,
        &[site.page_url(0, 0)],
        &politeness(150, "", METRICS),
    )
    .expect("test crawl");
    let elsewhere = c.dir.path().join("elsewhere");
    let child = c.start();
    wait_requests(&site, 2).await;
    // A live change (the delay) together with a restart-only one: nothing may be applied.
    c.rewrite(&politeness(
        0,
        "",
        &format!(
            "{METRICS}[frontier]\ndata_dir = \"{}\"\n",
            elsewhere.display()
        ),
    ))
    .expect("rewrite config");
    child.signal("HUP");
    let hup = Instant::now();
    assert_eq!(reloads(metrics_addr(&child), "rejected").await, 1.0);
    let run = finish(child).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert!(run.stderr.contains("reload rejected"), "{}", run.stderr);
    assert!(run.stderr.contains("frontier.data_dir"), "{}", run.stderr);
    assert!(!elsewhere.exists(), "the new data_dir was used");
    assert_delay_kept(&site, hup, "the delay was half-applied");
    assert_complete(&c.records(), &site);
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_sighups_leaves_the_last_config_in_force() {
    const PAGES: usize = 40;
    let site = Site::builder(chain_site(203, PAGES))
        .start()
        .await
        .expect("site");
    let ua = |i: usize| format!("user_agent = \"burst-ua-{i}\"\n");
    let c = TestCrawl::new(ENGINE, &[site.page_url(0, 0)], &politeness(80, &ua(0), ""))
        .expect("test crawl");
    let child = c.start();
    wait_requests(&site, 3).await;
    for i in 1..=20 {
        c.rewrite(&politeness(80, &ua(i), ""))
            .expect("rewrite config");
        child.signal("HUP");
    }
    let last = Instant::now();
    let run = finish(child).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let reloads = run.stderr.matches("config reloaded").count();
    assert!((1..=20).contains(&reloads), "{reloads} reloads");
    let later: Vec<RequestLog> = page_requests(&site)
        .into_iter()
        .filter(|r| r.start > last + Duration::from_millis(500))
        .collect();
    assert!(
        !later.is_empty(),
        "the crawl ended before the burst settled"
    );
    for r in &later {
        assert_eq!(r.user_agent.as_deref(), Some("burst-ua-20"), "{}", r.path);
    }
    assert_complete(&c.records(), &site);
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_turns_tracing_on_and_raises_the_log_level() {
    const PAGES: usize = 24;
    let rx = OtlpReceiver::start().await;
    let site = Site::builder(chain_site(204, PAGES))
        .start()
        .await
        .expect("site");
    let obs = |ratio: u32, level: &str| {
        format!(
            "[observability]\notlp_endpoint = \"{}\"\nsample_ratio = {ratio}\nlog_level = \"{level}\"\n",
            rx.http_endpoint()
        )
    };
    let c = TestCrawl::new(
        ENGINE,
        &[site.page_url(0, 0)],
        &politeness(100, "", &obs(0, "warn")),
    )
    .expect("test crawl");
    let child = c.start();
    wait_requests(&site, 4).await;
    c.rewrite(&politeness(100, "", &obs(1, "info")))
        .expect("rewrite config");
    child.signal("HUP");
    let run = finish(child).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    // At "warn" nothing was logged at info before the reload; its success line (at warn, so that it shows at any
    // level) marks it, and info lines follow it.
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert!(
        lines.iter().any(|l| l.contains("config reloaded")),
        "no success line for the reload:\n{}",
        run.stderr
    );
    let at = lines
        .iter()
        .position(|l| l.contains("config reloaded"))
        .unwrap_or(lines.len());
    assert!(
        lines[at + 1..]
            .iter()
            .any(|l| l.contains("\"level\":\"INFO\"")),
        "no info line after the reload:\n{}",
        run.stderr
    );
    assert!(
        lines[..at]
            .iter()
            .all(|l| !l.contains("\"level\":\"INFO\"")),
        "info lines at warn: {:?}",
        &lines[..at]
    );
    assert!(
        lines[at].contains("observability.sample_ratio"),
        "{}",
        lines[at]
    );
    // The export queue was sized for the ratio at start (0: the smallest queue), and the operator is told so.
    let queue = lines
        .iter()
        .find(|l| l.contains("trace export queue was sized"))
        .unwrap_or_else(|| panic!("no warning about the export queue:\n{}", run.stderr));
    assert!(
        queue.contains("\"queue_spans\":2048") && queue.contains("\"sized_for\":0"),
        "{queue}"
    );
    // Records fetched before the reload were not sampled, those after it were.
    let records = c.records();
    assert_complete(&records, &site);
    rx.wait_for_async(|s| !s.is_empty(), Duration::from_secs(5))
        .await;
    let exported: BTreeSet<String> = rx.spans().into_iter().map(|s| s.trace_id).collect();
    let traced: Vec<bool> = records
        .iter()
        .map(|r| exported.contains(r.trace_id.as_deref().expect("trace id")))
        .collect();
    assert!(
        !traced[0],
        "the first record was exported at sample_ratio 0"
    );
    assert!(
        traced.last() == Some(&true),
        "the last record was not exported after the reload"
    );
    let first_on = traced.iter().position(|t| *t).expect("some exported");
    assert!(
        traced[first_on..].iter().all(|t| *t),
        "sampling went off again: {traced:?}"
    );
    site.shutdown().await;
}
