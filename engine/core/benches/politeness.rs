//! Politeness benchmarks: host-queue push/pop (ordering and politeness bookkeeping).

use crawl_core::frontier::Entry;
use crawl_core::politeness::{Feedback, Gate, HostQueues, PolitenessPolicy, Pop};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::{Duration, Instant};

fn entries(n: usize, hosts: usize) -> Vec<(String, Entry)> {
    (0..n)
        .map(|i| {
            let host = format!("127.0.0.{}", i % hosts + 1);
            let mut e = Entry::page(format!("http://{host}:8080/page/{i}"), (i % 7) as u32, None);
            e.seq = i as u64;
            (host, e)
        })
        .collect()
}

fn queues(c: &mut Criterion) {
    let n = 10_000;
    let items = entries(n, 8);
    let mut g = c.benchmark_group("host_queues");
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("push_pop_release_10k_8_hosts", |b| {
        b.iter_batched(
            || items.clone(),
            |items| {
                let policy = PolitenessPolicy {
                    per_host_concurrency: 8,
                    min_delay: Duration::ZERO,
                    ..Default::default()
                };
                let mut q = HostQueues::new(policy);
                let now = Instant::now();
                for (host, e) in items {
                    let id = q.host_id(&host);
                    q.push(id, e, now);
                }
                let mut dropped = Vec::new();
                let mut popped = 0;
                while let Pop::Ready(h, e) = q.pop_ready(now, |_, _| Gate::Go, &mut dropped) {
                    black_box(&e);
                    q.release(h, now, Feedback::Ok);
                    popped += 1;
                }
                assert_eq!(popped, n);
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

criterion_group!(benches, queues);
criterion_main!(benches);
