//! What operators set, and forced re-fetches, with many processes on one server: a change by one seen by the
//! others, concurrent changes of one host, rules kept with their host's shard, what a rule costs in Redis memory
//! and an idle poll in requests; re-fetched URLs reaching their shard's owner, and pending ones found in long and
//! varied queues.

use super::*;
use crawl_core::control::{Change, HostMatch, OperatorState, Requester};
use crawl_core::frontier::{Discovered, JobKind};

fn hm(text: &str) -> HostMatch {
    HostMatch::parse(text).unwrap()
}

fn api() -> Requester {
    Requester::Api {
        peer: "127.0.0.1:5000".into(),
    }
}

fn pause(host: &str, at_ms: u64) -> Change {
    Change::Pause {
        host: Some(hm(host)),
        at_ms,
        by: api(),
    }
}

fn opened(s: &RedisSettings, pid: &str) -> RedisFrontier {
    let mut f = RedisFrontier::open(s.clone(), pid).unwrap();
    f.recover().unwrap();
    f
}

/// A change made by one process is in the other's next read; a read when nothing changed anywhere is one request.
#[test]
fn a_change_by_one_process_is_read_by_another_and_an_idle_read_is_one_request() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::start();
    let s = short(&srv.url(), "opseen", 16, 15_000);
    let mut a = opened(&s, "a");
    let mut b = opened(&s, "b");
    let (v0, empty) = b.operator_state().unwrap();
    assert!(empty.is_empty());
    let before = b.requests();
    assert_eq!(b.operator_state().unwrap().0, v0);
    let idle = b.requests() - before;
    assert_eq!(idle, 1, "an idle read is one request");

    assert!(a.apply_operator(&pause("h.example", 5)).unwrap());
    let before = b.requests();
    let (v1, state) = b.operator_state().unwrap();
    let after_change = b.requests() - before;
    assert_ne!(v1, v0);
    assert!(state.pause_of("h.example", 80).is_some(), "{state:?}");
    assert_eq!(
        after_change, 3,
        "the version, the crawl-wide hash, one pipeline of shards"
    );
    println!(
        "operator state read: {idle} request when nothing changed, {after_change} after a host's change"
    );

    assert!(
        a.apply_operator(&Change::Pause {
            host: None,
            at_ms: 6,
            by: api(),
        })
        .unwrap()
    );
    let (v2, state) = b.operator_state().unwrap();
    assert!(v2 > v1);
    assert_eq!(state.crawl.as_ref().map(|p| p.since_ms), Some(6));
    // b's change is a's to read, and the version both see is the same number.
    assert!(b.apply_operator(&pause("i.example:8080", 7)).unwrap());
    let (va, sa) = a.operator_state().unwrap();
    let (vb, sb) = b.operator_state().unwrap();
    assert_eq!((va, &sa), (vb, &sb));
    assert!(sa.pause_of("i.example", 8080).is_some());
}

/// Two processes changing one host's rule at the same time lose none of each other's changes: every change is
/// applied to the rule as the other left it.
#[test]
fn concurrent_changes_of_one_host_from_two_processes_lose_nothing() {
    if !require_server() {
        return;
    }
    const N: u64 = 100;
    let srv = RedisServer::start();
    let s = short(&srv.url(), "opcas", 8, 15_000);
    let mut a = opened(&s, "a");
    let mut b = opened(&s, "b");
    let (by_a, by_b) = std::thread::scope(|scope| {
        let ta = scope.spawn(|| {
            (1..=N)
                .filter(|&i| {
                    a.apply_operator(&Change::Politeness {
                        host: hm("h.example"),
                        delay_ms: Some(i * 10),
                        concurrency: Some(1),
                        until_ms: None,
                        at_ms: i,
                        by: api(),
                    })
                    .unwrap()
                })
                .count()
        });
        let tb = scope.spawn(|| {
            let mut changed = 0;
            for i in 0..N {
                changed += usize::from(b.apply_operator(&pause("h.example", i)).unwrap());
                changed += usize::from(
                    b.apply_operator(&Change::Resume {
                        host: Some(hm("h.example")),
                        at_ms: i,
                        by: api(),
                    })
                    .unwrap(),
                );
            }
            changed += usize::from(b.apply_operator(&pause("h.example", N)).unwrap());
            changed
        });
        (ta.join().unwrap(), tb.join().unwrap())
    });
    assert_eq!(by_a as u64, N, "each of a's changes changed the rule");
    assert_eq!(by_b as u64, 2 * N + 1, "and each of b's");
    let (_, state) = opened(&s, "c").operator_state().unwrap();
    let rule = &state.hosts[&hm("h.example")];
    assert_eq!(
        rule.politeness.as_ref().and_then(|p| p.delay_ms),
        Some(N * 10),
        "a's last change"
    );
    assert_eq!(
        rule.paused.as_ref().map(|p| p.since_ms),
        Some(N),
        "b's last"
    );
}

/// A host's rule is kept in its host's shard, with the host's queue, whichever process set it: after the shard's
/// owner dies, the next owner reads it there.
#[test]
fn a_host_rule_lives_with_its_shard_and_the_next_owner_reads_it() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::start();
    let s = short(&srv.url(), "opshard", 4, 1000);
    let shard = (host_fp("h.example") % 4) as u32;
    let mut a = opened(&s, "a");
    a.commit(Batch {
        discovered: vec![disc("http://h.example/1", "h.example", 0)],
        ..Batch::default()
    })
    .unwrap();
    assert!(a.apply_operator(&pause("h.example", 5)).unwrap());
    let keys = Keys::new("opshard");
    let json: Option<String> = query(
        &srv,
        redis::cmd("HGET").arg(keys.rules(shard)).arg("h.example"),
    );
    assert!(json.is_some_and(|j| j.contains("\"since_ms\":5")));
    let queue_len: u64 = query(
        &srv,
        redis::cmd("LLEN").arg(keys.queue(shard, host_fp("h.example"), 0)),
    );
    assert_eq!(queue_len, 1, "the host's queue is in the same shard");
    a.abandon();
    let mut b = opened(&s, "b");
    let gb = b.lease_table();
    assert!(
        wait_until(Duration::from_secs(5), || gb.token(shard).is_some()),
        "b never took shard {shard}"
    );
    let (_, state) = b.operator_state().unwrap();
    assert_eq!(
        state.pause_of("h.example", 443).map(|p| p.since_ms),
        Some(5)
    );
    // Resumed by the new owner: gone from the shard.
    assert!(
        b.apply_operator(&Change::Resume {
            host: Some(hm("h.example")),
            at_ms: 6,
            by: api(),
        })
        .unwrap()
    );
    let left: u64 = query(&srv, redis::cmd("EXISTS").arg(keys.rules(shard)));
    assert_eq!(left, 0);
    assert!(b.operator_state().unwrap().1.is_empty());
}

/// A writer that dies between writing a rule and announcing it leaves it unannounced: readers find it at their
/// next full read, at most [`crate::operator::FULL_READ_EVERY`] later.
#[test]
fn a_rule_never_announced_is_read_at_the_next_full_read() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::start();
    let s = short(&srv.url(), "opfull", 8, 15_000);
    let mut a = opened(&s, "a");
    let t0 = Instant::now();
    let (v0, _) = a.operator.state(&mut a.conn, &a.crawl, t0).unwrap();
    // The write alone, as a writer killed before its announcement leaves it.
    let mut rule = OperatorState::default();
    rule.apply(&pause("h.example", 5));
    let json = serde_json::to_string(&rule.hosts[&hm("h.example")]).unwrap();
    let shard = a.crawl.shard_of_host("h.example");
    let call = a
        .crawl
        .shard_call(&SCRIPTS.opset, shard)
        .arg("h.example")
        .arg("")
        .arg(json);
    a.conn.call(&call).unwrap();
    let soon = t0 + Duration::from_secs(1);
    let (v, state) = a.operator.state(&mut a.conn, &a.crawl, soon).unwrap();
    assert_eq!(
        (v, state.is_empty()),
        (v0, true),
        "not announced: not read yet"
    );
    let later = t0 + crate::operator::FULL_READ_EVERY;
    let (v, state) = a.operator.state(&mut a.conn, &a.crawl, later).unwrap();
    assert_eq!(state, rule);
    assert_ne!(v, v0, "the state changed, and so does the version");
}

/// What a host's rule costs in Redis memory (a field of its shard's `ops` hash), and the crawl-wide hash.
#[test]
fn what_a_host_rule_costs_in_redis_memory() {
    if !require_server() {
        return;
    }
    const RULES: usize = 2_000;
    let srv = RedisServer::start();
    let s = short(&srv.url(), "opmem", 256, 15_000);
    let mut f = opened(&s, "a");
    for i in 0..RULES {
        assert!(
            f.apply_operator(&pause(&format!("host{i}.example"), T0_MS))
                .unwrap()
        );
    }
    let keys = Keys::new("opmem");
    let usage = |key: String| -> u64 {
        query::<Option<u64>>(
            &srv,
            redis::cmd("MEMORY")
                .arg("USAGE")
                .arg(key)
                .arg("SAMPLES")
                .arg(0),
        )
        .unwrap_or(0)
    };
    let rules: u64 = (0..256).map(|sh| usage(keys.rules(sh))).sum();
    let crawl_wide = usage(keys.operator());
    let per_rule = rules as f64 / RULES as f64;
    let json = serde_json::to_string(&f.operator_state().unwrap().1.hosts[&hm("host0.example")])
        .unwrap()
        .len();
    let encoding: String = query(
        &srv,
        redis::cmd("OBJECT")
            .arg("ENCODING")
            .arg(keys.rules(f.crawl.shard_of_host("host0.example"))),
    );
    println!(
        "operator rules: {per_rule:.0} bytes of redis memory per host rule ({RULES} paused hosts on 256 shards, \
         {json} bytes of JSON each, shard hashes {encoding}); the crawl-wide hash {crawl_wide} bytes"
    );
    assert!(per_rule < 400.0, "{per_rule:.0} bytes per rule");
    assert!(crawl_wide < 16 * 1024, "{crawl_wide}");
}

/// 2026-12-01T00:00:00Z.
const T0_MS: u64 = 1_796_083_200_000;

/// A URL that another process queues again reaches the shard's owner at its next poll, whatever the depth its
/// window has reached in the host's queue.
#[test]
fn a_url_re_fetched_by_a_peer_reaches_the_owner_at_its_next_poll() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::start();
    let s = short(&srv.url(), "rfpeer", 8, 15_000);
    let mut a = opened(&s, "a");
    let h = host_fp("h");
    a.commit(Batch {
        discovered: vec![disc("http://h/top", "h", 0), disc("http://h/deep", "h", 3)],
        ..Batch::default()
    })
    .unwrap();
    let q = a.next_urls(h, None, 10).unwrap();
    a.commit(Batch {
        finished: vec![finished(&q[0])],
        records: vec![(1, line("http://h/top"))],
        ..Batch::default()
    })
    .unwrap();
    a.poll_shards().unwrap();
    assert!(a.poll_shards().unwrap().hosts.is_empty(), "nothing new");
    // b holds nothing, but may re-fetch anything
    let mut b = opened(&s, "b");
    assert!(b.lease_table().owned().is_empty());
    let got = b.refetch(&[disc("http://h/top", "h", 0)]).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].entry.depth, got[0].entry.host), (0, h));
    let ch = a.poll_shards().unwrap();
    let told: Vec<(&str, u64)> = ch
        .hosts
        .iter()
        .map(|x| (x.name.as_str(), x.pending))
        .collect();
    assert_eq!(told, vec![("h", 2)], "the owner reads the host again");
    assert_eq!(ch.counters.unwrap().pending, 2);
    // Read again from the start (as the owner does for a host told), the entry comes before the deeper one.
    assert_eq!(
        urls_of(&a.next_urls(h, None, 10).unwrap()),
        vec!["http://h/top", "http://h/deep"]
    );
    // The owner finishes it as any entry.
    let e = a.next_urls(h, None, 1).unwrap().remove(0);
    let c = a
        .commit(Batch {
            finished: vec![finished(&e)],
            records: vec![(2, line("http://h/top"))],
            ..Batch::default()
        })
        .unwrap();
    assert!(c.fenced.is_empty());
    assert_eq!(a.next_urls(h, None, 10).unwrap().len(), 1);
}

fn urls_of(v: &[Entry]) -> Vec<&str> {
    v.iter().map(|e| e.url.as_str()).collect()
}

/// Pending URLs are found wherever they wait in a host queue: past several scan pages, in deeper lists, kept whole
/// (another origin), with a parent, a redirect chain or retries; a done one among them is queued.
#[test]
fn pending_urls_are_found_in_long_and_varied_queues() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::start();
    let s = short(&srv.url(), "rfscan", 4, 15_000);
    let mut f = opened(&s, "a");
    let h = host_fp("h");
    let n = crate::refetch::SCAN_PAGE * 2 + 500;
    let parent = (
        UrlRef {
            key: url_fp("http://h/parent"),
            slot: 0,
        },
        "http://h/parent".to_owned(),
    );
    let mut discovered: Vec<Discovered> = (0..n)
        .map(|i| Discovered {
            parent: (i % 2 == 0).then(|| parent.clone()),
            ..disc(&format!("http://h/p{i}"), "h", (i % 3) as u32)
        })
        .collect();
    discovered.push(disc("https://h/other-origin", "h", 1));
    discovered.push(Discovered {
        redirect_chain: vec!["http://h/old".into()],
        ..disc("http://h/redirected", "h", 2)
    });
    discovered.push(disc("http://h/retried", "h", 2));
    let mut excluded = disc("http://h/excluded", "h", 4);
    excluded.kind = JobKind::OutOfScope;
    discovered.push(excluded);
    f.commit(Batch {
        discovered,
        ..Batch::default()
    })
    .unwrap();
    let q = f.next_urls(h, None, n + 10).unwrap();
    let mut retried = q
        .iter()
        .find(|e| e.url == "http://h/retried")
        .unwrap()
        .clone();
    retried.retries = 2;
    retried.attempt = 1;
    let done = q
        .iter()
        .find(|e| e.url == format!("http://h/p{}", n - 2))
        .unwrap();
    f.commit(Batch {
        updates: vec![retried],
        finished: vec![finished(done)],
        records: vec![(1, line(&done.url))],
        ..Batch::default()
    })
    .unwrap();
    let pending = [
        format!("http://h/p{}", n - 1),
        format!("http://h/p{}", n - 3),
        "http://h/p0".into(),
        "https://h/other-origin".into(),
        "http://h/redirected".into(),
        "http://h/retried".into(),
        "http://h/excluded".into(),
    ];
    let asked: Vec<Discovered> = pending.iter().map(|u| disc(u, "h", 0)).collect();
    let before = f.requests();
    assert!(f.refetch(&asked).unwrap().is_empty(), "all pending");
    println!(
        "re-fetch of {} pending URLs of a host with {} queued: {} requests",
        asked.len(),
        n + 4,
        f.requests() - before
    );
    let got = f.refetch(&[disc(&done.url, "h", 0)]).unwrap();
    assert_eq!(urls_of(&[got[0].entry.clone()]), vec![done.url.as_str()]);
    assert!(f.refetch(&[disc(&done.url, "h", 0)]).unwrap().is_empty());
}

/// The script that queues looks at what was queued after the limit the scan looked up to (by a promotion, another
/// re-fetch, a recrawl): such a URL, in its host's queue at any depth or in the records queue, is left.
#[test]
fn the_queueing_script_leaves_what_was_queued_after_the_scan() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::start();
    let mut f = opened(&short(&srv.url(), "rfsince", 1, 15_000), "a");
    let mut excluded = disc("http://h/x", "h", 1);
    excluded.kind = JobKind::OutOfScope;
    f.commit(Batch {
        discovered: vec![disc("http://h/a", "h", 2), excluded],
        ..Batch::default()
    })
    .unwrap();
    let queueing = |limit: u64| {
        let mut c = f
            .crawl
            .shard_call(&SCRIPTS.refetch, 0)
            .arg(1)
            .arg(0)
            .arg(limit);
        for url in ["http://h/a", "http://h/x"] {
            let fp = url_fp(url);
            c.push(member(fp));
            c.push(&fp.to_le_bytes()[..]);
            c.push(0);
            c.push(host_fp("h"));
            c.push("h");
            c.push(0);
            c.push(crate::commit::element_head(
                JobKind::Page,
                None,
                0,
                0,
                &[],
                None,
            ));
            c.push(url);
        }
        c
    };
    let (since, past) = (queueing(0), queueing(u64::from(u32::MAX)));
    let left = conn::reply::array(f.conn.call(&since).unwrap(), "refetch").unwrap();
    assert_eq!(
        left,
        vec![Value::Int(0), Value::Int(0)],
        "queued since the limit"
    );
    // Told (wrongly) that the scan looked past them, the same call queues them: the look above is what left them.
    let queued = conn::reply::array(f.conn.call(&past).unwrap(), "refetch").unwrap();
    assert!(
        queued.iter().all(|v| matches!(v, Value::Array(_))),
        "{queued:?}"
    );
}

/// With `replicas_ack`, a change or a re-fetch returns only once the replicas asked for hold it (WAIT, as commits
/// do): with the replica stopped, both end with the replicas' error.
#[test]
fn changes_and_refetches_wait_for_the_replicas_asked_for() {
    if !require_server() {
        return;
    }
    let master = RedisServer::on_tcp(Options::default());
    let replica = RedisServer::on_tcp(Options {
        replica_of: master.port(),
        ..Options::default()
    });
    let synced = wait_until(Duration::from_secs(10), || {
        let info: String = query(&replica, redis::cmd("INFO").arg("replication"));
        info.contains("master_link_status:up")
    });
    assert!(synced, "the replica never caught up");
    let s = RedisSettings {
        replicas_ack: Some(1),
        replicas_ack_timeout_ms: 300,
        ..short(&master.url(), "opwait", 4, 15_000)
    };
    let mut f = opened(&s, "a");
    f.commit(Batch {
        discovered: vec![disc("http://h/1", "h", 0), disc("http://h/2", "h", 0)],
        ..Batch::default()
    })
    .unwrap();
    let q = f.next_urls(host_fp("h"), None, 10).unwrap();
    f.commit(Batch {
        finished: q.iter().map(finished).collect(),
        records: vec![(1, line("http://h/1")), (2, line("http://h/2"))],
        ..Batch::default()
    })
    .unwrap();
    assert!(f.apply_operator(&pause("h.example", 1)).unwrap());
    assert_eq!(f.refetch(&[disc("http://h/1", "h", 0)]).unwrap().len(), 1);

    replica.signal("STOP");
    let err = f.apply_operator(&pause("i.example", 2)).unwrap_err();
    assert!(matches!(err, FrontierError::Replicas { .. }), "{err}");
    let err = f.refetch(&[disc("http://h/2", "h", 0)]).unwrap_err();
    assert!(matches!(err, FrontierError::Replicas { .. }), "{err}");
    replica.signal("CONT");
}

/// More URLs of one host than one script call carries: looked at, looked for and queued in turns, each once.
#[test]
fn many_urls_of_one_host_are_re_fetched_in_one_call() {
    if !require_server() {
        return;
    }
    const DONE: usize = 2_500;
    const PENDING: usize = 300;
    let srv = RedisServer::start();
    let mut f = opened(&short(&srv.url(), "rfmany", 2, 15_000), "a");
    let all: Vec<Discovered> = (0..DONE + PENDING)
        .map(|i| disc(&format!("http://h/{i}"), "h", 1))
        .collect();
    f.commit(Batch {
        discovered: all.clone(),
        ..Batch::default()
    })
    .unwrap();
    let q = f.next_urls(host_fp("h"), None, DONE).unwrap();
    f.commit(Batch {
        finished: q.iter().map(finished).collect(),
        ..Batch::default()
    })
    .unwrap();
    let mut asked = all.clone();
    asked.reverse();
    let got = f.refetch(&asked).unwrap();
    let want: Vec<String> = (0..DONE).rev().map(|i| format!("http://h/{i}")).collect();
    assert_eq!(
        got.iter().map(|g| g.entry.url.clone()).collect::<Vec<_>>(),
        want,
        "the done ones, in the order asked"
    );
    assert!(f.refetch(&all).unwrap().is_empty(), "all pending now");
    let c = f.commit(Batch::default()).unwrap();
    assert_eq!(
        (c.counters.pending, c.counters.done),
        ((DONE + PENDING) as u64, 0)
    );
}
