//! Operators steering one crawl shared by two processes through Redis, with the real binary: each process has its
//! own control API, and whichever one an operator asks acts on the whole crawl. `GET /v1/status` on either lists
//! both processes with the shards each holds; a host paused through the process that does not crawl it stops the
//! one that does (the site sees no request for it), and the resume through the other API lets it go on; a queue
//! drop asked through the process that does not crawl the host is carried out by the one that does (its JSONL
//! records the URLs `excluded`/`operator`, none fetched); a URL added through one process for a host the other
//! crawls is fetched by that other. Which process crawls which host is found through `GET /v1/hosts/{host}`
//! (`owner`), which either process answers. The test starts its own `redis-server` (skipped locally without it, failing under `CI=true`), and
//! every process is killed on every path out of the test.
//!
//! Hosts use 127.0.5.50..=59 (this file's range).

use crate::ENGINE;
use crate::api::{Answer, TOKEN, api_addr, api_lines, call, write};
use crate::steer::{eventually, get, seen, stays_quiet};
use crawl_core::record::{Outcome, Reason, Record};
use crawl_test_kit::redis::{self, RedisServer};
use crawl_tests::engine::{RunResult, Running, TestCrawl, read_records};
use crawl_tests::site::{Site, SiteSpec};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

const SHARDS: u64 = 16;
const LEASE_MS: u64 = 1000;
/// Between two requests to one host: the crawl of a host lasts about `PAGES` × this.
const DELAY_MS: u64 = 150;
const PAGES: usize = 300;
/// The hosts: one for each step (a URL added, a pause, a drop).
const ADD_HOST: usize = 0;
const PAUSE_HOST: usize = 1;
const DROP_HOST: usize = 2;

/// Three hosts of `PAGES` pages, four links each, two orphan pages each (linked from nowhere, in a sitemap nothing
/// names: robots.txt, which would name it, is not read).
fn site() -> SiteSpec {
    SiteSpec {
        hosts: 3,
        pages_per_host: PAGES,
        links_per_page: 4,
        cross_host_ratio: 0.0,
        robots: false,
        sitemaps: true,
        redirects: false,
        missing: false,
        orphans: 2,
        gzip: false,
        prefix: [127, 0, 5],
        first_octet: 50,
        log_requests: true,
        ..SiteSpec::default()
    }
}

/// Redis mode with short leases, one request at a time per host, the API on loopback with the token in `token`.
fn config(redis_url: &str, token: &std::path::Path) -> String {
    format!(
        "[crawl]\nrespect_robots = false\nmax_depth = 1000\n\
         [politeness]\nper_host_concurrency = 1\nmin_delay_ms = {DELAY_MS}\n\
         [security]\nallow_private_networks = true\n\
         [frontier]\nbackend = \"redis\"\ncommit_interval_ms = 20\n\
         [frontier.redis]\nurls = [\"{redis_url}\"]\ncrawl = \"steer\"\nshards = {SHARDS}\nlease_ms = {LEASE_MS}\n\
         [api]\n{}\n",
        api_lines(token, "")
    )
}

/// One process of the crawl: its files, its API and its id in the crawl.
struct Process {
    crawl: TestCrawl,
    api: SocketAddr,
    id: String,
}

/// The running processes, killed when dropped (a failed assertion included); [`Processes::stop`] ends them with
/// SIGTERM instead.
struct Processes(Vec<Option<Running>>);

impl Processes {
    /// SIGTERM to every process, then their ends.
    fn stop(mut self) -> Vec<RunResult> {
        let running: Vec<Running> = self.0.iter_mut().filter_map(Option::take).collect();
        for r in &running {
            r.signal("TERM");
        }
        running
            .into_iter()
            .map(|r| r.wait(Duration::from_secs(60)))
            .collect()
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        for r in self.0.iter_mut().filter_map(Option::take) {
            r.signal("KILL");
            let _ = r.wait(Duration::from_secs(10));
        }
    }
}

fn send(addr: SocketAddr, method: &str, path: &str, body: &str) -> Answer {
    let a = call(addr, method, path, Some(TOKEN), body);
    assert_eq!(a.status, 200, "{method} {path} {body}: {}", a.body);
    a
}

fn host_name(site: &Site, host: usize) -> String {
    url::Url::parse(&site.url(host, "/"))
        .unwrap()
        .host_str()
        .unwrap()
        .to_owned()
}

fn path_of(url: &str) -> String {
    url::Url::parse(url).unwrap().path().to_owned()
}

/// (process id, shards) of each process a status lists, and the id it marks as the one answering.
fn listed(status: &serde_json::Value) -> (Vec<(String, u64)>, Option<String>) {
    let mut out = Vec::new();
    let mut this = None;
    for p in status["processes"].as_array().into_iter().flatten() {
        let id = p["id"].as_str().unwrap_or_default().to_owned();
        if p["this_process"] == true {
            this = Some(id.clone());
        }
        out.push((id, p["shards"].as_u64().unwrap_or(0)));
    }
    out.sort();
    (out, this)
}

/// Waits until both APIs list both processes, each holding shards, all shards held, and the split stays the same
/// over two lease lengths (the hand-over of the first process's shards to the second is over).
fn wait_settled(procs: &[Process]) {
    let split = |p: &Process| listed(&get(p.api, "/v1/status")).0;
    let mut last = None;
    let mut since = Instant::now();
    eventually(
        Duration::from_secs(30),
        "both processes hold shards, all shards held, split unchanged for two leases",
        || {
            let a = split(&procs[0]);
            let b = split(&procs[1]);
            let ok = a == b
                && a.len() == 2
                && a.iter().all(|(_, n)| *n > 0)
                && a.iter().map(|(_, n)| n).sum::<u64>() == SHARDS;
            if !ok || last.as_ref() != Some(&a) {
                last = ok.then_some(a);
                since = Instant::now();
                return false;
            }
            since.elapsed() >= Duration::from_millis(2 * LEASE_MS)
        },
    );
}

/// The index of the process that holds `host`'s shard, as both APIs say (`owner`, the same `shard`): the one that
/// crawls it and the other, which may never have met the host.
fn holder(procs: &[Process], host: &str) -> usize {
    let mut views = Vec::new();
    eventually(
        Duration::from_secs(10),
        "both APIs name the host's owner",
        || {
            views = procs
                .iter()
                .map(|p| get(p.api, &format!("/v1/hosts/{host}")))
                .collect();
            views.iter().all(|v| v["owner"].is_string())
        },
    );
    assert_eq!(views[0]["owner"], views[1]["owner"], "{views:?}");
    assert_eq!(views[0]["shard"], views[1]["shard"], "{views:?}");
    let owner = views[0]["owner"].as_str().unwrap();
    let i = procs
        .iter()
        .position(|p| p.id == owner)
        .unwrap_or_else(|| panic!("{host} owned by {owner}, which is neither process"));
    assert!(
        views[1 - i]["queued"].is_null(),
        "the other process counts no queue: {views:?}"
    );
    i
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_process_s_api_steers_the_crawl_shared_through_redis() {
    if !redis::require("steering a crawl shared through redis", false) {
        return;
    }
    let site = Site::builder(site()).start().await.expect("site");
    let redis = RedisServer::start();
    let crawls: Vec<TestCrawl> = (0..2)
        .map(|_| {
            let c = TestCrawl::new(ENGINE, &site.all_seed_urls(), "").expect("test crawl");
            let token = write(&c, "api.token", TOKEN);
            c.rewrite(&config(&redis.url(), &token)).expect("config");
            c
        })
        .collect();
    let running = Processes(crawls.iter().map(|c| Some(c.start())).collect());
    let mut procs = Vec::new();
    for (i, crawl) in crawls.into_iter().enumerate() {
        let api = api_addr(running.0[i].as_ref().unwrap());
        let id = get(api, "/v1/status")["process"]
            .as_str()
            .unwrap()
            .to_owned();
        procs.push(Process { crawl, api, id });
    }
    assert_ne!(procs[0].id, procs[1].id);

    let (add_holder, drop_holder) = tokio::task::block_in_place(|| {
        // Either API lists both processes, marks itself, and the shards held add up to the shard count.
        wait_settled(&procs);
        let mut ids: Vec<String> = procs.iter().map(|p| p.id.clone()).collect();
        ids.sort();
        for p in &procs {
            let status = get(p.api, "/v1/status");
            let (list, this) = listed(&status);
            assert_eq!(
                list.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>(),
                ids,
                "{status}"
            );
            assert_eq!(this.as_deref(), Some(p.id.as_str()), "{status}");
            assert!(status["processes_error"].is_null(), "{status}");
            for other in status["processes"].as_array().unwrap() {
                let last_seen = other["last_seen_ms"].as_u64();
                assert!(
                    last_seen.is_some_and(|ms| ms <= LEASE_MS),
                    "a live process seen {last_seen:?} ms ago: {status}"
                );
            }
        }

        // A URL added through the process that does not hold its host is fetched by the one that does.
        let name = host_name(&site, ADD_HOST);
        let add_holder = holder(&procs, &name);
        let orphan = site.orphan_urls(ADD_HOST)[0].clone();
        let body = serde_json::json!({ "urls": [orphan] }).to_string();
        let a = send(procs[1 - add_holder].api, "POST", "/v1/urls", &body).json();
        assert_eq!(a["urls"][0]["result"], "queued", "{a}");
        eventually(Duration::from_secs(20), "the added orphan fetched", || {
            site.hits(ADD_HOST, &path_of(&orphan)) == 1
        });

        // A host paused through the process that does not hold it: the holder stops requesting it. Resumed
        // through the holder's API: it goes on.
        let name = host_name(&site, PAUSE_HOST);
        let pause_holder = holder(&procs, &name);
        let (h, n) = (&procs[pause_holder], &procs[1 - pause_holder]);
        eventually(
            Duration::from_secs(20),
            "the host to pause under way",
            || seen(&site, PAUSE_HOST) >= 2,
        );
        let a = send(
            n.api,
            "POST",
            "/v1/pause",
            &format!(r#"{{"host": "{name}"}}"#),
        )
        .json();
        assert_eq!(
            (a["changed"].as_bool(), a["target"].as_str()),
            (Some(true), Some("host")),
            "{a}"
        );
        eventually(
            Duration::from_secs(10),
            "the holder obeys the pause",
            || get(h.api, &format!("/v1/hosts/{name}"))["paused"] == true,
        );
        let asked = get(n.api, &format!("/v1/hosts/{name}"));
        assert_eq!(
            (&asked["paused"], asked["owner"].as_str()),
            (&serde_json::json!(true), Some(h.id.as_str())),
            "{asked}"
        );
        let other = seen(&site, ADD_HOST) + seen(&site, DROP_HOST);
        let quiet_at = stays_quiet(&site, PAUSE_HOST, Duration::from_millis(1500));
        assert!(
            seen(&site, ADD_HOST) + seen(&site, DROP_HOST) > other,
            "the other hosts stopped too"
        );
        let status = get(h.api, "/v1/status");
        assert_eq!(
            status["operator"]["paused_hosts"][0],
            name.as_str(),
            "{status}"
        );
        send(
            h.api,
            "POST",
            "/v1/resume",
            &format!(r#"{{"host": "{name}"}}"#),
        );
        eventually(Duration::from_secs(10), "the paused host goes on", || {
            seen(&site, PAUSE_HOST) > quiet_at
        });
        eventually(
            Duration::from_secs(10),
            "the resume reaches the other process",
            || get(n.api, &format!("/v1/hosts/{name}"))["paused"] == false,
        );

        // A queue dropped through the process that does not hold the host: the holder records it. The drop takes
        // the queue as it stands: links that pages in flight then find are queued after it, so the host may go on.
        let name = host_name(&site, DROP_HOST);
        let drop_holder = holder(&procs, &name);
        let (h, n) = (&procs[drop_holder], &procs[1 - drop_holder]);
        let queued = get(h.api, &format!("/v1/hosts/{name}"))["queued"].as_u64();
        assert!(queued.is_some_and(|q| q > 0), "nothing queued to drop");
        let a = send(n.api, "DELETE", &format!("/v1/hosts/{name}/queue"), "").json();
        assert_eq!(a["requested"], true, "{a}");
        assert!(
            a["queued"].is_null(),
            "the asking process does not count it: {a}"
        );
        eventually(
            Duration::from_secs(20),
            "the holder records the queue dropped",
            || {
                get(h.api, &format!("/v1/hosts/{name}"))["errors"]["operator"]
                    .as_u64()
                    .is_some_and(|n| n > 0)
            },
        );
        // Nobody's shards moved meanwhile (the records below are looked for in the holders' files).
        assert_eq!(holder(&procs, &host_name(&site, ADD_HOST)), add_holder);
        (add_holder, drop_holder)
    });
    let ended = tokio::task::spawn_blocking(move || running.stop())
        .await
        .expect("join");
    for (r, p) in ended.iter().zip(&procs) {
        assert_eq!(r.code(), Some(0), "{}: {}", p.id, r.stderr);
    }
    assert!(
        ended[drop_holder].stderr.contains("host queue dropped"),
        "{}",
        ended[drop_holder].stderr
    );
    let records: Vec<Vec<Record>> = procs.iter().map(|p| read_records(&p.crawl.jsonl)).collect();

    // The added URL: fetched, recorded by the holder of its host alone.
    let orphan = site.orphan_urls(ADD_HOST)[0].clone();
    let by = |i: usize| records[i].iter().filter(|r| r.url == orphan).count();
    assert_eq!((by(add_holder), by(1 - add_holder)), (1, 0), "{orphan}");
    let r = records[add_holder]
        .iter()
        .find(|r| r.url == orphan)
        .unwrap();
    assert_eq!(
        (r.outcome, r.status),
        (Outcome::Fetched, Some(200)),
        "{r:?}"
    );

    // The drop: recorded by the holder, none of its URLs fetched; nothing dropped by the other process.
    let drop_name = host_name(&site, DROP_HOST);
    let dropped: Vec<&Record> = records[drop_holder]
        .iter()
        .filter(|r| r.reason == Some(Reason::Operator))
        .collect();
    assert!(!dropped.is_empty(), "the holder recorded nothing dropped");
    for r in &dropped {
        assert_eq!(r.outcome, Outcome::Excluded, "{r:?}");
        assert!(r.url.contains(&drop_name), "{r:?}");
        assert_eq!(
            site.hits(DROP_HOST, &path_of(&r.url)),
            0,
            "{} was dropped and fetched",
            r.url
        );
    }
    assert!(
        !records[1 - drop_holder]
            .iter()
            .any(|r| r.reason == Some(Reason::Operator)),
        "the process that does not hold the host recorded drops"
    );
}
