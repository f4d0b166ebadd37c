//! Tests of the key layout against a real server: host queues as lists per depth (elements as the codec encodes
//! them, the origin elided), window reads after a cursor, finishes and updates near the head, the parent table
//! counting down to nothing, and a crawl of the old layout refused.

use super::*;
use crawl_core::frontier::codec::{QueueElement, decode_element, encode_element};
use crawl_core::frontier::{Discovered, JobKind};

/// A crawl of one shard, so that every key is easy to name.
fn one_shard(srv: &RedisServer, crawl: &str) -> RedisFrontier {
    let mut f = RedisFrontier::open(short(&srv.url(), crawl, 1, 15_000), "a").unwrap();
    f.recover().unwrap();
    f
}

fn child(url: &str, depth: u32, parent: &str) -> Discovered {
    Discovered {
        parent: Some((
            UrlRef {
                key: url_fp(parent),
                slot: 0,
            },
            parent.to_owned(),
        )),
        ..disc(url, "h", depth)
    }
}

fn list(srv: &RedisServer, key: &str) -> Vec<Vec<u8>> {
    query(srv, redis::cmd("LRANGE").arg(key).arg(0).arg(-1))
}

fn parent_row(srv: &RedisServer, keys: &Keys, parent: &str) -> Option<String> {
    query(
        srv,
        redis::cmd("HGET")
            .arg(keys.parents(0))
            .arg(&url_fp(parent).to_le_bytes()[..]),
    )
}

#[test]
fn elements_are_the_codec_s_with_the_origin_elided_or_the_whole_url() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::start();
    let mut f = one_shard(&srv, "elements");
    let p = "http://h/index.html";
    let c = f
        .commit(Batch {
            discovered: vec![
                child("http://h/docs/a.html", 1, p),
                // same host key, another origin: the whole URL is kept
                child("https://h/docs/b.html", 1, p),
                disc("http://h/", "h", 0),
            ],
            ..Batch::default()
        })
        .unwrap();
    let seqs: Vec<u64> = c.added.iter().map(|a| a.entry.seq).collect();
    let keys = f.crawl.keys.clone();
    let h = host_fp("h");
    let depth1 = list(&srv, &keys.queue(0, h, 1));
    assert_eq!(depth1.len(), 2);
    let want = |url: &str, seq: u64| QueueElement {
        seq,
        kind: JobKind::Page,
        parent: Some((url_fp(p), true)),
        url: url.to_owned(),
        ..QueueElement::default()
    };
    let origin = "http://h";
    assert_eq!(
        depth1[0],
        encode_element(&want("http://h/docs/a.html", seqs[0]), origin),
        "the script builds what the codec encodes"
    );
    assert!(depth1[0].ends_with(b"/docs/a.html") && !depth1[0].windows(4).any(|w| w == b"http"));
    assert!(depth1[1].ends_with(b"https://h/docs/b.html"));
    assert_eq!(
        decode_element(&depth1[1], origin).unwrap(),
        want("https://h/docs/b.html", seqs[1])
    );
    // the depth-0 URL has a list of its own, and is read first
    assert_eq!(list(&srv, &keys.queue(0, h, 0)).len(), 1);
    let depths: Vec<u32> = query(
        &srv,
        redis::cmd("ZRANGE").arg(keys.depths(0, h)).arg(0).arg(-1),
    );
    assert_eq!(depths, [0, 1]);
    let got = f.next_urls(h, None, 10).unwrap();
    let urls: Vec<&str> = got.iter().map(|e| e.url.as_str()).collect();
    assert_eq!(
        urls,
        ["http://h/", "http://h/docs/a.html", "https://h/docs/b.html"]
    );
    assert_eq!(got[1].parent.as_deref(), Some(p));
    assert_eq!(got[2].parent_ref.map(|r| r.key), Some(url_fp(p)));
    assert_eq!(got[0].parent, None);
    // two children, one parent row
    assert_eq!(
        parent_row(&srv, &keys, p).as_deref(),
        Some("2 http://h/index.html")
    );
    let urls_hash: u64 = query(
        &srv,
        redis::cmd("EXISTS").arg(format!("{}urls", keys.shard_prefix(0))),
    );
    assert_eq!(urls_hash, 0, "no separate URL table");
}

#[test]
fn windows_finishes_and_updates_work_near_the_head_and_parents_count_down() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::start();
    let mut f = one_shard(&srv, "windows");
    let (p, q) = ("http://h/p", "http://h/q");
    let mut discovered: Vec<Discovered> = (0..6)
        .map(|i| child(&format!("http://h/a{i}"), 1, if i < 4 { p } else { q }))
        .collect();
    discovered.push(child("http://h/deep", 2, q));
    f.commit(Batch {
        discovered,
        ..Batch::default()
    })
    .unwrap();
    let keys = f.crawl.keys.clone();
    let h = host_fp("h");
    let urls = |v: &[Entry]| v.iter().map(|e| e.url.clone()).collect::<Vec<_>>();

    // The owner holds a window of three; the next read starts after its cursor.
    let window = f.next_urls(h, None, 3).unwrap();
    assert_eq!(urls(&window), ["http://h/a0", "http://h/a1", "http://h/a2"]);
    let rest = f.next_urls(h, Some(window[2].key()), 10).unwrap();
    assert_eq!(
        urls(&rest),
        ["http://h/a3", "http://h/a4", "http://h/a5", "http://h/deep"]
    );

    // The middle one is finished, the first goes back with a retry, both in one commit.
    let mut retried = window[0].clone();
    retried.retries = 1;
    retried.redirect_chain = vec!["http://h/old".into()];
    f.commit(Batch {
        finished: vec![finished(&window[1])],
        updates: vec![retried.clone()],
        ..Batch::default()
    })
    .unwrap();
    let again = f.next_urls(h, None, 3).unwrap();
    assert_eq!(urls(&again), ["http://h/a0", "http://h/a2", "http://h/a3"]);
    assert_eq!(again[0], retried, "updated in place, its place kept");
    assert_eq!(parent_row(&srv, &keys, p).as_deref(), Some("3 http://h/p"));
    // a cursor on an element finished meanwhile still reads from after it
    let after = f.next_urls(h, Some(window[1].key()), 2).unwrap();
    assert_eq!(urls(&after), ["http://h/a2", "http://h/a3"]);

    // Finishing twice counts once; an update of a finished URL does not bring it back.
    let c = f
        .commit(Batch {
            finished: vec![finished(&window[1]), finished(&again[0])],
            updates: vec![window[1].clone()],
            ..Batch::default()
        })
        .unwrap();
    assert_eq!(c.counters.done, 2);
    assert_eq!(
        urls(&f.next_urls(h, None, 1).unwrap()),
        ["http://h/a2"],
        "a1 stays finished"
    );

    // Everything finished: nothing stays per URL but its seen entry.
    let all = f.next_urls(h, None, 100).unwrap();
    assert_eq!(all.len(), 5);
    f.commit(Batch {
        finished: all.iter().map(finished).collect(),
        ..Batch::default()
    })
    .unwrap();
    assert!(f.next_urls(h, None, 10).unwrap().is_empty());
    assert_eq!(
        parent_row(&srv, &keys, p),
        None,
        "the row goes with the last child"
    );
    assert_eq!(parent_row(&srv, &keys, q), None);
    let left: Vec<String> = query(&srv, redis::cmd("KEYS").arg("{windows:0}:*"));
    let mut left: Vec<&str> = left
        .iter()
        .map(|k| k.trim_start_matches("{windows:0}:"))
        .filter(|k| !k.starts_with("s:"))
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["meta", "names", "org", "rec"],
        "per shard and per host only"
    );
    assert!(f.is_known("http://h/a1").unwrap(), "still seen");
}

#[test]
fn a_crawl_of_the_old_layout_is_refused_with_its_name() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::start();
    drop(one_shard(&srv, "old"));
    let _: () = query(&srv, redis::cmd("HDEL").arg("{old:0}:meta").arg("lay"));
    let err = RedisFrontier::open(short(&srv.url(), "old", 1, 15_000), "a").unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("\"old\"") && text.contains("start a new crawl name"),
        "{text}"
    );
}

#[test]
fn with_recrawl_pending_members_are_kept_until_finished() {
    if !require_server() {
        return;
    }
    let srv = RedisServer::start();
    let mut f = RedisFrontier::open(
        RedisSettings {
            recrawl_after_s: 3600,
            ..short(&srv.url(), "pending", 1, 15_000)
        },
        "a",
    )
    .unwrap();
    f.recover().unwrap();
    f.commit(Batch {
        discovered: vec![disc("http://h/1", "h", 0), disc("http://h/2", "h", 0)],
        ..Batch::default()
    })
    .unwrap();
    let members = |srv: &RedisServer| -> u64 {
        query(
            srv,
            redis::cmd("EVAL")
                .arg("local n = 0 for _, k in ipairs(redis.call('KEYS', '{pending:0}:pn:*')) do n = n + redis.call('SCARD', k) end return n")
                .arg(0),
        )
    };
    assert_eq!(members(&srv), 2);
    let all = f.next_urls(host_fp("h"), None, 10).unwrap();
    f.commit(Batch {
        finished: vec![finished(&all[0])],
        ..Batch::default()
    })
    .unwrap();
    assert_eq!(members(&srv), 1, "a finished URL is no longer pending");
    assert!(f.is_known("http://h/1").unwrap(), "seen in this generation");
    f.commit(Batch {
        finished: vec![finished(&all[1])],
        ..Batch::default()
    })
    .unwrap();
    assert_eq!(members(&srv), 0);
    let n: u64 = query(&srv, redis::cmd("HGET").arg("{pending:0}:meta").arg("pnn"));
    assert_eq!(n, 0);
}
