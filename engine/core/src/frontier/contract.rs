//! Contract tests that every [`FrontierStore`] implementation must pass. Each takes a function that opens the
//! store under test on a directory (a fresh one, or the same one again to check what survives a reopen).
//!
//! Test support, built with the feature `contract`: each store's tests call these functions (they panic on a
//! breach, like any test).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test support: a failed unwrap is a failed test

use super::*;
use std::path::Path;

pub fn disc(url: &str, host: &str, depth: u32) -> Discovered {
    Discovered {
        url: url.to_owned(),
        host: host.to_owned(),
        depth,
        parent: None,
        redirect_chain: Vec::new(),
        kind: JobKind::Page,
    }
}

fn line(s: &str) -> Vec<u8> {
    format!("{{\"url\":\"{s}\"}}\n").into_bytes()
}

fn urls(v: &[Entry]) -> Vec<&str> {
    v.iter().map(|e| e.url.as_str()).collect()
}

fn finished(e: &Entry, page: bool) -> Finished {
    Finished {
        id: e.id,
        host: e.host,
        key: e.key(),
        fetched_page: page,
    }
}

pub type Open = dyn Fn(&Path) -> Box<dyn FrontierStore>;

pub fn dedup_is_exact_within_and_across_batches_and_reopen(open: &Open) {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut s = open(dir.path());
        assert!(s.recover().unwrap().fresh);
        let c = s
            .commit(Batch {
                discovered: vec![
                    disc("http://a/1", "a", 0),
                    disc("http://a/1", "a", 3),
                    disc("http://a/2", "a", 1),
                ],
                ..Batch::default()
            })
            .unwrap();
        assert_eq!(
            c.added.len(),
            2,
            "the second add of one URL in a batch is refused"
        );
        assert_eq!(c.duplicates, 1);
        assert_eq!(c.counters.known, 2);
        let mut excluded = disc("http://a/2", "", 1);
        excluded.kind = JobKind::OutOfScope;
        let c = s
            .commit(Batch {
                discovered: vec![excluded, disc("http://a/3", "a", 1)],
                ..Batch::default()
            })
            .unwrap();
        assert_eq!(
            urls(&c.added.iter().map(|a| a.entry.clone()).collect::<Vec<_>>()),
            vec!["http://a/3"]
        );
        assert!(s.is_known("http://a/1").unwrap());
        assert!(!s.is_known("http://a/4").unwrap());
    }
    let mut s = open(dir.path());
    let r = s.recover().unwrap();
    assert!(!r.fresh);
    assert_eq!(r.counters.known, 3);
    assert_eq!(r.counters.pending, 3);
    for _ in 0..4 {
        s.idle_work();
    }
    let c = s
        .commit(Batch {
            discovered: vec![disc("http://a/1", "a", 0), disc("http://a/9", "a", 2)],
            ..Batch::default()
        })
        .unwrap();
    assert_eq!(c.added.len(), 1);
    assert_eq!(c.added[0].entry.url, "http://a/9");
}

pub fn next_urls_in_queue_order_per_host(open: &Open) {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    s.recover().unwrap();
    let mut child = disc("http://a/child", "a", 2);
    s.commit(Batch {
        discovered: vec![
            disc("http://a/deep", "a", 3),
            disc("http://b/0", "b", 0),
            disc("http://a/x", "a", 1),
            disc("http://a/y", "a", 1),
            disc("http://a/0", "a", 0),
        ],
        ..Batch::default()
    })
    .unwrap();
    let ha = host_fp("a");
    let all = s.next_urls(ha, None, 10).unwrap();
    assert_eq!(
        urls(&all),
        vec!["http://a/0", "http://a/x", "http://a/y", "http://a/deep"]
    );
    assert!(all.iter().all(|e| e.host == ha && e.kind == JobKind::Page));
    let first = s.next_urls(ha, None, 2).unwrap();
    assert_eq!(urls(&first), vec!["http://a/0", "http://a/x"]);
    let rest = s.next_urls(ha, Some(first[1].key()), 10).unwrap();
    assert_eq!(urls(&rest), vec!["http://a/y", "http://a/deep"]);
    assert_eq!(
        urls(&s.next_urls(host_fp("b"), None, 10).unwrap()),
        vec!["http://b/0"]
    );
    // parent and redirect chain come back with the entry
    child.parent = Some((all[1].id, all[1].url.clone()));
    child.redirect_chain = vec!["http://a/old".into()];
    s.commit(Batch {
        discovered: vec![child],
        ..Batch::default()
    })
    .unwrap();
    let got = s.next_urls(ha, Some(all[2].key()), 10).unwrap();
    assert_eq!(urls(&got), vec!["http://a/child", "http://a/deep"]);
    assert_eq!(got[0].parent.as_deref(), Some("http://a/x"));
    assert_eq!(got[0].parent_ref, Some(all[1].id));
    assert_eq!(got[0].redirect_chain, vec!["http://a/old".to_owned()]);
}

pub fn excluded_links_go_to_the_records_queue(open: &Open) {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    s.recover().unwrap();
    let mut d = disc("http://elsewhere/1", "elsewhere", 1);
    d.kind = JobKind::OutOfScope;
    let c = s
        .commit(Batch {
            discovered: vec![d],
            ..Batch::default()
        })
        .unwrap();
    assert_eq!(c.added[0].entry.host, RECORDS_HOST);
    let q = s.next_urls(RECORDS_HOST, None, 10).unwrap();
    assert_eq!(urls(&q), vec!["http://elsewhere/1"]);
    assert_eq!(q[0].kind, JobKind::OutOfScope);
    assert!(
        s.next_urls(host_fp("elsewhere"), None, 10)
            .unwrap()
            .is_empty()
    );
}

pub fn finish_update_outbox_and_counters_survive_reopen(open: &Open) {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut s = open(dir.path());
        s.recover().unwrap();
        s.commit(Batch {
            discovered: (0..5)
                .map(|i| disc(&format!("http://a/{i}"), "a", 0))
                .collect(),
            ..Batch::default()
        })
        .unwrap();
        let q = s.next_urls(host_fp("a"), None, 10).unwrap();
        let mut retry = q[4].clone();
        retry.retries = 2;
        retry.attempt = 1;
        let c = s
            .commit(Batch {
                finished: vec![finished(&q[0], true), finished(&q[1], false)],
                records: vec![(1, line("0")), (2, line("1"))],
                updates: vec![retry],
                ..Batch::default()
            })
            .unwrap();
        assert_eq!(c.counters.done, 2);
        assert_eq!(c.counters.pending, 3);
        assert_eq!(c.counters.pages_fetched, 1);
        // finishing again counts nothing twice; an update of a done URL does not bring it back
        let c = s
            .commit(Batch {
                finished: vec![finished(&q[0], true), finished(&q[2], true)],
                updates: vec![q[0].clone()],
                records: vec![(3, line("2"))],
                written: Some(JsonlCheckpoint {
                    lines: 1,
                    bytes: 12,
                }),
                ..Batch::default()
            })
            .unwrap();
        assert_eq!(c.counters.done, 3);
        assert_eq!(c.counters.pages_fetched, 2);
        assert_eq!(c.trimmed, 1);
    }
    let mut s = open(dir.path());
    let r = s.recover().unwrap();
    assert_eq!(
        r.counters,
        Counters {
            known: 5,
            pending: 2,
            done: 3,
            pages_fetched: 2
        }
    );
    assert_eq!(
        r.checkpoint,
        Some(JsonlCheckpoint {
            lines: 1,
            bytes: 12
        })
    );
    assert_eq!(r.outbox, vec![(2, line("1")), (3, line("2"))]);
    assert_eq!(r.next_record, 4);
    assert_eq!(
        r.hosts,
        vec![HostInfo {
            fp: host_fp("a"),
            name: "a".into(),
            pending: 2,
            paused_until_ms: 0,
            backoff_level: 0,
        }]
    );
    let q = s.next_urls(host_fp("a"), None, 10).unwrap();
    assert_eq!(urls(&q), vec!["http://a/3", "http://a/4"]);
    assert_eq!((q[1].attempt, q[1].retries), (1, 2));
    assert!(s.is_known("http://a/0").unwrap(), "done URLs stay known");
}

pub fn an_empty_store_resumes_empty(open: &Open) {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    let r = s.recover().unwrap();
    assert!(r.fresh && r.hosts.is_empty() && r.outbox.is_empty());
    assert_eq!(r.next_record, 1);
    assert!(r.checkpoint.is_none());
    assert!(s.next_urls(host_fp("a"), None, 10).unwrap().is_empty());
    assert!(!s.is_known("http://a/").unwrap());
}

pub fn embeds_are_queued_on_their_host_and_keep_their_kind(open: &Open) {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut s = open(dir.path());
        s.recover().unwrap();
        let mut img = disc("http://a/i.png", "a", 2);
        img.kind = JobKind::Embed;
        let c = s
            .commit(Batch {
                discovered: vec![img, disc("http://a/p", "a", 3)],
                ..Batch::default()
            })
            .unwrap();
        assert_eq!(c.added[0].entry.host, host_fp("a"));
        assert_eq!(c.added[0].entry.kind, JobKind::Embed);
    }
    let mut s = open(dir.path());
    s.recover().unwrap();
    let q = s.next_urls(host_fp("a"), None, 10).unwrap();
    assert_eq!(urls(&q), vec!["http://a/i.png", "http://a/p"]);
    assert_eq!(q[0].kind, JobKind::Embed);
    assert_eq!(q[0].depth, 2);
    assert_eq!(q[1].kind, JobKind::Page);
    assert!(s.next_urls(RECORDS_HOST, None, 10).unwrap().is_empty());
}
