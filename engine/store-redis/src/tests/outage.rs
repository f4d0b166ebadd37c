//! Tests of the Redis store when Redis fails it: data gone under a running crawl, an outage met by a commit (the
//! spool and its replay), and spool files a crash left half written.

use super::*;

#[test]
fn a_crawl_whose_data_is_gone_is_an_error_not_a_restart() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::start();
    let s = short(&srv.url(), "lost", 8, 1000);
    let mut a = RedisFrontier::open(s.clone(), "a").unwrap();
    a.recover().unwrap();
    a.commit(Batch {
        discovered: vec![disc("http://h/1", "h", 0)],
        ..Batch::default()
    })
    .unwrap();
    let _: () = query(&srv, &redis::cmd("FLUSHALL"));
    let err = a
        .commit(Batch {
            discovered: vec![disc("http://h/2", "h", 0)],
            ..Batch::default()
        })
        .unwrap_err();
    assert!(matches!(err, FrontierError::Lost(_)), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with("redis lost the crawl's data: shard ")
            && text.ends_with("has no sentinel"),
        "{text}"
    );
    drop(a);

    // One shard's meta deleted under an existing crawl: opening refuses it.
    let s = short(&srv.url(), "lost2", 8, 1000);
    drop(RedisFrontier::open(s.clone(), "a").unwrap());
    let _: i64 = query(&srv, redis::cmd("DEL").arg(Keys::new("lost2").meta(3)));
    let err = RedisFrontier::open(s, "a").unwrap_err().to_string();
    assert_eq!(err, "redis lost the crawl's data: shard 3 has no sentinel");
}

#[test]
fn a_commit_that_meets_an_outage_is_spooled_and_replayed_at_the_next_start() {
    if !require_server() {
        return;
    }
    let mut srv = RedisServer::with(Options {
        password: None,
        aof: true,
        ..Options::default()
    });
    let spool = tempfile::tempdir().unwrap();
    let s = RedisSettings {
        max_outage_ms: 800,
        spool: Some(spool.path().to_path_buf()),
        ..short(&srv.url(), "spool", 4, 1000)
    };
    {
        let mut a = RedisFrontier::open(s.clone(), "a").unwrap();
        a.recover().unwrap();
        a.commit(Batch {
            discovered: (0..3)
                .map(|i| disc(&format!("http://h/{i}"), "h", 0))
                .collect(),
            ..Batch::default()
        })
        .unwrap();
        let q = a.next_urls(host_fp("h"), None, 10).unwrap();
        // Redis goes away: the commit waits, spooled, and gives up after the outage limit.
        srv.kill();
        let e = a
            .commit(Batch {
                finished: vec![finished(&q[0])],
                records: vec![(1, line("http://h/0"))],
                ..Batch::default()
            })
            .unwrap_err();
        assert!(e.to_string().contains("redis"), "{e}");
        let kept = std::fs::read_dir(spool.path()).unwrap().count();
        assert_eq!(kept, 1, "the commit waits in the spool");
        a.abandon();
    }
    srv.restart();
    // The next start replays it before recovering: the URL is done, its record comes back to be written.
    let mut a = RedisFrontier::open(s, "a").unwrap();
    assert_eq!(std::fs::read_dir(spool.path()).unwrap().count(), 0);
    let r = a.recover().unwrap();
    assert_eq!(r.outbox, vec![(1, line("http://h/0"))]);
    assert_eq!((r.counters.pending, r.counters.done), (2, 1));
}

/// A shard the lease thread gave up (a renewal refused, a shard handed over) while the shard poll fails (Redis down,
/// then loading its append-only file) is still reported lost by the first poll that goes through: the caller must
/// hear of it, or it keeps the shard's hosts waiting for a renewal that never comes.
#[test]
fn a_shard_lost_while_the_poll_fails_is_reported_by_the_next_poll() {
    if !require_server() {
        return;
    }
    let mut srv = RedisServer::with(Options {
        password: None,
        aof: true,
        ..Options::default()
    });
    let mut a = RedisFrontier::open(short(&srv.url(), "news", 4, 60_000), "a").unwrap();
    a.recover().unwrap();
    a.commit(Batch {
        discovered: vec![disc("http://h/1", "h", 0)],
        ..Batch::default()
    })
    .unwrap();
    assert_eq!(a.gate.owned(), vec![0, 1, 2, 3], "a holds every shard");
    assert!(a.poll_shards().unwrap().lost.is_empty());
    a.pause_leases();
    let shard = (host_fp("h") % 4) as u32;
    let token = a.gate.token(shard).unwrap();
    a.gate.drop_shard(shard, token);
    srv.kill();
    assert!(a.poll_shards().is_err(), "no poll while redis is down");
    srv.restart();
    let start = std::time::Instant::now();
    let ch = loop {
        match a.poll_shards() {
            Ok(ch) => break ch,
            Err(e) => assert!(start.elapsed() < Duration::from_secs(10), "{e}"),
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        ch.lost,
        vec![shard],
        "the loss is told once a poll goes through"
    );
    assert!(ch.gained.is_empty() && ch.hosts.is_empty(), "{ch:?}");
    assert!(a.poll_shards().unwrap().lost.is_empty(), "and told once");
}

#[test]
fn a_half_written_spool_file_is_removed_and_whole_commits_stay() {
    let dir = tempfile::tempdir().unwrap();
    let spool = super::spool::Spool {
        dir: dir.path().join("spool"),
    };
    let whole = spool.write(&[]).unwrap();
    let half = spool.dir.join("00000000000000000000000000000001.tmp");
    std::fs::write(&half, b"crawl-engine spool 1\n\x05").unwrap();
    spool.remove_partial().unwrap();
    assert_eq!(spool.pending().unwrap(), vec![whole]);
    assert!(!half.exists());
}

/// An outage that no failover ends: a process that holds no shard and commits nothing hears of it from its shard
/// polls, and a process that commits from its commit, both with the one error, once `max_outage_ms` has passed
/// since the first request of the process failed (not twice that, and not never).
#[test]
fn past_max_outage_polls_and_commits_end_with_the_same_error() {
    if !require_server() {
        return;
    }
    let mut srv = RedisServer::start();
    let max = 1_500;
    let mut s = short(&srv.url(), "gone", 4, 1000);
    s.max_outage_ms = max;
    let mut busy = RedisFrontier::open(s.clone(), "busy").unwrap();
    busy.recover().unwrap();
    let mut idle = RedisFrontier::open(s, "idle").unwrap();
    idle.recover().unwrap();
    idle.poll_shards().unwrap();
    let t0 = std::time::Instant::now();
    srv.kill();
    // The idle process only polls: failures until the limit, then the end.
    let err = loop {
        match idle.poll_shards() {
            Err(e @ FrontierError::Unreachable { .. }) => break e,
            Err(FrontierError::Redis { .. }) => {
                assert!(
                    t0.elapsed() < Duration::from_millis(3 * max),
                    "never gave up"
                );
            }
            other => panic!("{other:?}"),
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(max) && took < Duration::from_millis(max + 1_000),
        "gave up after {took:?}"
    );
    // The busy process's commit waits out the rest of the outage and ends with the same error.
    let commit = busy
        .commit(Batch {
            discovered: vec![disc("http://h/9", "h", 0)],
            ..Batch::default()
        })
        .unwrap_err();
    assert!(
        matches!(commit, FrontierError::Unreachable { .. }),
        "{commit:?}"
    );
    assert!(
        t0.elapsed() < Duration::from_millis(max + 2_500),
        "{:?}",
        t0.elapsed()
    );
    let text = |e: &FrontierError| {
        e.to_string()
            .split(" unreachable for ")
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(text(&err)[0], text(&commit)[0], "the same target");
    assert!(
        err.to_string()
            .ends_with("(max_outage_ms = 1500): the crawl stops"),
        "{err}"
    );
}
