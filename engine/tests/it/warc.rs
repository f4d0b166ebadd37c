//! WARC output of the real binary, read back with warcio: every fetch (pages, robots.txt, sitemaps) archived with
//! digests that `warcio check` verifies, payloads that decode to what the server sent (identity, gzip, br, zstd,
//! chunked),
//! revisits for repeated payloads, metadata records with the outlinks, each JSONL record pointing at its record,
//! and an archive that stays whole through kill -9 with no URL archived twice.
//!
//! Sites use `first_octet` 230..=239.
//!
//! Also here: a robots.txt `Sitemap:` naming a host out of the crawl's scope is neither fetched nor archived.

use crate::ENGINE;
use crawl_core::record::Record;
use crawl_test_kit::warcio::{Warcio, WarcioRecord, warc_files};
use crawl_tests::engine::{RunResult, TestCrawl, wait_with_deadline};
use crawl_tests::site::{Route, Site, SiteSpec};
use std::collections::BTreeMap;
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(60);

const OVERRIDES: &str = "[crawl]\nmax_depth = 100\n[fetch]\nmax_body_bytes = 65536\n[output]\nwarc_dir = \"warc\"\nwarc_max_bytes = 1048576\n";

fn page(title: &str, links: &[&str], filler: usize) -> String {
    let a: String = links
        .iter()
        .map(|l| format!("<a href=\"{l}\">{l}</a>\n"))
        .collect();
    format!(
        "<html><head><title>{title}</title></head><body>{a}<p>{}</p></body></html>\n",
        "archive me ".repeat(filler)
    )
}

/// A brotli stream of one uncompressed meta-block (RFC 7932 9.2) and an empty last one.
fn brotli_stored(data: &[u8]) -> Vec<u8> {
    assert!(!data.is_empty() && data.len() <= 1 << 16);
    // WBITS=16 ('0'), ISLAST=0, MNIBBLES=4 ('00'), MLEN-1 in 16 bits, ISUNCOMPRESSED=1; then pad to a byte.
    let v: u32 = (((data.len() - 1) as u32) << 4) | (1 << 20);
    let mut out = vec![v as u8, (v >> 8) as u8, (v >> 16) as u8];
    out.extend_from_slice(data);
    out.push(0b11); // ISLAST=1, ISLASTEMPTY=1
    out
}

fn zstd(data: &[u8]) -> Vec<u8> {
    ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
}

/// Runs the crawl to its end (the site keeps serving meanwhile); it must exit 0.
async fn run_to_end(crawl: &TestCrawl) -> RunResult {
    let child = crawl.spawn();
    let res = tokio::task::spawn_blocking(move || wait_with_deadline(child, DEADLINE))
        .await
        .expect("join");
    assert_eq!(res.code(), Some(0), "{}", res.stderr);
    res
}

/// Every record warcio reads in the crawl's archive, after `warcio check` passed on each file.
fn archive(w: &Warcio, crawl: &TestCrawl) -> Vec<WarcioRecord> {
    let files = warc_files(&crawl.dir.path().join("warc"));
    assert!(!files.is_empty(), "no WARC file written");
    for f in &files {
        w.check(f).unwrap_or_else(|e| panic!("{e}"));
    }
    w.records(&files).unwrap_or_else(|e| panic!("{e}"))
}

/// Each fetched record's `warc` location is the warcio-found bounds of a response or revisit of its URL.
fn assert_locations(records: &[Record], warc: &[WarcioRecord]) {
    let by_place: BTreeMap<(&str, u64), &WarcioRecord> = warc
        .iter()
        .map(|r| ((r.file.as_str(), r.offset), r))
        .collect();
    let mut located = 0;
    for r in records.iter().filter(|r| r.status.is_some()) {
        let loc = r
            .warc
            .as_ref()
            .unwrap_or_else(|| panic!("fetched record without a warc location: {r:?}"));
        let rec = by_place
            .get(&(loc.file.as_str(), loc.offset))
            .unwrap_or_else(|| panic!("{}: no record at {loc:?}", r.url));
        assert_eq!(rec.length, loc.length, "{}", r.url);
        assert_eq!(rec.uri.as_deref(), Some(r.url.as_str()));
        assert!(
            matches!(rec.kind.as_str(), "response" | "revisit"),
            "{rec:?}"
        );
        located += 1;
    }
    assert!(located > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fetch_is_archived_and_warcio_reads_what_the_server_sent() {
    let Some(w) = Warcio::find("warc output") else {
        return;
    };
    let identity = page(
        "identity",
        &[
            "/enc/gzip",
            "/enc/br",
            "/enc/zstd",
            "/enc/chunked",
            "/enc/gzip-chunked",
            "/dup",
            "/gone",
            "/big",
        ],
        40,
    );
    let big = page("big", &[], 20_000);
    let gzip = page("gzip", &[], 60);
    let br = page("br", &[], 70);
    let zst = page("zstd", &[], 90);
    let chunked = page("chunked", &[], 80);
    let gzip_chunked = page("gzip and chunked", &[], 100);
    let site = Site::builder(SiteSpec {
        hosts: 1,
        pages_per_host: 3,
        first_octet: 230,
        robots: true,
        sitemaps: false,
        ..SiteSpec::small()
    })
    .route(0, "/enc/identity", Route::ok(identity.clone()))
    .route(0, "/enc/gzip", Route::ok(gzip.clone()).gzip_body())
    .route(
        0,
        "/enc/br",
        Route::ok(brotli_stored(br.as_bytes())).header("content-encoding", "br"),
    )
    .route(
        0,
        "/enc/zstd",
        Route::ok(zstd(zst.as_bytes())).header("content-encoding", "zstd"),
    )
    .route(0, "/enc/chunked", Route::ok(chunked.clone()).chunked())
    .route(
        0,
        "/enc/gzip-chunked",
        Route::ok(gzip_chunked.clone()).gzip_body().chunked(),
    )
    .route(0, "/dup", Route::ok(identity.clone()))
    .route(0, "/gone", Route::not_found())
    .route(0, "/big", Route::ok(big.clone()).chunked())
    .start()
    .await
    .expect("site");
    let seed = site.url(0, "/enc/identity");
    let crawl = TestCrawl::new(ENGINE, std::slice::from_ref(&seed), OVERRIDES).expect("test crawl");
    run_to_end(&crawl).await;
    let records = crawl.records();
    let warc = archive(&w, &crawl);

    // One warcinfo first in each file; a request beside each response or revisit.
    assert_eq!(warc[0].kind, "warcinfo");
    let count = |k: &str| warc.iter().filter(|r| r.kind == k).count();
    assert_eq!(count("request"), count("response") + count("revisit"));
    // A request record holds the headers that were sent.
    for r in warc.iter().filter(|r| r.kind == "request") {
        assert!(
            r.user_agent
                .as_deref()
                .is_some_and(|ua| ua.starts_with("crawl-engine/")),
            "{r:?}"
        );
    }
    // robots.txt is archived like any fetch.
    assert!(
        warc.iter().any(|r| r.kind == "response"
            && r.uri.as_deref() == Some(site.url(0, "/robots.txt").as_str())),
        "robots.txt archived"
    );
    // Each payload decodes to what the server sent.
    for (path, body) in [
        ("/enc/identity", &identity),
        ("/enc/gzip", &gzip),
        ("/enc/br", &br),
        ("/enc/zstd", &zst),
        ("/enc/chunked", &chunked),
        ("/enc/gzip-chunked", &gzip_chunked),
    ] {
        let url = site.url(0, path);
        let rec = warc
            .iter()
            .find(|r| r.kind == "response" && r.uri.as_deref() == Some(url.as_str()))
            .unwrap_or_else(|| panic!("no response record for {url}"));
        assert_eq!(rec.status.as_deref(), Some("HTTP/1.1 200 OK"), "{path}");
        let got = rec.content_bytes();
        // warcio decodes br and zstd only with optional Python packages; without them it hands back the body as
        // stored, which must then be exactly the stream the server sent.
        let sent = match path {
            "/enc/br" => Some(brotli_stored(body.as_bytes())),
            "/enc/zstd" => Some(zstd(body.as_bytes())),
            _ => None,
        };
        if let Some(sent) = sent
            && got != body.as_bytes()
        {
            assert_eq!(got, sent, "{path}: stored as sent");
            continue;
        }
        assert_eq!(String::from_utf8_lossy(&got), body.as_str(), "{path}");
    }
    // The repeated payload is a revisit of the first response.
    let first = warc
        .iter()
        .find(|r| r.kind == "response" && r.uri.as_deref() == Some(seed.as_str()))
        .expect("seed response");
    let dup = site.url(0, "/dup");
    let revisit = warc
        .iter()
        .find(|r| r.uri.as_deref() == Some(dup.as_str()) && r.kind != "request")
        .expect("dup archived");
    assert_eq!(revisit.kind, "revisit");
    assert_eq!(revisit.refers_to.as_deref(), Some(first.id.as_str()));
    // The seed's metadata record lists its outlinks.
    let meta = warc
        .iter()
        .find(|r| r.kind == "metadata" && r.uri.as_deref() == Some(seed.as_str()))
        .expect("seed metadata");
    let text = String::from_utf8_lossy(&meta.content_bytes()).into_owned();
    for path in ["/enc/gzip", "/enc/chunked", "/dup", "/gone"] {
        assert!(
            text.contains(&format!("outlink: {}", site.url(0, path))),
            "{text}"
        );
    }
    // Every fetched JSONL record points at its record; the 404 too.
    assert_locations(&records, &warc);
    let gone = records
        .iter()
        .find(|r| r.url == site.url(0, "/gone"))
        .expect("404 recorded");
    assert_eq!(gone.status, Some(404));
    assert!(gone.warc.is_some());
    // A body past max_body_bytes: recorded too large, archived up to the limit and marked truncated.
    let big_url = site.url(0, "/big");
    let rec = records
        .iter()
        .find(|r| r.url == big_url)
        .expect("big recorded");
    assert_eq!(
        rec.reason,
        Some(crawl_core::record::Reason::TooLarge),
        "{rec:?}"
    );
    let loc = rec.warc.as_ref().expect("the truncated answer is archived");
    let cut = warc
        .iter()
        .find(|r| r.file == loc.file && r.offset == loc.offset)
        .expect("record at the location");
    assert_eq!(cut.kind, "response");
    assert_eq!(cut.truncated.as_deref(), Some("length"));
    let got = cut.content_bytes();
    assert_eq!(got.len(), 65536);
    assert_eq!(&got[..], &big.as_bytes()[..65536]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_kill_9_the_archive_is_whole_and_no_page_is_archived_twice() {
    let Some(w) = Warcio::find("warc kill -9") else {
        return;
    };
    let site = Site::start(SiteSpec {
        hosts: 2,
        pages_per_host: 60,
        first_octet: 232,
        page_bytes: 2000,
        ..SiteSpec::small()
    })
    .await
    .expect("site");
    // Slow enough to be killed mid-crawl.
    let overrides =
        format!("{OVERRIDES}[politeness]\nmin_delay_ms = 15\nper_host_concurrency = 1\n");
    let crawl = TestCrawl::new(ENGINE, &site.all_seed_urls(), &overrides).expect("test crawl");
    let lines = || {
        std::fs::read_to_string(&crawl.jsonl)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    };
    // Killed twice, each time once some more records are in (a commit and its archive are out at any moment).
    for more in [15, 25] {
        let before = lines();
        let mut child = crawl.spawn();
        crawl_tests::wait::until(DEADLINE, &format!("{more} more records"), || {
            assert!(
                child.try_wait().expect("try_wait").is_none(),
                "the crawl ended too early"
            );
            lines() >= before + more
        })
        .await;
        child.kill().expect("kill -9");
        child.wait().expect("wait");
    }
    run_to_end(&crawl).await;
    let records = crawl.records();
    let warc = archive(&w, &crawl);
    assert_locations(&records, &warc);
    // A page fetched before a kill and again after it was archived once: what was never committed was cut.
    let mut archived: BTreeMap<&str, usize> = BTreeMap::new();
    for r in warc
        .iter()
        .filter(|r| matches!(r.kind.as_str(), "response" | "revisit"))
    {
        let uri = r.uri.as_deref().unwrap_or_default();
        if !uri.ends_with("/robots.txt") && !uri.contains("sitemap") {
            *archived.entry(uri).or_default() += 1;
        }
    }
    let twice: Vec<_> = archived.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "archived twice: {twice:?}");
    let fetched = records.iter().filter(|r| r.status.is_some()).count();
    assert_eq!(
        archived.len(),
        fetched,
        "one archived fetch per fetched record"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_robots_sitemap_on_a_host_out_of_scope_is_neither_fetched_nor_archived() {
    let Some(w) = Warcio::find("warc out-of-scope sitemap") else {
        return;
    };
    let site = Site::start(SiteSpec {
        hosts: 2,
        pages_per_host: 5,
        first_octet: 236,
        robots: true,
        sitemaps: true,
        ..SiteSpec::small()
    })
    .await
    .expect("site");
    let (own, other) = (site.url(0, "/sitemap.xml"), site.url(1, "/sitemap.xml"));
    site.set_route(
        0,
        "/robots.txt",
        Route::text(
            200,
            format!("User-agent: *\nAllow: /\nSitemap: {other}\nSitemap: {own}\n"),
        ),
    );
    let crawl = TestCrawl::new(ENGINE, &[site.url(0, "/")], OVERRIDES).expect("test crawl");
    let res = run_to_end(&crawl).await;
    assert!(res.stderr.contains("sitemap not fetched"), "{}", res.stderr);
    assert_eq!(
        site.hits(1, "/sitemap.xml"),
        0,
        "the other host's sitemap was requested"
    );
    assert!(
        site.hits(0, "/sitemap.xml") > 0,
        "the in-scope sitemap is read"
    );
    let warc = archive(&w, &crawl);
    let archived = |u: &str| {
        warc.iter()
            .any(|r| r.kind == "response" && r.uri.as_deref() == Some(u))
    };
    assert!(archived(&own));
    assert!(!archived(&other));
}
