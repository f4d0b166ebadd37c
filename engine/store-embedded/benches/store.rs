//! Embedded store benchmarks: add/finish and group commit on a real redb file.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

use crawl_core::frontier::{Batch, Discovered, Entry, Finished, FrontierStore, JobKind, host_fp};
use crawl_store_embedded::EmbeddedFrontier;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

fn discovered(n: usize, hosts: usize, offset: usize) -> Vec<Discovered> {
    (0..n)
        .map(|i| {
            let host = format!("127.0.0.{}:8080", i % hosts + 1);
            Discovered {
                url: format!("http://{host}/page/{}", i + offset),
                host,
                depth: (i % 7) as u32,
                parent: None,
                redirect_chain: Vec::new(),
                kind: JobKind::Page,
            }
        })
        .collect()
}

/// The store's three hot paths on a real redb file: adding discovered links (new and duplicate) in group
/// commits, reading a host's next window, and committing finished URLs with their records.
fn store(c: &mut Criterion) {
    let n = 5_000;
    let mut g = c.benchmark_group("embedded_store");
    g.sample_size(10);
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("add_5k_new_links_commit_every_500", |b| {
        b.iter_batched(
            || (tempfile::tempdir().expect("tempdir"), discovered(n, 8, 0)),
            |(dir, links)| {
                let mut f = EmbeddedFrontier::open(dir.path()).expect("open");
                f.recover().expect("recover");
                let mut it = links.into_iter().peekable();
                while it.peek().is_some() {
                    let batch = Batch {
                        discovered: it.by_ref().take(500).collect(),
                        ..Batch::default()
                    };
                    f.commit(batch).expect("commit");
                }
                dir
            },
            BatchSize::PerIteration,
        )
    });
    // A store holding 50k URLs, for the read and duplicate paths.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut f = EmbeddedFrontier::open(dir.path()).expect("open");
    f.recover().expect("recover");
    for chunk in 0..10 {
        let batch = Batch {
            discovered: discovered(5_000, 8, chunk * 5_000),
            ..Batch::default()
        };
        f.commit(batch).expect("commit");
    }
    g.bench_function("add_5k_duplicate_links", |b| {
        b.iter(|| {
            let batch = Batch {
                discovered: discovered(n, 8, 0),
                ..Batch::default()
            };
            let c = f.commit(batch).expect("commit");
            assert_eq!(c.added.len(), 0);
        })
    });
    let host = host_fp("127.0.0.1:8080");
    g.throughput(Throughput::Elements(64));
    g.bench_function("next_window_of_64", |b| {
        let mut after = None;
        b.iter(|| {
            let w = f.next_urls(host, after, 64).expect("next");
            after = w.last().map(Entry::key);
            if w.len() < 64 {
                after = None;
            }
            black_box(w);
        })
    });
    g.throughput(Throughput::Elements(500));
    let f = std::cell::RefCell::new(f);
    g.bench_function("commit_500_finished_with_records", |b| {
        b.iter_batched(
            || {
                let w = f.borrow_mut().next_urls(host, None, 500).expect("next");
                (0..w.len() as u64).zip(w).collect::<Vec<_>>()
            },
            |done| {
                let batch = Batch {
                    finished: done
                        .iter()
                        .map(|(_, e)| Finished {
                            id: e.id,
                            host: e.host,
                            key: e.key(),
                            fetched_page: true,
                        })
                        .collect(),
                    records: done
                        .iter()
                        .map(|(i, _)| (*i + 1, b"{\"url\":\"x\"}\n".to_vec()))
                        .collect(),
                    ..Batch::default()
                };
                f.borrow_mut().commit(batch).expect("commit");
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

criterion_group!(benches, store);
criterion_main!(benches);
