//! Unit tests of the host queues: politeness clock, concurrency, windows, backoff.
use super::*;

fn policy(conc: u32, delay_ms: u64) -> PolitenessPolicy {
    PolitenessPolicy {
        per_host_concurrency: conc,
        min_delay: Duration::from_millis(delay_ms),
        ..PolitenessPolicy::default()
    }
}

fn entry(url: &str, depth: u32, seq: u64) -> Entry {
    let mut e = Entry::page(url, depth, None);
    e.seq = seq;
    e
}

fn go(_: HostId, _: &Entry) -> Gate {
    Gate::Go
}

fn pop(q: &mut HostQueues, now: Instant) -> Pop {
    q.pop_ready(now, go, &mut Vec::new())
}

#[test]
fn depth_first_then_discovery_order() {
    let t0 = Instant::now();
    let mut q = HostQueues::new(policy(1, 0));
    let h = q.host_id("a");
    q.push(h, entry("a/deep", 3, 1), t0);
    q.push(h, entry("a/second", 1, 3), t0);
    q.push(h, entry("a/first", 1, 2), t0);
    q.push(h, entry("a/root", 0, 9), t0);
    let mut order = Vec::new();
    for _ in 0..4 {
        match pop(&mut q, t0) {
            Pop::Ready(h, e) => {
                order.push(e.url);
                q.release(h, t0, Feedback::Ok);
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(order, ["a/root", "a/first", "a/second", "a/deep"]);
    assert_eq!(pop(&mut q, t0), Pop::Idle);
}

#[test]
fn min_delay_spaces_starts_and_concurrency_holds() {
    let t0 = Instant::now();
    let mut q = HostQueues::new(policy(1, 1000));
    let h = q.host_id("a");
    for i in 0..3 {
        q.push(h, entry(&format!("a/{i}"), 0, i), t0);
    }
    let Pop::Ready(_, _) = pop(&mut q, t0) else {
        panic!()
    };
    // concurrency 1: nothing else while the first is in flight, even much later
    assert_eq!(pop(&mut q, t0 + Duration::from_secs(5)), Pop::Idle);
    let t1 = t0 + Duration::from_millis(200);
    q.release(h, t1, Feedback::Ok);
    // single-slot hosts wait a full delay after the end of the previous request
    assert_eq!(
        pop(&mut q, t1),
        Pop::WaitUntil(t1 + Duration::from_millis(1000))
    );
    assert!(matches!(
        pop(&mut q, t1 + Duration::from_millis(1000)),
        Pop::Ready(..)
    ));
}

#[test]
fn hosts_are_independent_and_concurrency_above_one() {
    let t0 = Instant::now();
    let mut q = HostQueues::new(policy(2, 0));
    let a = q.host_id("a");
    let b = q.host_id("b");
    for i in 0..5 {
        q.push(a, entry(&format!("a/{i}"), 0, i), t0);
        q.push(b, entry(&format!("b/{i}"), 0, i), t0);
    }
    let mut started = Vec::new();
    while let Pop::Ready(h, _) = pop(&mut q, t0) {
        started.push(h);
    }
    assert_eq!(started.iter().filter(|h| **h == a).count(), 2);
    assert_eq!(started.iter().filter(|h| **h == b).count(), 2);
    assert_eq!(q.in_flight(), 4);
    q.release(a, t0, Feedback::Ok);
    assert!(matches!(pop(&mut q, t0), Pop::Ready(h, _) if h == a));
}

#[test]
fn crawl_delay_is_honoured_up_to_the_cap() {
    let _t0 = Instant::now();
    let mut p = policy(4, 100);
    p.max_crawl_delay = Duration::from_secs(2);
    let mut q = HostQueues::new(p);
    let h = q.host_id("a");
    q.set_crawl_delay(h, Some(Duration::from_secs(10)));
    assert_eq!(q.delay_for(h), Duration::from_secs(2));
    q.set_crawl_delay(h, Some(Duration::from_millis(50)));
    assert_eq!(
        q.delay_for(h),
        Duration::from_millis(100),
        "never below min_delay"
    );
    let mut p = q.policy().clone();
    p.honour_crawl_delay = false;
    q.set_policy(p);
    q.set_crawl_delay(h, Some(Duration::from_secs(1)));
    assert_eq!(q.delay_for(h), Duration::from_millis(100));
}

#[test]
fn throttle_pauses_with_retry_after_or_exponential_backoff() {
    let t0 = Instant::now();
    let mut p = policy(1, 0);
    p.backoff_base = Duration::from_secs(1);
    p.backoff_max = Duration::from_secs(3);
    let mut q = HostQueues::new(p);
    let h = q.host_id("a");
    for i in 0..4 {
        q.push(h, entry(&format!("a/{i}"), 0, i), t0);
    }
    let Pop::Ready(..) = pop(&mut q, t0) else {
        panic!()
    };
    q.release(
        h,
        t0,
        Feedback::Throttled {
            retry_after: Some(Duration::from_millis(1500)),
        },
    );
    assert_eq!(
        pop(&mut q, t0),
        Pop::WaitUntil(t0 + Duration::from_millis(1500))
    );
    let t1 = t0 + Duration::from_millis(1500);
    let Pop::Ready(..) = pop(&mut q, t1) else {
        panic!()
    };
    q.release(h, t1, Feedback::Throttled { retry_after: None });
    // second throttle without header: base * 2^1 = 2 s
    assert_eq!(pop(&mut q, t1), Pop::WaitUntil(t1 + Duration::from_secs(2)));
    let t2 = t1 + Duration::from_secs(2);
    let Pop::Ready(..) = pop(&mut q, t2) else {
        panic!()
    };
    q.release(
        h,
        t2,
        Feedback::Throttled {
            retry_after: Some(Duration::from_secs(3600)),
        },
    );
    assert_eq!(
        pop(&mut q, t2),
        Pop::WaitUntil(t2 + Duration::from_secs(3)),
        "capped by backoff_max"
    );
}

#[test]
fn gate_drop_and_block_and_urgent_jobs() {
    let t0 = Instant::now();
    let mut q = HostQueues::new(policy(1, 0));
    let h = q.host_id("a");
    q.push(h, entry("a/private/1", 0, 1), t0);
    q.push(h, entry("a/page", 0, 2), t0);
    let mut dropped = Vec::new();
    let r = q.pop_ready(
        t0,
        |_, e| {
            if e.url.contains("private") {
                Gate::Drop
            } else {
                Gate::Go
            }
        },
        &mut dropped,
    );
    assert!(matches!(r, Pop::Ready(_, ref e) if e.url == "a/page"));
    assert_eq!(dropped.len(), 1);
    q.release(h, t0, Feedback::Ok);
    q.push(h, entry("a/x", 0, 3), t0);
    assert_eq!(q.pop_ready(t0, |_, _| Gate::Block, &mut dropped), Pop::Idle);
    assert!(q.is_blocked(h));
    // an urgent job (robots.txt) still goes while the host is blocked
    assert!(q.push_urgent(h, entry("a/robots.txt", 0, 0), t0).is_none());
    assert!(matches!(pop(&mut q, t0), Pop::Ready(_, ref e) if e.url == "a/robots.txt"));
    q.release(h, t0, Feedback::Ok);
    assert_eq!(pop(&mut q, t0), Pop::Idle);
    q.unblock(h, t0);
    assert!(matches!(pop(&mut q, t0), Pop::Ready(_, ref e) if e.url == "a/x"));
    assert_eq!(q.queued(), 0);
}

#[test]
fn not_started_gives_the_slot_back_without_delay() {
    let t0 = Instant::now();
    let mut q = HostQueues::new(policy(1, 5000));
    let h = q.host_id("a");
    q.push(h, entry("a/1", 0, 1), t0);
    q.push(h, entry("a/2", 0, 2), t0);
    let Pop::Ready(..) = pop(&mut q, t0) else {
        panic!()
    };
    q.release(h, t0, Feedback::NotStarted);
    assert!(matches!(pop(&mut q, t0), Pop::Ready(..)));
}

#[test]
fn a_detached_host_keeps_nothing_and_reads_nothing_until_it_is_resumed() {
    let stored = |n: u64| {
        let mut e = entry(&format!("a/{n}"), 0, n);
        e.id = UrlRef { key: n, slot: 0 };
        e
    };
    let t0 = Instant::now();
    let mut q = HostQueues::new(policy(1, 0)).with_window(4);
    let h = q.resume_host("a", t0);
    assert_eq!(pop(&mut q, t0), Pop::Idle, "its queue is read first");
    let [(_, _, asked)] = q.take_refills()[..] else {
        panic!("one refill")
    };
    q.fill(h, (1..=asked.max as u64).map(stored).collect(), asked, t0);
    let Pop::Ready(_, first) = pop(&mut q, t0) else {
        panic!("a/1 is ready")
    };
    q.release(h, t0, Feedback::Ok);
    q.settle(h, first.id);
    let Pop::Ready(_, leased) = pop(&mut q, t0) else {
        panic!("a/2 is ready")
    };
    let [(_, _, asked)] = q.take_refills()[..] else {
        panic!("the window runs low and asks for more")
    };
    assert!(q.store_has_more());

    // The host's shard goes to another process while a/2 is out and a refill is out.
    assert!(q.detach(h).is_empty());
    assert_eq!(q.queued(), 0);
    assert!(!q.store_has_more(), "nothing is left to read here");
    q.fill(h, vec![stored(9)], asked, t0);
    q.offer(h, stored(10), t0);
    q.release(h, t0, Feedback::NotStarted);
    q.push(h, leased, t0);
    assert!(q.push_urgent(h, entry("a/robots.txt", 0, 0), t0).is_some());
    assert_eq!(
        q.queued(),
        0,
        "the late answer, the offer and the page going back are not kept"
    );
    q.unblock(h, t0);
    assert_eq!(pop(&mut q, t0), Pop::Idle);
    assert!(q.take_refills().is_empty() && !q.store_has_more());

    // The shard comes back: the queue is read again from its start, a/2 included (it is no longer out here).
    q.resume_host("a", t0);
    q.unblock(h, t0);
    assert_eq!(pop(&mut q, t0), Pop::Idle);
    let [(_, _, asked)] = q.take_refills()[..] else {
        panic!("read again")
    };
    assert_eq!(asked.after, None, "from the start");
    q.fill(h, (2..=5).map(stored).collect(), asked, t0);
    assert!(matches!(pop(&mut q, t0), Pop::Ready(_, ref e) if e.url == "a/2"));
    assert!(q.push_urgent(h, entry("a/robots.txt", 0, 0), t0).is_none());
}

#[test]
fn an_operator_pauses_a_host_and_sets_its_politeness() {
    let t0 = Instant::now();
    let mut q = HostQueues::new(policy(1, 1000));
    let a = q.host_id("a");
    let b = q.host_id("b");
    for i in 0..4 {
        q.push(a, entry(&format!("a/{i}"), 0, i), t0);
        q.push(b, entry(&format!("b/{i}"), 0, i), t0);
    }
    // Paused: nothing of a starts, urgent jobs included; b goes on.
    let paused = HostOverride {
        paused: true,
        ..HostOverride::default()
    };
    q.set_override("a", Some(paused), t0);
    assert!(q.push_urgent(a, entry("a/robots.txt", 0, 99), t0).is_none());
    let Pop::Ready(h, _) = pop(&mut q, t0) else {
        panic!()
    };
    assert_eq!(h, b);
    q.release(b, t0, Feedback::Ok);
    assert!(
        matches!(pop(&mut q, t0), Pop::WaitUntil(_)),
        "only b's delay"
    );
    // Resumed with two at a time and no delay.
    let fast = HostOverride {
        paused: false,
        delay: Some(Duration::ZERO),
        concurrency: Some(2),
    };
    q.set_override("a", Some(fast), t0);
    assert_eq!(q.override_of(a), fast);
    let mut started = Vec::new();
    while let Pop::Ready(h, e) = pop(&mut q, t0) {
        if h == a {
            started.push(e.url);
        }
    }
    assert_eq!(started, ["a/robots.txt", "a/0"], "two at a time, no delay");
    // Cleared: the policy again (one at a time, a second apart).
    q.set_override("a", None, t0);
    assert_eq!(q.override_of(a), HostOverride::default());
    assert_eq!(q.overrides().count(), 0);
    q.release(a, t0, Feedback::Ok);
    q.release(a, t0, Feedback::Ok);
    assert_eq!(q.delay_for(a), Duration::from_millis(1000));
}

#[test]
fn an_override_applies_to_a_host_registered_later() {
    let t0 = Instant::now();
    let mut q = HostQueues::new(policy(1, 0));
    q.set_override(
        "late",
        Some(HostOverride {
            delay: Some(Duration::from_secs(7)),
            ..HostOverride::default()
        }),
        t0,
    );
    let h = q.host_id("late");
    assert_eq!(q.delay_for(h), Duration::from_secs(7));
    assert_eq!(q.overrides().map(|(n, _)| n).collect::<Vec<_>>(), ["late"]);
}

#[test]
fn taking_a_hosts_pages_empties_its_window_and_asks_for_the_rest() {
    let t0 = Instant::now();
    let mut q = HostQueues::new(policy(1, 0)).with_window(2);
    // A host with URLs in the store: its window reads them two at a time.
    let h = q.resume_host("a", t0);
    assert_eq!(q.find("a"), Some(h));
    assert_eq!(q.find("b"), None);
    let (taken, more) = q.take_pages(h);
    assert!(
        taken.is_empty() && more,
        "nothing read yet: the store has them"
    );
    let refills = q.take_refills();
    assert_eq!(refills.len(), 1);
    let (_, _, asked) = refills[0];
    assert_eq!(
        asked.max, 4,
        "the window: four times the concurrency at least"
    );
    let four = (0..4).map(|i| entry(&format!("a/{i}"), 0, i + 1)).collect();
    q.fill(h, four, asked, t0);
    q.block(h);
    let (taken, more) = q.take_pages(h);
    assert_eq!(
        taken.iter().map(|e| e.url.as_str()).collect::<Vec<_>>(),
        ["a/0", "a/1", "a/2", "a/3"]
    );
    assert!(more, "a full answer: the store may hold more");
    let (_, _, asked) = q.take_refills()[0];
    q.fill(h, Vec::new(), asked, t0);
    let (taken, more) = q.take_pages(h);
    assert!(taken.is_empty() && !more, "all read");
    assert_eq!(q.queued(), 0);
    let snap = q.snapshot(h, t0).unwrap();
    assert_eq!((snap.name, snap.in_window, snap.in_flight), ("a", 0, 0));
}
