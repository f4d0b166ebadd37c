//! Tests of the Redis store against real `redis-server`s started by each test (`crawl_test_kit::redis`).

use super::*;
use crawl_core::frontier::contract::{self, disc};
use crawl_core::frontier::{Finished, SharedRobots, host_fp};
use crawl_core::output::JsonlCheckpoint;
use std::cell::RefCell;
use std::path::Path;
use std::time::Duration;

use crawl_test_kit::redis::{self as redis_tools, Options, RedisCluster, RedisServer};

mod layout;
mod operator;
mod outage;
mod processes;
mod schedule;

thread_local! {
    /// The server of the test running on this thread (libtest runs each test on a thread of its own).
    static SERVER: RefCell<Option<RedisServer>> = const { RefCell::new(None) };
}

fn thread_server_url() -> String {
    SERVER.with(|s| {
        let mut s = s.borrow_mut();
        if s.is_none() {
            *s = Some(RedisServer::start());
        }
        s.as_ref().map(RedisServer::url).unwrap()
    })
}

fn settings(url: &str, crawl: &str) -> RedisSettings {
    RedisSettings {
        urls: vec![url.to_owned()],
        crawl: crawl.to_owned(),
        ..RedisSettings::default()
    }
}

/// One crawl namespace per directory: the same directory opens the same crawl again.
fn crawl_of(dir: &Path) -> String {
    format!("c{:x}", url_fp(&dir.display().to_string()))
}

fn open_contract(dir: &Path) -> Box<dyn FrontierStore> {
    let url = thread_server_url();
    Box::new(RedisFrontier::open(settings(&url, &crawl_of(dir)), "p1").unwrap())
}

macro_rules! redis_contract {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                if !require_server() {
                    return;
                }
                contract::$name(&open_contract);
            }
        )*
    };
}

redis_contract!(
    dedup_is_exact_within_and_across_batches_and_reopen,
    next_urls_in_queue_order_per_host,
    excluded_links_go_to_the_records_queue,
    finish_update_outbox_and_counters_survive_reopen,
    embeds_are_queued_on_their_host_and_keep_their_kind,
    an_empty_store_resumes_empty,
    rescheduled_urls_come_back_when_due_with_their_prior,
    a_reschedule_without_its_finish_is_ignored,
    sitemap_hints_bring_scheduled_urls_forward,
    operator_changes_read_back_and_survive_reopen,
    refetch_queues_done_and_scheduled_urls_again,
);

fn wait_until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if f() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn line(url: &str) -> Vec<u8> {
    format!("{{\"url\":\"{url}\"}}\n").into_bytes()
}

fn finished(e: &Entry) -> Finished {
    Finished {
        id: e.id,
        host: e.host,
        key: e.key(),
        fetched_page: true,
    }
}

fn short(url: &str, crawl: &str, shards: u32, lease_ms: u64) -> RedisSettings {
    RedisSettings {
        shards,
        lease_ms,
        ..settings(url, crawl)
    }
}

/// Two processes split the shards by rendezvous (the first hands the second's share over once quiet); when one
/// dies without giving anything up, the other holds every shard within lease + 1 s.
fn ownership_moves_to_the_survivor(s: &RedisSettings) {
    let a = RedisFrontier::open(s.clone(), "a").unwrap();
    let b = RedisFrontier::open(s.clone(), "b").unwrap();
    let (ga, gb) = (a.lease_table(), b.lease_table());
    let members = vec!["a".to_owned(), "b".to_owned()];
    let want_b: Vec<u32> = (0..s.shards)
        .filter(|&sh| shards::rendezvous(&members, sh) == Some("b"))
        .collect();
    assert!(!want_b.is_empty() && want_b.len() < s.shards as usize);
    let split = wait_until(Duration::from_secs(10), || {
        for sh in ga.handoffs() {
            ga.quiet(sh);
        }
        gb.owned() == want_b && ga.owned().len() + want_b.len() == s.shards as usize
    });
    assert!(split, "a {:?} b {:?}", ga.owned(), gb.owned());
    for sh in &want_b {
        assert!(gb.may_start_shard(*sh));
        assert!(!ga.may_start_shard(*sh));
    }
    a.abandon();
    let t = Instant::now();
    let all = wait_until(Duration::from_secs(5), || {
        gb.owned().len() == s.shards as usize
    });
    assert!(all, "b holds {:?}", gb.owned());
    assert!(
        t.elapsed() <= Duration::from_millis(s.lease_ms + 1000),
        "took {:?}",
        t.elapsed()
    );
}

#[test]
fn two_stores_split_the_shards_and_a_dead_one_is_taken_over() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::start();
    ownership_moves_to_the_survivor(&short(&srv.url(), "own", 32, 1000));
}

#[test]
fn a_process_whose_lease_was_taken_over_is_fenced() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::start();
    let s = short(&srv.url(), "fence", 4, 1000);
    let mut a = RedisFrontier::open(s.clone(), "a").unwrap();
    a.recover().unwrap();
    a.commit(Batch {
        discovered: vec![disc("http://h/1", "h", 0), disc("http://h/2", "h", 0)],
        ..Batch::default()
    })
    .unwrap();
    let q = a.next_urls(host_fp("h"), None, 10).unwrap();
    let shard = (host_fp("h") % 4) as u32;
    let ga = a.lease_table();
    assert!(ga.may_start(host_fp("h")));
    a.pause_leases();
    let mut b = RedisFrontier::open(s.clone(), "b").unwrap();
    b.recover().unwrap();
    let gb = b.lease_table();
    assert!(
        wait_until(Duration::from_secs(5), || gb.token(shard).is_some()),
        "b never took shard {shard}"
    );
    assert!(!ga.may_start(host_fp("h")), "a's local deadline has passed");
    assert!(
        !ga.may_send(host_fp("h")),
        "nor may a request started before go out"
    );
    let c = a
        .commit(Batch {
            finished: vec![finished(&q[0])],
            records: vec![(1, line("http://h/1"))],
            ..Batch::default()
        })
        .unwrap();
    assert_eq!(c.fenced, vec![q[0].id]);
    assert_eq!(c.fenced_records, vec![1]);
    assert_eq!(c.fenced_shards, vec![shard]);
    assert_eq!(ga.token(shard), None, "a dropped the shard");
    let pending = b.next_urls(host_fp("h"), None, 10).unwrap();
    assert_eq!(pending, q, "nothing of a's commit was applied");
    let ch = b.poll_shards().unwrap();
    let counters = ch.counters.unwrap();
    assert_eq!((counters.pending, counters.done), (2, 0));
    assert_eq!(ch.unacked, 0);
    // b finishes it: applied
    let c = b
        .commit(Batch {
            finished: vec![finished(&pending[0])],
            records: vec![(1, line("http://h/1"))],
            ..Batch::default()
        })
        .unwrap();
    assert!(c.fenced.is_empty());
    assert_eq!(c.counters.done, 1);
}

/// A shard whose lease was taken over and which this process took back before its next poll (Redis was down past
/// the leases, say) is told lost and gained by that poll: the caller must drop what it held of the shard (a commit
/// sent under the old lease was refused) and read it again, or those URLs stay pending outside its windows.
#[test]
fn a_shard_taken_over_and_taken_back_between_two_polls_is_told_lost_and_gained() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::start();
    let s = short(&srv.url(), "back", 4, 1000);
    let mut a = RedisFrontier::open(s.clone(), "a").unwrap();
    a.recover().unwrap();
    a.commit(Batch {
        discovered: vec![disc("http://h/1", "h", 0)],
        ..Batch::default()
    })
    .unwrap();
    let shard = (host_fp("h") % 4) as u32;
    let ga = a.lease_table();
    let first = ga.token(shard).expect("a holds every shard");
    assert!(a.poll_shards().unwrap().lost.is_empty());
    // a stops renewing; b takes the shard over, then stops (it leaves); a wakes up and takes the shard back.
    a.pause_leases();
    let b = RedisFrontier::open(s, "b").unwrap();
    let gb = b.lease_table();
    assert!(
        wait_until(Duration::from_secs(5), || gb.token(shard).is_some()),
        "b never took shard {shard}"
    );
    drop(b);
    a.resume_leases();
    assert!(
        wait_until(Duration::from_secs(5), || ga
            .token(shard)
            .is_some_and(|t| t != first)),
        "a never took shard {shard} back"
    );
    let ch = a.poll_shards().unwrap();
    assert!(ch.lost.contains(&shard), "{ch:?}");
    let back: Vec<&HostInfo> = ch
        .gained
        .iter()
        .filter(|(s, _)| *s == shard)
        .flat_map(|(_, hosts)| hosts)
        .collect();
    assert_eq!(back.len(), 1, "{ch:?}");
    assert_eq!((back[0].name.as_str(), back[0].pending), ("h", 1));
    let ch = a.poll_shards().unwrap();
    assert!(ch.lost.is_empty() && ch.gained.is_empty(), "told once");
}

/// True when `redis-server` is installed (a note, or a failure under `CI=true`, when it is not).
fn require_server() -> bool {
    redis_tools::require("redis store", false)
}

/// A plain command on a test's server (setup and checks), through the client the store uses.
fn query<T: redis::FromRedisValue>(srv: &RedisServer, cmd: &redis::Cmd) -> T {
    let client = redis::Client::open(srv.url().as_str()).unwrap();
    let mut c = client.get_connection().unwrap();
    cmd.query(&mut c).unwrap()
}

fn used_memory(srv: &RedisServer) -> u64 {
    let info: String = query(srv, redis::cmd("INFO").arg("memory"));
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

#[test]
fn dedup_takes_at_most_16_bytes_per_url_and_buckets_stay_intsets() {
    if !require_server() {
        return;
    }
    const URLS: u64 = 200_000;
    let srv = RedisServer::start();
    let s = settings(&srv.url(), "mem");
    let mut f = RedisFrontier::open(s.clone(), "m").unwrap();
    f.recover().unwrap();
    let mut by_shard: Vec<Vec<Fp>> = vec![Vec::new(); s.shards as usize];
    // As in the store: the shard comes from the host, the member from the URL.
    for i in 0..URLS {
        let host = format!("host{}.example", i % 5000);
        let fp = url_fp(&format!("http://{host}/page/{i}"));
        by_shard[(host_fp(&host) % u64::from(s.shards)) as usize].push(fp);
    }
    // load the script before measuring
    f.mark_seen(0, &[]).unwrap();
    let before = used_memory(&srv);
    let mut new = 0;
    for (shard, fps) in by_shard.iter().enumerate() {
        new += f.mark_seen(shard as u32, fps).unwrap();
    }
    let after = used_memory(&srv);
    assert_eq!(new, URLS);
    let per_url = (after - before) as f64 / URLS as f64;
    println!("dedup: {per_url:.2} bytes of redis memory per seen url ({URLS} urls, 256 shards)");
    // every URL is seen exactly once, and marking again adds nothing
    assert_eq!(f.mark_seen(7, &by_shard[7]).unwrap(), 0);
    let mut members = 0u64;
    for shard in 0..s.shards {
        let (lv, sp): (Option<u32>, Option<u64>) = query(
            &srv,
            redis::cmd("HMGET")
                .arg(f.crawl.keys.meta(shard))
                .arg("lv")
                .arg("sp"),
        );
        let n = seen::buckets(lv.unwrap_or(0), sp.unwrap_or(0));
        for b in 0..n {
            let key = f.crawl.keys.bucket(shard, b);
            let enc: Option<String> = query(&srv, redis::cmd("OBJECT").arg("ENCODING").arg(&key));
            if let Some(enc) = enc {
                assert_eq!(enc, "intset", "{key}");
                let card: u64 = query(&srv, redis::cmd("SCARD").arg(&key));
                members += card;
            }
        }
    }
    assert_eq!(members, URLS);
    assert!(per_url <= 16.0, "{per_url} bytes per url");
}

#[test]
fn records_come_back_after_a_crash_and_are_taken_over_after_two_leases() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::start();
    let s = short(&srv.url(), "rec", 8, 1000);
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
        a.commit(Batch {
            finished: vec![finished(&q[0]), finished(&q[1])],
            records: vec![(1, line("http://h/0")), (2, line("http://h/1"))],
            ..Batch::default()
        })
        .unwrap();
        a.abandon();
    }
    {
        let mut a = RedisFrontier::open(s.clone(), "a").unwrap();
        let r = a.recover().unwrap();
        assert_eq!(
            r.outbox,
            vec![(1, line("http://h/0")), (2, line("http://h/1"))]
        );
        assert_eq!(r.next_record, 3);
        assert_eq!(r.checkpoint, None);
        assert_eq!(r.counters.pending, 1);
        a.abandon();
    }
    let mut b = RedisFrontier::open(s.clone(), "b").unwrap();
    b.recover().unwrap();
    let mut taken = Vec::new();
    let mut announced = 0;
    let got = wait_until(Duration::from_secs(8), || {
        // The poll that takes records over says how many wait for the next commit (so that an idle process
        // commits), and the commit hands them out, after its own records.
        announced += b.poll_shards().unwrap().claimed;
        taken.extend(b.commit(Batch::default()).unwrap().extra);
        taken.len() >= 2
    });
    assert!(got, "taken over: {taken:?}");
    assert_eq!(announced, 2);
    assert_eq!(b.poll_shards().unwrap().claimed, 0, "handed out");
    assert_eq!(taken, vec![line("http://h/0"), line("http://h/1")]);
    let ch = b.poll_shards().unwrap();
    assert_eq!(ch.unacked, 2);
    // b's file had no lines: the two are its lines 1 and 2.
    let c = b
        .commit(Batch {
            written: Some(JsonlCheckpoint {
                lines: 2,
                bytes: 100,
            }),
            ..Batch::default()
        })
        .unwrap();
    assert_eq!(c.trimmed, 2);
    assert_eq!(b.poll_shards().unwrap().unacked, 0);
}

#[test]
fn a_password_protected_server_works_and_the_password_never_shows() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::with(Options {
        password: Some("s3cr3t-pw".into()),
        aof: false,
        ..Options::default()
    });
    assert!(srv.url().contains("s3cr3t-pw"));
    let s = short(&srv.url(), "pw", 8, 1000);
    let debug = format!("{s:?}");
    assert!(!debug.contains("s3cr3t-pw"), "{debug}");
    let mut f = RedisFrontier::open(s.clone(), "a").unwrap();
    f.recover().unwrap();
    f.commit(Batch {
        discovered: vec![disc("http://h/1", "h", 0)],
        ..Batch::default()
    })
    .unwrap();
    assert!(f.is_known("http://h/1").unwrap());
    assert!(!format!("{f:?}").contains("s3cr3t-pw"));
    drop(f);

    let wrong = short(&srv.url().replace("s3cr3t-pw", "wr0ng-pw"), "pw", 8, 1000);
    let err = RedisFrontier::open(wrong, "a").unwrap_err();
    let text = format!("{err} {err:?}");
    assert!(
        !text.contains("wr0ng-pw") && !text.contains("s3cr3t-pw"),
        "{text}"
    );
    assert!(text.contains("***"), "{text}");
    let none = short(&srv.url().replace("?pass=s3cr3t-pw", ""), "pw", 8, 1000);
    let err = RedisFrontier::open(none, "a").unwrap_err().to_string();
    assert!(!err.contains("s3cr3t-pw"), "{err}");
}

#[test]
fn a_three_master_cluster_passes_the_contract_and_moves_ownership() {
    if !redis_tools::require("redis store on a cluster", true) {
        return;
    }
    let cluster = RedisCluster::start(3);
    let base = RedisSettings {
        urls: cluster.urls(),
        cluster: true,
        shards: 16,
        lease_ms: 1000,
        ..RedisSettings::default()
    };
    let contract_base = base.clone();
    let open = move |dir: &Path| -> Box<dyn FrontierStore> {
        let s = RedisSettings {
            crawl: crawl_of(dir),
            lease_ms: 15_000,
            ..contract_base.clone()
        };
        Box::new(RedisFrontier::open(s, "p1").unwrap())
    };
    contract::dedup_is_exact_within_and_across_batches_and_reopen(&open);
    contract::next_urls_in_queue_order_per_host(&open);
    contract::excluded_links_go_to_the_records_queue(&open);
    contract::finish_update_outbox_and_counters_survive_reopen(&open);
    contract::an_empty_store_resumes_empty(&open);
    contract::rescheduled_urls_come_back_when_due_with_their_prior(&open);
    contract::a_reschedule_without_its_finish_is_ignored(&open);
    contract::sitemap_hints_bring_scheduled_urls_forward(&open);
    contract::operator_changes_read_back_and_survive_reopen(&open);
    contract::refetch_queues_done_and_scheduled_urls_again(&open);
    let s = RedisSettings {
        crawl: "own".into(),
        ..base.clone()
    };
    ownership_moves_to_the_survivor(&s);
    // the process list reads the crawl-wide slot and every shard's
    let mut p = RedisFrontier::open(
        RedisSettings {
            crawl: "procs".into(),
            ..base.clone()
        },
        "p",
    )
    .unwrap();
    let list = p.processes().unwrap();
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0].shards_held, (0..16).collect::<Vec<u32>>());
    // the shards' keys really are spread over the masters
    let spread = cluster
        .nodes
        .iter()
        .filter(|n| query::<i64>(n, &redis::cmd("DBSIZE")) > 0)
        .count();
    assert!(spread >= 2, "keys on {spread} node(s)");
}

#[test]
fn an_apply_call_run_twice_applies_once() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::start();
    let mut f = RedisFrontier::open(short(&srv.url(), "twice", 4, 15_000), "a").unwrap();
    f.recover().unwrap();
    f.commit(Batch {
        discovered: vec![disc("http://h/1", "h", 0)],
        ..Batch::default()
    })
    .unwrap();
    let e = f.next_urls(host_fp("h"), None, 1).unwrap().remove(0);
    let s = (e.seq % 4) as u32;
    let token = f.gate.token(s).unwrap();
    let call = f
        .crawl
        .shard_call(&SCRIPTS.apply, s)
        .arg(&f.crawl.pid)
        .arg(token)
        .arg(1)
        .arg(0)
        .arg(1)
        .arg("run:1")
        .arg(0)
        .arg(member(e.id.key))
        .arg(e.host)
        .arg(e.depth)
        .arg(e.seq)
        .arg("1")
        .arg(1u64)
        .arg(line("http://h/1"));
    let read = |v: Value| -> Vec<String> {
        conn::reply::array(v, "apply")
            .unwrap()
            .into_iter()
            .map(|x| conn::reply::string(x, "apply").unwrap())
            .collect()
    };
    let first = read(f.conn.call(&call).unwrap());
    let second = read(f.conn.call(&call).unwrap());
    assert_eq!(
        first.len(),
        6,
        "ok, done, pages, epoch, scheduled, one stream id: {first:?}"
    );
    assert_eq!(first, second);
    let len: u64 = query(&srv, redis::cmd("XLEN").arg(f.crawl.keys.stream(s)));
    assert_eq!(len, 1);
    let done: u64 = query(
        &srv,
        redis::cmd("HGET").arg(f.crawl.keys.meta(s)).arg("done"),
    );
    assert_eq!(done, 1);
}

#[test]
fn hosts_added_by_a_peer_reach_the_owner_at_its_next_poll() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::start();
    let s = short(&srv.url(), "peerhosts", 8, 15_000);
    let mut a = RedisFrontier::open(s.clone(), "a").unwrap();
    a.recover().unwrap();
    assert!(a.poll_shards().unwrap().hosts.is_empty());
    // b holds nothing (a holds every shard and is not quiet), but may add anywhere
    let mut b = RedisFrontier::open(s, "b").unwrap();
    b.recover().unwrap();
    assert!(b.lease_table().owned().is_empty());
    let c = b
        .commit(Batch {
            discovered: vec![
                disc("http://new/1", "new", 0),
                disc("http://new/2", "new", 1),
            ],
            ..Batch::default()
        })
        .unwrap();
    assert_eq!(c.added.len(), 2);
    let ch = a.poll_shards().unwrap();
    assert_eq!(
        ch.hosts,
        vec![HostInfo {
            fp: host_fp("new"),
            name: "new".into(),
            pending: 2,
            paused_until_ms: 0,
            backoff_level: 0,
        }]
    );
    assert_eq!(ch.counters.unwrap().pending, 2);
    assert!(a.poll_shards().unwrap().hosts.is_empty(), "reported once");
    assert_eq!(a.next_urls(host_fp("new"), None, 10).unwrap().len(), 2);
}

#[test]
fn a_host_s_pause_and_robots_rules_move_with_its_shard() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::start();
    let s = short(&srv.url(), "pause", 4, 1000);
    let until = 4_102_444_800_000; // far ahead
    let rules = crawl_core::robots::Robots::parse(
        b"User-agent: *\nDisallow: /private\nCrawl-delay: 3\n",
        "crawl-engine/0.1",
    );
    let shared = SharedRobots {
        host: "h".into(),
        authority: "http://h".into(),
        expires_ms: until,
        snapshot: rules.snapshot(),
    };
    {
        let mut a = RedisFrontier::open(s.clone(), "a").unwrap();
        a.recover().unwrap();
        a.commit(Batch {
            discovered: vec![disc("http://h/1", "h", 0)],
            pauses: vec![("h".to_owned(), until, 3)],
            robots: vec![shared.clone()],
            ..Batch::default()
        })
        .unwrap();
        a.abandon();
    }
    let mut b = RedisFrontier::open(s, "b").unwrap();
    b.recover().unwrap();
    let mut seen = None;
    let mut robots = Vec::new();
    let got = wait_until(Duration::from_secs(5), || {
        let ch = b.poll_shards().unwrap();
        robots.extend(ch.robots);
        for (_, hosts) in ch.gained {
            for h in hosts {
                if h.name == "h" {
                    seen = Some((h.paused_until_ms, h.backoff_level));
                }
            }
        }
        seen.is_some()
    });
    assert!(got, "b gained h's shard");
    assert_eq!(seen, Some((until, 3)), "the pause and its backoff step");
    assert_eq!(robots, vec![shared.clone()]);
    // Held shards are reported once; asked to read them again, the next poll reports them all as gained again,
    // hosts, pending counts and rules included.
    let ch = b.poll_shards().unwrap();
    assert!(ch.gained.is_empty());
    assert_eq!(ch.pending_held, 1, "h's URL is in a shard b holds");
    b.reread_shards();
    let ch = b.poll_shards().unwrap();
    let hosts: Vec<&str> = ch
        .gained
        .iter()
        .flat_map(|(_, hs)| hs.iter().map(|h| h.name.as_str()))
        .collect();
    assert_eq!(hosts, vec!["h"]);
    assert_eq!(ch.robots, vec![shared.clone()]);
    assert!(b.poll_shards().unwrap().gained.is_empty());
    let back = crawl_core::robots::Robots::from_snapshot(&robots[0].snapshot).unwrap();
    assert!(!back.is_allowed("/private/x"));
    assert_eq!(back.crawl_delay(), Some(Duration::from_secs(3)));
}

#[test]
fn with_recrawl_a_url_found_again_after_two_periods_is_queued_again_but_never_while_pending() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::start();
    let s = RedisSettings {
        recrawl_after_s: 1,
        ..short(&srv.url(), "recrawl", 1, 1000)
    };
    let mut a = RedisFrontier::open(s, "a").unwrap();
    a.recover().unwrap();
    let both = || Batch {
        discovered: vec![disc("http://h/1", "h", 0), disc("http://h/2", "h", 0)],
        ..Batch::default()
    };
    assert_eq!(a.commit(both()).unwrap().added.len(), 2);
    // Found again at once: both known.
    let c = a.commit(both()).unwrap();
    assert!(c.added.is_empty());
    assert_eq!(c.duplicates, 2);
    let q = a.next_urls(host_fp("h"), None, 10).unwrap();
    let first = q.iter().find(|e| e.url == "http://h/1").unwrap().clone();
    let c = a
        .commit(Batch {
            finished: vec![finished(&first)],
            records: vec![(1, line("http://h/1"))],
            ..Batch::default()
        })
        .unwrap();
    assert!(c.fenced.is_empty());
    assert!(a.is_known("http://h/1").unwrap());
    // Two periods later: the finished URL is new again, the one still pending is not queued twice.
    std::thread::sleep(Duration::from_millis(2_100));
    let c = a.commit(both()).unwrap();
    let again: Vec<&str> = c.added.iter().map(|x| x.entry.url.as_str()).collect();
    assert_eq!(again, ["http://h/1"]);
    assert_ne!(c.added[0].entry.seq, first.seq, "a new queueing");
    assert_eq!(c.counters.pending, 2);
    let q = a.next_urls(host_fp("h"), None, 10).unwrap();
    assert_eq!(q.len(), 2, "{q:?}");
    assert!(a.is_known("http://h/2").unwrap());
}
