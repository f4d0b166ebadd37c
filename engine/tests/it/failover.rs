//! One crawl shared by three processes through a Redis master with two replicas and three sentinels
//! (`[frontier.redis] sentinels`, started by `crawl_test_kit::sentinel` on loopback ports): the master is killed
//! (`kill -9`) or stopped past the failover (SIGSTOP, then SIGCONT: it comes back as a stale replica) in the middle
//! of the crawl. Every process follows the sentinels to the promoted replica and exits 0; the merge has every
//! expected URL exactly once (compared with the site's ground truth); no host was ever fetched by two processes
//! at once (each process sends its own User-Agent, the site logs when each request started and ended). With
//! `replicas_ack = 0` and the replicas held back while the master takes commits, the failover loses them: the
//! processes detect the rollback, log it, and the crawl still completes exactly once.
//!
//! The site has 6 hosts of 100 pages by default, so the suite stays fast (the three tests take about 65 s together
//! on a 2-core machine, each well under a minute); `CRAWL_HA_PAGES=850` runs them on 5,100 pages (32 to 44 s each).
//!
//! Hosts use 127.0.0.30..=47 (this file's range).

use crate::ENGINE;
use crawl_core::record::Record;
use crawl_test_kit::redis;
use crawl_test_kit::sentinel::{MASTER, SentinelTopology, Shape};
use crawl_tests::engine::{
    Drained, RunResult, TestCrawl, assert_all_exit_0, assert_exactly_once,
    assert_one_process_per_host, merge_outputs,
};
use crawl_tests::site::{ExpectOptions, Site, SiteSpec};
use std::collections::BTreeSet;
use std::time::Duration;

const HOSTS: usize = 6;
const LEASE_MS: u64 = 1000;
const DEADLINE: Duration = Duration::from_secs(50);

fn pages_per_host() -> usize {
    std::env::var("CRAWL_HA_PAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100)
}

struct Ha {
    site: Site,
    topo: SentinelTopology,
    crawls: Vec<TestCrawl>,
    /// Every URL the crawl must record, with whether it is a page fetched with 200.
    want: BTreeSet<String>,
}

fn overrides(i: usize, sentinels: &[String], replicas_ack: u32) -> String {
    let list = sentinels
        .iter()
        .map(|u| format!("\"{u}\""))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "[crawl]\nmax_depth = 1000\nuser_agent = \"ha-process-{i}\"\n\
         [politeness]\nper_host_concurrency = 1\nmin_delay_ms = 5\n\
         [fetch]\nconcurrency = 8\n\
         [frontier]\nbackend = \"redis\"\ncommit_interval_ms = 20\n\
         [frontier.redis]\nsentinels = [{list}]\nmaster = \"{MASTER}\"\ncrawl = \"ha\"\nshards = 16\n\
         lease_ms = {LEASE_MS}\nmax_outage_ms = 30000\nreplicas_ack = {replicas_ack}\nreplicas_ack_timeout_ms = 500\n"
    )
}

async fn start(first_octet: u8, replicas_ack: u32) -> Ha {
    let spec = SiteSpec {
        hosts: HOSTS,
        pages_per_host: pages_per_host(),
        first_octet,
        page_bytes: 400,
        ..SiteSpec::default()
    };
    let site = Site::builder(spec).start().await.expect("start site");
    let exp = site.expected_from(ExpectOptions::default(), &(0..HOSTS).collect::<Vec<_>>());
    let want = exp.recorded();
    let topo = tokio::task::spawn_blocking(|| SentinelTopology::start(Shape::default()))
        .await
        .expect("join");
    let crawls = (0..3)
        .map(|i| {
            TestCrawl::new(
                ENGINE,
                &site.all_seed_urls(),
                &overrides(i, &topo.urls(), replicas_ack),
            )
            .expect("test crawl")
        })
        .collect();
    Ha {
        site,
        topo,
        crawls,
        want,
    }
}

fn wait_all(children: Vec<Drained>) -> Vec<RunResult> {
    children.into_iter().map(|ch| ch.finish(DEADLINE)).collect()
}

fn merge(ha: &Ha) -> Vec<Record> {
    merge_outputs(&ha.crawls)
}

/// How the master fails.
#[derive(Debug, Clone, Copy)]
enum Failure {
    Kill,
    /// Stopped past the failover, then let go on (it comes back as a stale replica).
    Stop,
}

async fn run_through(first_octet: u8, failure: Failure) {
    let mut ha = start(first_octet, 1).await;
    let children: Vec<Drained> = ha.crawls.iter().map(TestCrawl::spawn_drained).collect();
    let half = ha.want.len() / 3;
    crawl_tests::wait::until(
        Duration::from_secs(30),
        &format!("the site served {half} requests"),
        || ha.site.requests().len() >= half,
    )
    .await;
    match failure {
        Failure::Kill => ha.topo.servers[0].kill(),
        Failure::Stop => ha.topo.servers[0].signal("STOP"),
    }
    let topo = ha.topo;
    let (topo, promoted) = tokio::task::spawn_blocking(move || {
        let m = topo.wait_failover(0, Duration::from_secs(20));
        (topo, m)
    })
    .await
    .expect("join");
    let promoted = promoted.expect("a replica promoted");
    if let Failure::Stop = failure {
        topo.servers[0].signal("CONT");
    }
    ha.topo = topo;
    let results = tokio::task::spawn_blocking(move || wait_all(children))
        .await
        .expect("join");
    let label = format!("{failure:?}, promoted server {promoted}");
    assert_all_exit_0(&results, &label);
    assert!(
        results
            .iter()
            .any(|r| r.stderr.contains("redis master switched")),
        "{label}: the switch is logged"
    );
    let records = merge(&ha);
    assert_exactly_once(&ha.want, &records, &label);
    assert_one_process_per_host(&ha.site, &label);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_killed_mid_crawl_fails_over_and_nothing_is_lost() {
    if !redis::require("sentinel failover", true) {
        return;
    }
    run_through(30, Failure::Kill).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_stopped_past_the_failover_comes_back_stale_and_nothing_is_lost() {
    if !redis::require("sentinel failover", true) {
        return;
    }
    run_through(36, Failure::Stop).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_replica_acks_a_failover_rollback_is_detected_and_repaired() {
    if !redis::require("sentinel rollback", true) {
        return;
    }
    let mut ha = start(42, 0).await;
    let children: Vec<Drained> = ha.crawls.iter().map(TestCrawl::spawn_drained).collect();
    let half = ha.want.len() / 3;
    crawl_tests::wait::until(
        Duration::from_secs(30),
        &format!("the site served {half} requests"),
        || ha.site.requests().len() >= half,
    )
    .await;
    // The replicas stop taking the master's writes while the crawl commits (stopped, and their links to the master
    // closed, so that no write already sent reaches them later); the master then dies with those writes.
    for r in &ha.topo.servers[1..] {
        r.signal("STOP");
    }
    ha.topo.servers[0]
        .cli(&["CLIENT", "KILL", "TYPE", "replica"])
        .expect("replica links closed");
    let before = ha.site.requests().len();
    crawl_tests::wait::until(
        Duration::from_secs(5),
        "the crawl went on against the master alone",
        || ha.site.requests().len() >= before + 10,
    )
    .await;
    ha.topo.servers[0].kill();
    for r in &ha.topo.servers[1..] {
        r.signal("CONT");
    }
    let topo = ha.topo;
    let (topo, promoted) = tokio::task::spawn_blocking(move || {
        let m = topo.wait_failover(0, Duration::from_secs(20));
        (topo, m)
    })
    .await
    .expect("join");
    promoted.expect("a replica promoted");
    ha.topo = topo;
    let results = tokio::task::spawn_blocking(move || wait_all(children))
        .await
        .expect("join");
    assert_all_exit_0(&results, "rollback");
    let told: Vec<&str> = results
        .iter()
        .flat_map(|r| r.stderr.lines())
        .filter(|l| l.contains("redis state went back"))
        .collect();
    assert!(
        !told.is_empty(),
        "the rollback is detected: {}",
        results
            .iter()
            .map(|r| r.stderr.as_str())
            .collect::<String>()
    );
    // What was lost: the commits the master took alone (each line names the shard, the epochs and the pages).
    for l in &told {
        assert!(l.contains("lost_commits"), "{l}");
    }
    let records = merge(&ha);
    assert_exactly_once(&ha.want, &records, "rollback");
    assert_one_process_per_host(&ha.site, "rollback");
}
