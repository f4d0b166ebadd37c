//! One crawl shared by three processes through a Redis Cluster of three masters, each with a replica
//! (`[frontier.redis] cluster = true`, started by `crawl_test_kit::redis::RedisCluster::with_replicas` with a
//! `cluster-node-timeout` of 1000 ms). `replicas_ack` is left out, so each process decides it from the topology
//! (1: every master has a replica). Once a third of the pages are recorded, the master serving the crawl-wide keys
//! is killed (`kill -9`), or stopped past the node timeout and let go on (it comes back as a replica of the one
//! promoted in its place). The cluster promotes its replica; every process follows and exits 0; the merge has every
//! expected URL exactly once (compared with the site's ground truth); no host was ever fetched by two processes at
//! once (each process sends its own User-Agent, the site logs when each request started and ended); the crawl went
//! on after the failure (records written and requests made after the promotion).
//!
//! The site has 6 hosts of 100 pages by default, so each test stays under 20 s on a 2-core machine;
//! `CRAWL_CLUSTER_PAGES=850` runs them on 5,100 pages (about 50 s each).
//!
//! Hosts use 127.0.0.8..=19 (this file's range).

use crate::ENGINE;
use crawl_test_kit::redis::{self, RedisCluster};
use crawl_tests::engine::{
    Drained, RunResult, TestCrawl, assert_all_exit_0, assert_exactly_once,
    assert_one_process_per_host, merge_outputs,
};
use crawl_tests::site::{ExpectOptions, Site, SiteSpec};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

const HOSTS: usize = 6;
const MASTERS: usize = 3;
const NODE_TIMEOUT_MS: u64 = 1000;
const LEASE_MS: u64 = 1000;
const CRAWL: &str = "cf";

fn pages_per_host() -> usize {
    std::env::var("CRAWL_CLUSTER_PAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100)
}

/// How long each process may run: 50 s, and a second more per 100 pages of the site.
fn deadline() -> Duration {
    Duration::from_secs(50 + (HOSTS * pages_per_host() / 100) as u64)
}

struct Run {
    site: Site,
    cluster: RedisCluster,
    crawls: Vec<TestCrawl>,
    /// Every URL the crawl must record.
    want: BTreeSet<String>,
}

fn overrides(i: usize, urls: &[String]) -> String {
    let list = urls
        .iter()
        .map(|u| format!("\"{u}\""))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "[crawl]\nmax_depth = 1000\nuser_agent = \"cluster-process-{i}\"\n\
         [politeness]\nper_host_concurrency = 1\nmin_delay_ms = 5\n\
         [fetch]\nconcurrency = 8\n\
         [frontier]\nbackend = \"redis\"\ncommit_interval_ms = 20\n\
         [frontier.redis]\nurls = [{list}]\ncluster = true\ncrawl = \"{CRAWL}\"\nshards = 16\n\
         lease_ms = {LEASE_MS}\nmax_outage_ms = 30000\nreplicas_ack_timeout_ms = 500\n"
    )
}

async fn start(first_octet: u8) -> Run {
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
    let cluster =
        tokio::task::spawn_blocking(|| RedisCluster::with_replicas(MASTERS, 1, NODE_TIMEOUT_MS))
            .await
            .expect("join");
    let crawls = (0..3)
        .map(|i| {
            TestCrawl::new(
                ENGINE,
                &site.all_seed_urls(),
                &overrides(i, &cluster.urls()),
            )
            .expect("test crawl")
        })
        .collect();
    Run {
        site,
        cluster,
        crawls,
        want,
    }
}

/// Records written so far by every process (lines of their JSONL files).
fn recorded(crawls: &[TestCrawl]) -> usize {
    crawls
        .iter()
        .map(|c| std::fs::read(&c.jsonl).map_or(0, |b| b.iter().filter(|&&x| x == b'\n').count()))
        .sum()
}

/// How the master fails.
#[derive(Debug, Clone, Copy)]
enum Failure {
    Kill,
    /// Stopped past the node timeout, then let go on (it comes back as a replica of the promoted one).
    Stop,
}

async fn run_through(first_octet: u8, failure: Failure) {
    let run = start(first_octet).await;
    let started = Instant::now();
    let children: Vec<Drained> = run.crawls.iter().map(TestCrawl::spawn_drained).collect();
    let third = run.want.len() / 3;
    crawl_tests::wait::until(
        Duration::from_secs(30),
        &format!("{third} pages recorded"),
        || recorded(&run.crawls) >= third,
    )
    .await;
    // The master of the crawl-wide keys (members, instance): every process meets its loss at once.
    let key = format!("{{{CRAWL}}}:members");
    let Run {
        site,
        mut cluster,
        crawls,
        want,
    } = run;
    let (cluster, victim, promoted, slot) = tokio::task::spawn_blocking(move || {
        let slot = cluster.slot_of(&key).expect("slot of the members key");
        let victim = cluster.master_of_slot(slot).expect("a master serves it");
        let replicas = cluster.replicas_of(victim);
        assert_eq!(replicas.len(), 1, "{:?}", cluster.nodes_text());
        match failure {
            Failure::Kill => cluster.kill(victim),
            Failure::Stop => cluster.stop(victim),
        }
        let promoted = cluster
            .wait_promoted(&replicas, slot, Duration::from_secs(20))
            .expect("the replica promoted");
        (cluster, victim, promoted, slot)
    })
    .await
    .expect("join");
    let failed_at = Instant::now();
    let at_promotion = recorded(&crawls);
    let mut cluster = cluster;
    if let Failure::Stop = failure {
        cluster.resume(victim);
    }
    let results: Vec<RunResult> = tokio::task::spawn_blocking(move || {
        children
            .into_iter()
            .map(|ch| ch.finish(deadline()))
            .collect()
    })
    .await
    .expect("join");
    let label = format!("{failure:?} master {victim}, promoted {promoted}");
    let promoted_addr = format!(
        "\"to\":\"127.0.0.1:{}\"",
        cluster.nodes[promoted]
            .port()
            .expect("a cluster node's port")
    );
    assert_all_exit_0(&results, &label);
    for (i, r) in results.iter().enumerate() {
        let decided = r
            .stderr
            .lines()
            .find(|l| l.contains("replicas_ack decided from the topology"));
        assert!(
            decided.is_some_and(|l| l.contains("\"replicas_ack\":1")),
            "{label}: process {i} decides replicas_ack = 1 from the topology: {decided:?}"
        );
    }
    // Every process still running its lease rounds then notices the switch of the victim's slots, once.
    for (i, r) in results.iter().enumerate() {
        let switches: Vec<&str> = r
            .stderr
            .lines()
            .filter(|l| l.contains("redis master switched"))
            .collect();
        assert!(
            switches.len() <= 3,
            "{label}: process {i} logs each switch once: {switches:?}"
        );
    }
    assert!(
        results.iter().any(|r| r
            .stderr
            .lines()
            .any(|l| l.contains("redis master switched") && l.contains(&promoted_addr))),
        "{label}: a process logs the switch to the promoted master"
    );
    // Killed, the old master leaves the promoted one without a replica for good: writes stop waiting for one
    // instead of waiting until max_outage_ms. (Stopped, it comes back as that replica.)
    if let Failure::Kill = failure {
        assert!(
            results
                .iter()
                .any(|r| r.stderr.contains("a master has no replica now")),
            "{label}: the master left without a replica is noticed"
        );
    }
    // The promoted replica serves the slots (as the cluster itself says), and the crawl went on after it.
    if let Failure::Stop = failure {
        cluster = tokio::task::spawn_blocking(move || {
            cluster
                .wait_replica_of(victim, promoted, Duration::from_secs(20))
                .expect("the stopped master back as a replica of the promoted one");
            cluster
        })
        .await
        .expect("join");
    }
    let nodes = cluster.nodes_text().expect("cluster nodes");
    let view = cluster.view().expect("cluster view");
    let now = view
        .iter()
        .find(|n| n.serves(slot))
        .unwrap_or_else(|| panic!("{label}: slot {slot} served: {nodes}"));
    assert!(
        now.master && now.index == Some(promoted),
        "{label}: {nodes}"
    );
    if let Failure::Stop = failure {
        let old = view
            .iter()
            .find(|n| n.index == Some(victim))
            .unwrap_or_else(|| panic!("{label}: {nodes}"));
        assert_eq!(
            old.replica_of.as_deref(),
            Some(now.id.as_str()),
            "{label}: the stopped master came back as a replica of the promoted one: {nodes}"
        );
    }
    let records = merge_outputs(&crawls);
    let logs = |what: &str| {
        results
            .iter()
            .enumerate()
            .map(|(i, r)| format!("{what}: process {i}:\n{}\n", r.stderr))
            .collect::<String>()
    };
    let after = records.len().saturating_sub(at_promotion);
    let fetched_after = site
        .requests()
        .iter()
        .filter(|r| r.start > failed_at)
        .count();
    assert!(
        after > 0 && fetched_after > 0,
        "{label}: the crawl went on after the promotion ({after} records, {fetched_after} requests)"
    );
    if let Err(e) = std::panic::catch_unwind(|| assert_exactly_once(&want, &records, &label)) {
        eprintln!("{}", logs(&label));
        std::panic::resume_unwind(e);
    }
    assert_one_process_per_host(&site, &label);
    eprintln!(
        "{label}: {} records, {after} after the promotion, {:.1} s",
        records.len(),
        started.elapsed().as_secs_f64()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_master_killed_mid_crawl_is_replaced_by_its_replica_and_nothing_is_lost() {
    if !redis::require("redis cluster failover", true) {
        return;
    }
    run_through(8, Failure::Kill).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_master_stopped_past_the_node_timeout_comes_back_a_replica_and_nothing_is_lost() {
    if !redis::require("redis cluster failover", true) {
        return;
    }
    run_through(14, Failure::Stop).await;
}
