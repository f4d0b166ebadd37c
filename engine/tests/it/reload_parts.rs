//! SIGHUP reapplies only what changed, seen from outside with the real binary: a reload that changes nothing, then
//! one that lowers the log level to warn, leave the DNS cache as it was (the host looked up before them is a cache
//! hit after them on /metrics, the nameserver gets no query, the hijack probe does not run again), and each logs its
//! success line at warn with the keys it changed; a reload that changes a `[resolver]` key clears the cache (the
//! next fetch looks the host up again) and runs the probe again.
//!
//! A crawl at `debug` that reloads to `trace` while spans are exported shows the engine's debug lines but none of
//! the exporter's transport (h2, tonic, hyper, tower) or of the OpenTelemetry SDK below warn.
//!
//! The site is served under a name that only a [`FakeDns`] answers. Hosts use 127.0.0.205..=209 (part of the
//! `reload` range).

use crate::ENGINE;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crawl_core::record::Record;
use crawl_tests::dns::{Behaviour, FakeDns, Zone};
use crawl_tests::engine::{RunResult, Running, TestCrawl};
use crawl_tests::otlp::OtlpReceiver;
use crawl_tests::prom;
use crawl_tests::site::{Route, Site, SiteSpec};

const DEADLINE: Duration = Duration::from_secs(90);
/// The name the site is crawled under.
const NAME: &str = "reload.example.com";
/// Pages in the chain; with the delay below the crawl takes about five seconds.
const PAGES: usize = 24;

fn path(i: usize) -> String {
    if i == 0 {
        "/".to_owned()
    } else {
        format!("/p{i}")
    }
}

/// One host on 127.0.0.{octet}: `PAGES` pages, each linking the next with a relative href (so the crawl stays on
/// the name), robots.txt 404.
async fn chain_site(octet: u8) -> Site {
    let spec = SiteSpec {
        hosts: 1,
        pages_per_host: 1,
        links_per_page: 0,
        cross_host_ratio: 0.0,
        gzip: false,
        robots: false,
        sitemaps: false,
        redirects: false,
        missing: false,
        orphans: 0,
        first_octet: octet,
        log_requests: true,
        ..SiteSpec::default()
    };
    let mut b = Site::builder(spec);
    for i in 0..PAGES {
        let next = if i + 1 < PAGES {
            format!("<a href=\"p{}\">next</a>", i + 1)
        } else {
            String::new()
        };
        let html = format!(
            "<!DOCTYPE html>\n<html><head><title>t</title></head><body>{next}</body></html>\n"
        );
        b = b.route(0, &path(i), Route::ok(html));
    }
    b = b.route(0, "/robots.txt", Route::text(404, "none\n"));
    b.start().await.expect("site")
}

/// Config overrides: one request at a time 200 ms apart, metrics on a free port, the resolver on `dns` with the
/// hijack probe on and answers cached for minutes, `resolver_extra` added to `[resolver]`.
fn overrides(dns: &FakeDns, log_level: &str, resolver_extra: &str) -> String {
    format!(
        "[crawl]\nrespect_robots = false\nmax_depth = 1000\n\
         [politeness]\nper_host_concurrency = 1\nmin_delay_ms = 200\n\
         [resolver]\nnameservers = [\"{}\"]\nhijack_probe = true\nmin_ttl_s = 600\n{resolver_extra}\n\
         [observability]\nmetrics_listen = \"127.0.0.1:0\"\nlog_level = \"{log_level}\"\n",
        dns.addr()
    )
}

/// Page requests the site has seen.
fn pages_seen(site: &Site) -> usize {
    site.requests()
        .into_iter()
        .filter(|r| r.path_only() != "/robots.txt")
        .count()
}

/// Waits (off the runtime) until the site has seen `n` page requests.
async fn wait_pages(site: &Site, n: usize) {
    let start = Instant::now();
    while pages_seen(site) < n {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the site saw {} page requests, waiting for {n}",
            pages_seen(site)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// DNS answers of the running crawl on /metrics, `crawl_dns_lookups_total{source, outcome="resolved"}`.
async fn resolved(addr: SocketAddr, source: &'static str) -> f64 {
    let text = tokio::task::spawn_blocking(move || prom::scrape(addr, None))
        .await
        .expect("join")
        .expect("scrape");
    let scrape = prom::parse(&text.1).expect("parse");
    scrape
        .value(
            "crawl_dns_lookups_total",
            &[("source", source), ("outcome", "resolved")],
        )
        .unwrap_or(0.0)
}

/// A reload's success line, parsed (JSON logs).
fn success_line(line: &str) -> Option<serde_json::Value> {
    serde_json::from_str::<serde_json::Value>(line)
        .ok()
        .filter(|v| v["message"] == "config reloaded")
}

/// The success lines of a run's reloads, in order.
fn success_lines(stderr: &str) -> Vec<serde_json::Value> {
    stderr.lines().filter_map(success_line).collect()
}

/// Sends SIGHUP and waits (off the runtime) for the `n`-th success line of the run; returns when the signal went.
async fn hup_and_wait(child: &Running, n: usize) -> Instant {
    let sent = Instant::now();
    child.signal("HUP");
    let seen = AtomicUsize::new(0);
    // Each stderr line is looked at once.
    let found = tokio::task::block_in_place(|| {
        child.wait_for_line(Duration::from_secs(15), |l| {
            let ok = success_line(l).is_some();
            (ok && seen.fetch_add(1, Ordering::SeqCst) + 1 == n).then_some(())
        })
    });
    assert!(
        found.is_some(),
        "no success line for reload {n}:\n{}",
        child.stderr_so_far()
    );
    sent
}

/// Page records by the source of their DNS answer.
fn dns_sources(records: &[Record]) -> (usize, usize) {
    let src = |s: &str| {
        records
            .iter()
            .filter(|r| r.dns.as_ref().is_some_and(|d| d.source == s))
            .count()
    };
    (src("plain"), src("cache"))
}

async fn finish(child: Running) -> RunResult {
    tokio::task::spawn_blocking(move || child.wait(DEADLINE))
        .await
        .expect("join")
}

fn ip(octet: u8) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 0, octet)
}

/// The zone: the site's name, with a TTL the cache keeps for the whole crawl. Other names (the probe's) NXDOMAIN.
async fn dns_for(octet: u8) -> FakeDns {
    FakeDns::start(Zone::new().with(NAME, Behaviour::v4(&[ip(octet)], 600)))
        .await
        .expect("fake dns")
}

fn seed(site: &Site) -> String {
    let port = site.addr(0).expect("addr").port();
    format!("http://{NAME}:{port}/")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_level_reload_keeps_the_dns_cache_and_says_so_at_warn() {
    let site = chain_site(205).await;
    let dns = dns_for(205).await;
    let c =
        TestCrawl::new(ENGINE, &[seed(&site)], &overrides(&dns, "info", "")).expect("test crawl");
    let child = c.start();
    let metrics = tokio::task::block_in_place(|| child.metrics_addr(Duration::from_secs(10)));
    wait_pages(&site, 3).await;
    assert_eq!(resolved(metrics, "plain").await, 1.0, "one network lookup");
    let queries = dns.queries();
    assert!(
        queries > dns.queries_for(NAME),
        "the hijack probe ran at the first lookup"
    );

    // The same file again: nothing to apply.
    hup_and_wait(&child, 1).await;
    // The log level alone, down to warn.
    c.rewrite(&overrides(&dns, "warn", ""))
        .expect("rewrite config");
    hup_and_wait(&child, 2).await;
    let hits_at_reload = resolved(metrics, "cache").await;
    let pages_at_reload = pages_seen(&site);
    wait_pages(&site, pages_at_reload + 3).await;

    // The host looked up before the reloads is a cache hit after them; nothing new went to the nameserver.
    assert!(
        resolved(metrics, "cache").await >= hits_at_reload + 2.0,
        "no cache hit after the reload"
    );
    assert_eq!(
        resolved(metrics, "plain").await,
        1.0,
        "the cache was cleared"
    );
    assert_eq!(
        dns.queries(),
        queries,
        "a query (lookup or probe) after the reload"
    );

    let run = finish(child).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let (plain, cache) = dns_sources(&c.records());
    assert_eq!((plain, cache), (1, PAGES - 1), "records by dns source");
    let lines = success_lines(&run.stderr);
    assert_eq!(lines.len(), 2, "{}", run.stderr);
    for l in &lines {
        assert_eq!(l["level"], "WARN", "{l}");
    }
    assert_eq!(lines[0]["changed"], "no change");
    assert_eq!(lines[1]["changed"], "observability.log_level");
    assert!(
        !run.stderr.contains("resolver reconfigured"),
        "{}",
        run.stderr
    );
    // The new level is in force: no info line after the second success line.
    let lines: Vec<&str> = run.stderr.lines().collect();
    let at = lines
        .iter()
        .position(|l| success_line(l).is_some_and(|v| v["changed"] == "observability.log_level"))
        .expect("the log level reload's line");
    let info: Vec<&&str> = lines[at..]
        .iter()
        .filter(|l| l.contains("\"level\":\"INFO\""))
        .collect();
    assert!(info.is_empty(), "info lines at warn: {info:?}");
    site.shutdown().await;
    dns.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resolver_reload_clears_the_dns_cache_and_probes_again() {
    let site = chain_site(206).await;
    let dns = dns_for(206).await;
    let c =
        TestCrawl::new(ENGINE, &[seed(&site)], &overrides(&dns, "info", "")).expect("test crawl");
    let child = c.start();
    let metrics = tokio::task::block_in_place(|| child.metrics_addr(Duration::from_secs(10)));
    wait_pages(&site, 3).await;
    assert_eq!(resolved(metrics, "plain").await, 1.0, "one network lookup");
    let (queries, for_name) = (dns.queries(), dns.queries_for(NAME));

    c.rewrite(&overrides(&dns, "info", "negative_ttl_s = 7\n"))
        .expect("rewrite config");
    let at_reload = hup_and_wait(&child, 1).await;
    let pages_at_reload = pages_seen(&site);
    wait_pages(&site, pages_at_reload + 3).await;

    // The next fetch looked the host up again, and the probe ran again before it.
    assert_eq!(resolved(metrics, "plain").await, 2.0, "the cache was kept");
    assert!(dns.queries_for(NAME) > for_name);
    let probes = |log: &[crawl_tests::dns::QueryLog]| {
        log.iter()
            .filter(|q| q.at > at_reload && q.name != NAME)
            .count()
    };
    assert!(
        probes(&dns.log()) > 0,
        "no hijack probe after the reload ({} queries before)",
        queries
    );

    let run = finish(child).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let (plain, cache) = dns_sources(&c.records());
    assert_eq!((plain, cache), (2, PAGES - 2), "records by dns source");
    let lines = success_lines(&run.stderr);
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert_eq!(lines[0]["level"], "WARN");
    assert_eq!(lines[0]["changed"], "resolver.negative_ttl_s");
    assert!(
        run.stderr.contains("resolver reconfigured"),
        "{}",
        run.stderr
    );
    site.shutdown().await;
    dns.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debug_and_trace_leave_the_exporter_transport_out_of_the_log() {
    let rx = OtlpReceiver::start().await;
    let site = chain_site(207).await;
    let dns = dns_for(207).await;
    let obs = |level: &str| {
        format!(
            "{}otlp_endpoint = \"{}\"\nsample_ratio = 1\n",
            overrides(&dns, level, ""),
            rx.http_endpoint()
        )
    };
    let c = TestCrawl::new(ENGINE, &[seed(&site)], &obs("debug")).expect("test crawl");
    let child = c.start();
    wait_pages(&site, 3).await;
    // Spans went out before the reload too.
    rx.wait_for_async(|s| !s.is_empty(), Duration::from_secs(5))
        .await;
    c.rewrite(&obs("trace")).expect("rewrite config");
    hup_and_wait(&child, 1).await;
    let run = finish(child).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    rx.wait_for_async(|s| !s.is_empty(), Duration::from_secs(5))
        .await;
    assert!(!rx.spans().is_empty(), "spans were exported");
    let lines: Vec<serde_json::Value> = run
        .stderr
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let target = |v: &serde_json::Value| v["target"].as_str().unwrap_or("").to_owned();
    assert!(
        lines
            .iter()
            .any(|v| v["level"] == "DEBUG" && target(v).starts_with("crawl_actors")),
        "no debug line of the engine:\n{}",
        run.stderr
    );
    assert!(
        lines
            .iter()
            .any(|v| v["changed"] == "observability.log_level"),
        "the reload to trace was applied"
    );
    let transport: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|v| {
            let t = target(v);
            ["h2", "tonic", "hyper", "tower", "opentelemetry"]
                .iter()
                .any(|p| t.starts_with(p))
                && v["level"] != "WARN"
                && v["level"] != "ERROR"
        })
        .collect();
    assert!(transport.is_empty(), "transport lines: {transport:?}");
    site.shutdown().await;
    dns.shutdown().await;
}
