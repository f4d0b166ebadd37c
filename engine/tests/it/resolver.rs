//! End-to-end tests of the resolver (docs/RESOLVER.md) with the real `crawl-engine` binary: name-based sites served
//! on loopback, names answered by [`FakeDns`] / [`FakeDoh`]. Injection race, bogus IPs with a DoH cross-check,
//! NXDOMAIN hijack, `doh` and `doh-first` modes, a total DNS outage, TTL expiry and names without an answer.
//!
//! Every test points `resolver.nameservers` at its own FakeDns (never the system's). A "wrong" server (the forged,
//! bogus or hijack address) listens on another loopback IP with the SAME port as the right site, so a connection to
//! a forged address would reach it: it must see zero connections. Hosts use 127.0.0.150..=127.0.0.169.

use crate::ENGINE;
use std::collections::BTreeMap;
use std::fs::File;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crawl_core::record::{DnsInfo, Outcome, Reason, Record};
use crawl_tests::dns::{Behaviour, CatchAll, FakeDns, FakeDoh, Zone};
use crawl_tests::engine::{TestCrawl, wait_with_deadline};
use crawl_tests::site::{Route, Site, SiteSpec};

/// Kill deadline of every crawl run: a run that outlives it fails its test (the engine hung).
const DEADLINE: Duration = Duration::from_secs(30);
/// The name most tests crawl.
const NAME: &str = "site.example.com";

fn ip(octet: u8) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 0, octet)
}

/// Path of page `i` of a chain: `/`, `/p1`, `/p2`, ...
fn path(i: usize) -> String {
    if i == 0 {
        "/".to_owned()
    } else {
        format!("/p{i}")
    }
}

/// An HTML page with one anchor per href (verbatim).
fn html<S: AsRef<str>>(hrefs: &[S]) -> String {
    let mut s = String::from("<!DOCTYPE html>\n<html><head><title>t</title></head><body>\n");
    for h in hrefs {
        s.push_str(&format!("<a href=\"{}\">link</a>\n", h.as_ref()));
    }
    s + "</body></html>\n"
}

/// `n` pages linked with relative hrefs only (page i -> `p{i+1}` and `./`), robots.txt 404; with `close` every answer
/// carries `connection: close` (no pooled connection can hide a DNS change).
fn chain(n: usize, close: bool) -> Vec<(String, Route)> {
    let fin = |r: Route| {
        if close {
            r.header("connection", "close")
        } else {
            r
        }
    };
    let mut out: Vec<(String, Route)> = (0..n)
        .map(|i| {
            let mut hrefs = vec!["./".to_owned()];
            if i + 1 < n {
                hrefs.push(format!("p{}", i + 1));
            }
            (path(i), fin(Route::ok(html(&hrefs))))
        })
        .collect();
    out.push(("/robots.txt".into(), fin(Route::text(404, "none\n"))));
    out
}

/// One host on `127.0.0.{octet}:{port}` (0: any port) without generated extras, serving `routes`.
async fn site(octet: u8, port: u16, routes: Vec<(String, Route)>) -> Option<Site> {
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
        port,
        page_bytes: 256,
        log_requests: true,
        ..SiteSpec::default()
    };
    let mut b = Site::builder(spec);
    for (p, r) in routes {
        b = b.route(0, &p, r);
    }
    b.start().await.ok()
}

/// The right site on `right` and a second one on `wrong` with the same port, both serving `chain(n, close)`.
async fn pair(right: u8, wrong: u8, n: usize, close: bool) -> (Site, Site, u16) {
    for _ in 0..20 {
        let a = site(right, 0, chain(n, close))
            .await
            .expect("right site starts");
        let port = a.addr(0).expect("addr").port();
        if let Some(b) = site(wrong, port, chain(n, close)).await {
            return (a, b, port);
        }
        a.shutdown().await;
    }
    panic!("no port free on both 127.0.0.{right} and 127.0.0.{wrong}");
}

fn url(name: &str, port: u16, i: usize) -> String {
    format!("http://{name}:{port}{}", path(i))
}

fn urls(name: &str, port: u16, n: usize) -> Vec<String> {
    (0..n).map(|i| url(name, port, i)).collect()
}

/// `[resolver]` lines pointing at `dns`.
fn ns(dns: &FakeDns) -> String {
    format!("[resolver]\nnameservers = [\"{}\"]\n", dns.addr())
}

/// A `[[resolver.doh]]` table for `doh` (its CA written to `dir`); goes last in an override.
fn doh_table(doh: &FakeDoh, dir: &tempfile::TempDir) -> String {
    let ca: PathBuf = doh.write_ca_file(dir.path()).expect("write ca file");
    format!(
        "[[resolver.doh]]\nurl = \"{}\"\nbootstrap = \"{}\"\nca_file = \"{}\"\n",
        doh.url(),
        doh.bootstrap(),
        ca.display()
    )
}

/// How a run ended, with its stderr (logs) and the --summary-json content.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    summary: serde_json::Value,
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

    fn dns(&self, key: &str) -> &serde_json::Value {
        &self.summary["dns"][key]
    }

    fn dns_u64(&self, key: &str) -> u64 {
        self.dns(key)
            .as_u64()
            .unwrap_or_else(|| panic!("summary dns.{key}: {}", self.summary))
    }

    fn verdict(&self, rule: &str) -> u64 {
        self.dns("verdicts")[rule].as_u64().unwrap_or(0)
    }
}

/// Runs the binary to its end (killed after [`DEADLINE`]) while `during` runs on the test's runtime.
async fn run_while(crawl: &TestCrawl, during: impl Future<Output = ()>) -> Run {
    let summary_path = crawl.dir.path().join("summary.json");
    let stderr_path = crawl.dir.path().join("stderr.log");
    let mut cmd = crawl.command();
    cmd.arg("--summary-json").arg(&summary_path);
    cmd.stderr(Stdio::from(
        File::create(&stderr_path).expect("stderr file"),
    ));
    let waiter = tokio::task::spawn_blocking(move || {
        let child = cmd
            .spawn()
            .expect("spawn crawl-engine (cargo build --workspace --bins)");
        wait_with_deadline(child, DEADLINE)
    });
    during.await;
    let res = waiter.await.expect("join runner");
    let summary = std::fs::read(&summary_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(serde_json::Value::Null);
    Run {
        code: res.code(),
        stdout: res.stdout,
        stderr: std::fs::read_to_string(&stderr_path).unwrap_or_default(),
        summary,
    }
}

async fn run(crawl: &TestCrawl) -> Run {
    run_while(crawl, async {}).await
}

/// The records by URL; a URL recorded twice fails the test.
fn index(records: Vec<Record>) -> BTreeMap<String, Record> {
    let mut m = BTreeMap::new();
    for r in records {
        if let Some(old) = m.insert(r.url.clone(), r) {
            panic!("{} recorded more than once (earlier: {old:?})", old.url);
        }
    }
    m
}

fn rec<'a>(m: &'a BTreeMap<String, Record>, url: &str) -> &'a Record {
    m.get(url)
        .unwrap_or_else(|| panic!("no record for {url}; recorded: {:?}", m.keys()))
}

fn dns_of(r: &Record) -> &DnsInfo {
    r.dns
        .as_ref()
        .unwrap_or_else(|| panic!("record without dns evidence: {r:?}"))
}

/// Asserts exactly `want` were recorded, each fetched 200 at the first attempt; returns their dns evidence.
fn all_fetched<'a>(m: &'a BTreeMap<String, Record>, want: &[String]) -> Vec<&'a DnsInfo> {
    assert_eq!(
        m.len(),
        want.len(),
        "records: {:?}",
        m.values().collect::<Vec<_>>()
    );
    want.iter()
        .map(|u| {
            let r = rec(m, u);
            assert_eq!(
                (r.outcome, r.reason, r.status),
                (Outcome::Fetched, None, Some(200)),
                "{r:?}"
            );
            dns_of(r)
        })
        .collect()
}

/// Asserts `site` served each path of `chain(n, _)` exactly once.
fn served_once(site: &Site, n: usize) {
    for i in 0..n {
        assert_eq!(
            site.hits(0, &path(i)),
            1,
            "{} requested once: {:?}",
            path(i),
            site.requests()
        );
    }
}

/// Asserts `site` (a forged/bogus/hijack address) was never connected to.
fn untouched(site: &Site, what: &str) {
    assert_eq!(
        site.connections(0),
        0,
        "{what} address got connections: {:?}",
        site.requests()
    );
    assert!(
        site.requests().is_empty(),
        "{what} address got requests: {:?}",
        site.requests()
    );
}

fn sources_in(infos: &[&DnsInfo], allowed: &[&str]) {
    for d in infos {
        assert!(
            allowed.contains(&d.source.as_str()),
            "source {} not in {allowed:?}: {d:?}",
            d.source
        );
    }
}

// ---------------------------------------------------------------------------------------------------------------
// 1. injection race

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injection_race_drops_the_forged_answer_and_never_connects_to_it() {
    const N: usize = 5;
    let (right, wrong, port) = pair(150, 151, N, false).await;
    let twice = Behaviour::Twice {
        forged: IpAddr::V4(ip(151)),
        real: IpAddr::V4(ip(150)),
        delay: Duration::from_millis(150),
        ttl: 300,
    };
    let dns = FakeDns::start(Zone::new().with(NAME, twice))
        .await
        .expect("fake dns");
    let crawl = TestCrawl::new(
        ENGINE,
        &[url(NAME, port, 0)],
        &format!("{}hold_on_ms = 300\n", ns(&dns)),
    )
    .expect("test crawl");
    let out = run(&crawl).await;
    out.assert_ok();
    let m = index(crawl.records());
    let infos = all_fetched(&m, &urls(NAME, port, N));
    for d in &infos {
        assert!(d.polluted, "{d:?}");
        assert!(d.rules.iter().any(|r| r == "injection_race"), "{d:?}");
        assert_eq!(d.addresses, vec!["127.0.0.150".to_owned()], "{d:?}");
    }
    sources_in(&infos, &["plain", "cache"]);
    served_once(&right, N);
    untouched(&wrong, "forged");
    assert!(dns.udp_queries() >= 1, "the name was asked over udp");
    assert!(
        out.verdict("injection_race") >= 1,
        "summary: {}",
        out.summary
    );
    assert!(
        out.stdout.contains("injection_race"),
        "summary text:\n{}",
        out.stdout
    );
}

// ---------------------------------------------------------------------------------------------------------------
// 2. bogus_ips + DoH cross-check

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bogus_answer_is_replaced_by_the_doh_answer() {
    const N: usize = 4;
    let (right, bogus, port) = pair(152, 153, N, false).await;
    let dns = FakeDns::start(Zone::new().with(NAME, Behaviour::Only(IpAddr::V4(ip(153)))))
        .await
        .expect("fake dns");
    let doh = FakeDoh::start(Zone::new().with(NAME, Behaviour::v4(&[ip(152)], 300)))
        .await
        .expect("fake doh");
    let ca_dir = tempfile::tempdir().expect("tempdir");
    let over = format!(
        "{}bogus_ips = [\"127.0.0.153/32\"]\n{}",
        ns(&dns),
        doh_table(&doh, &ca_dir)
    );
    let crawl = TestCrawl::new(ENGINE, &[url(NAME, port, 0)], &over).expect("test crawl");
    let out = run(&crawl).await;
    out.assert_ok();
    let m = index(crawl.records());
    let infos = all_fetched(&m, &urls(NAME, port, N));
    for d in &infos {
        assert!(d.polluted, "{d:?}");
        assert!(d.rules.iter().any(|r| r == "bogus_ip"), "{d:?}");
        assert_eq!(d.addresses, vec!["127.0.0.152".to_owned()], "{d:?}");
    }
    sources_in(&infos, &["doh", "cache"]);
    served_once(&right, N);
    untouched(&bogus, "bogus");
    assert!(doh.queries_for(NAME) >= 1, "cross-checked over doh");
    assert!(
        out.dns("lookups")["doh/resolved"].as_u64().unwrap_or(0) >= 1,
        "summary: {}",
        out.summary
    );
    assert!(out.verdict("bogus_ip") >= 1, "summary: {}", out.summary);
}

// ---------------------------------------------------------------------------------------------------------------
// 3. NXDOMAIN hijack

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hijacked_nxdomain_is_recorded_as_dns_failure() {
    const N: usize = 3;
    let (good, hijack, port) = pair(154, 155, N, false).await;
    let gone = format!("http://gone.example.com:{port}/");
    good.set_route(0, "/", Route::ok(html(&["p1".to_owned(), gone.clone()])));
    let zone = Zone::new()
        .with("good.example.com", Behaviour::v4(&[ip(154)], 300))
        .catch_all(CatchAll::Hijack(IpAddr::V4(ip(155))));
    let dns = FakeDns::start(zone).await.expect("fake dns");
    let over = format!(
        "[crawl]\nscope = \"any\"\n{}hijack_probe = true\n",
        ns(&dns)
    );
    let crawl =
        TestCrawl::new(ENGINE, &[url("good.example.com", port, 0)], &over).expect("test crawl");
    let out = run(&crawl).await;
    out.assert_ok();
    let mut m = index(crawl.records());
    let g = m
        .remove(&gone)
        .unwrap_or_else(|| panic!("no record for {gone}: {:?}", m.keys()));
    assert_eq!(
        (g.outcome, g.reason),
        (Outcome::Failed, Some(Reason::Dns)),
        "{g:?}"
    );
    assert!(
        dns_of(&g).rules.iter().any(|r| r == "nxdomain_hijack"),
        "{g:?}"
    );
    assert!(dns_of(&g).addresses.is_empty(), "{g:?}");
    for d in all_fetched(&m, &urls("good.example.com", port, N)) {
        assert!(!d.polluted && d.rules.is_empty(), "{d:?}");
        assert_eq!(d.addresses, vec!["127.0.0.154".to_owned()], "{d:?}");
    }
    served_once(&good, N);
    untouched(&hijack, "hijack");
    assert!(
        dns.queries_for("gone.example.com") >= 1,
        "the unconfigured name was asked"
    );
    assert_eq!(
        out.dns_u64("hijack_addresses"),
        1,
        "summary: {}",
        out.summary
    );
    assert!(
        out.verdict("nxdomain_hijack") >= 1,
        "summary: {}",
        out.summary
    );
}

// ---------------------------------------------------------------------------------------------------------------
// 4. / 5. DoH modes

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doh_mode_sends_no_plain_query() {
    const N: usize = 4;
    let s = site(156, 0, chain(N, false)).await.expect("site");
    let port = s.addr(0).expect("addr").port();
    let zone = || Zone::new().with(NAME, Behaviour::v4(&[ip(156)], 300));
    let dns = FakeDns::start(zone()).await.expect("fake dns");
    let doh = FakeDoh::start(zone()).await.expect("fake doh");
    let ca_dir = tempfile::tempdir().expect("tempdir");
    let over = format!(
        "{}mode = \"doh\"\nhijack_probe = true\n{}",
        ns(&dns),
        doh_table(&doh, &ca_dir)
    );
    let crawl = TestCrawl::new(ENGINE, &[url(NAME, port, 0)], &over).expect("test crawl");
    let out = run(&crawl).await;
    out.assert_ok();
    let m = index(crawl.records());
    let infos = all_fetched(&m, &urls(NAME, port, N));
    sources_in(&infos, &["doh", "cache"]);
    for d in &infos {
        assert_eq!(d.addresses, vec!["127.0.0.156".to_owned()], "{d:?}");
    }
    served_once(&s, N);
    assert_eq!(
        (dns.udp_queries(), dns.tcp_queries()),
        (0, 0),
        "plain queries: {:?}",
        dns.log()
    );
    assert!(doh.queries_for(NAME) >= 1, "doh queries: {:?}", doh.log());
    assert_eq!(out.dns_u64("plain_queries"), 0, "summary: {}", out.summary);
    assert!(out.dns_u64("doh_queries") >= 1, "summary: {}", out.summary);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doh_first_falls_back_to_plain_dns_when_doh_is_down() {
    const N: usize = 4;
    let s = site(157, 0, chain(N, false)).await.expect("site");
    let port = s.addr(0).expect("addr").port();
    let zone = || Zone::new().with(NAME, Behaviour::v4(&[ip(157)], 300));
    let dns = FakeDns::start(zone()).await.expect("fake dns");
    let doh = FakeDoh::start(zone()).await.expect("fake doh");
    doh.set_down(true);
    let ca_dir = tempfile::tempdir().expect("tempdir");
    let over = format!(
        "{}mode = \"doh-first\"\n{}",
        ns(&dns),
        doh_table(&doh, &ca_dir)
    );
    let crawl = TestCrawl::new(ENGINE, &[url(NAME, port, 0)], &over).expect("test crawl");
    let out = run(&crawl).await;
    out.assert_ok();
    let m = index(crawl.records());
    let infos = all_fetched(&m, &urls(NAME, port, N));
    sources_in(&infos, &["plain", "cache"]);
    served_once(&s, N);
    assert!(doh.queries() >= 1, "doh was tried first");
    assert!(dns.queries_for(NAME) >= 1, "then plain dns");
}

// ---------------------------------------------------------------------------------------------------------------
// 6. total outage

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn urls_wait_out_a_dns_outage_and_the_crawl_completes() {
    const N: usize = 5;
    let s = site(158, 0, chain(N, false)).await.expect("site");
    let port = s.addr(0).expect("addr").port();
    let dns = FakeDns::start(Zone::new().with(NAME, Behaviour::v4(&[ip(158)], 300)))
        .await
        .expect("fake dns");
    dns.set_down(true);
    let over = format!(
        "[crawl]\nrobots_retry_ms = 100\nrobots_max_attempts = 30\n\
         [fetch]\nmax_retries = 30\nretry_base_ms = 50\n\
         {}negative_ttl_s = 1\ntimeout_ms = 200\n",
        ns(&dns)
    );
    let crawl = TestCrawl::new(ENGINE, &[url(NAME, port, 0)], &over).expect("test crawl");
    let mut asked_while_down = 0;
    let out = run_while(&crawl, async {
        // Down until the engine, its failure kept for the negative TTL (1 s), has asked again after it.
        crawl_tests::wait::until(
            Duration::from_secs(30),
            "the engine asked the down server again a negative TTL after its first query",
            || {
                let log = dns.log();
                log.first().is_some_and(|first| {
                    log.iter()
                        .any(|q| q.at >= first.at + Duration::from_secs(1))
                })
            },
        )
        .await;
        asked_while_down = dns.queries();
        dns.set_down(false);
    })
    .await;
    out.assert_ok();
    assert!(
        asked_while_down >= 1,
        "the engine asked while the server was down"
    );
    let m = index(crawl.records());
    all_fetched(&m, &urls(NAME, port, N));
    served_once(&s, N);
    assert_eq!(
        out.summary["failed"].as_u64(),
        Some(0),
        "summary: {}",
        out.summary
    );
}

// ---------------------------------------------------------------------------------------------------------------
// 7. TTL expiry

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_answer_is_used_once_the_ttl_expired() {
    const N: usize = 15;
    let (a, b, port) = pair(159, 160, N, true).await;
    let dns = FakeDns::start(Zone::new().with(NAME, Behaviour::v4(&[ip(159)], 2)))
        .await
        .expect("fake dns");
    let over = format!(
        "[politeness]\nmin_delay_ms = 300\nper_host_concurrency = 1\n{}min_ttl_s = 1\nhold_on_ms = 50\n",
        ns(&dns)
    );
    let crawl = TestCrawl::new(ENGINE, &[url(NAME, port, 0)], &over).expect("test crawl");
    let mut changed = None;
    let out = run_while(&crawl, async {
        crawl_tests::wait::until(Duration::from_secs(30), "a served a request", || {
            !a.requests().is_empty()
        })
        .await;
        // The answer changes in the middle of the first answer's TTL (2 s from the first query).
        let first_query = dns.log().first().map(|q| q.at).expect("a query");
        tokio::time::sleep_until((first_query + Duration::from_secs(1)).into()).await;
        dns.set(NAME, Behaviour::v4(&[ip(160)], 2));
        changed = Some(Instant::now());
    })
    .await;
    out.assert_ok();
    let changed = changed.expect("changed");
    let m = index(crawl.records());
    all_fetched(&m, &urls(NAME, port, N));
    let (ra, rb) = (a.requests(), b.requests());
    assert_eq!(
        ra.len() + rb.len(),
        N + 1,
        "pages + robots.txt, each once: {ra:?} {rb:?}"
    );
    assert!(
        !ra.is_empty() && !rb.is_empty(),
        "both addresses served: a {ra:?} b {rb:?}"
    );
    let first_query = dns.log().first().map(|q| q.at).expect("a query");
    for r in &rb {
        assert!(r.start >= changed, "b requested before the change: {r:?}");
        assert!(
            r.start >= first_query + Duration::from_secs(2),
            "b requested before the first answer (ttl 2 s) expired: {r:?}"
        );
    }
    let limit = changed + Duration::from_millis(2500);
    for r in &ra {
        assert!(
            r.start < limit,
            "a requested after the old answer expired: {r:?}"
        );
    }
    assert!(
        dns.queries_for(NAME) >= 2,
        "re-asked after the ttl: {:?}",
        dns.log()
    );
}

// ---------------------------------------------------------------------------------------------------------------
// 8. names without an answer

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nxdomain_fails_at_once_and_silence_fails_after_retries() {
    let s = site(161, 0, chain(1, false)).await.expect("site");
    let port = s.addr(0).expect("addr").port();
    let zone = Zone::new()
        .with("good.example.com", Behaviour::v4(&[ip(161)], 300))
        .with("nx.example.com", Behaviour::NxDomain)
        .with("drop.example.com", Behaviour::Drop);
    let dns = FakeDns::start(zone).await.expect("fake dns");
    let seeds: Vec<String> = ["good", "nx", "drop"]
        .iter()
        .map(|n| url(&format!("{n}.example.com"), port, 0))
        .collect();
    let over = format!(
        "[crawl]\nrobots_retry_ms = 50\nrobots_max_attempts = 2\n\
         [fetch]\nmax_retries = 2\nretry_base_ms = 50\n{}negative_ttl_s = 0\ntimeout_ms = 200\n",
        ns(&dns)
    );
    let crawl = TestCrawl::new(ENGINE, &seeds, &over).expect("test crawl");
    let started = Instant::now();
    let out = run(&crawl).await;
    out.assert_ok();
    assert!(started.elapsed() < Duration::from_secs(20), "no hang");
    let m = index(crawl.records());
    assert_eq!(m.len(), 3, "records: {:?}", m.values().collect::<Vec<_>>());
    let g = rec(&m, &seeds[0]);
    assert_eq!(
        (g.outcome, g.status),
        (Outcome::Fetched, Some(200)),
        "{g:?}"
    );
    let nx = rec(&m, &seeds[1]);
    assert_eq!(
        (nx.outcome, nx.reason),
        (Outcome::Failed, Some(Reason::Dns)),
        "{nx:?}"
    );
    assert_eq!(nx.attempts, 1, "nxdomain is final, not retried: {nx:?}");
    let dr = rec(&m, &seeds[2]);
    assert_eq!(
        (dr.outcome, dr.reason),
        (Outcome::Failed, Some(Reason::Dns)),
        "{dr:?}"
    );
    assert!(
        dns.queries_for("drop.example.com") >= 2,
        "the silent name was retried: {:?}",
        dns.log()
    );
    assert_eq!(
        s.hits(0, "/"),
        1,
        "the good seed fetched once: {:?}",
        s.requests()
    );
}
