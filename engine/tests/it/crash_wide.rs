//! Crash safety with a large frontier: the wide-mode site gives a frontier of over 100,000 URLs after a few hundred
//! pages; the crawl is killed with `kill -9` at several points and resumed until `max_pages`, and the JSONL holds
//! every fetched URL exactly once (nothing lost, nothing twice) while the store keeps every known URL.
//! Hosts: 127.0.0.130..=131 (this file's range).

use crate::ENGINE;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crawl_core::frontier::FrontierStore as _;
use crawl_store_embedded::EmbeddedFrontier;
use crawl_tests::engine::{TestCrawl, wait_with_deadline};
use crawl_tests::site::{Site, SiteSpec};

const MAX_PAGES: usize = 1500;
const DEADLINE: Duration = Duration::from_secs(240);

fn page_requests(site: &Site) -> Vec<String> {
    site.requests()
        .into_iter()
        .filter(|r| r.method == "GET" && r.path_only() != "/robots.txt")
        .map(|r| site.url(r.host, &r.path))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_with_a_frontier_of_100k_urls_records_each_fetched_url_once() {
    let spec = SiteSpec {
        hosts: 2,
        pages_per_host: 1,
        links_per_page: 0,
        orphans: 0,
        sitemaps: false,
        redirects: false,
        missing: false,
        robots: false,
        first_octet: 130,
        wide_links: 500,
        wide_ok_ratio: 0.2,
        ..SiteSpec::default()
    };
    let site = Site::builder(spec).start().await.expect("start site");
    let crawl = TestCrawl::new(
        ENGINE,
        &site.all_seed_urls(),
        &format!(
            "[crawl]\nmax_depth = 1000\nmax_pages = {MAX_PAGES}\nrespect_robots = false\n\
             [politeness]\nper_host_concurrency = 8\nmin_delay_ms = 0\n[fetch]\nconcurrency = 16\n"
        ),
    )
    .expect("test crawl");
    for target in [250, 700, 1100] {
        let mut child = crawl.spawn();
        let start = Instant::now();
        while page_requests(&site).len() < target {
            assert!(
                child.try_wait().expect("try_wait").is_none(),
                "crawl ended before {target} requests"
            );
            assert!(start.elapsed() < DEADLINE, "{target} requests not reached");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        child.kill().expect("kill -9");
        child.wait().expect("wait after kill");
        // every request the dead process sent is in the log once the site has closed its connections
        crawl_tests::wait::until(
            Duration::from_secs(10),
            "the site closed every connection",
            || site.open_connections() == 0,
        )
        .await;
        eprintln!("kill -9 after {} page requests", page_requests(&site).len());
    }
    let res = tokio::task::spawn_blocking({
        let child = crawl.spawn();
        move || wait_with_deadline(child, DEADLINE)
    })
    .await
    .expect("join");
    assert_eq!(res.code(), Some(0), "{res:?}");

    let records = crawl.records();
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &records {
        *seen.entry(r.url.as_str()).or_default() += 1;
    }
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "recorded more than once: {twice:?}");
    assert_eq!(
        records.len(),
        MAX_PAGES,
        "max_pages records across the runs"
    );
    let requested: BTreeMap<String, ()> =
        page_requests(&site).into_iter().map(|u| (u, ())).collect();
    let lost: Vec<_> = requested
        .keys()
        .filter(|u| !seen.contains_key(u.as_str()))
        .collect();
    // A URL in flight at a kill was requested, not recorded, and is fetched again by a later run: every URL the site
    // answered ends with its record, except those in flight when the last run reached max_pages (none: it drains).
    assert!(
        lost.is_empty(),
        "requested but never recorded: {} e.g. {:?}",
        lost.len(),
        lost.first()
    );
    let mut store = EmbeddedFrontier::open(&crawl.data_dir).expect("open store");
    let rec = store.recover().expect("recover");
    assert!(
        rec.counters.known >= 100_000,
        "known {}",
        rec.counters.known
    );
    assert_eq!(rec.counters.pages_fetched, MAX_PAGES as u64);
    assert_eq!(
        rec.counters.done + rec.counters.pending,
        rec.counters.known,
        "every known URL is done or pending"
    );
}
