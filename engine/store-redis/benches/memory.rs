//! Redis memory per URL of the Redis frontier: a redis-server of its own (through the test kit), N URLs added
//! through the store (commits of discovered links, parents of 50 links each), `INFO memory`'s used_memory before
//! and after: bytes per pending URL; then every URL taken and finished as the shards' owner (next_urls, commits of
//! finished URLs): bytes per done URL (what stays is the seen sets).
//!
//! With continuous crawling (the `sched` runs) every URL is finished rescheduled instead, with a typical prior
//! visit (an ETag `"5f3c1a2b-1e4"`, a Last-Modified, a capture), due within a day: bytes per scheduled URL (its
//! seen entry included); then every one is promoted (promote_due far ahead, 10,000 at a time): bytes per pending
//! revisit (its prior in its queue element).
//!
//! `MEM_SIZES` (default "100000"), `MEM_HOSTS` (default "4 1000") and `MEM_SCHEDULE` (default "0 1": done, then
//! scheduled) are space-separated lists; every size runs with every host count and mode; `MEM_RECRAWL_S` (default
//! 0) sets `recrawl_after_s`, which keeps the pending URLs in sets of their own too.
//! `cargo bench -p crawl-store-redis --bench memory`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed expect is a failed bench

use crawl_core::frontier::{
    Batch, Discovered, Entry, Finished, FrontierStore, JobKind, Rescheduled, UrlRef, host_fp,
    url_fp,
};
use crawl_core::recrawl::{Capture, DigestKey, Prior, Stored, Validators};
use crawl_store_redis::{RedisFrontier, RedisSettings};
use crawl_test_kit::redis::{self, RedisServer};
use std::time::Instant;

/// Links per parent page.
const LINKS: u64 = 50;
/// URLs per commit.
const BATCH: u64 = 5_000;
/// 2026-12-01T00:00:00Z: the scheduled runs' "now".
const NOW_MS: u64 = 1_796_083_200_000;

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

/// A URL fetched an hour ago, rescheduled within a day (spread like the policy's jitter spreads it).
fn rescheduled(e: &Entry) -> Rescheduled {
    let spread = url_fp(&e.url) % 86_400_000;
    Rescheduled {
        id: e.id,
        host: e.host,
        url: e.url.clone(),
        depth: e.depth,
        kind: e.kind,
        stored: Stored {
            next_due_ms: NOW_MS + 3_600_000 + spread,
            prior: Prior {
                visits: 1,
                fetched_at_ms: NOW_MS - 3_600_000 + spread % 1000,
                interval_ds: 864_000,
                validators: Validators {
                    etag: Some("\"5f3c1a2b-1e4\"".into()),
                    last_modified_s: Some(NOW_MS / 1000 - 7 * 86_400),
                },
                capture: Some(Capture {
                    fetched_at_ms: NOW_MS - 3_600_000,
                    digest: DigestKey::of("sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"),
                }),
            },
        },
    }
}

struct Row {
    hosts: u64,
    urls: u64,
    pending: f64,
    /// Per done URL, or per scheduled URL.
    done: f64,
    /// Per pending revisit (scheduled runs).
    revisit: Option<f64>,
    add_per_s: f64,
    drain_per_s: f64,
    promote_per_s: Option<f64>,
    keys_left: u64,
}

fn run(urls: u64, hosts: u64, schedule: bool) -> Row {
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
            let rescheduled = if schedule {
                got.iter().map(rescheduled).collect()
            } else {
                Vec::new()
            };
            let c = f
                .commit(Batch {
                    finished,
                    rescheduled,
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
            "return #redis.call('KEYS', '*:q:*') + #redis.call('KEYS', '*par')",
            "0",
        ])
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(u64::MAX);
    let (mut revisit, mut promote_per_s) = (None, None);
    if schedule {
        let o = f.outlook(u64::MAX / 2, u64::MAX).expect("outlook");
        assert_eq!(o.due_before, urls, "every URL is scheduled");
        let t = Instant::now();
        let mut promoted = 0;
        loop {
            let got = f
                .promote_due(NOW_MS + 2 * 86_400_000, 10_000)
                .expect("promote");
            if got.is_empty() {
                break;
            }
            assert!(got.iter().all(|a| a.entry.prior.is_some()));
            promoted += got.len() as u64;
        }
        assert_eq!(promoted, urls, "every URL was promoted once");
        promote_per_s = Some(urls as f64 / t.elapsed().as_secs_f64());
        revisit = Some(srv.used_memory().saturating_sub(base) as f64 / urls as f64);
    }
    drop(f);
    Row {
        hosts,
        urls,
        pending: pending.saturating_sub(base) as f64 / urls as f64,
        done: after.saturating_sub(base) as f64 / urls as f64,
        revisit,
        add_per_s: urls as f64 / add_s,
        drain_per_s: urls as f64 / drain_s,
        promote_per_s,
        keys_left,
    }
}

fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:.decimals$}"))
}

fn main() {
    if !redis::require("memory bench", true) {
        return;
    }
    // Run by `cargo test` (no `--bench`): a smoke run of the same code at a size that takes a moment.
    let bench = std::env::args().any(|a| a == "--bench");
    let sizes = list("MEM_SIZES", if bench { "100000" } else { "5000" });
    let hosts = list("MEM_HOSTS", "4 1000");
    let modes = list("MEM_SCHEDULE", "0 1");
    println!(
        "{:>6} {:>10} {:>6} {:>10} {:>10} {:>10} {:>9} {:>9} {:>10} {:>7}",
        "hosts",
        "urls",
        "mode",
        "B/pending",
        "B/after",
        "B/revisit",
        "adds/s",
        "done/s",
        "promote/s",
        "q+par"
    );
    for &n in &sizes {
        for &h in &hosts {
            for &m in &modes {
                let r = run(n, h, m != 0);
                println!(
                    "{:>6} {:>10} {:>6} {:>10.1} {:>10.1} {:>10} {:>9.0} {:>9.0} {:>10} {:>7}",
                    r.hosts,
                    r.urls,
                    if m != 0 { "sched" } else { "done" },
                    r.pending,
                    r.done,
                    opt(r.revisit, 1),
                    r.add_per_s,
                    r.drain_per_s,
                    opt(r.promote_per_s, 0),
                    r.keys_left
                );
            }
        }
    }
}
