//! Redis memory per URL of the Redis frontier: a redis-server of its own (through the test kit), N URLs added
//! through the store (commits of discovered links, parents of 50 links each), `INFO memory`'s used_memory before
//! and after: bytes per pending URL; then every URL taken and finished as the shards' owner (next_urls, commits of
//! finished URLs): bytes per done URL (what stays is the seen sets).
//!
//! `MEM_SIZES` (default "100000") and `MEM_HOSTS` (default "4 1000") are space-separated lists; every size runs
//! with every host count; `MEM_RECRAWL_S` (default 0) sets `recrawl_after_s`, which keeps the pending URLs in sets
//! of their own too. `cargo bench -p crawl-store-redis --bench memory`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed expect is a failed bench

use crawl_core::frontier::{
    Batch, Discovered, Finished, FrontierStore, JobKind, UrlRef, host_fp, url_fp,
};
use crawl_store_redis::{RedisFrontier, RedisSettings};
use crawl_test_kit::redis::{self, RedisServer};
use std::time::Instant;

/// Links per parent page.
const LINKS: u64 = 50;
/// URLs per commit.
const BATCH: u64 = 5_000;

fn list(var: &str, default: &str) -> Vec<u64> {
    std::env::var(var)
        .unwrap_or_else(|_| default.to_owned())
        .split_whitespace()
        .map(|s| {
            s.replace('_', "")
                .parse()
                .unwrap_or_else(|_| panic!("{var}: not a number: {s:?}"))
        })
        .collect()
}

fn host(k: u64) -> String {
    format!("host-{k}.example")
}

/// URL `i`: on the host of its parent (parent `i / LINKS`, hosts taken in turn by parent).
fn discovered(i: u64, hosts: u64) -> Discovered {
    let parent = i / LINKS;
    let h = host(parent % hosts);
    let parent_url = format!(
        "http://{h}:8080/docs/section-{}/index-{parent}.html",
        parent % 1000
    );
    Discovered {
        url: format!("http://{h}:8080/docs/section-{}/page-{i}.html", i % 997),
        host: h,
        depth: 1,
        parent: Some((
            UrlRef {
                key: url_fp(&parent_url),
                slot: 0,
            },
            parent_url,
        )),
        redirect_chain: Vec::new(),
        kind: JobKind::Page,
    }
}

struct Row {
    hosts: u64,
    urls: u64,
    pending: f64,
    done: f64,
    add_per_s: f64,
    drain_per_s: f64,
    keys_left: u64,
}

fn run(urls: u64, hosts: u64) -> Row {
    let srv = RedisServer::start();
    let settings = RedisSettings {
        urls: vec![srv.url()],
        crawl: "mem".into(),
        lease_ms: 120_000,
        recrawl_after_s: list("MEM_RECRAWL_S", "0").first().copied().unwrap_or(0),
        ..RedisSettings::default()
    };
    let mut f = RedisFrontier::open(settings, "bench").expect("open the store");
    f.recover().expect("recover");
    let base = srv.used_memory();

    let t = Instant::now();
    let mut i = 0;
    while i < urls {
        let end = (i + BATCH).min(urls);
        let c = f
            .commit(Batch {
                discovered: (i..end).map(|i| discovered(i, hosts)).collect(),
                ..Batch::default()
            })
            .expect("add");
        assert_eq!(c.added.len() as u64, end - i, "every URL is new");
        i = end;
    }
    let add_s = t.elapsed().as_secs_f64();
    let pending = srv.used_memory();

    let t = Instant::now();
    let mut done = 0;
    for k in 0..hosts {
        let hfp = host_fp(&host(k));
        loop {
            let got = f.next_urls(hfp, None, 1000).expect("next_urls");
            if got.is_empty() {
                break;
            }
            done += got.len() as u64;
            let finished = got
                .iter()
                .map(|e| Finished {
                    id: e.id,
                    host: e.host,
                    key: e.key(),
                    fetched_page: true,
                })
                .collect();
            let c = f
                .commit(Batch {
                    finished,
                    ..Batch::default()
                })
                .expect("finish");
            assert!(c.fenced.is_empty(), "the bench owns every shard");
        }
    }
    let drain_s = t.elapsed().as_secs_f64();
    assert_eq!(done, urls, "every URL was taken once");
    let after = srv.used_memory();
    let keys_left = srv
        .cli(&[
            "EVAL",
            "return #redis.call('KEYS', '*q:*') + #redis.call('KEYS', '*par')",
            "0",
        ])
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(u64::MAX);
    drop(f);
    Row {
        hosts,
        urls,
        pending: pending.saturating_sub(base) as f64 / urls as f64,
        done: after.saturating_sub(base) as f64 / urls as f64,
        add_per_s: urls as f64 / add_s,
        drain_per_s: urls as f64 / drain_s,
        keys_left,
    }
}

fn main() {
    if !redis::require("memory bench", true) {
        return;
    }
    let sizes = list("MEM_SIZES", "100000");
    let hosts = list("MEM_HOSTS", "4 1000");
    println!(
        "{:>6} {:>10} {:>12} {:>10} {:>10} {:>10} {:>9}",
        "hosts", "urls", "B/pending", "B/done", "adds/s", "done/s", "q+par"
    );
    for &n in &sizes {
        for &h in &hosts {
            let r = run(n, h);
            println!(
                "{:>6} {:>10} {:>12.1} {:>10.1} {:>10.0} {:>10.0} {:>9}",
                r.hosts, r.urls, r.pending, r.done, r.add_per_s, r.drain_per_s, r.keys_left
            );
        }
    }
}
