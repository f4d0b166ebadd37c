//! The crawl's processes as the control API reads them: every live process with the shards it holds (as its lease
//! table has them), in one request; a process that left is gone at once; one whose heartbeat lapsed while it
//! still holds leases is listed with them until they run out. A host any process added is known to every
//! process, also once its queue is empty.

use super::*;

/// Waits until `a` handed `b` its share (a gives up what it should not own once quiet).
fn split(a: &RedisFrontier, b: &RedisFrontier, shards: u32) -> bool {
    let (ga, gb) = (a.lease_table(), b.lease_table());
    wait_until(Duration::from_secs(10), || {
        for sh in ga.handoffs() {
            ga.quiet(sh);
        }
        ga.handoffs().is_empty()
            && !gb.owned().is_empty()
            && ga.owned().len() + gb.owned().len() == shards as usize
    })
}

#[test]
fn every_live_process_is_listed_with_the_shards_it_holds_in_one_request() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::start();
    let s = short(&srv.url(), "procs", 16, 1000);
    let mut a = RedisFrontier::open(s.clone(), "a").unwrap();
    let b = RedisFrontier::open(s.clone(), "b").unwrap();
    assert!(split(&a, &b, s.shards), "the shards were never split");

    let before = a.requests();
    let list = a.processes().unwrap();
    assert_eq!(a.requests() - before, 1, "one pipeline");
    let ids: Vec<&str> = list.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["a", "b"], "{list:?}");
    assert_eq!(list[0].shards_held, a.lease_table().owned(), "{list:?}");
    assert_eq!(list[1].shards_held, b.lease_table().owned(), "{list:?}");
    assert_eq!(
        list.iter().map(|p| p.shards_held.len()).sum::<usize>(),
        s.shards as usize
    );
    for p in &list {
        let left = p.heartbeat_expires_in_ms.expect("live");
        assert!(left > 0 && left <= s.lease_ms, "{p:?}");
        assert!(p.last_seen_ms(s.lease_ms).is_some_and(|ms| ms < s.lease_ms));
    }
    for sh in 0..s.shards {
        let holder = ProcessInfo::holder_of(&list, sh).map(|p| p.id.as_str());
        let want = if a.lease_table().owned().contains(&sh) {
            "a"
        } else {
            "b"
        };
        assert_eq!(holder, Some(want), "shard {sh}");
    }

    // b leaves (a clean stop gives its shards up and leaves the members): gone from the list at once.
    drop(b);
    let list = a.processes().unwrap();
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0].id, "a");
    assert!(
        wait_until(Duration::from_secs(5), || a
            .processes()
            .unwrap()
            .first()
            .is_some_and(|p| p.shards_held.len() == s.shards as usize)),
        "a never took every shard: {:?}",
        a.processes()
    );
}

#[test]
fn a_process_whose_heartbeat_lapsed_is_listed_while_its_leases_run() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::start();
    // Leases long enough that b's still run for seconds after it stops renewing them.
    let s = short(&srv.url(), "lapsed", 8, 3_000);
    let mut a = RedisFrontier::open(s.clone(), "a").unwrap();
    let b = RedisFrontier::open(s.clone(), "b").unwrap();
    assert!(split(&a, &b, s.shards), "the shards were never split");
    let held_by_b = b.lease_table().owned();
    // b hangs (no more heartbeats) and its membership is gone, as after a lapse; its leases still run.
    b.pause_leases();
    // A round already under way ends (then no more heartbeats).
    std::thread::sleep(Duration::from_millis(200));
    let removed: i64 = query(&srv, redis::cmd("ZREM").arg("{lapsed}:members").arg("b"));
    assert_eq!(removed, 1);
    let list = a.processes().unwrap();
    let b_now = list.iter().find(|p| p.id == "b").expect("b listed");
    assert_eq!(b_now.heartbeat_expires_in_ms, None, "{list:?}");
    assert_eq!(b_now.shards_held, held_by_b);
    assert_eq!(
        list.iter().map(|p| p.shards_held.len()).sum::<usize>(),
        s.shards as usize
    );
    b.abandon();
}

#[test]
fn a_host_added_by_one_process_is_known_to_the_others() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::start();
    let s = short(&srv.url(), "knows", 8, 15_000);
    let mut a = RedisFrontier::open(s.clone(), "a").unwrap();
    a.recover().unwrap();
    let mut b = RedisFrontier::open(s, "b").unwrap();
    b.recover().unwrap();
    assert!(!b.knows_host("h.example").unwrap());
    a.commit(Batch {
        discovered: vec![disc("http://h.example/1", "h.example", 0)],
        ..Batch::default()
    })
    .unwrap();
    assert!(b.knows_host("h.example").unwrap());
    assert!(!b.knows_host("other.example").unwrap());
    // Still known once its queue is empty.
    let q = a.next_urls(host_fp("h.example"), None, 10).unwrap();
    a.commit(Batch {
        finished: vec![finished(&q[0])],
        records: vec![(1, line("http://h.example/1"))],
        ..Batch::default()
    })
    .unwrap();
    assert_eq!(a.poll_shards().unwrap().counters.unwrap().pending, 0);
    assert!(b.knows_host("h.example").unwrap());
}
