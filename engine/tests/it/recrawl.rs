//! Continuous crawling with the real binary over several accelerated revisit cycles: a site whose pages change
//! when the test moves its clock, revisits that are conditional (304s for unchanged pages), records with their
//! visit numbers, a kill -9 between cycles that loses no schedule entry and revisits nothing twice for one due
//! time, revisit records in the WARC archive that warcio resolves to an earlier capture, and misbehaving servers
//! that cause no revisit storm.
//!
//! Sites use 127.0.0.2-7.

use crate::ENGINE;
use crawl_core::record::Record;
use crawl_test_kit::warcio::{Warcio, warc_files};
use crawl_tests::engine::{Running, TestCrawl, read_records};
use crawl_tests::site::{
    ChangeClass, ChangingSpec, ClassWeights, Misbehavior, Site, SiteClock, SiteSpec,
};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

const EPOCH: u64 = 1_700_000_000;
/// Site seconds between two changes of a periodic page: the test moves the clock by this much.
const PERIOD: u64 = 1_000;

const OVERRIDES: &str = "[crawl]\nmax_depth = 10\nrobots_cache_s = 2\n\
[recrawl]\nenabled = true\ninterval_s = 1\nmin_interval_s = 1\nmax_interval_s = 2\n\
[output]\nwarc_dir = \"warc\"\n";

fn spec(first_octet: u8, hosts: usize, misbehaving: &[(usize, Misbehavior)]) -> SiteSpec {
    SiteSpec {
        hosts,
        pages_per_host: 6,
        gzip: false,
        first_octet,
        log_requests: true,
        changing: Some(ChangingSpec {
            epoch_s: EPOCH,
            periods_s: vec![PERIOD],
            weights: ClassWeights {
                periodic: 1,
                never: 1,
                bursty: 0,
                poisson: 0,
            },
            misbehaving: misbehaving.iter().copied().collect(),
            ..ChangingSpec::default()
        }),
        ..SiteSpec::small()
    }
}

/// The page records of the JSONL, by URL, in file order.
fn visits(records: &[Record]) -> BTreeMap<String, Vec<Record>> {
    let mut by_url: BTreeMap<String, Vec<Record>> = BTreeMap::new();
    for r in records.iter().filter(|r| r.url.contains("/page/")) {
        by_url.entry(r.url.clone()).or_default().push(r.clone());
    }
    by_url
}

/// Waits until every page URL of the site has at least `n` records (or panics after `within`).
fn wait_for_visits(crawl: &TestCrawl, running: &Running, pages: &BTreeSet<String>, n: usize) {
    let within = Duration::from_secs(60);
    let start = Instant::now();
    loop {
        let v = visits(&read_records(&crawl.jsonl));
        let done = pages
            .iter()
            .all(|p| v.get(p).is_some_and(|rs| rs.len() >= n));
        if done {
            return;
        }
        assert!(
            start.elapsed() < within,
            "not every page has {n} visits after {within:?}: {:?}\n{}",
            pages
                .iter()
                .map(|p| (p, v.get(p).map_or(0, Vec::len)))
                .collect::<Vec<_>>(),
            running.stderr_so_far()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The page URLs of the site and their change classes.
fn pages(site: &Site) -> BTreeMap<String, ChangeClass> {
    let mut out = BTreeMap::new();
    for host in 0..site.hosts() {
        for n in 0..site.spec().pages_per_host {
            let path = format!("/page/{n}");
            if let Some(c) = site.change_class(host, &path) {
                out.insert(site.url(host, &path), c);
            }
        }
    }
    out
}

/// Every URL's records are visits 1, 2, ... n in order, each once; visit 1 has no previous fetch and no verdict;
/// every record comes due again later; record ids are unique.
fn assert_visit_numbers(by_url: &BTreeMap<String, Vec<Record>>) {
    let mut ids = BTreeSet::new();
    for (url, rs) in by_url {
        for (i, r) in rs.iter().enumerate() {
            let v = r
                .revisit
                .as_ref()
                .unwrap_or_else(|| panic!("{url}: no revisit fields: {r:?}"));
            assert_eq!(
                v.visit as usize,
                i + 1,
                "{url}: visits out of order or twice: {:?}",
                rs.iter()
                    .map(|r| r.revisit.as_ref().map(|v| v.visit))
                    .collect::<Vec<_>>()
            );
            assert_eq!(
                v.previous_fetched_at.is_some(),
                i > 0,
                "{url} visit {}",
                i + 1
            );
            if i == 0 {
                assert_eq!(v.changed, None, "{url}: a first visit has no verdict");
            }
            let due = v.next_due_at.as_deref().expect("next_due_at");
            assert!(
                due > r.fetched_at.as_str() || due[..19] >= r.fetched_at[..19],
                "{url}: due {due} before {}",
                r.fetched_at
            );
            let id = r.record_id.clone().expect("record_id");
            assert!(ids.insert(id.clone()), "record id {id} twice");
        }
    }
}

/// warcio reads the archive (`warcio check` passes on every file) and every revisit record of a page refers to
/// an earlier response of the same URL at its date. Returns the revisit profiles seen (None: warcio is missing
/// and the test may skip).
fn warcio_revisits_resolve(test: &str, crawl: &TestCrawl) -> Option<BTreeSet<String>> {
    let w = Warcio::find(test)?;
    let files = warc_files(&crawl.dir.path().join("warc"));
    assert!(!files.is_empty(), "no WARC file");
    let mut responses: BTreeMap<(String, String), ()> = BTreeMap::new();
    let mut revisits = Vec::new();
    for f in &files {
        w.check(f).unwrap_or_else(|e| panic!("{e}"));
        for rec in w
            .index(
                f,
                "warc-type,warc-target-uri,warc-date,warc-refers-to-target-uri,warc-refers-to-date,warc-profile",
            )
            .unwrap_or_else(|e| panic!("{e}"))
        {
            let s = |k: &str| rec[k].as_str().unwrap_or_default().to_owned();
            match s("warc-type").as_str() {
                // The refers-to date names the capture to the millisecond.
                "response" => {
                    let date = s("warc-date");
                    responses.insert((s("warc-target-uri"), date[..23.min(date.len())].to_owned()), ());
                }
                "revisit" => revisits.push(rec),
                _ => {}
            }
        }
    }
    let mut profiles = BTreeSet::new();
    for rec in &revisits {
        let s = |k: &str| rec[k].as_str().unwrap_or_default().to_owned();
        let uri = s("warc-target-uri");
        if !uri.contains("/page/") {
            continue;
        }
        profiles.insert(s("warc-profile"));
        assert_eq!(s("warc-refers-to-target-uri"), uri, "{rec}");
        let date = s("warc-refers-to-date");
        assert!(
            responses.contains_key(&(uri.clone(), date[..23.min(date.len())].to_owned())),
            "revisit of {uri} refers to {date}, which is no response of it: {rec}"
        );
    }
    Some(profiles)
}

/// After a restart, each host's pages are requested in the order they came due while the crawl was down (due
/// times are kept in whole seconds: pages due in the same second may come in any order).
fn assert_oldest_due_first(site: &Site, before: &BTreeMap<String, Vec<Record>>) {
    let due: BTreeMap<String, String> = before
        .iter()
        .filter_map(|(u, rs)| {
            let d = rs.last()?.revisit.as_ref()?.next_due_at.clone()?;
            Some((u.clone(), d[..19].to_owned()))
        })
        .collect();
    for host in 0..site.hosts() {
        let mut seen = BTreeSet::new();
        let order: Vec<&String> = site
            .requests()
            .iter()
            .filter(|r| r.host == host && r.path.starts_with("/page/"))
            .map(|r| site.url(host, &r.path))
            .take_while(|u| seen.insert(u.clone()))
            .filter_map(|u| due.get(&u))
            .collect();
        assert!(order.len() >= 2, "host {host}: {order:?}");
        assert!(
            order.windows(2).all(|w| w[0] <= w[1]),
            "host {host}: pages not requested oldest due first after the restart: {order:?}"
        );
    }
}

/// Revisits on a well-behaved site across a clock move and a kill -9: every visit once and in order, unchanged
/// pages answered 304 to conditional requests, each changed page seen changed exactly once, the archive's
/// revisit records resolving to earlier captures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revisits_follow_changes_conditionally_and_survive_kill_9() {
    let site = Site::start(spec(2, 2, &[])).await.unwrap();
    let classes = pages(&site);
    let urls: BTreeSet<String> = classes.keys().cloned().collect();
    assert!(classes.values().any(|c| matches!(c, ChangeClass::Never)));
    assert!(
        classes
            .values()
            .any(|c| matches!(c, ChangeClass::Periodic { .. }))
    );
    // One request per host at a time: the order the site sees requests in is the order they were started.
    let crawl = TestCrawl::new(
        ENGINE,
        &site.all_seed_urls(),
        &format!("{OVERRIDES}[politeness]\nper_host_concurrency = 1\n"),
    )
    .unwrap();

    // Cycle 1: first visits and two revisits of unchanged pages.
    let running = crawl.start();
    wait_for_visits(&crawl, &running, &urls, 3);
    // Every periodic page changes once.
    site.clock().advance(Duration::from_secs(PERIOD));
    let before: BTreeMap<String, usize> = visits(&read_records(&crawl.jsonl))
        .into_iter()
        .map(|(u, rs)| (u, rs.len()))
        .collect();
    wait_for_visits(
        &crawl,
        &running,
        &urls,
        before.values().max().copied().unwrap_or(0) + 2,
    );
    // kill -9 between cycles: nothing of the schedule may be lost.
    running.signal("KILL");
    let res = running.wait(Duration::from_secs(10));
    assert_ne!(res.code(), Some(0));
    let after_kill = visits(&read_records(&crawl.jsonl));
    // Down long enough for every page to come due (intervals are at most 2 s).
    std::thread::sleep(Duration::from_millis(2_500));
    site.clear_requests();

    // Cycle 2: the restarted crawl goes on with the next visits (what came due while it was down first).
    let running = crawl.start();
    wait_for_visits(
        &crawl,
        &running,
        &urls,
        after_kill.values().map(Vec::len).max().unwrap_or(0) + 2,
    );
    running.signal("TERM");
    let res = running.wait(Duration::from_secs(30));
    assert_eq!(res.code(), Some(0), "{}", res.stderr);

    let by_url = visits(&read_records(&crawl.jsonl));
    assert_visit_numbers(&by_url);
    assert_oldest_due_first(&site, &after_kill);
    let mut unchanged = 0;
    let mut not_modified = 0;
    for (url, rs) in &by_url {
        let changed: Vec<_> = rs
            .iter()
            .skip(1)
            .filter(|r| r.revisit.as_ref().and_then(|v| v.changed) == Some(true))
            .collect();
        match classes[url] {
            ChangeClass::Never => assert!(changed.is_empty(), "{url} never changes: {changed:?}"),
            _ => assert_eq!(changed.len(), 1, "{url} changed once: {rs:?}"),
        }
        for r in rs.iter().skip(1) {
            if r.revisit.as_ref().and_then(|v| v.changed) == Some(false) {
                unchanged += 1;
                if r.status == Some(304) {
                    not_modified += 1;
                    assert_eq!(r.content_length, Some(0), "{r:?}");
                }
            }
        }
    }
    assert!(
        unchanged >= urls.len() * 2,
        "{unchanged} unchanged revisits"
    );
    assert!(
        not_modified * 10 >= unchanged * 9,
        "{not_modified} of {unchanged} unchanged revisits were 304s"
    );
    // The server saw conditional requests: each revisit of a page after the restart sent its validators (the
    // request log starts at the restart).
    let conditional = site
        .requests()
        .iter()
        .filter(|r| r.path.starts_with("/page/") && r.if_none_match.is_some())
        .count();
    let revisits: usize = by_url
        .iter()
        .map(|(u, rs)| rs.len() - after_kill.get(u).map_or(0, Vec::len))
        .sum();
    assert!(
        conditional >= revisits,
        "{conditional} conditional requests for {revisits} revisits"
    );
    if let Some(profiles) = warcio_revisits_resolve(
        "revisits_follow_changes_conditionally_and_survive_kill_9",
        &crawl,
    ) {
        assert!(
            profiles.iter().any(|p| p.ends_with("server-not-modified")),
            "no server-not-modified revisit: {profiles:?}"
        );
    }
}

/// Servers that get validators and dates wrong: each gets a defined behaviour, none a revisit storm (visits stay
/// within what the interval allows) or a hang; the anomalies are counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn misbehaving_servers_cause_no_revisit_storm() {
    let bad = [
        Misbehavior::EtagChurn,
        Misbehavior::IgnoreConditional,
        Misbehavior::FutureLastModified,
        Misbehavior::BadLastModified,
        Misbehavior::AlwaysNotModified,
        Misbehavior::LyingSitemap,
    ];
    let misbehaving: Vec<(usize, Misbehavior)> = bad.iter().copied().enumerate().collect();
    // The site's clock is ours, so that its dates (a Last-Modified a day ahead, a sitemap's lastmod a second
    // ago) mean what they say to the crawler; robots.txt, and with it the sitemaps and their hints, is read
    // again every 2 s.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let mut s = spec(4, bad.len(), &misbehaving);
    if let Some(c) = s.changing.as_mut() {
        c.epoch_s = now_ms / 1000 - 10 * PERIOD;
    }
    let site = Site::builder(s)
        .clock(SiteClock::scaled(now_ms, 1.0))
        .start()
        .await
        .unwrap();
    let crawl = TestCrawl::new(
        ENGINE,
        &site.all_seed_urls(),
        &format!(
            "{OVERRIDES}[observability]\nmetrics_listen = \"127.0.0.1:0\"\nlog_format = \"json\"\n"
        ),
    )
    .unwrap();
    let started = Instant::now();
    let running = crawl.start();
    let metrics = running.metrics_addr(Duration::from_secs(10));
    std::thread::sleep(Duration::from_secs(8));
    let text = reqwest_free_get(metrics);
    running.signal("TERM");
    let res = running.wait(Duration::from_secs(30));
    assert_eq!(res.code(), Some(0), "{}", res.stderr);
    let elapsed = started.elapsed().as_secs_f64();
    let by_url = visits(&read_records(&crawl.jsonl));
    assert_visit_numbers(&by_url);
    // With intervals of at least 1 s (less 5 % jitter), no URL is fetched more than once per 0.95 s.
    for (url, rs) in &by_url {
        assert!(
            (rs.len() as f64) <= elapsed / 0.95 + 1.0,
            "{url}: {} visits in {elapsed:.1} s",
            rs.len()
        );
    }
    let count = |anomaly: &str| -> f64 {
        text.lines()
            .find(|l| {
                l.starts_with(&format!(
                    "crawl_recrawl_anomalies_total{{anomaly=\"{anomaly}\"}}"
                ))
            })
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0)
    };
    for a in [
        "etag_unstable",
        "conditional_ignored",
        "last_modified_in_future",
        "last_modified_unparseable",
        "not_modified_without_prior",
    ] {
        assert!(count(a) > 0.0, "no {a} counted:\n{text}");
    }
    // A server that ignores conditional requests sends the same body again: an identical-payload revisit.
    if let Some(profiles) =
        warcio_revisits_resolve("misbehaving_servers_cause_no_revisit_storm", &crawl)
    {
        assert!(
            profiles
                .iter()
                .any(|p| p.ends_with("identical-payload-digest")),
            "no identical-payload revisit: {profiles:?}"
        );
    }
    // A 304 to a first request (no validators sent) is recorded as a protocol failure, never a crash.
    let host4 = site.url(4, "/page/");
    let first = by_url
        .iter()
        .filter(|(u, _)| u.starts_with(&host4))
        .map(|(_, rs)| &rs[0])
        .collect::<Vec<_>>();
    assert!(!first.is_empty());
    for r in first {
        assert_eq!(r.reason.map(|r| r.as_str()), Some("protocol"), "{r:?}");
    }
}

/// A plain HTTP GET of `/metrics` (no client library needed for one request).
fn reqwest_free_get(addr: std::net::SocketAddr) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect metrics");
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
        .expect("write");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read");
    out
}

/// Redis mode: two processes share one continuous crawl; one is killed (-9) between revisits, the other takes its
/// shards and their schedule: every URL goes on being revisited, each due time once (visits 1, 2, ... once each
/// after the merge), the killed process's committed records handed over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_revisits_move_with_the_shard_when_a_process_dies() {
    let site = Site::start(spec(6, 2, &[])).await.unwrap();
    let urls: BTreeSet<String> = pages(&site).into_keys().collect();
    let redis = crawl_test_kit::redis::RedisServer::start();
    let overrides = format!(
        "{OVERRIDES}[politeness]\nper_host_concurrency = 1\n\
         [frontier]\nbackend = \"redis\"\ncommit_interval_ms = 20\n\
         [frontier.redis]\nurls = [\"{}\"]\ncrawl = \"rc\"\nshards = 8\nlease_ms = 1000\n",
        redis.url()
    );
    let a = TestCrawl::new(ENGINE, &site.all_seed_urls(), &overrides).unwrap();
    let b = TestCrawl::new(ENGINE, &site.all_seed_urls(), &overrides).unwrap();
    let (ra, rb) = (a.start(), b.start());
    let merged_visits = |n: usize| {
        let all: Vec<Record> = [&a, &b]
            .iter()
            .flat_map(|t| read_records(&t.jsonl))
            .collect();
        // A record taken over from a dead process may be in both files: count each fetch once.
        let mut fetches: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        for r in &all {
            if let Some(id) = &r.record_id {
                fetches
                    .entry(r.url.as_str())
                    .or_default()
                    .insert(id.clone());
            }
        }
        urls.iter()
            .all(|u| fetches.get(u.as_str()).is_some_and(|ids| ids.len() >= n))
    };
    crawl_tests::wait::until(
        Duration::from_secs(60),
        "three visits of every page",
        || merged_visits(3),
    )
    .await;
    ra.signal("KILL");
    let res_a = ra.wait(Duration::from_secs(10));
    assert_ne!(res_a.code(), Some(0));
    crawl_tests::wait::until(
        Duration::from_secs(60),
        "six visits of every page with one process left",
        || merged_visits(6),
    )
    .await;
    rb.signal("TERM");
    let res_b = rb.wait(Duration::from_secs(30));
    assert_eq!(res_b.code(), Some(0), "{}", res_b.stderr);
    let merged = crawl_tests::engine::merge_outputs(&[a, b]);
    // The merge keeps each file's order; a URL's records may be in both files.
    let mut by_url = visits(&merged);
    for rs in by_url.values_mut() {
        rs.sort_by_key(|r| r.revisit.as_ref().map(|v| v.visit));
    }
    assert_visit_numbers(&by_url);
    for u in &urls {
        assert!(by_url[u].len() >= 6, "{u}: {}", by_url[u].len());
    }
}

/// kill -9 at moments spread over the revisit cycle (commits, promotions and fetches in flight): no schedule entry
/// and no validator is lost (every page goes on being revisited, and unchanged ones still get 304s), no due time
/// is fetched twice (visits once and in order).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_at_any_moment_loses_no_schedule_entry_or_validator() {
    let site = Site::start(spec(3, 1, &[])).await.unwrap();
    let classes = pages(&site);
    let urls: BTreeSet<String> = classes.keys().cloned().collect();
    let crawl = TestCrawl::new(ENGINE, &site.all_seed_urls(), OVERRIDES).unwrap();
    let mut running = crawl.start();
    wait_for_visits(&crawl, &running, &urls, 2);
    for delay_ms in [300, 700, 1_100, 1_500, 1_900, 250] {
        std::thread::sleep(Duration::from_millis(delay_ms));
        running.signal("KILL");
        let res = running.wait(Duration::from_secs(10));
        assert_ne!(res.code(), Some(0));
        running = crawl.start();
    }
    let now = visits(&read_records(&crawl.jsonl));
    wait_for_visits(
        &crawl,
        &running,
        &urls,
        now.values().map(Vec::len).max().unwrap_or(0) + 2,
    );
    running.signal("TERM");
    let res = running.wait(Duration::from_secs(30));
    assert_eq!(res.code(), Some(0), "{}", res.stderr);
    let by_url = visits(&read_records(&crawl.jsonl));
    assert_visit_numbers(&by_url);
    for (url, rs) in &by_url {
        if matches!(classes[url], ChangeClass::Never) {
            let revisits: Vec<_> = rs.iter().skip(1).collect();
            let not_modified = revisits.iter().filter(|r| r.status == Some(304)).count();
            assert!(
                not_modified * 10 >= revisits.len() * 9,
                "{url}: {not_modified} of {} revisits were 304s",
                revisits.len()
            );
        }
    }
}
