//! The revisit schedule through the store: promotion across hosts and reopens, stores written before the schedule
//! existed, the row numbers promotion leaves unused, failed commits.

use crate::EmbeddedFrontier;
use crate::known::FLUSH_AT;
use crate::schedule::{BY_ROW, DUE};
use crate::store::META;
use crawl_core::frontier::contract::disc;
use crawl_core::frontier::{
    Added, Batch, Committed, Entry, Finished, FrontierStore, Outlook, Rescheduled, SitemapHint,
    UrlRef, host_fp,
};
use crawl_core::recrawl::{Capture, DigestKey, Policy, Prior, Stored, Validators};
use redb::{Database, ReadableDatabase};

/// 2026-12-01T00:00:00Z.
const T0: u64 = 1_796_083_200_000;

fn open(dir: &std::path::Path) -> EmbeddedFrontier {
    let mut s = EmbeddedFrontier::open(dir).unwrap();
    s.recover().unwrap();
    s
}

fn prior(e: &Entry, visits: u32) -> Prior {
    Prior {
        visits,
        fetched_at_ms: T0 - 1_000 - e.id.key,
        interval_ds: 36_000,
        validators: Validators {
            etag: Some(format!("\"{}-{visits}\"", e.id.key)),
            last_modified_s: Some(T0 / 1000 - 86_400),
        },
        capture: Some(Capture {
            fetched_at_ms: T0 - 1_000 - e.id.key,
            digest: DigestKey::of(&e.url),
        }),
    }
}

fn finished(e: &Entry) -> Finished {
    Finished {
        id: e.id,
        host: e.host,
        key: e.key(),
        fetched_page: true,
    }
}

/// Finishes `done`, scheduling each again at `due(e)` with [`prior`]`(e, visits)`.
fn finish(
    s: &mut EmbeddedFrontier,
    done: &[Entry],
    visits: u32,
    due: impl Fn(&Entry) -> u64,
) -> Committed {
    s.commit(Batch {
        finished: done.iter().map(finished).collect(),
        rescheduled: done
            .iter()
            .map(|e| Rescheduled {
                id: e.id,
                host: e.host,
                url: e.url.clone(),
                depth: e.depth,
                kind: e.kind,
                stored: Stored {
                    next_due_ms: due(e),
                    prior: prior(e, visits),
                },
            })
            .collect(),
        ..Batch::default()
    })
    .unwrap()
}

fn discover(s: &mut EmbeddedFrontier, links: Vec<crawl_core::frontier::Discovered>) -> Vec<Added> {
    s.commit(Batch {
        discovered: links,
        ..Batch::default()
    })
    .unwrap()
    .added
}

fn pending(s: &mut EmbeddedFrontier, host: &str) -> Vec<Entry> {
    s.next_urls(host_fp(host), None, usize::MAX).unwrap()
}

/// URLs of several hosts due in the same second come back together, each to its host's queue (whose row was gone)
/// with its prior, its parent and a queue number of its own; the queue holds them as promotion handed them out.
#[test]
fn revisits_due_in_one_second_from_several_hosts_return_to_their_queues() {
    let dir = tempfile::tempdir().unwrap();
    // Host keys as the crawl makes them: no port.
    let hosts = [
        ("http://a.example", "a.example"),
        ("http://b.example:8080", "b.example"),
        ("http://10.0.0.7", "10.0.0.7"),
    ];
    {
        let mut s = open(dir.path());
        let roots = discover(
            &mut s,
            hosts
                .iter()
                .map(|(o, h)| disc(&format!("{o}/"), h, 0))
                .collect(),
        );
        let children = hosts
            .iter()
            .zip(&roots)
            .flat_map(|((o, h), root)| {
                (1..4).map(move |i| {
                    let mut d = disc(&format!("{o}/p{i}"), h, 1);
                    d.parent = Some((root.entry.id, root.entry.url.clone()));
                    d
                })
            })
            .collect();
        discover(&mut s, children);
        for (_, h) in hosts {
            let q = pending(&mut s, h);
            assert_eq!(q.len(), 4);
            finish(&mut s, &q, 1, |_| T0 + 5_000);
        }
        assert_eq!((s.counters.pending, s.counters.scheduled), (0, 12));
    }
    let mut s = open(dir.path());
    assert!(
        s.recover().unwrap().hosts.is_empty(),
        "no host has a row left"
    );
    assert!(s.promote_due(T0 + 4_999, 100).unwrap().is_empty());
    let back = s.promote_due(T0 + 5_000, 100).unwrap();
    assert_eq!(back.len(), 12);
    assert!(
        back.windows(2).all(|w| w[0].entry.seq < w[1].entry.seq),
        "queue numbers grow in the order of promotion"
    );
    for a in &back {
        assert_eq!(a.entry.host, host_fp(&a.host));
        assert_eq!(a.entry.prior.as_deref(), Some(&prior(&a.entry, 1)));
        let origin = &a.entry.url[..a.entry.url.rfind('/').unwrap()];
        if a.entry.depth == 1 {
            assert_eq!(
                a.entry.parent.as_deref(),
                Some(format!("{origin}/").as_str())
            );
            assert!(a.entry.parent_ref.is_some());
        }
    }
    drop(s);
    let mut s = open(dir.path());
    let mut resumed: Vec<_> = s
        .recover()
        .unwrap()
        .hosts
        .into_iter()
        .map(|h| (h.name, h.pending))
        .collect();
    resumed.sort();
    assert_eq!(
        resumed,
        vec![
            ("10.0.0.7".to_owned(), 4),
            ("a.example".to_owned(), 4),
            ("b.example".to_owned(), 4)
        ]
    );
    for (_, h) in hosts {
        let q = pending(&mut s, h);
        let mut promoted: Vec<Entry> = back
            .iter()
            .filter(|a| a.host == h)
            .map(|a| a.entry.clone())
            .collect();
        promoted.sort_by_key(Entry::key);
        assert_eq!(q, promoted, "the queue holds what promotion handed out");
    }
}

/// Promotion takes at most `max` at a time, oldest due first across calls, each URL once.
#[test]
fn max_is_respected_across_many_and_oldest_come_first() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    let hosts: Vec<String> = (0..7).map(|h| format!("h{h}.example")).collect();
    let links = (0..3_000)
        .map(|i| {
            let h = &hosts[i % hosts.len()];
            disc(&format!("http://{h}/{i}"), h, (i % 3) as u32)
        })
        .collect();
    discover(&mut s, links);
    let due = |e: &Entry| T0 + (e.id.key * 7_919 % 1_000) * 1_000 + (e.id.key % 3) * 333;
    for h in &hosts {
        let q = pending(&mut s, h);
        for part in q.chunks(500) {
            finish(&mut s, part, 1, due);
        }
    }
    assert_eq!(
        s.outlook(u64::MAX, u64::MAX).unwrap(),
        Outlook {
            next_due_ms: Some(T0),
            due_before: 3_000
        }
    );
    // Due by now: the first 100 seconds' worth.
    let now = T0 + 100_000;
    let early = s.promote_due(now, usize::MAX).unwrap();
    let expected = (1..=3_000u64)
        .filter(|&row| T0 + (row * 7_919 % 1_000) * 1_000 + (row % 3) * 333 <= now)
        .count();
    assert!(expected > 0);
    assert_eq!(early.len(), expected);
    let mut all = early;
    let mut sizes = Vec::new();
    loop {
        let got = s.promote_due(T0 + 2_000_000, 700).unwrap();
        if got.is_empty() {
            break;
        }
        sizes.push(got.len());
        all.extend(got);
    }
    assert!(sizes.iter().all(|&n| n <= 700));
    assert_eq!(sizes.iter().filter(|&&n| n < 700).count(), 1, "{sizes:?}");
    assert_eq!(all.len(), 3_000);
    // Whole seconds: a due time is rounded up.
    let dues: Vec<u64> = all.iter().map(|a| due(&a.entry).div_ceil(1_000)).collect();
    assert!(dues.windows(2).all(|w| w[0] <= w[1]), "oldest due first");
    let mut rows: Vec<u64> = all.iter().map(|a| a.entry.id.key).collect();
    rows.sort_unstable();
    rows.dedup();
    assert_eq!(rows.len(), 3_000, "each URL once");
    let c = s.commit(Batch::default()).unwrap().counters;
    assert_eq!((c.pending, c.scheduled, c.done), (3_000, 0, 3_000));
}

/// A process that dies between promoting URLs and finishing them finds them pending after a restart, with their
/// prior and queue number; numbers given out later (rows, queue numbers) never repeat one.
#[test]
fn promoted_urls_survive_a_reopen_before_their_finish() {
    let dir = tempfile::tempdir().unwrap();
    let promoted;
    {
        let mut s = open(dir.path());
        discover(
            &mut s,
            (0..3)
                .map(|i| disc(&format!("http://a/{i}"), "a", 0))
                .collect(),
        );
        let q = pending(&mut s, "a");
        finish(&mut s, &q, 1, |_| T0 + 1_000);
        promoted = s.promote_due(T0 + 1_000, 10).unwrap();
        assert_eq!(promoted.len(), 3);
    }
    let mut s = open(dir.path());
    let r = s.recover().unwrap();
    assert_eq!((r.counters.pending, r.counters.scheduled), (3, 0));
    let q = pending(&mut s, "a");
    let expected: Vec<Entry> = promoted.iter().map(|a| a.entry.clone()).collect();
    assert_eq!(q, expected);
    assert!(s.promote_due(T0 + 9_000, 10).unwrap().is_empty(), "once");
    // Two come due again with a new prior; the third is done for good.
    finish(&mut s, &q[..2], 2, |_| T0 + 9_000);
    s.commit(Batch {
        finished: vec![finished(&q[2])],
        ..Batch::default()
    })
    .unwrap();
    let last_seq = q.iter().map(|e| e.seq).max().unwrap();
    let new = discover(&mut s, vec![disc("http://a/new", "a", 0)]);
    assert!(new[0].entry.id.key > last_seq && new[0].entry.seq > last_seq);
    let again = s.promote_due(T0 + 9_000, 10).unwrap();
    assert_eq!(again.len(), 2);
    for a in &again {
        assert!(a.entry.seq > new[0].entry.seq);
        assert_eq!(a.entry.prior.as_ref().map(|p| p.visits), Some(2));
    }
    let c = s.commit(Batch::default()).unwrap().counters;
    // Every finish counts as done, a revisit's too.
    assert_eq!((c.pending, c.scheduled, c.done), (3, 0, 6));
    // The revisit done for good left no entry behind; the pending ones keep theirs until they finish.
    let txn = s.db.begin_read().unwrap();
    let mut rows = crate::schedule::rows_with_entries(&txn);
    rows.sort_unstable();
    assert_eq!(rows, vec![q[0].id.key, q[1].id.key]);
}

/// A URL promoted and pending keeps its schedule entry (for its next schedule), but a sitemap hint leaves it alone
/// like any pending URL; scheduled again, it is hinted again.
#[test]
fn hints_leave_promoted_urls_alone_until_they_are_scheduled_again() {
    let policy = Policy::new(&crawl_core::config::RecrawlConfig {
        enabled: true,
        min_interval: std::time::Duration::from_secs(60),
        ..Default::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    discover(&mut s, vec![disc("http://a/0", "a", 0)]);
    let q = pending(&mut s, "a");
    finish(&mut s, &q, 1, |_| T0 + 1_000);
    let back = s.promote_due(T0 + 1_000, 10).unwrap();
    assert_eq!(back.len(), 1);
    let hint = || SitemapHint {
        url: "http://a/0".into(),
        lastmod: Some("2026-12-01T00:05:00Z".into()),
        changefreq: None,
    };
    let now = T0 + 3_600_000;
    let h = s.hint(&[hint()], &policy, now).unwrap();
    assert_eq!((h.moved, h.anomalies.len()), (0, 0));
    assert_eq!(s.outlook(u64::MAX, 10).unwrap(), Outlook::default());
    let q = pending(&mut s, "a");
    let c = finish(&mut s, &q, 2, |_| T0 + 86_400_000);
    assert_eq!(c.counters.scheduled, 1, "scheduled again counts as new");
    assert_eq!(s.hint(&[hint()], &policy, now).unwrap().moved, 1);
    assert_eq!(s.outlook(u64::MAX, 10).unwrap().next_due_ms, Some(now));
}

/// A store written before the schedule existed (no schedule tables, no counter) opens with an empty schedule and
/// schedules URLs from then on.
#[test]
fn a_store_from_before_the_schedule_opens_and_works() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut s = open(dir.path());
        discover(
            &mut s,
            vec![disc("http://a/0", "a", 0), disc("http://a/1", "a", 0)],
        );
        let q = pending(&mut s, "a");
        s.commit(Batch {
            finished: vec![finished(&q[0])],
            ..Batch::default()
        })
        .unwrap();
    }
    {
        // What an older build left: no counter of scheduled URLs, no schedule tables.
        let db = Database::open(dir.path().join("frontier.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(META).unwrap().remove("scheduled").unwrap();
        txn.commit().unwrap();
        let txn = db.begin_read().unwrap();
        for missing in [txn.open_table(DUE).err(), txn.open_table(BY_ROW).err()] {
            assert!(matches!(
                missing,
                Some(redb::TableError::TableDoesNotExist(_))
            ));
        }
    }
    let mut s = open(dir.path());
    let r = s.recover().unwrap();
    assert_eq!((r.counters.pending, r.counters.scheduled), (1, 0));
    assert_eq!(s.outlook(u64::MAX, 10).unwrap(), Outlook::default());
    assert!(s.promote_due(u64::MAX, 10).unwrap().is_empty());
    let policy = Policy::new(&crawl_core::config::RecrawlConfig::default());
    let hint = SitemapHint {
        url: "http://a/0".into(),
        lastmod: Some("2026-12-01T00:00:00Z".into()),
        changefreq: None,
    };
    assert_eq!(s.hint(&[hint], &policy, T0).unwrap().moved, 0);
    let q = pending(&mut s, "a");
    assert_eq!(finish(&mut s, &q, 1, |_| T0).counters.scheduled, 1);
    assert_eq!(s.promote_due(T0, 10).unwrap().len(), 1);
}

/// Promotion takes queue numbers from the counter that numbers rows, so rows skip numbers: lookups, the runs of
/// fingerprints (and what opening reads back after them) and the filter's rebuild do not mind.
#[test]
fn row_numbers_skipped_by_promotions_harm_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let url = |i: usize| format!("http://a/p/{i}");
    let cycle = |s: &mut EmbeddedFrontier, due: u64| {
        let q = pending(s, "r");
        finish(s, &q, 1, |_| due);
        assert_eq!(s.promote_due(due, usize::MAX).unwrap().len(), q.len());
    };
    let root_ref;
    {
        let mut s = open(dir.path());
        let roots = discover(
            &mut s,
            (0..10)
                .map(|i| disc(&format!("http://r/{i}"), "r", 0))
                .collect(),
        );
        root_ref = (roots[0].entry.id, roots[0].entry.url.clone());
        cycle(&mut s, T0);
        // Enough rows after the gap to be written out as a run, then more gaps and rows that stay in memory.
        let links = (0..FLUSH_AT)
            .map(|i| {
                let mut d = disc(&url(i), "a", 1);
                d.parent = Some(root_ref.clone());
                d
            })
            .collect();
        let added = discover(&mut s, links);
        assert_eq!(added.len(), FLUSH_AT);
        assert_eq!(s.index.counts(), vec![FLUSH_AT as u64 + 10]);
        cycle(&mut s, T0 + 1_000);
        let added = discover(
            &mut s,
            (FLUSH_AT..FLUSH_AT + 100)
                .map(|i| disc(&url(i), "a", 1))
                .collect(),
        );
        assert_eq!(added.len(), 100);
        cycle(&mut s, T0 + 2_000);
    }
    let mut s = open(dir.path());
    assert_eq!(
        s.index.in_memory(),
        100,
        "only the rows after the run are read back"
    );
    for i in [0, 1, FLUSH_AT - 1, FLUSH_AT, FLUSH_AT + 99] {
        assert!(s.is_known(&url(i)).unwrap(), "{i}");
    }
    assert!(!s.is_known(&url(FLUSH_AT + 100)).unwrap());
    let first = s.next_urls(host_fp("a"), None, 1).unwrap();
    assert_eq!(first[0].parent.as_deref(), Some(root_ref.1.as_str()));
    while s.idle_work() {}
    let again: Vec<_> = (0..FLUSH_AT + 101).map(|i| disc(&url(i), "a", 1)).collect();
    let c = s
        .commit(Batch {
            discovered: again,
            ..Batch::default()
        })
        .unwrap();
    assert_eq!((c.added.len(), c.duplicates), (1, FLUSH_AT as u64 + 100));
    assert_eq!(c.counters.known, 10 + FLUSH_AT as u64 + 101);
}

/// A commit that fails schedules nothing, in the store or in its counters.
#[test]
fn a_failed_commit_schedules_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    discover(&mut s, vec![disc("http://a/0", "a", 0)]);
    let q = pending(&mut s, "a");
    let e = &q[0];
    let batch = || Batch {
        // Enough new URLs that the commit writes a run, which cannot be created.
        discovered: (0..FLUSH_AT)
            .map(|i| disc(&format!("http://b/{i}"), "b", 0))
            .collect(),
        finished: vec![finished(e)],
        rescheduled: vec![Rescheduled {
            id: e.id,
            host: e.host,
            url: e.url.clone(),
            depth: 0,
            kind: e.kind,
            stored: Stored {
                next_due_ms: T0,
                prior: prior(e, 1),
            },
        }],
        ..Batch::default()
    };
    let blocker = dir.path().join("fp-1.run.tmp");
    std::fs::create_dir(&blocker).unwrap();
    assert!(s.commit(batch()).is_err());
    assert_eq!(s.outlook(u64::MAX, 10).unwrap(), Outlook::default());
    assert!(s.promote_due(T0, 10).unwrap().is_empty());
    std::fs::remove_dir(&blocker).unwrap();
    let c = s.commit(batch()).unwrap();
    assert_eq!((c.counters.scheduled, c.counters.done), (1, 1));
    let back = s.promote_due(T0, 10).unwrap();
    assert_eq!(back.len(), 1);
    assert_eq!(
        back[0].entry.id,
        UrlRef {
            key: e.id.key,
            slot: 0
        }
    );
}
