//! Tests of the revisit schedule against a real server: its windows under many entries (cuts, windows of one due
//! time, the index's buckets), promotion in due order, a URL scheduled while it is scheduled, the schedule moving
//! with its shard, and fencing of reschedules and promotions.

use super::*;
use crate::schedule::parse_entry;
use crawl_core::frontier::{JobKind, Rescheduled, SitemapHint};
use crawl_core::recrawl::{Capture, DigestKey, Prior, Stored, Validators};
use std::collections::{HashMap, HashSet};

/// 2026-12-01T00:00:00Z.
const T0: u64 = 1_796_083_200_000;

fn prior(visits: u32) -> Prior {
    Prior {
        visits,
        fetched_at_ms: T0 - 3_600_000,
        interval_ds: 36_000,
        validators: Validators {
            etag: Some("\"5f3c1a2b-1e4\"".into()),
            last_modified_s: Some(T0 / 1000 - 86_400),
        },
        capture: Some(Capture {
            fetched_at_ms: T0 - 7_200_000,
            digest: DigestKey::of("sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"),
        }),
    }
}

fn resched(e: &Entry, due_ms: u64, visits: u32) -> Rescheduled {
    Rescheduled {
        id: e.id,
        host: e.host,
        url: e.url.clone(),
        depth: e.depth,
        kind: e.kind,
        stored: Stored {
            next_due_ms: due_ms,
            prior: prior(visits),
        },
    }
}

/// Adds the URLs (url, host, due in ms), takes them and finishes them rescheduled at their due times, in batches.
fn schedule(f: &mut RedisFrontier, urls: &[(String, String, u64)]) {
    for chunk in urls.chunks(500) {
        f.commit(Batch {
            discovered: chunk.iter().map(|(u, h, _)| disc(u, h, 1)).collect(),
            ..Batch::default()
        })
        .unwrap();
        let due: HashMap<&str, u64> = chunk.iter().map(|(u, _, d)| (u.as_str(), *d)).collect();
        let hosts: HashSet<&str> = chunk.iter().map(|(_, h, _)| h.as_str()).collect();
        let mut finished = Vec::new();
        let mut rescheduled = Vec::new();
        for h in hosts {
            for e in f.next_urls(host_fp(h), None, 10_000).unwrap() {
                if let Some(&d) = due.get(e.url.as_str()) {
                    finished.push(super::finished(&e));
                    rescheduled.push(resched(&e, d, 1));
                }
            }
        }
        assert_eq!(finished.len(), chunk.len());
        let c = f
            .commit(Batch {
                finished,
                rescheduled,
                ..Batch::default()
            })
            .unwrap();
        assert!(c.fenced.is_empty());
    }
}

/// Reads every window of a shard and checks the layout's invariants: a window's score is its earliest due time and
/// `sm` its latest, windows follow each other without overlap, a window of several due times holds at most 128
/// entries, the index holds every entry (in listpack buckets) and `sched` counts them. Returns (windows, entries
/// with their due times).
fn check_schedule(srv: &RedisServer, keys: &Keys, shard: u32) -> (usize, Vec<(Fp, u32)>) {
    let pfx = keys.shard_prefix(shard);
    let windows: Vec<(String, u64)> = query(
        srv,
        redis::cmd("ZRANGE")
            .arg(format!("{pfx}sw"))
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES"),
    );
    let mut entries = Vec::new();
    let mut last: Option<u32> = None;
    for (id, start) in &windows {
        let list: Vec<Vec<u8>> = query(
            srv,
            redis::cmd("LRANGE")
                .arg(format!("{pfx}sq:{id}"))
                .arg(0)
                .arg(-1),
        );
        assert!(!list.is_empty(), "window {id} is empty");
        let dues: Vec<u32> = list
            .iter()
            .map(|e| parse_entry(e, "http://x").unwrap().due_s)
            .collect();
        let (lo, hi) = (*dues.iter().min().unwrap(), *dues.iter().max().unwrap());
        assert_eq!(u64::from(lo), *start, "window {id} starts at its earliest");
        let sm: u32 = query(srv, redis::cmd("HGET").arg(format!("{pfx}sm")).arg(id));
        assert_eq!(sm, hi, "window {id} ends at its latest");
        assert!(lo == hi || list.len() <= 128, "window {id}: {}", list.len());
        assert!(last.is_none_or(|l| l < lo), "windows overlap at {id}");
        last = Some(hi);
        for e in &list {
            let p = parse_entry(e, "http://x").unwrap();
            entries.push((p.url_fp, p.due_s));
        }
    }
    let sched: Option<u64> = query(srv, redis::cmd("HGET").arg(keys.meta(shard)).arg("sched"));
    assert_eq!(sched.unwrap_or(0), entries.len() as u64);
    let buckets: Vec<String> = query(srv, redis::cmd("KEYS").arg(format!("{pfx}sx:*")));
    let mut indexed = HashMap::new();
    for b in buckets {
        let enc: String = query(srv, redis::cmd("OBJECT").arg("ENCODING").arg(&b));
        assert_eq!(enc, "listpack", "{b}");
        let all: Vec<(Vec<u8>, u32)> = query(srv, redis::cmd("HGETALL").arg(&b));
        for (fp, due) in all {
            let fp = u64::from_le_bytes(fp.try_into().unwrap());
            assert!(indexed.insert(fp, due).is_none());
        }
    }
    let listed: HashMap<Fp, u32> = entries.iter().copied().collect();
    assert_eq!(listed.len(), entries.len(), "one entry per URL");
    assert_eq!(indexed, listed, "the index is the windows' entries");
    (windows.len(), entries)
}

/// Deterministic spread: x_{n+1} = x_n · 6364136223846793005 + 1442695040888963407.
fn lcg(x: &mut u64) -> u64 {
    *x = x
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    *x >> 33
}

#[test]
fn many_revisits_come_back_in_due_order_through_cut_windows() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::start();
    let mut f = RedisFrontier::open(short(&srv.url(), "many", 1, 15_000), "a").unwrap();
    f.recover().unwrap();
    let hosts: Vec<String> = (0..12).map(|i| format!("h{i}.example")).collect();
    assert!(
        hosts.iter().any(|h| host_fp(h) >= 1 << 63) && hosts.iter().any(|h| host_fp(h) < 1 << 63),
        "host fingerprints on both sides of 2^63"
    );
    let mut x = 7;
    let mut urls = Vec::new();
    for i in 0..1500u64 {
        let due = match i % 10 {
            // a run of 300 URLs due in the same second (a window of one due time, never cut)
            0..=1 => T0 + 500_000,
            // a few seconds shared by a handful each
            2 => T0 + (lcg(&mut x) % 5) * 1000,
            // spread over an hour, milliseconds rounded up to the second
            _ => T0 + lcg(&mut x) % 3_600_000,
        };
        let h = &hosts[(lcg(&mut x) % 12) as usize];
        urls.push((format!("http://{h}/p/{i}"), h.clone(), due));
    }
    schedule(&mut f, &urls);
    let keys = f.crawl.keys.clone();
    let (windows, entries) = check_schedule(&srv, &keys, 0);
    assert_eq!(entries.len(), urls.len());
    assert!(windows >= 10, "{windows} windows");
    let due_of: HashMap<&str, u64> = urls
        .iter()
        .map(|(u, _, d)| (u.as_str(), d.div_ceil(1000)))
        .collect();
    let c = f.poll_shards().unwrap().counters.unwrap();
    assert_eq!((c.scheduled, c.pending), (1500, 0));
    let o = f.outlook(T0 + 3_600_001, 10_000).unwrap();
    assert_eq!(o.next_due_ms, Some(T0));
    assert_eq!(o.due_before, 1500);
    assert_eq!(f.outlook(T0 + 500_000, 10_000).unwrap().due_before, {
        due_of
            .values()
            .filter(|&&d| d * 1000 < T0 + 500_000)
            .count() as u64
    });
    assert_eq!(f.outlook(T0 + 3_600_001, 77).unwrap().due_before, 77);

    // Promoted in small steps of time and number: every URL once, never before it is due, the earliest first,
    // and a call that returns fewer than asked leaves nothing due.
    let mut got: Vec<u64> = Vec::new();
    let mut seen = HashSet::new();
    let mut now = T0 - 60_000;
    while seen.len() < urls.len() {
        now += 97_000;
        loop {
            let batch = f.promote_due(now, 37).unwrap();
            for a in &batch {
                let d = due_of[a.entry.url.as_str()];
                assert!(d * 1000 <= now, "{} promoted early", a.entry.url);
                assert!(seen.insert(a.entry.url.clone()), "{} twice", a.entry.url);
                assert_eq!(a.entry.host, host_fp(&a.host), "{}", a.entry.url);
                assert!(a.entry.url.contains(&a.host));
                assert_eq!(a.entry.prior.as_deref(), Some(&prior(1)));
                assert_eq!((a.entry.depth, a.entry.kind), (1, JobKind::Page));
                got.push(d);
            }
            if batch.len() < 37 {
                let left = urls
                    .iter()
                    .filter(|(u, _, d)| d.div_ceil(1000) * 1000 <= now && !seen.contains(u))
                    .count();
                assert_eq!(left, 0, "due and left behind at {now}");
                break;
            }
        }
        check_schedule(&srv, &keys, 0);
    }
    assert!(got.windows(2).all(|w| w[0] <= w[1]), "earliest due first");
    let (windows, entries) = check_schedule(&srv, &keys, 0);
    assert_eq!((windows, entries.len()), (0, 0));
    let c = f.poll_shards().unwrap().counters.unwrap();
    assert_eq!((c.scheduled, c.pending), (0, 1500));
    // Every promoted URL is pending in its host's queue with its prior.
    let mut pending = 0;
    for h in &hosts {
        for e in f.next_urls(host_fp(h), None, 10_000).unwrap() {
            assert_eq!(e.prior.as_deref(), Some(&prior(1)));
            pending += 1;
        }
    }
    assert_eq!(pending, 1500);
    let left: Vec<String> = query(&srv, redis::cmd("KEYS").arg("{many:0}:s[qwmx]*"));
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn hints_move_entries_out_of_any_window_and_keep_the_layout() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::start();
    let mut f = RedisFrontier::open(short(&srv.url(), "hintwin", 1, 15_000), "a").unwrap();
    f.recover().unwrap();
    let mut urls = Vec::new();
    for i in 0..400u64 {
        // 200 due together (one window of one due time), 200 spread over a day
        let due = if i < 200 {
            T0 + 86_400_000
        } else {
            T0 + 3_600_000 + i * 200_000
        };
        urls.push((format!("http://h/{i}"), "h".to_owned(), due));
    }
    schedule(&mut f, &urls);
    let keys = f.crawl.keys.clone();
    check_schedule(&srv, &keys, 0);
    let policy = crawl_core::recrawl::Policy::new(&crawl_core::config::RecrawlConfig {
        enabled: true,
        min_interval: Duration::from_secs(60),
        ..Default::default()
    });
    // Changed after the last fetch (an hour before T0): due now, from both kinds of window; a pending URL and an
    // unknown one are left alone.
    let now = T0 + 120_000;
    let hints: Vec<SitemapHint> = [0, 1, 150, 250, 399]
        .iter()
        .map(|i| format!("http://h/{i}"))
        .chain(["http://h/unknown".to_owned()])
        .map(|url| SitemapHint {
            url,
            lastmod: Some("2026-11-30T23:30:00Z".into()),
            changefreq: None,
        })
        .collect();
    let h = f.hint(&hints, &policy, now).unwrap();
    assert_eq!(h.moved, 5);
    assert!(h.anomalies.is_empty());
    let (_, entries) = check_schedule(&srv, &keys, 0);
    assert_eq!(entries.len(), 400);
    assert_eq!(
        entries
            .iter()
            .filter(|(_, d)| u64::from(*d) * 1000 == now)
            .count(),
        5
    );
    // Again: nothing moves later or twice.
    assert_eq!(f.hint(&hints, &policy, now).unwrap().moved, 0);
    // A changefreq brings the rest of the run of one due time forward, to the last fetch + an hour (T0), which is
    // before now: now.
    let hourly: Vec<SitemapHint> = (2..200)
        .filter(|&i| i != 150)
        .map(|i| SitemapHint {
            url: format!("http://h/{i}"),
            lastmod: None,
            changefreq: Some("hourly".into()),
        })
        .collect();
    let h = f.hint(&hourly, &policy, now).unwrap();
    assert_eq!(h.moved, 197);
    check_schedule(&srv, &keys, 0);
    let due: Vec<String> = f
        .promote_due(now, 1000)
        .unwrap()
        .into_iter()
        .map(|a| a.entry.url)
        .collect();
    assert_eq!(due.len(), 202);
    // Due in the same second: in the order they were moved there.
    assert_eq!(
        due[..5],
        [
            "http://h/0",
            "http://h/1",
            "http://h/150",
            "http://h/250",
            "http://h/399"
        ]
    );
    let hourly: Vec<&str> = hourly.iter().map(|h| h.url.as_str()).collect();
    assert_eq!(due[5..], hourly);
    let (_, entries) = check_schedule(&srv, &keys, 0);
    assert_eq!(entries.len(), 198, "the 198 others wait");
    check_schedule(&srv, &keys, 0);
}

/// A URL found again while it is scheduled (`recrawl_after_s`) is queued again; finished and scheduled again, it
/// has one entry, the new one.
#[test]
fn a_url_scheduled_again_while_scheduled_keeps_one_entry() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::start();
    let s = RedisSettings {
        recrawl_after_s: 1,
        ..short(&srv.url(), "twice", 1, 15_000)
    };
    let mut f = RedisFrontier::open(s, "a").unwrap();
    f.recover().unwrap();
    schedule(
        &mut f,
        &[("http://h/1".into(), "h".into(), T0 + 50_000_000)],
    );
    std::thread::sleep(Duration::from_millis(2_100));
    let c = f
        .commit(Batch {
            discovered: vec![disc("http://h/1", "h", 1)],
            ..Batch::default()
        })
        .unwrap();
    assert_eq!(c.added.len(), 1, "found again: queued again");
    let e = f.next_urls(host_fp("h"), None, 10).unwrap().remove(0);
    assert_eq!(e.prior, None, "a first visit, as found");
    let c = f
        .commit(Batch {
            finished: vec![finished(&e)],
            rescheduled: vec![resched(&e, T0 + 1_000, 5)],
            ..Batch::default()
        })
        .unwrap();
    assert_eq!(c.counters.scheduled, 1);
    let (_, entries) = check_schedule(&srv, &f.crawl.keys.clone(), 0);
    assert_eq!(
        entries,
        vec![(url_fp("http://h/1"), (T0 / 1000 + 1) as u32)]
    );
    let back = f.promote_due(T0 + 1_000, 10).unwrap();
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].entry.prior.as_deref(), Some(&prior(5)));
    assert!(f.promote_due(u64::MAX / 2, 10).unwrap().is_empty());
    // With recrawl a promoted URL is pending: found again meanwhile, it is not queued twice.
    let c = f
        .commit(Batch {
            discovered: vec![disc("http://h/1", "h", 1)],
            ..Batch::default()
        })
        .unwrap();
    assert!(c.added.is_empty());
}

/// The shard that `members` give to `who`, and a host of it.
fn host_of(members: &[&str], who: &str, shards: u32) -> (u32, String) {
    let members: Vec<String> = members.iter().map(|m| (*m).to_owned()).collect();
    (0..1000)
        .map(|i| format!("host{i}.example"))
        .map(|h| ((host_fp(&h) % u64::from(shards)) as u32, h))
        .find(|(s, _)| shards::rendezvous(&members, *s) == Some(who))
        .unwrap()
}

#[test]
fn the_schedule_moves_with_its_shard_and_its_new_owner_promotes_it() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::start();
    let s = short(&srv.url(), "handoff", 8, 1000);
    let (shard, host) = host_of(&["a", "b"], "b", 8);
    let mut a = RedisFrontier::open(s.clone(), "a").unwrap();
    a.recover().unwrap();
    let urls: Vec<(String, String, u64)> = (0..5)
        .map(|i| (format!("http://{host}/{i}"), host.clone(), T0 + i * 1000))
        .collect();
    schedule(&mut a, &urls);
    assert_eq!(a.outlook(T0 + 10_000, 100).unwrap().due_before, 5);
    // b comes; a hands b's shards over once quiet.
    let mut b = RedisFrontier::open(s, "b").unwrap();
    b.recover().unwrap();
    let (ga, gb) = (a.lease_table(), b.lease_table());
    assert!(
        wait_until(Duration::from_secs(10), || {
            for sh in ga.handoffs() {
                ga.quiet(sh);
            }
            gb.token(shard).is_some() && ga.token(shard).is_none()
        }),
        "b never took shard {shard}"
    );
    assert!(
        a.promote_due(T0 + 60_000, 100).unwrap().is_empty(),
        "a holds it no more"
    );
    assert_eq!(a.outlook(T0 + 10_000, 100).unwrap(), Outlook::default());
    assert_eq!(b.outlook(T0 + 10_000, 100).unwrap().due_before, 5);
    let got = b.promote_due(T0 + 60_000, 100).unwrap();
    let urls_got: Vec<&str> = got.iter().map(|x| x.entry.url.as_str()).collect();
    let want: Vec<&str> = urls.iter().map(|u| u.0.as_str()).collect();
    assert_eq!(urls_got, want, "every one, earliest first");
    assert!(
        got.iter()
            .all(|x| x.entry.prior.as_deref() == Some(&prior(1)))
    );
    assert!(got.iter().all(|x| x.host == host));
    assert!(b.promote_due(T0 + 60_000, 100).unwrap().is_empty(), "once");
    let q = b.next_urls(host_fp(&host), None, 10).unwrap();
    assert_eq!(q.len(), 5);
    let c = b.poll_shards().unwrap().counters.unwrap();
    assert_eq!((c.scheduled, c.pending), (0, 5));
}

#[test]
fn reschedules_and_promotions_are_fenced() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::start();
    let s = short(&srv.url(), "schedfence", 4, 1000);
    let mut a = RedisFrontier::open(s.clone(), "a").unwrap();
    a.recover().unwrap();
    a.commit(Batch {
        discovered: vec![disc("http://h/1", "h", 0), disc("http://h/2", "h", 0)],
        ..Batch::default()
    })
    .unwrap();
    let q = a.next_urls(host_fp("h"), None, 10).unwrap();
    let shard = (host_fp("h") % 4) as u32;
    // h/1 is scheduled while a holds the shard.
    a.commit(Batch {
        finished: vec![finished(&q[0])],
        rescheduled: vec![resched(&q[0], T0, 1)],
        ..Batch::default()
    })
    .unwrap();
    let ga = a.lease_table();
    let token = ga.token(shard).unwrap();
    // a hangs: its lease runs out on its own clock first, and it promotes nothing from then on.
    a.pause_leases();
    assert!(
        wait_until(Duration::from_secs(5), || !ga.may_start(host_fp("h"))),
        "a's lease never ran out"
    );
    assert!(a.promote_due(T0 + 60_000, 10).unwrap().is_empty());
    let mut b = RedisFrontier::open(s, "b").unwrap();
    b.recover().unwrap();
    let gb = b.lease_table();
    assert!(
        wait_until(Duration::from_secs(5), || gb.token(shard).is_some()),
        "b never took shard {shard}"
    );
    // Sent anyway with a's old token, the promotion is refused by the script.
    let call = a
        .crawl
        .shard_call(&SCRIPTS.promote, shard)
        .arg(&a.crawl.pid)
        .arg(token)
        .arg(T0 / 1000 + 60)
        .arg(10)
        .arg(4)
        .arg(0);
    let v = a.conn.call(&call).unwrap();
    assert_eq!(conn::reply::array(v, "promote").unwrap().len(), 1, "{{0}}");
    // a's commit finishing and rescheduling h/2 is fenced: neither is applied.
    let c = a
        .commit(Batch {
            finished: vec![finished(&q[1])],
            rescheduled: vec![resched(&q[1], T0, 1)],
            ..Batch::default()
        })
        .unwrap();
    assert_eq!(c.fenced, vec![q[1].id]);
    assert_eq!(c.counters.scheduled, 1, "only h/1");
    let o = b.outlook(T0 + 60_000, 10).unwrap();
    assert_eq!(o.due_before, 1);
    let got = b.promote_due(T0 + 60_000, 10).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].entry.url, "http://h/1");
    let pending = b.next_urls(host_fp("h"), None, 10).unwrap();
    let mut urls: Vec<&str> = pending.iter().map(|e| e.url.as_str()).collect();
    urls.sort();
    assert_eq!(urls, ["http://h/1", "http://h/2"], "h/2 is still pending");
    let c = b.poll_shards().unwrap().counters.unwrap();
    assert_eq!((c.scheduled, c.pending, c.done), (0, 2, 1));
}

/// Two hosts in two shards with due times interleaved: promotion takes the earliest across both, exactly while few
/// are due per shard, and each shard's earliest first when many are.
#[test]
fn promotion_takes_the_earliest_across_shards() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::start();
    let mut f = RedisFrontier::open(short(&srv.url(), "across", 8, 15_000), "a").unwrap();
    f.recover().unwrap();
    let a = "a.example";
    let b = (0..100)
        .map(|i| format!("b{i}.example"))
        .find(|b| host_fp(b) % 8 != host_fp(a) % 8)
        .unwrap();
    let b = b.as_str();
    // a: odd seconds, b: even seconds, 1 to 20 (a window of several due times each).
    let urls: Vec<(String, String, u64)> = (1..=20u64)
        .map(|i| {
            let h = if i % 2 == 1 { a } else { b };
            (format!("http://{h}/{i}"), h.to_owned(), T0 + i * 1000)
        })
        .collect();
    schedule(&mut f, &urls);
    let names = |v: Vec<Added>| -> Vec<String> {
        v.into_iter()
            .map(|x| x.entry.url.rsplit('/').next().unwrap().to_owned())
            .collect()
    };
    let first = names(f.promote_due(T0 + 100_000, 7).unwrap());
    assert_eq!(first, ["1", "2", "3", "4", "5", "6", "7"]);
    let rest = names(f.promote_due(T0 + 100_000, 100).unwrap());
    let want: Vec<String> = (8..=20).map(|i: u32| i.to_string()).collect();
    assert_eq!(rest, want);

    // Many due per shard: counted by window past the first 256 read, each shard still gives its earliest.
    let many: Vec<(String, String, u64)> = (0..1200u64)
        .map(|i| {
            let h = if i % 2 == 0 { a } else { b };
            (
                format!("http://{h}/m{i}"),
                h.to_owned(),
                T0 + 200_000 + i * 1000,
            )
        })
        .collect();
    schedule(&mut f, &many);
    let due = |u: &str| many.iter().find(|m| m.0 == u).unwrap().2;
    let got = f.promote_due(T0 + 10_000_000, 50).unwrap();
    let urls: Vec<&str> = got.iter().map(|x| x.entry.url.as_str()).collect();
    let want: Vec<&str> = many[..50].iter().map(|m| m.0.as_str()).collect();
    assert_eq!(urls, want, "exact while few are read");
    let got = f.promote_due(T0 + 10_000_000, 700).unwrap();
    assert_eq!(got.len(), 700);
    for h in [a, b] {
        let mine: Vec<u64> = got
            .iter()
            .filter(|x| x.host == h)
            .map(|x| due(&x.entry.url))
            .collect();
        let expected: Vec<u64> = many[50..]
            .iter()
            .filter(|m| m.1 == h)
            .take(mine.len())
            .map(|m| m.2)
            .collect();
        assert_eq!(mine, expected, "{h}: its earliest, in order");
        assert!(mine.len() >= 300, "{h}: {} of 700", mine.len());
    }
    check_schedule(&srv, &f.crawl.keys.clone(), (host_fp(a) % 8) as u32);
    check_schedule(&srv, &f.crawl.keys.clone(), (host_fp(b) % 8) as u32);
    assert_eq!(f.promote_due(T0 + 10_000_000, 10_000).unwrap().len(), 450);
}

/// A revisit that goes back to its queue (a retry) keeps its prior visit in its element.
#[test]
fn a_revisit_updated_in_its_queue_keeps_its_prior() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::start();
    let mut f = RedisFrontier::open(short(&srv.url(), "retry", 1, 15_000), "a").unwrap();
    f.recover().unwrap();
    schedule(&mut f, &[("http://h/1".into(), "h".into(), T0)]);
    let mut e = f.promote_due(T0, 10).unwrap().remove(0).entry;
    e.retries = 2;
    e.redirect_chain = vec!["http://h/old".into()];
    f.commit(Batch {
        updates: vec![e.clone()],
        ..Batch::default()
    })
    .unwrap();
    let q = f.next_urls(host_fp("h"), None, 10).unwrap();
    assert_eq!(q, vec![e]);
    assert_eq!(q[0].prior.as_deref(), Some(&prior(1)));
}
