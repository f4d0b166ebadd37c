//! Disk bytes per scheduled URL of the embedded store's revisit schedule, and what promotion costs.
//!
//! For each size N: N URLs discovered (links of a page on its host, 50 a page, hosts in turn) and fetched (every
//! host's queue read a window at a time, hosts in turn, finished in commits of 500) twice, in two stores: once
//! finished for good, once each scheduled again with a prior visit like a real one (ETag on 70 %, Last-Modified on
//! 60 %, a capture on all; intervals of an hour, a day, a week with ±5 % jitter). The difference of the two files'
//! sizes, the stores closed, divided by N, is what the schedule adds per URL (its ETag texts included: the report
//! gives their mean length). Then every URL is promoted (`promote_due` of 1,000 at a time: µs per URL), fetched and
//! scheduled again, and the file measured again: the schedule after a full cycle of churn.
//!
//! `SCHED_SIZES` (default "1000000") and `SCHED_HOSTS` (default "1000") are space-separated lists; every size runs
//! with every host count. `cargo bench -p crawl-store-embedded --bench schedule`. `SCHED_KEEP=DIR` only builds
//! the scheduled store of the first size and host count in DIR and keeps it (a data_dir crawl-engine can open).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed expect is a failed bench

use crawl_core::frontier::{
    Batch, Discovered, Entry, Finished, FrontierStore, JobKind, QueueKey, Rescheduled, host_fp,
};
use crawl_core::recrawl::{Capture, DigestKey, Prior, Stored, Validators};
use crawl_store_embedded::EmbeddedFrontier;
use redb::{ReadableDatabase, ReadableTableMetadata, TableDefinition};
use std::path::Path;
use std::time::{Duration, Instant};

/// Links per parent page.
const LINKS: u64 = 50;
/// URLs per commit of discovered links.
const ADD_BATCH: usize = 5_000;
/// Finished URLs per commit.
const DONE_BATCH: usize = 500;
/// URLs read from a host's queue at a time.
const WINDOW: usize = 25;
/// Due URLs promoted per call.
const PROMOTE: usize = 1_000;
/// 2026-12-01T00:00:00Z: when the first fetch happens.
const T0: u64 = 1_796_083_200_000;

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
    let h = host(i / LINKS % hosts);
    Discovered {
        url: format!("http://{h}:8080/docs/section-{}/page-{i}.html", i % 997),
        host: h,
        depth: 1 + (i % 4) as u32,
        parent: None,
        redirect_chain: Vec::new(),
        kind: JobKind::Page,
    }
}

fn mix(x: u64) -> u64 {
    twox_hash::XxHash3_64::oneshot(&x.to_le_bytes())
}

/// What a fetch of `e` at `now_ms` (its `visits`-th) leaves for the next one, and when that is due.
fn stored(e: &Entry, visits: u32, now_ms: u64) -> Stored {
    let h = mix(e.id.key);
    let interval_s: u32 = match h % 10 {
        0 => 3_600,
        1 => 604_800,
        _ => 86_400,
    };
    let interval_ms = u64::from(interval_s) * 1000;
    // ±5 %, deterministic per URL and visit.
    let jitter = mix(h ^ u64::from(visits)) % (interval_ms / 10 + 1);
    let etag = (h % 100 < etag_percent()).then(|| format!("\"{:x}-{:x}\"", h >> 24, h % 100_000));
    let last_modified_s = (h % 10 >= 4).then(|| now_ms / 1000 - (h >> 8) % 30_000_000);
    Stored {
        next_due_ms: now_ms + interval_ms - interval_ms / 20 + jitter,
        prior: Prior {
            visits,
            fetched_at_ms: now_ms,
            interval_ds: interval_s * 10,
            validators: Validators {
                etag,
                last_modified_s,
            },
            capture: Some(Capture {
                fetched_at_ms: now_ms,
                digest: DigestKey(mix(h ^ 0xd1).to_le_bytes()),
            }),
        },
    }
}

/// `SCHED_ETAGS`: the percentage of URLs with an ETag (default 70).
fn etag_percent() -> u64 {
    list("SCHED_ETAGS", "70").first().copied().unwrap_or(70)
}

fn finished(e: &Entry) -> Finished {
    Finished {
        id: e.id,
        host: e.host,
        key: e.key(),
        fetched_page: true,
    }
}

#[derive(Default)]
struct Drain {
    urls: u64,
    etag_bytes: u64,
    took: Duration,
}

/// Reads every host's queue a window at a time, hosts in turn, and finishes what it read in commits of
/// [`DONE_BATCH`], each URL scheduled again (its `visits`-th fetch) when `reschedule`.
fn drain(f: &mut EmbeddedFrontier, hosts: u64, reschedule: bool, visits: u32) -> Drain {
    let start = Instant::now();
    let mut out = Drain::default();
    let mut after: Vec<Option<QueueKey>> = vec![None; hosts as usize];
    let mut open: Vec<u64> = (0..hosts).collect();
    let mut batch: Vec<Entry> = Vec::with_capacity(DONE_BATCH);
    let mut commits = 0u64;
    let mut commit = |f: &mut EmbeddedFrontier, done: &mut Vec<Entry>, out: &mut Drain| {
        // The crawl's clock: a second per commit.
        let now = T0 + commits * 1000;
        commits += 1;
        let rescheduled: Vec<Rescheduled> = if reschedule {
            done.iter()
                .map(|e| Rescheduled {
                    id: e.id,
                    host: e.host,
                    url: e.url.clone(),
                    depth: e.depth,
                    kind: e.kind,
                    stored: stored(e, visits, now + e.id.key % 1000),
                })
                .collect()
        } else {
            Vec::new()
        };
        out.etag_bytes += rescheduled
            .iter()
            .filter_map(|r| r.stored.prior.validators.etag.as_ref())
            .map(|t| t.len() as u64)
            .sum::<u64>();
        out.urls += done.len() as u64;
        f.commit(Batch {
            finished: done.iter().map(finished).collect(),
            rescheduled,
            ..Batch::default()
        })
        .expect("commit");
        done.clear();
    };
    while !open.is_empty() {
        open.retain(|&h| {
            let w = f
                .next_urls(host_fp(&host(h)), after[h as usize], WINDOW)
                .expect("next");
            after[h as usize] = w.last().map(Entry::key);
            let more = w.len() == WINDOW;
            for e in w {
                batch.push(e);
                if batch.len() == DONE_BATCH {
                    commit(f, &mut batch, &mut out);
                }
            }
            more
        });
    }
    if !batch.is_empty() {
        commit(f, &mut batch, &mut out);
    }
    out.took = start.elapsed();
    out
}

/// The closed store's file size as it was left, and after a compaction (which moves every used page to the front
/// and cuts the file after the last: what the store holds, without the free pages of redb's growth by doubling).
fn file_sizes(dir: &Path) -> (u64, u64) {
    let path = dir.join("frontier.redb");
    let raw = std::fs::metadata(&path).unwrap().len();
    let mut db = redb::Database::open(&path).unwrap();
    while db.compact().unwrap() {}
    drop(db);
    (raw, std::fs::metadata(&path).unwrap().len())
}

/// Stored bytes and leaf pages of the schedule's tables (read from the closed store's file).
fn schedule_tables(dir: &Path) -> (u64, u64) {
    const DUE: TableDefinition<(u32, u64), &[u8]> = TableDefinition::new("schedule_due");
    const BY_ROW: TableDefinition<u64, &[u8]> = TableDefinition::new("schedule_rows");
    let db = redb::Database::open(dir.join("frontier.redb")).unwrap();
    let txn = db.begin_read().unwrap();
    let mut stored = 0;
    let mut leaves = 0;
    for s in [
        txn.open_table(DUE).unwrap().stats().unwrap(),
        txn.open_table(BY_ROW).unwrap().stats().unwrap(),
    ] {
        stored += s.stored_bytes();
        leaves += s.leaf_pages();
    }
    (stored, leaves)
}

/// A store with `urls` URLs discovered and fetched once; scheduled again when `reschedule`.
fn crawl(dir: &Path, urls: u64, hosts: u64, reschedule: bool) -> Drain {
    let mut f = EmbeddedFrontier::open(dir).expect("open");
    f.recover().expect("recover");
    let mut i = 0;
    while i < urls {
        let end = (i + ADD_BATCH as u64).min(urls);
        f.commit(Batch {
            discovered: (i..end).map(|k| discovered(k, hosts)).collect(),
            ..Batch::default()
        })
        .expect("commit");
        i = end;
    }
    drain(&mut f, hosts, reschedule, 1)
}

fn run(urls: u64, hosts: u64) {
    let plain = tempfile::tempdir().expect("tempdir");
    let base = crawl(plain.path(), urls, hosts, false);
    let (base_raw, base_size) = file_sizes(plain.path());
    drop(plain);

    let dir = tempfile::tempdir().expect("tempdir");
    let first = crawl(dir.path(), urls, hosts, true);
    let (first_raw, first_size) = file_sizes(dir.path());
    let (stored, leaves) = schedule_tables(dir.path());

    let mut f = EmbeddedFrontier::open(dir.path()).expect("open");
    let r = f.recover().expect("recover");
    assert_eq!(r.counters.scheduled, urls);
    let start = Instant::now();
    let mut promoted = 0u64;
    loop {
        let got = f.promote_due(u64::MAX / 2, PROMOTE).expect("promote");
        if got.is_empty() {
            break;
        }
        promoted += got.len() as u64;
    }
    let promote = start.elapsed();
    assert_eq!(promoted, urls);
    let second = drain(&mut f, hosts, true, 2);
    assert_eq!(second.urls, urls);
    drop(f);
    let (cycled_raw, cycled_size) = file_sizes(dir.path());
    let (cycled_stored, cycled_leaves) = schedule_tables(dir.path());

    let n = urls as f64;
    let per = |bytes: u64, base: u64| (bytes as f64 - base as f64) / n;
    let us = |d: Duration| d.as_secs_f64() * 1e6 / n;
    println!(
        "| {urls} | {hosts} | {:.1} | {:.1} | {:.1} | {:.1} ({:.1}) | {:.1} | {:.0} % | {:.0} % | {:.1} | {:.1} | {:.1} | {:.1} |",
        first.etag_bytes as f64 / n,
        per(first_size, base_size),
        per(cycled_size, base_size),
        per(first_raw, base_raw),
        per(cycled_raw, base_raw),
        stored as f64 / n,
        100.0 * stored as f64 / (leaves * 4096) as f64,
        100.0 * cycled_stored as f64 / (cycled_leaves * 4096) as f64,
        us(base.took),
        us(first.took) - us(base.took),
        us(promote),
        us(second.took),
    );
}

fn main() {
    // SCHED_KEEP=DIR: build the store of the first size with every URL scheduled in DIR (a data_dir) and stop, to
    // run crawl-engine on it (its memory with a large schedule: docs/BENCHMARKS.md).
    if let Ok(keep) = std::env::var("SCHED_KEEP") {
        let urls = list("SCHED_SIZES", "1000000")[0];
        let hosts = list("SCHED_HOSTS", "1000")[0];
        let dir = Path::new(&keep);
        std::fs::create_dir_all(dir).expect("SCHED_KEEP directory");
        let done = crawl(dir, urls, hosts, true);
        let (_, size) = file_sizes(dir);
        println!(
            "kept {urls} scheduled URLs on {hosts} hosts in {keep}: {size} bytes, built in {:.0} s",
            done.took.as_secs_f64()
        );
        return;
    }
    // `cargo bench` passes `--bench`; a filter argument selects nothing here.
    println!(
        "| URLs | hosts | ETag text B/URL | B/URL scheduled | B/URL after a cycle | uncompacted (after a cycle) \
         | stored B/URL | leaf fill | leaf fill after a cycle | fetch µs/URL | scheduling µs/URL more | promote \
         µs/URL | fetch+schedule again µs/URL |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    // Run by `cargo test` (no `--bench`): a smoke run of the same code at a size that takes a moment.
    let bench = std::env::args().any(|a| a == "--bench");
    for urls in list("SCHED_SIZES", if bench { "1000000" } else { "2000" }) {
        for hosts in list("SCHED_HOSTS", "1000") {
            run(urls, hosts);
        }
    }
}
