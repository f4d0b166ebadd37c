//! One crawl shared by several processes through Redis (`[frontier] backend = "redis"`): each test starts its own
//! `redis-server` (a unix socket in a temporary directory, never the machine's Redis), the site and three
//! `crawl-engine` processes with their own data_dir and JSONL, then merges the files with `crawl-engine merge` and
//! checks every expected URL is there exactly once with the right record: with all processes running to the end,
//! with one killed (`kill -9`) at random moments and restarted or not, with one paused past its lease (SIGSTOP)
//! whose late writes must be refused, and across Redis restarts (early in the crawl, and with commits in flight
//! while shards change hands). Politeness holds across processes: the gaps between requests to one host stay at
//! least `min_delay_ms`.
//!
//! Hosts use 127.0.0.210..=229 (this file's range).

use crate::ENGINE;
use crawl_core::record::{Outcome, Reason, Record};
use crawl_test_kit::redis::{self, Options, RedisServer};
use crawl_tests::engine::{
    Drained, RunResult, TestCrawl, assert_all_exit_0, merge_outputs, signal,
};
use crawl_tests::site::{ExpectOptions, Site, SiteSpec};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

const HOSTS: usize = 4;
const PAGES: usize = 60;
const MIN_DELAY_MS: u64 = 20;
const LEASE_MS: u64 = 1000;
const DEADLINE: Duration = Duration::from_secs(90);

/// What the record of an expected URL must say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    Ok,
    Redirect,
    NotFound,
    Robots,
}

struct Cluster {
    site: Site,
    redis: RedisServer,
    crawls: Vec<TestCrawl>,
    want: BTreeMap<String, Want>,
}

fn overrides(url: &str, crawl: &str) -> String {
    format!(
        "[crawl]\nmax_depth = 1000\n\
         [politeness]\nper_host_concurrency = 1\nmin_delay_ms = {MIN_DELAY_MS}\n\
         [fetch]\nconcurrency = 8\n\
         [frontier]\nbackend = \"redis\"\ncommit_interval_ms = 20\n\
         [frontier.redis]\nurls = [\"{url}\"]\ncrawl = \"{crawl}\"\nshards = 16\nlease_ms = {LEASE_MS}\n"
    )
}

async fn cluster(first_octet: u8, processes: usize, redis_opts: Options) -> Cluster {
    let spec = SiteSpec {
        hosts: HOSTS,
        pages_per_host: PAGES,
        first_octet,
        orphans: 1,
        page_bytes: 800,
        ..SiteSpec::default()
    };
    let site = Site::builder(spec).start().await.expect("start site");
    let exp = site.expected_from(ExpectOptions::default(), &(0..HOSTS).collect::<Vec<_>>());
    let mut want = BTreeMap::new();
    for (urls, w) in [
        (exp.fetched_ok, Want::Ok),
        (exp.redirects.into_keys().collect(), Want::Redirect),
        (exp.not_found, Want::NotFound),
        (exp.robots_excluded, Want::Robots),
    ] {
        want.extend(urls.into_iter().map(|u| (u, w)));
    }
    let redis = RedisServer::with(redis_opts);
    let crawls = (0..processes)
        .map(|_| {
            TestCrawl::new(ENGINE, &site.all_seed_urls(), &overrides(&redis.url(), "t"))
                .expect("test crawl")
        })
        .collect();
    Cluster {
        site,
        redis,
        crawls,
        want,
    }
}

/// A server that keeps an append-only file (fsync always), so a restart brings its data back.
fn aof() -> Options {
    Options {
        aof: true,
        ..Options::default()
    }
}

/// Every process of the cluster, each one's output read as it comes (a process whose pipe filled up while the
/// test slept or waited for another would stop where it logs).
fn spawn_all(c: &Cluster) -> Vec<Drained> {
    c.crawls.iter().map(TestCrawl::spawn_drained).collect()
}

fn wait_all(children: Vec<Drained>) -> Vec<RunResult> {
    children.into_iter().map(|ch| ch.finish(DEADLINE)).collect()
}

/// Whole commits waiting in a process's spool (a file being written has another name until it is complete).
fn spooled(t: &TestCrawl) -> usize {
    std::fs::read_dir(t.data_dir.join("spool")).map_or(0, |d| {
        d.filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "commit"))
            .count()
    })
}

/// The processes that own a shard of crawl "t" now.
fn owners(c: &Cluster) -> BTreeSet<String> {
    (0..16)
        .filter_map(|s| {
            c.redis
                .cli(&["HGET", &format!("{{t:{s}}}:meta"), "owner"])
                .ok()
        })
        .map(|o| o.trim().to_owned())
        .filter(|o| !o.is_empty())
        .collect()
}

/// Waits until both processes hold shards and the crawl is under way (the site served 8 requests), so that what
/// happens next meets fetches in flight and state in the store.
async fn wait_under_way(c: &Cluster) {
    crawl_tests::wait::until(
        Duration::from_secs(30),
        "two processes hold shards and the site served 8 requests",
        || owners(c).len() >= 2 && c.site.requests().len() >= 8,
    )
    .await;
}

/// `crawl-engine merge` over every process's JSONL; returns the merged records.
fn merge(c: &Cluster) -> Vec<Record> {
    merge_outputs(&c.crawls)
}

/// Every expected URL exactly once with the right record; nothing unexpected.
fn assert_exactly_once(c: &Cluster, records: &[Record], label: &str) {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for r in records {
        *seen.entry(r.url.as_str()).or_default() += 1;
        assert!(r.record_id.is_some(), "{label}: no record_id: {r:?}");
    }
    let dups: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        dups.is_empty(),
        "{label}: URLs twice after the merge: {dups:?}"
    );
    let missing: Vec<&String> = c
        .want
        .keys()
        .filter(|u| !seen.contains_key(u.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "{label}: {} of {} URLs missing: {missing:?}",
        missing.len(),
        c.want.len()
    );
    for r in records {
        let Some(w) = c.want.get(&r.url) else {
            panic!("{label}: unexpected record {r:?}");
        };
        let ok = match w {
            Want::Ok => r.outcome == Outcome::Fetched && r.status == Some(200),
            Want::Redirect => r.outcome == Outcome::Fetched && r.status == Some(301),
            Want::NotFound => r.outcome == Outcome::Fetched && r.status == Some(404),
            Want::Robots => r.outcome == Outcome::Excluded && r.reason == Some(Reason::Robots),
        };
        assert!(ok, "{label}: wrong record for {w:?}: {r:?}");
    }
}

/// No page was requested twice more than `slack` times in all, no disallowed path was requested, and the gaps
/// between the starts of requests to one host are at least `min_delay_ms` (across all processes).
fn assert_polite(c: &Cluster, label: &str, refetch_slack: usize) {
    let reqs = c.site.requests();
    let mut by_url: BTreeMap<String, usize> = BTreeMap::new();
    for r in &reqs {
        if r.method == "GET"
            && r.path_only() != "/robots.txt"
            && !r.path_only().starts_with("/sitemap")
        {
            *by_url.entry(c.site.url(r.host, &r.path)).or_default() += 1;
        }
        assert!(
            !c.want
                .get(&c.site.url(r.host, &r.path))
                .is_some_and(|w| *w == Want::Robots),
            "{label}: a disallowed URL was requested: {}",
            r.path
        );
    }
    let refetched: usize = by_url.values().map(|n| n - 1).sum();
    assert!(
        refetched <= refetch_slack,
        "{label}: {refetched} re-fetches (at most {refetch_slack}): {:?}",
        by_url.iter().filter(|(_, n)| **n > 1).collect::<Vec<_>>()
    );
    for h in 0..HOSTS {
        let gap = c.site.min_inter_arrival(h).expect("several requests");
        assert!(
            gap >= Duration::from_millis(MIN_DELAY_MS),
            "{label}: host {h}: two requests {gap:?} apart"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_share_one_crawl_and_the_merge_has_every_url_once() {
    if !redis::require("distributed crawl", false) {
        return;
    }
    let c = cluster(210, 3, Options::default()).await;
    let results = tokio::task::spawn_blocking({
        let children = spawn_all(&c);
        move || wait_all(children)
    })
    .await
    .expect("join");
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r.code(), Some(0), "process {i}: {}", r.stderr);
        assert!(r.stdout.contains("completed"), "process {i}: {}", r.stdout);
    }
    // The shards were shared: every process held some. (Which process gets the few shards that have hosts is up
    // to rendezvous hashing over random process ids, so the records need not be spread.)
    for (i, r) in results.iter().enumerate() {
        let held = r.stderr.lines().any(|l| {
            l.contains("shard ownership changed")
                && serde_json::from_str::<serde_json::Value>(l)
                    .ok()
                    .and_then(|v| v["owned"].as_u64())
                    .is_some_and(|n| n > 0)
        });
        assert!(held, "process {i} never held a shard: {}", r.stderr);
    }
    let records = merge(&c);
    assert_exactly_once(&c, &records, "three processes");
    assert_polite(&c, "three processes", 0);
    // robots.txt rules move with a host's shard: a host's robots.txt is read once, not once per process. A shard
    // that changes hands while its robots.txt is being fetched is read once more by its new owner (the rules are
    // shared when the fetch ends), so a busy machine may see a second read of a host, never a read by every
    // process. (As the processes join, every shard may change hands while its robots.txt is in flight: under the
    // whole suite's load two of the four hosts were read twice, so there is no bound on the total below 2 a host.)
    let reqs = c.site.requests();
    for h in 0..HOSTS {
        let n = reqs
            .iter()
            .filter(|r| r.host == h && r.path_only() == "/robots.txt")
            .count();
        assert!((1..=2).contains(&n), "host {h}: {n} robots.txt requests");
    }

    // The crawl is finished for everyone: a fourth process started later exits at once with nothing to do.
    let late = TestCrawl::new(
        ENGINE,
        &c.site.all_seed_urls(),
        &overrides(&c.redis.url(), "t"),
    )
    .expect("test crawl");
    let r = tokio::task::spawn_blocking(move || {
        let r = late.run(DEADLINE);
        (r, late.records().len())
    })
    .await
    .expect("join");
    assert_eq!(r.0.code(), Some(0), "{}", r.0.stderr);
    assert_eq!(r.1, 0, "nothing left to record");

    // A done URL leaves nothing but its seen entry: no queue elements (lists, their depth sets), no parent rows, no
    // pending members, no URL table.
    let keys = c.redis.cli(&["KEYS", "*"]).expect("redis-cli");
    let per_url: Vec<&str> = keys
        .lines()
        .map(str::trim)
        .filter(|k| {
            [":q:", ":qd:", ":pn:"].iter().any(|p| k.contains(p))
                || k.ends_with(":par")
                || k.ends_with(":urls")
        })
        .collect();
    assert!(per_url.is_empty(), "left after the crawl: {per_url:?}");
    assert!(
        keys.lines().any(|k| k.contains(":s:")),
        "the seen sets stay: {keys}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_process_loses_nothing_and_its_shards_are_taken_over() {
    if !redis::require("distributed kill -9", false) {
        return;
    }
    // Five runs, each killing one process at another moment of the crawl (from its first request to well past its
    // middle); in odd runs it is started again.
    for run in 0..5u64 {
        let c = cluster(214 + run as u8, 3, Options::default()).await;
        let mut children = spawn_all(&c);
        let victim = (run as usize) % 3;
        let served = 1 + 40 * run as usize;
        crawl_tests::wait::until(
            Duration::from_secs(30),
            &format!("run {run}: the site served {served} requests"),
            || c.site.requests().len() >= served,
        )
        .await;
        children[victim].kill();
        let killed_at = Instant::now();
        if run % 2 == 1 {
            children[victim] = c.crawls[victim].spawn_drained();
        }
        let results = tokio::task::spawn_blocking(move || wait_all(children))
            .await
            .expect("join");
        for (i, r) in results.iter().enumerate() {
            if i == victim && run % 2 == 0 {
                continue;
            }
            assert_eq!(r.code(), Some(0), "run {run} process {i}: {}", r.stderr);
        }
        let took = killed_at.elapsed();
        let label = format!("run {run} (kill after {served} requests, took {took:?} more)");
        let records = merge(&c);
        assert_exactly_once(&c, &records, &label);
        // What the killed process had in flight may be fetched again, nothing more.
        assert_polite(&c, &label, 8);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_paused_past_its_lease_cannot_commit() {
    if !redis::require("distributed SIGSTOP", false) {
        return;
    }
    let c = cluster(220, 2, Options::default()).await;
    let children = spawn_all(&c);
    // Paused once both processes hold shards and the one paused has written records of its own, so that it has work
    // to be interrupted (holding shards is not enough: its shards may hold none of the hosts, or the other process
    // may crawl every host before it starts, and the pause would then interrupt nothing).
    // (The file's size, not its lines: a line may be half written while it is read.)
    let wrote = |i: usize| std::fs::metadata(&c.crawls[i].jsonl).is_ok_and(|m| m.len() > 0);
    let t0 = Instant::now();
    let victim = loop {
        if owners(&c).len() >= 2
            && let Some(i) = (0..2).find(|&i| wrote(i))
        {
            break i;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "shards never shared"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    signal(children[victim].child(), "STOP");
    // Past the lease the other process takes every shard over (it is then the only owner) and goes on.
    crawl_tests::wait::until(
        Duration::from_millis(20 * LEASE_MS),
        "the other process took every shard of the paused one over",
        || owners(&c).len() < 2,
    )
    .await;
    signal(children[victim].child(), "CONT");
    let results = tokio::task::spawn_blocking(move || wait_all(children))
        .await
        .expect("join");
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r.code(), Some(0), "process {i}: {}", r.stderr);
    }
    let records = merge(&c);
    assert_exactly_once(&c, &records, "paused");
    assert!(
        results[victim].stderr.contains("refused")
            || results[victim].stderr.contains("shards lost"),
        "the paused process noticed: {}",
        results[victim].stderr
    );
    assert_polite(&c, "paused", 16);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_restarted_from_its_aof_the_crawl_completes_and_restarted_empty_every_process_exits_1()
 {
    if !redis::require("distributed redis restart", false) {
        return;
    }
    let mut c = cluster(224, 2, aof()).await;
    // The outage outlasts the leases: after it, shards may change hands before the crawl goes on.
    let children = spawn_all(&c);
    // Redis goes down early in the crawl, while the processes take their shards.
    tokio::time::sleep(Duration::from_millis(500)).await;
    c.redis.kill();
    // Down for 30 s, far past every lease: no process crashes or gives up, and once the fetches in flight are
    // done (well within a lease plus a second) no request starts until Redis is back.
    tokio::time::sleep(Duration::from_millis(LEASE_MS + 1000)).await;
    let settled = c.site.requests().len();
    tokio::time::sleep(Duration::from_millis(30_000 - LEASE_MS - 1000)).await;
    assert_eq!(
        c.site.requests().len(),
        settled,
        "no request starts while redis is down"
    );
    c.redis.restart();
    let results = tokio::task::spawn_blocking(move || wait_all(children))
        .await
        .expect("join");
    assert_all_exit_0(&results, "aof restart");
    // The outage is logged when it starts, every half minute and when it ends, not at every attempt. Every
    // process's lease rounds (three a second) meet it; its shard polls (five a second) do when no commit holds the
    // store up meanwhile.
    for (i, r) in results.iter().enumerate() {
        for (start, reminder, end, at_least) in [
            (
                "shard lease round failed",
                "shard lease rounds still failing",
                "shard leases renewed again",
                1,
            ),
            (
                "shard poll failed; retrying",
                "shard poll still failing",
                "shard poll works again",
                0,
            ),
        ] {
            let started = r.stderr.matches(start).count();
            let reminded = r.stderr.matches(reminder).count();
            assert!(
                (at_least..=1).contains(&started) && reminded <= 2,
                "process {i} logged {start:?} {started} times and {reminder:?} {reminded} times:\n{}",
                r.stderr
            );
            assert_eq!(
                r.stderr.matches(end).count(),
                started,
                "process {i}, {end:?}: {}",
                r.stderr
            );
        }
    }
    let records = merge(&c);
    assert_exactly_once(&c, &records, "aof restart");

    // A crawl whose Redis comes back empty is never declared finished.
    let mut c = cluster(228, 2, aof()).await;
    let children = spawn_all(&c);
    wait_under_way(&c).await;
    c.redis.restart_empty();
    let results = tokio::task::spawn_blocking(move || wait_all(children))
        .await
        .expect("join");
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r.code(), Some(1), "process {i}: {}", r.stderr);
        assert!(
            r.stderr.contains("lost the crawl"),
            "process {i} says why: {}",
            r.stderr
        );
        assert!(!r.stdout.contains("completed"), "{}", r.stdout);
    }
}

/// Redis killed while the crawl is under way, with a commit in flight, and back from its AOF once every lease ran
/// out: shards change hands as the processes come back, a commit sent under a lease that is gone is refused, and a
/// process may take a shard back before its next shard poll. Each process drops what it held of the shards it
/// lost (their URLs are done by whoever holds them), reads again the shards it took back, and never waits for a
/// shard it does not hold: the crawl completes with every page recorded once. Redis comes back at three moments
/// after the commit met the outage, so that the commits retried meet the lease rounds at different points.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_killed_with_commits_in_flight_the_crawl_completes_with_every_page_once() {
    if !redis::require("distributed redis restart with commits in flight", false) {
        return;
    }
    for down_ms in [3_300, 4_300, 5_300] {
        let label = format!("redis down {down_ms} ms after a commit met the outage");
        let mut c = cluster(222, 2, aof()).await;
        let children = spawn_all(&c);
        wait_under_way(&c).await;
        c.redis.kill();
        crawl_tests::wait::until(
            Duration::from_secs(10),
            "a commit met the outage and waits in its process's spool",
            || c.crawls.iter().any(|t| spooled(t) > 0),
        )
        .await;
        tokio::time::sleep(Duration::from_millis(down_ms)).await;
        c.redis.restart();
        let results = tokio::task::spawn_blocking(move || wait_all(children))
            .await
            .expect("join");
        assert_all_exit_0(&results, &label);
        assert!(
            c.crawls.iter().all(|t| spooled(t) == 0),
            "{label}: every spooled commit went through"
        );
        let records = merge(&c);
        assert_exactly_once(&c, &records, &label);
        // A process goes on starting requests while Redis is down until its leases run out here (at most one a
        // delay per host); when its commit is then refused, the shard's next owner fetches those pages again.
        let refused = HOSTS * (LEASE_MS / MIN_DELAY_MS) as usize + 8;
        assert_polite(&c, &label, refused);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_three_master_cluster_the_crawl_completes_exactly_once_through_a_kill() {
    if !redis::require("distributed crawl on a redis cluster", true) {
        return;
    }
    let cluster_nodes = tokio::task::spawn_blocking(|| redis::RedisCluster::start(3))
        .await
        .expect("join");
    let urls = cluster_nodes
        .urls()
        .iter()
        .map(|u| format!("\"{u}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let c = cluster(229, 3, Options::default()).await;
    let over = |crawl: &str| {
        overrides("redis://unused", crawl).replace(
            "urls = [\"redis://unused\"]",
            &format!("urls = [{urls}]\ncluster = true"),
        )
    };
    for t in &c.crawls {
        t.rewrite(&over("c")).expect("rewrite config");
    }
    let mut children = spawn_all(&c);
    // Killed once the crawl is under way (the shard owners are on the cluster, which `owners` does not read).
    crawl_tests::wait::until(
        Duration::from_secs(30),
        "the site served 20 requests",
        || c.site.requests().len() >= 20,
    )
    .await;
    children[1].kill();
    children[1] = c.crawls[1].spawn_drained();
    let results = tokio::task::spawn_blocking(move || wait_all(children))
        .await
        .expect("join");
    assert_all_exit_0(&results, "cluster");
    let records = merge(&c);
    assert_exactly_once(&c, &records, "cluster");
    assert_polite(&c, "cluster", 8);
    drop(cluster_nodes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_killed_while_redis_is_down_replays_its_spooled_commit() {
    if !redis::require("distributed spool", false) {
        return;
    }
    let mut c = cluster(226, 2, aof()).await;
    let mut children = spawn_all(&c);
    // Redis goes down once both processes hold shards and the crawl is under way (a fixed wait could end before
    // a slow start had a fetch in flight, and then nothing would meet the outage).
    wait_under_way(&c).await;
    c.redis.kill();
    // Results of the fetches in flight meet the outage: a process with work commits, and that commit goes to its
    // spool. That process is the one killed.
    let deadline = Instant::now() + Duration::from_secs(10);
    let victim = loop {
        if let Some(i) = c.crawls.iter().position(|t| spooled(t) > 0) {
            break i;
        }
        assert!(
            Instant::now() < deadline,
            "no commit was spooled during the outage"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    children[victim].kill();
    assert_eq!(
        spooled(&c.crawls[victim]),
        1,
        "one commit waits in the spool"
    );
    c.redis.restart();
    children[victim] = c.crawls[victim].spawn_drained();
    let results = tokio::task::spawn_blocking(move || wait_all(children))
        .await
        .expect("join");
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r.code(), Some(0), "process {i}: {}", r.stderr);
    }
    assert!(
        results[victim].stderr.contains("spooled commit replayed"),
        "{}",
        results[victim].stderr
    );
    assert_eq!(spooled(&c.crawls[victim]), 0);
    let records = merge(&c);
    assert_exactly_once(&c, &records, "spool");
}
