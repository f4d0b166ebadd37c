//! End-to-end tests of the real `crawl-engine` binary against generated loopback sites: exact URL sets, scope,
//! depth and page limits (with resume), include/exclude filters, gzip decoding, and the command line (`--check`,
//! missing seeds, `--help`/`--version`, unreadable config, a data_dir already in use).
//!
//! Sites use `first_octet` 50..=69 (one range per test so parallel tests never share an address).

use crate::ENGINE;
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use crawl_core::record::{Outcome, Reason, Record};
use crawl_tests::engine::{RunResult, TestCrawl, wait_with_deadline};
use crawl_tests::site::{ExpectOptions, Expected, RequestLog, Route, Site, SiteSpec};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

const DEADLINE: Duration = Duration::from_secs(40);

/// Runs `cmd` to its end on a blocking thread (the site keeps serving on the runtime meanwhile).
pub(super) async fn run_cmd(mut cmd: Command) -> RunResult {
    tokio::task::spawn_blocking(move || {
        wait_with_deadline(cmd.spawn().expect("spawn crawl-engine"), DEADLINE)
    })
    .await
    .expect("join")
}

async fn run(crawl: &TestCrawl) -> RunResult {
    run_cmd(crawl.command()).await
}

/// Crawls `seeds` with `overrides` and asserts exit status 0.
async fn crawl_ok(seeds: &[String], overrides: &str) -> (TestCrawl, RunResult) {
    let crawl = TestCrawl::new(ENGINE, seeds, overrides).expect("test crawl");
    let res = run(&crawl).await;
    assert_eq!(res.code(), Some(0), "stderr:\n{}", res.stderr);
    (crawl, res)
}

/// Asserts `r` ended with `outcome` and `reason`.
fn assert_terminal(r: &Record, outcome: Outcome, reason: Reason) {
    assert_eq!((r.outcome, r.reason), (outcome, Some(reason)), "{r:?}");
}

/// Each URL a correct crawl requests, with count 1.
fn once_each(exp: &Expected) -> BTreeMap<String, usize> {
    fetch_urls(exp).into_iter().map(|u| (u, 1)).collect()
}

/// A site of `hosts` x `pages` based on [`SiteSpec::small`].
fn spec(first_octet: u8, hosts: usize, pages: usize) -> SiteSpec {
    SiteSpec {
        hosts,
        pages_per_host: pages,
        first_octet,
        ..SiteSpec::small()
    }
}

/// Records by URL; fails on a URL recorded twice.
fn index(records: &[Record]) -> BTreeMap<String, &Record> {
    let mut out = BTreeMap::new();
    for r in records {
        if let Some(old) = out.insert(r.url.clone(), r) {
            panic!("{} recorded twice:\n{old:?}\n{r:?}", r.url);
        }
    }
    out
}

/// robots.txt and sitemap requests (not page fetches).
fn is_meta(path: &str) -> bool {
    path == "/robots.txt" || path.starts_with("/sitemap")
}

/// Page requests as (absolute URL, log entry).
fn page_requests(site: &Site) -> Vec<(String, RequestLog)> {
    site.requests()
        .into_iter()
        .filter(|r| !is_meta(r.path_only()))
        .map(|r| (site.url(r.host, &r.path), r))
        .collect()
}

fn request_counts(site: &Site) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for (u, _) in page_requests(site) {
        *out.entry(u).or_default() += 1;
    }
    out
}

/// Every URL a correct crawl records (fetched, redirected, 404, robots-excluded).
fn all_recorded(exp: &Expected) -> BTreeSet<String> {
    let mut all: BTreeSet<String> = exp.fetched_ok.clone();
    all.extend(exp.redirects.keys().cloned());
    all.extend(exp.not_found.iter().cloned());
    all.extend(exp.robots_excluded.iter().cloned());
    all
}

fn fetch_urls(exp: &Expected) -> BTreeSet<String> {
    let mut all: BTreeSet<String> = exp.fetched_ok.clone();
    all.extend(exp.redirects.keys().cloned());
    all.extend(exp.not_found.iter().cloned());
    all
}

fn assert_same_set(got: &BTreeSet<String>, want: &BTreeSet<String>, what: &str) {
    let missing: Vec<_> = want.difference(got).collect();
    let extra: Vec<_> = got.difference(want).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{what}: missing {missing:?}, unexpected {extra:?}"
    );
}

/// What a record should hold: (outcome, status, reason, redirect_to).
type Want<'a> = (Outcome, Option<u16>, Option<Reason>, Option<&'a str>);

/// Checks every expected URL's record against the expectation.
fn assert_statuses(by: &BTreeMap<String, &Record>, exp: &Expected) {
    let fetched = |status: u16| (Outcome::Fetched, Some(status), None, None);
    let mut want: Vec<(&String, Want<'_>)> = Vec::new();
    want.extend(exp.fetched_ok.iter().map(|u| (u, fetched(200))));
    want.extend(exp.not_found.iter().map(|u| (u, fetched(404))));
    want.extend(
        exp.redirects
            .iter()
            .map(|(u, to)| (u, (Outcome::Fetched, Some(301), None, Some(to.as_str())))),
    );
    let robots = (Outcome::Excluded, None, Some(Reason::Robots), None);
    want.extend(exp.robots_excluded.iter().map(|u| (u, robots)));
    for (u, w) in want {
        let r = by.get(u).unwrap_or_else(|| panic!("no record for {u}"));
        let got = (r.outcome, r.status, r.reason, r.redirect_to.as_deref());
        assert_eq!(got, w, "{r:?}");
    }
}

/// Whether `s` matches `mask` byte for byte, `0` standing for any ASCII digit.
fn masked(s: &str, mask: &str) -> bool {
    s.len() == mask.len()
        && mask.bytes().zip(s.bytes()).all(|(m, c)| {
            if m == b'0' {
                c.is_ascii_digit()
            } else {
                m.eq_ignore_ascii_case(&c)
            }
        })
}

/// `YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)` with plausible field values.
fn is_rfc3339(s: &str) -> bool {
    let (Some(head), Some(rest)) = (s.get(..19), s.get(19..)) else {
        return false;
    };
    let field = |i: usize| head.get(i..i + 2).and_then(|p| p.parse::<u32>().ok());
    let in_range = |i: usize, lo: u32, hi: u32| field(i).is_some_and(|v| (lo..=hi).contains(&v));
    let fields_ok = in_range(5, 1, 12) && in_range(8, 1, 31) && in_range(11, 0, 23);
    if !(masked(head, "0000-00-00T00:00:00")
        && fields_ok
        && in_range(14, 0, 59)
        && in_range(17, 0, 60))
    {
        return false;
    }
    let zone = match rest.strip_prefix('.') {
        Some(frac) => {
            let n = frac.bytes().take_while(u8::is_ascii_digit).count();
            if n == 0 {
                return false;
            }
            &frac[n..]
        }
        None => rest,
    };
    zone.eq_ignore_ascii_case("z") || masked(zone, "+00:00") || masked(zone, "-00:00")
}

/// The number on the summary's `fetched` line.
fn summary_fetched(stdout: &str) -> Option<u64> {
    stdout
        .lines()
        .find(|l| l.trim_start().starts_with("fetched"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
}

pub(super) fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hosts_exact_url_set_statuses_depths_and_referers() {
    let landing = "<!DOCTYPE html>\n<html><body><p>landing page without links</p></body></html>\n";
    let site = Site::builder(spec(50, 3, 40))
        .route(0, "/jump", Route::redirect(301, "/landing"))
        .route(0, "/landing", Route::ok(landing))
        .start()
        .await
        .expect("site");
    let jump = site.url(0, "/jump");
    let landing_url = site.url(0, "/landing");
    let mut seeds = site.all_seed_urls();
    seeds.push(jump.clone());
    let (crawl, res) = crawl_ok(&seeds, "[crawl]\nmax_depth = 1000\nscope = \"host\"\n").await;

    let mut exp = site.expected_from(ExpectOptions::default(), &[0, 1, 2]);
    exp.redirects.insert(jump.clone(), landing_url.clone());
    exp.fetched_ok.insert(landing_url.clone());
    let records = crawl.records();
    let by = index(&records);
    assert_statuses(&by, &exp);
    let got: BTreeSet<String> = by.keys().cloned().collect();
    assert_same_set(&got, &all_recorded(&exp), "recorded URLs");
    for u in &exp.never {
        assert!(!by.contains_key(u), "nofollow target {u} recorded");
    }
    for h in 0..3 {
        for o in site.orphan_urls(h) {
            let r = by
                .get(&o)
                .unwrap_or_else(|| panic!("orphan {o} not recorded"));
            assert_eq!((r.status, r.depth), (Some(200), 1), "{r:?}");
            assert!(
                r.parent
                    .as_deref()
                    .is_some_and(|p| p.ends_with("/sitemap-pages.xml")),
                "{r:?}"
            );
        }
    }

    // The server saw each page fetch exactly once, and nothing robots-disallowed or nofollow.
    let counts = request_counts(&site);
    assert_eq!(counts, once_each(&exp), "page requests at the server");
    assert!(exp.robots_excluded.iter().all(|u| !counts.contains_key(u)));
    assert!(exp.never.iter().all(|u| !counts.contains_key(u)));
    assert!(!exp.robots_excluded.is_empty() && !exp.never.is_empty() && !exp.redirects.is_empty());
    assert!(!exp.not_found.is_empty());

    // Depth and parent.
    for s in &seeds {
        let r = by[s];
        assert_eq!((r.depth, r.parent.as_deref()), (0, None), "seed {r:?}");
    }
    let l = by[&landing_url];
    assert_eq!(
        (l.depth, l.parent.as_deref()),
        (0, Some(jump.as_str())),
        "{l:?}"
    );
    let mut via_redirect = 0;
    for r in &records {
        let Some(p) = r.parent.as_deref().and_then(|p| by.get(p)) else {
            continue;
        };
        match p.status {
            Some(301) => {
                via_redirect += 1;
                assert_eq!(
                    r.depth, p.depth,
                    "301 target keeps the depth: {r:?} from {p:?}"
                );
                assert_eq!(p.redirect_to.as_deref(), Some(r.url.as_str()));
            }
            Some(200) => assert_eq!(r.depth, p.depth + 1, "{r:?} from {p:?}"),
            _ => panic!("{r:?} has a parent that is not a page: {p:?}"),
        }
    }
    assert!(via_redirect >= 1);

    // Referer at the server is the record's parent.
    for (u, req) in page_requests(&site) {
        let r = by[&u];
        assert_eq!(req.referer, r.parent, "referer of {u}");
    }
    for r in &records {
        assert!(is_rfc3339(&r.fetched_at), "fetched_at of {r:?}");
    }
    let fetched = records
        .iter()
        .filter(|r| r.outcome == Outcome::Fetched)
        .count();
    assert!(
        res.stdout.contains("crawl completed"),
        "stdout:\n{}",
        res.stdout
    );
    assert_eq!(
        summary_fetched(&res.stdout),
        Some(fetched as u64),
        "stdout:\n{}",
        res.stdout
    );
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_scope_excludes_other_hosts_without_requesting_them() {
    let site = Site::start(spec(53, 3, 20)).await.expect("site");
    let (crawl, _) = crawl_ok(
        &[site.seed_url()],
        "[crawl]\nscope = \"host\"\nmax_depth = 1000\n",
    )
    .await;
    let records = crawl.records();
    let by = index(&records);
    let host0 = format!("{}/", site.base(0));
    let mut foreign = 0;
    for r in &records {
        if r.url.starts_with(&host0) {
            assert_ne!(r.reason, Some(Reason::Scope), "{r:?}");
        } else {
            foreign += 1;
            assert_terminal(r, Outcome::Excluded, Reason::Scope);
        }
    }
    assert!(foreign >= 1);
    let next_host = site.page_url(1, 0);
    assert_eq!(
        by.get(&next_host).map(|r| r.reason),
        Some(Some(Reason::Scope))
    );
    // Host 0 is crawled completely: the same as the any-scope expectation restricted to host 0.
    let exp = site.expected(ExpectOptions::default());
    let want: BTreeSet<String> = all_recorded(&exp)
        .into_iter()
        .filter(|u| u.starts_with(&host0))
        .collect();
    let got: BTreeSet<String> = by
        .keys()
        .filter(|u| u.starts_with(&host0))
        .cloned()
        .collect();
    assert_same_set(&got, &want, "host 0 URLs");
    let reqs = site.requests();
    assert!(!reqs.is_empty());
    assert!(
        reqs.iter().all(|r| r.host == 0),
        "other hosts were contacted: {reqs:?}"
    );
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_scope_crawls_every_host() {
    let site = Site::start(spec(56, 3, 20)).await.expect("site");
    let (crawl, _) = crawl_ok(
        &[site.seed_url()],
        "[crawl]\nscope = \"any\"\nmax_depth = 1000\n",
    )
    .await;
    let records = crawl.records();
    let by = index(&records);
    let exp = site.expected(ExpectOptions::default());
    assert_statuses(&by, &exp);
    let got: BTreeSet<String> = by.keys().cloned().collect();
    assert_same_set(&got, &all_recorded(&exp), "recorded URLs");
    assert!(records.iter().all(|r| r.reason != Some(Reason::Scope)));
    for h in 1..3 {
        assert_eq!(site.hits(h, "/"), 1, "host {h} page 0");
    }
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_depth_one_excludes_depth_two_without_requesting() {
    // No redirects: a 301 target's depth would otherwise depend on discovery order.
    let site = Site::start(SiteSpec {
        redirects: false,
        ..spec(59, 1, 30)
    })
    .await
    .expect("site");
    let (crawl, _) = crawl_ok(&[site.seed_url()], "[crawl]\nmax_depth = 1\n").await;
    let records = crawl.records();
    let by = index(&records);
    let exp = site.expected(ExpectOptions {
        max_depth: Some(1),
        ..ExpectOptions::default()
    });
    assert_statuses(&by, &exp);
    let counts = request_counts(&site);
    assert_eq!(counts, once_each(&exp), "page requests at the server");
    let mut too_deep = 0;
    for r in &records {
        assert!(r.depth <= 2, "{r:?}");
        if r.depth == 2 {
            too_deep += 1;
            assert_terminal(r, Outcome::Excluded, Reason::Depth);
            assert!(!counts.contains_key(&r.url), "{} was requested", r.url);
        } else {
            assert_ne!(r.reason, Some(Reason::Depth), "{r:?}");
        }
    }
    assert!(too_deep >= 1);
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_pages_stops_then_a_second_run_completes_the_crawl() {
    let site = Site::start(spec(60, 1, 30)).await.expect("site");
    let (first, res) = crawl_ok(
        &[site.seed_url()],
        "[crawl]\nmax_pages = 10\nmax_depth = 1000\n",
    )
    .await;
    assert!(
        res.stdout.contains("max_pages reached"),
        "stdout:\n{}",
        res.stdout
    );
    let records = first.records();
    index(&records);
    let fetched = records
        .iter()
        .filter(|r| r.outcome == Outcome::Fetched)
        .count();
    assert!(
        (1..=10).contains(&fetched),
        "{fetched} fetched in the first run"
    );
    let total = site.expected(ExpectOptions::default());
    assert!(total.fetch_count() > 10);

    let over = format!(
        "[crawl]\nmax_pages = 0\nmax_depth = 1000\n[frontier]\ndata_dir = {}\n[output]\njsonl = {}\n",
        toml_str(&first.data_dir.display().to_string()),
        toml_str(&first.jsonl.display().to_string())
    );
    let (_second, res) = crawl_ok(&[site.seed_url()], &over).await;
    assert!(
        res.stdout.contains("crawl completed"),
        "stdout:\n{}",
        res.stdout
    );
    let records = first.records();
    let by = index(&records);
    assert_statuses(&by, &total);
    let got: BTreeSet<String> = by.keys().cloned().collect();
    assert_same_set(&got, &all_recorded(&total), "URLs over both runs");
    let counts = request_counts(&site);
    assert_eq!(counts, once_each(&total), "page requests over both runs");
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn include_and_exclude_filters_record_filter_and_never_request() {
    let site = Site::start(spec(61, 1, 30)).await.expect("site");
    let include = r"^http://[^/]+/($|page/|old/|private/|orphan/|nofollow/)";
    let exclude = "7$";
    let over = format!(
        "[crawl]\nmax_depth = 1000\ninclude = [{}]\nexclude = [{}]\n",
        toml_str(include),
        toml_str(exclude)
    );
    let (crawl, _) = crawl_ok(&[site.seed_url()], &over).await;
    let filtered = |u: &str| u.ends_with('7') || !in_include(u);
    let records = crawl.records();
    let by = index(&records);
    let counts = request_counts(&site);
    let mut n = 0;
    for r in &records {
        if filtered(&r.url) {
            n += 1;
            assert_terminal(r, Outcome::Excluded, Reason::Filter);
            assert!(!counts.contains_key(&r.url), "{} was requested", r.url);
        } else {
            assert_ne!(r.reason, Some(Reason::Filter), "{r:?}");
        }
    }
    assert!(n >= 2);
    // page 7 is linked from page 6 (the chain), /missing/0 from page 0
    for u in [site.page_url(0, 7), site.url(0, "/missing/0")] {
        assert_eq!(
            by.get(&u).map(|r| r.reason),
            Some(Some(Reason::Filter)),
            "{u}"
        );
    }
    assert!(
        counts.keys().all(|u| !filtered(u)),
        "filtered URLs requested: {counts:?}"
    );
    assert!(counts.contains_key(&site.seed_url()));
    site.shutdown().await;
}

/// What the filter test's include regex accepts (the test crate has no regex dependency): the root, or a path
/// under `/page/`, `/old/`, `/private/`, `/orphan/` or `/nofollow/`.
fn in_include(u: &str) -> bool {
    let path = u
        .strip_prefix("http://")
        .and_then(|r| r.find('/').map(|i| &r[i + 1..]))
        .unwrap_or("");
    path.is_empty()
        || ["page/", "old/", "private/", "orphan/", "nofollow/"]
            .iter()
            .any(|p| path.starts_with(p))
}

/// GET `path` without content coding; returns the body length.
async fn identity_len(addr: SocketAddr, path: &str) -> usize {
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept-Encoding: identity\r\nConnection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await.expect("write");
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut buf))
        .await
        .expect("read in time")
        .expect("read");
    let split = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("end of head");
    let head = String::from_utf8_lossy(&buf[..split]).to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(!head.contains("content-encoding"), "{head}");
    assert!(!head.contains("transfer-encoding"), "{head}");
    buf.len() - split - 4
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gzip_bodies_are_measured_decoded_and_all_codings_are_offered() {
    let site = Site::start(SiteSpec {
        gzip: true,
        page_bytes: 3000,
        ..spec(62, 1, 15)
    })
    .await
    .expect("site");
    let (crawl, _) = crawl_ok(&[site.seed_url()], "[crawl]\nmax_depth = 1000\n").await;
    let wire = site.bytes_sent();
    let reqs = site.requests();
    assert!(!reqs.is_empty());
    for r in &reqs {
        let ae = r
            .accept_encoding
            .as_deref()
            .unwrap_or("")
            .to_ascii_lowercase();
        for coding in ["gzip", "br", "zstd"] {
            assert!(ae.contains(coding), "accept-encoding {ae:?} of {}", r.path);
        }
    }
    let records = crawl.records();
    let ok: Vec<&Record> = records.iter().filter(|r| r.status == Some(200)).collect();
    assert!(ok.len() >= 15);
    let addr = site.addr(0).expect("addr");
    let mut decoded = 0;
    for r in &ok {
        let u = url::Url::parse(&r.url).expect("record url");
        let want = identity_len(addr, u.path()).await as u64;
        assert_eq!(r.content_length, Some(want), "{r:?}");
        assert!(want >= 2000, "page {} is only {want} bytes", r.url);
        decoded += want;
    }
    // The wire carried compressed bodies: far fewer bytes than the decoded pages alone.
    assert!(
        wire < decoded,
        "sent {wire} bytes on the wire for {decoded} decoded bytes"
    );
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_process_on_the_same_data_dir_is_refused() {
    let root = "<!DOCTYPE html>\n<html><body><a href=\"/page/1\">next</a></body></html>\n";
    let site = Site::builder(spec(63, 1, 3))
        .route(0, "/", Route::ok(root).delay(Duration::from_secs(3)))
        .start()
        .await
        .expect("site");
    let crawl = TestCrawl::new(ENGINE, &[site.seed_url()], "").expect("test crawl");
    let first = crawl.spawn();
    crawl_tests::wait::until(
        Duration::from_secs(6),
        "the first process asked for the seed",
        || site.hits(0, "/") > 0,
    )
    .await;
    assert_eq!(
        site.hits(0, "/"),
        1,
        "the first process never asked for the seed"
    );
    let second = run(&crawl).await;
    assert!(
        matches!(second.code(), Some(1 | 2)),
        "second process: {second:?}"
    );
    assert!(
        second.stderr.contains("in use"),
        "stderr:\n{}",
        second.stderr
    );
    let first = tokio::task::spawn_blocking(move || wait_with_deadline(first, DEADLINE))
        .await
        .expect("join");
    assert_eq!(
        first.code(),
        Some(0),
        "first process stderr:\n{}",
        first.stderr
    );
    assert_eq!(site.hits(0, "/"), 1);
    let records = crawl.records();
    index(&records);
    assert!(
        records
            .iter()
            .any(|r| r.url == site.seed_url() && r.status == Some(200))
    );
    site.shutdown().await;
}

#[test]
fn rfc3339_checker_accepts_only_rfc3339() {
    for ok in [
        "2024-02-29T23:59:60Z",
        "2024-01-01T00:00:00.123456Z",
        "2024-01-01t00:00:00+05:30",
    ] {
        assert!(is_rfc3339(ok), "{ok}");
    }
    for bad in [
        "2024-13-01T00:00:00Z",
        "2024-01-01 00:00:00Z",
        "2024-01-01T00:00:00",
        "2024-01-01T00:00:00.Z",
        "Mon, 01 Jan 2024 00:00:00 GMT",
    ] {
        assert!(!is_rfc3339(bad), "{bad}");
    }
}
