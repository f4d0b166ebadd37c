//! One crawl shared by three processes through one Redis server, one of them cut off from Redis mid-crawl for
//! longer than its shard lease, then healed.
//!
//! Topology (`crawl_test_kit::netns::Lab`): every `crawl-engine` runs in a network namespace of its own (`ip netns
//! exec`), joined to the test's namespace (the hub) by two veth pairs on two bridges the test makes: the control
//! segment, where `redis-server` listens on the hub's address, and the web segment, where the site's hosts listen
//! on addresses the test adds to the hub (`<web prefix>.30..=35`; the namespaces have `.2..=.4`). Both come from
//! 198.18.0.0/15; nothing leaves the namespaces the test made.
//!
//! The cut takes the hub's end of one process's control veth down for 3.5 s (the lease is 1 s): its Redis
//! traffic is dropped silently, as when a cable is pulled, while it still reaches the site. That is the harder
//! case for fencing (nothing but its own lease deadline stops it from fetching), and it keeps the per-host check
//! honest: with the web segment cut as well, the requests it wrote before its lease ran out sit in its kernel's
//! TCP queues and reach the site when the link comes back (tried: one request per host it held arrived about 0.6 s
//! after the heal, on hosts its peers owned by then), and the check would then measure TCP retransmission rather
//! than the crawler.
//!
//! What must hold: the peers took the cut-off process's hosts over during the cut (they fetched them); it started
//! no request once its lease could have run out, until the heal; after the heal it learned it lost its shards, its
//! late commit was refused (fenced), and it took shards again; every process exits 0; the merge has every expected
//! URL exactly once (the site's ground truth) and no host was fetched by two processes at once.
//!
//! Needs root, iproute2 and redis-server: skipped with a note otherwise, failed under `CI=true`.

use crate::ENGINE;
use crawl_test_kit::netns::{self, Lab};
use crawl_test_kit::redis::{self, Options, RedisServer};
use crawl_tests::engine::{
    Drained, RunResult, TestCrawl, assert_all_exit_0, assert_exactly_once,
    assert_one_process_per_host, merge_outputs,
};
use crawl_tests::site::{ExpectOptions, RequestLog, Site, SiteSpec};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

const PROCESSES: usize = 3;
const HOSTS: usize = 6;
const PAGES: usize = 100;
/// Between two requests to one host: paces the crawl so that it goes on well past the heal.
const MIN_DELAY_MS: u64 = 40;
const LEASE_MS: u64 = 1000;
/// How long the process stays cut off.
const CUT: Duration = Duration::from_millis(3500);
/// A request started before the lease deadline may be logged by the site a little later (two cores, shared).
const SLACK: Duration = Duration::from_millis(250);
const DEADLINE: Duration = Duration::from_secs(40);
/// The lab's segments.
const CONTROL: usize = 0;
const WEB: usize = 1;
/// Host `i` of the site listens on `<web prefix>.{FIRST_OCTET + i}`.
const FIRST_OCTET: u8 = 30;

fn agent(i: usize) -> String {
    format!("partition-process-{i}")
}

fn overrides(i: usize, redis: &str) -> String {
    format!(
        "[crawl]\nmax_depth = 1000\nuser_agent = \"{agent}\"\n\
         [politeness]\nper_host_concurrency = 1\nmin_delay_ms = {MIN_DELAY_MS}\n\
         [fetch]\nconcurrency = 8\n\
         [frontier]\nbackend = \"redis\"\ncommit_interval_ms = 20\n\
         [frontier.redis]\nurls = [\"{redis}\"]\ncrawl = \"partition\"\nshards = 16\n\
         lease_ms = {LEASE_MS}\nmax_outage_ms = 30000\n",
        agent = agent(i)
    )
}

/// The crawl processes, killed if the test fails before they end (declared after the lab, so they go first).
struct Processes(Vec<Drained>);

impl Processes {
    fn finish(mut self) -> Vec<RunResult> {
        std::mem::take(&mut self.0)
            .into_iter()
            .map(|ch| ch.finish(DEADLINE))
            .collect()
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        for ch in &mut self.0 {
            ch.kill();
        }
    }
}

/// A numeric field of a JSON log line (0 when absent).
fn field(line: &serde_json::Value, name: &str) -> u64 {
    line.get(name)
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0)
}

/// A process's JSON log lines with `message`, in order.
fn logged<'a>(stderr: &'a str, message: &'a str) -> impl Iterator<Item = serde_json::Value> + 'a {
    stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(move |v| v.get("message").and_then(serde_json::Value::as_str) == Some(message))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_cut_off_past_its_lease_is_fenced_rejoins_and_nothing_is_lost() {
    if !redis::require("partition", false) || !netns::require("partition") {
        return;
    }
    let lab = tokio::task::spawn_blocking(|| Lab::start(PROCESSES, 2))
        .await
        .expect("join")
        .expect("network lab");
    for i in 0..HOSTS {
        lab.add_hub_address(WEB, FIRST_OCTET + i as u8)
            .expect("site address");
    }
    let spec = SiteSpec {
        hosts: HOSTS,
        pages_per_host: PAGES,
        first_octet: FIRST_OCTET,
        prefix: lab.prefix(WEB),
        page_bytes: 400,
        ..SiteSpec::default()
    };
    let site = Site::builder(spec).start().await.expect("start site");
    let exp = site.expected_from(ExpectOptions::default(), &(0..HOSTS).collect::<Vec<_>>());
    let want = exp.recorded();
    let hub = lab.hub(CONTROL);
    let redis = tokio::task::spawn_blocking(move || {
        RedisServer::on_tcp(Options {
            bind: Some(hub),
            ..Options::default()
        })
    })
    .await
    .expect("join");
    let crawls: Vec<TestCrawl> = (0..PROCESSES)
        .map(|i| {
            let mut c = TestCrawl::new(ENGINE, &site.all_seed_urls(), &overrides(i, &redis.url()))
                .expect("test crawl");
            c.wrap(lab.exec_prefix(i));
            c
        })
        .collect();
    let started = Instant::now();
    let procs = Processes(crawls.iter().map(TestCrawl::spawn_drained).collect());

    // Under way: a quarter of the site served. The process cut off is the one that sent the latest request, so the
    // cut meets it with hosts and fetches of its own; its hosts are those it fetched last.
    let quarter = want.len() / 4;
    crawl_tests::wait::until(
        Duration::from_secs(20),
        &format!("the site served {quarter} requests"),
        || site.requests().len() >= quarter,
    )
    .await;
    let reqs = site.requests();
    // Who fetched each host last: the owner of its shard as far as the site can tell.
    let mut latest: Vec<Option<&RequestLog>> = vec![None; HOSTS];
    for r in &reqs {
        if latest[r.host].is_none_or(|l| l.start < r.start) {
            latest[r.host] = Some(r);
        }
    }
    let last = latest
        .iter()
        .flatten()
        .max_by_key(|r| r.start)
        .and_then(|r| r.user_agent.clone())
        .unwrap_or_default();
    let victim = (0..PROCESSES)
        .find(|&i| agent(i) == last)
        .unwrap_or_else(|| panic!("a request of an unknown agent: {last:?}"));
    let its_hosts: BTreeSet<usize> = latest
        .iter()
        .flatten()
        .filter(|r| r.user_agent.as_deref() == Some(agent(victim).as_str()))
        .map(|r| r.host)
        .collect();
    let cut_at = Instant::now();
    lab.cut(victim, CONTROL).expect("cut");
    tokio::time::sleep(CUT).await;
    lab.heal(victim, CONTROL).expect("heal");
    let healed_at = Instant::now();
    let results = tokio::task::spawn_blocking(move || procs.finish())
        .await
        .expect("join");
    let took = started.elapsed();
    let label = format!(
        "process {victim} cut off for {CUT:?} after {:?} (hosts {its_hosts:?}), whole run {took:?}",
        cut_at - started
    );
    eprintln!("partition: {label}");
    assert_all_exit_0(&results, &label);
    let all_logs = || {
        results
            .iter()
            .enumerate()
            .map(|(i, r)| format!("process {i}:\n{}\n", r.stderr))
            .collect::<String>()
    };

    // Its hosts passed to the others during the cut: they fetched them.
    let reqs = site.requests();
    let taken: BTreeSet<usize> = reqs
        .iter()
        .filter(|r| {
            r.start > cut_at
                && r.start < healed_at
                && its_hosts.contains(&r.host)
                && r.user_agent.as_deref() != Some(agent(victim).as_str())
        })
        .map(|r| r.host)
        .collect();
    assert!(
        !taken.is_empty(),
        "{label}: no peer fetched a host of the cut-off process during the cut"
    );
    // It started no request from the moment its lease could have run out to the heal, though the site stayed
    // within its reach.
    let late: Vec<_> = reqs
        .iter()
        .filter(|r| {
            r.user_agent.as_deref() == Some(agent(victim).as_str())
                && r.start > cut_at + Duration::from_millis(LEASE_MS) + SLACK
                && r.start < healed_at
        })
        .map(|r| (r.host, r.path.clone(), r.start - cut_at))
        .collect();
    assert!(
        late.is_empty(),
        "{label}: requests past the lease: {late:?}"
    );

    // After the heal it learned its shards were gone, its late commit was refused, and it took shards again.
    let victim_log = &results[victim].stderr;
    let changes: Vec<serde_json::Value> = logged(victim_log, "shard ownership changed").collect();
    let lost_at = changes
        .iter()
        .position(|v| field(v, "lost") > 0)
        .unwrap_or_else(|| panic!("{label}: no shard lost: {}", all_logs()));
    assert!(
        changes[lost_at + 1..]
            .iter()
            .any(|v| field(v, "gained") > 0),
        "{label}: no shard gained after the loss: {changes:?}"
    );
    let refused: u64 = logged(
        victim_log,
        "commit refused for shards now owned by another process; their urls stay pending there",
    )
    .map(|v| field(&v, "records"))
    .sum();
    assert!(
        refused > 0,
        "{label}: no commit of the cut-off process was fenced: {}",
        all_logs()
    );
    let rejoined = reqs
        .iter()
        .filter(|r| r.user_agent.as_deref() == Some(agent(victim).as_str()) && r.start > healed_at)
        .count();
    eprintln!(
        "partition: {refused} records fenced, {} hosts taken over during the cut, {rejoined} requests of process \
         {victim} after the heal",
        taken.len()
    );

    let records = merge_outputs(&crawls);
    assert_exactly_once(&want, &records, &label);
    assert_one_process_per_host(&site, &label);
}
