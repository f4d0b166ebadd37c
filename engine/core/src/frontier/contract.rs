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
            pages_fetched: 2,
            scheduled: 0,
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

// --- continuous crawling: the revisit schedule ---

/// 2026-12-01T00:00:00Z, a whole second (stored due times are whole seconds).
const T0: u64 = 1_796_083_200_000;

fn prior(visits: u32, etag: &str) -> crate::recrawl::Prior {
    crate::recrawl::Prior {
        visits,
        fetched_at_ms: T0 - 1_234,
        interval_ds: 36_000,
        validators: crate::recrawl::Validators {
            etag: Some(etag.to_owned()),
            last_modified_s: Some(T0 / 1000 - 86_400),
        },
        capture: Some(crate::recrawl::Capture {
            fetched_at_ms: T0 - 99_000,
            digest: crate::recrawl::DigestKey::of(etag),
        }),
    }
}

fn resched(e: &Entry, due_ms: u64, p: crate::recrawl::Prior) -> Rescheduled {
    Rescheduled {
        id: e.id,
        host: e.host,
        url: e.url.clone(),
        depth: e.depth,
        kind: e.kind,
        stored: crate::recrawl::Stored {
            next_due_ms: due_ms,
            prior: p,
        },
    }
}

/// Finished URLs scheduled again leave their queue, wait in the schedule (counted), come back oldest due first
/// with their prior visit when due, once, and all of it survives a reopen.
pub fn rescheduled_urls_come_back_when_due_with_their_prior(open: &Open) {
    let dir = tempfile::tempdir().unwrap();
    let a = host_fp("a");
    {
        let mut s = open(dir.path());
        s.recover().unwrap();
        s.commit(Batch {
            discovered: vec![disc("http://a/0", "a", 0), disc("http://a/1", "a", 1), {
                let mut d = disc("http://a/2.css", "a", 1);
                d.kind = JobKind::Embed;
                d
            }],
            ..Batch::default()
        })
        .unwrap();
        let q = s.next_urls(a, None, 10).unwrap();
        assert_eq!(q.len(), 3);
        let c = s
            .commit(Batch {
                finished: vec![finished(&q[0], true), finished(&q[2], true)],
                records: vec![(1, line("0")), (2, line("2"))],
                rescheduled: vec![
                    resched(&q[0], T0 + 10_000, prior(1, "\"zero\"")),
                    resched(&q[2], T0 + 5_000, prior(4, "\"two\"")),
                ],
                ..Batch::default()
            })
            .unwrap();
        assert_eq!(
            (c.counters.pending, c.counters.done, c.counters.scheduled),
            (1, 2, 2)
        );
        assert!(
            s.promote_due(T0 + 4_000, 10).unwrap().is_empty(),
            "nothing due yet"
        );
        assert_eq!(
            s.outlook(T0 + 3_600_000, 100).unwrap(),
            Outlook {
                next_due_ms: Some(T0 + 5_000),
                due_before: 2
            }
        );
        assert_eq!(s.outlook(T0 + 6_000, 100).unwrap().due_before, 1);
        assert_eq!(
            s.outlook(T0 + 3_600_000, 1).unwrap().due_before,
            1,
            "capped"
        );
    }
    // The schedule survives a reopen.
    let mut s = open(dir.path());
    let r = s.recover().unwrap();
    assert_eq!((r.counters.pending, r.counters.scheduled), (1, 2));
    let first = s.promote_due(T0 + 20_000, 1).unwrap();
    assert_eq!(first.len(), 1, "at most max");
    let rest = s.promote_due(T0 + 20_000, 10).unwrap();
    assert_eq!(rest.len(), 1);
    let (e2, e0) = (&first[0].entry, &rest[0].entry);
    assert_eq!(e2.url, "http://a/2.css", "oldest due first");
    assert_eq!(e2.kind, JobKind::Embed);
    assert_eq!(e2.depth, 1);
    assert_eq!(e2.host, a);
    assert_eq!(first[0].host, "a");
    assert_eq!(e2.prior.as_deref(), Some(&prior(4, "\"two\"")));
    assert_eq!(e0.url, "http://a/0");
    assert_eq!(e0.prior.as_deref(), Some(&prior(1, "\"zero\"")));
    assert!(
        s.promote_due(T0 + 99_000, 10).unwrap().is_empty(),
        "promoted once"
    );
    assert_eq!(s.outlook(u64::MAX / 2, 100).unwrap(), Outlook::default());
    drop(s);
    // Promoted URLs are pending again, in their host's queue with their prior, also after a reopen.
    let mut s = open(dir.path());
    let r = s.recover().unwrap();
    assert_eq!((r.counters.pending, r.counters.scheduled), (3, 0));
    assert_eq!(r.hosts.iter().map(|h| h.pending).sum::<u64>(), 3);
    let q = s.next_urls(a, None, 10).unwrap();
    let mut got: Vec<_> = q
        .iter()
        .map(|e| (e.url.as_str(), e.prior.is_some()))
        .collect();
    got.sort();
    assert_eq!(
        got,
        vec![
            ("http://a/0", true),
            ("http://a/1", false),
            ("http://a/2.css", true)
        ]
    );
    let again = q.iter().find(|e| e.url == "http://a/0").unwrap();
    assert_eq!(again.prior.as_deref(), Some(&prior(1, "\"zero\"")));
    // A revisit finished and scheduled again: one entry, with the new prior.
    let c = s
        .commit(Batch {
            finished: vec![finished(again, true)],
            records: vec![(3, line("0 again"))],
            rescheduled: vec![resched(again, T0 + 50_000, prior(2, "\"new\""))],
            ..Batch::default()
        })
        .unwrap();
    assert_eq!((c.counters.pending, c.counters.scheduled), (2, 1));
    let back = s.promote_due(T0 + 60_000, 10).unwrap();
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].entry.prior.as_deref(), Some(&prior(2, "\"new\"")));
}

/// A reschedule whose finish is not applied (the URL was finished already) schedules nothing: a URL never has two
/// schedule entries.
pub fn a_reschedule_without_its_finish_is_ignored(open: &Open) {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    s.recover().unwrap();
    s.commit(Batch {
        discovered: vec![disc("http://a/0", "a", 0)],
        ..Batch::default()
    })
    .unwrap();
    let q = s.next_urls(host_fp("a"), None, 10).unwrap();
    let once = || Batch {
        finished: vec![finished(&q[0], true)],
        rescheduled: vec![resched(&q[0], T0 + 1_000, prior(1, "\"x\""))],
        ..Batch::default()
    };
    assert_eq!(s.commit(once()).unwrap().counters.scheduled, 1);
    let c = s.commit(once()).unwrap();
    assert_eq!((c.counters.scheduled, c.counters.done), (1, 1));
    assert_eq!(s.promote_due(T0 + 2_000, 10).unwrap().len(), 1);
    assert!(s.promote_due(T0 + 2_000, 10).unwrap().is_empty());
}

/// A sitemap hint brings a scheduled URL forward (never later, never before its floor); pending and unknown URLs
/// are left alone.
pub fn sitemap_hints_bring_scheduled_urls_forward(open: &Open) {
    let policy = crate::recrawl::Policy::new(&crate::config::RecrawlConfig {
        enabled: true,
        min_interval: std::time::Duration::from_secs(60),
        ..Default::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    s.recover().unwrap();
    s.commit(Batch {
        discovered: vec![disc("http://a/0", "a", 0), disc("http://a/1", "a", 0)],
        ..Batch::default()
    })
    .unwrap();
    let q = s.next_urls(host_fp("a"), None, 10).unwrap();
    let mut p = prior(1, "\"x\"");
    p.fetched_at_ms = T0;
    s.commit(Batch {
        finished: vec![finished(&q[0], true)],
        rescheduled: vec![resched(&q[0], T0 + 86_400_000, p)],
        ..Batch::default()
    })
    .unwrap();
    let now = T0 + 600_000;
    let hint = |url: &str, lastmod: &str| SitemapHint {
        url: url.to_owned(),
        lastmod: Some(lastmod.to_owned()),
        changefreq: None,
    };
    // Changed before the last fetch: nothing moves. Unknown and pending URLs: nothing moves.
    let h = s
        .hint(
            &[
                hint("http://a/0", "2026-11-30T00:00:00Z"),
                hint("http://a/1", "2026-12-01T00:05:00Z"),
                hint("http://a/unknown", "2026-12-01T00:05:00Z"),
            ],
            &policy,
            now,
        )
        .unwrap();
    assert_eq!(h.moved, 0);
    assert_eq!(
        s.outlook(u64::MAX / 2, 10).unwrap().next_due_ms,
        Some(T0 + 86_400_000)
    );
    // Changed after it: due now.
    let h = s
        .hint(&[hint("http://a/0", "2026-12-01T00:05:00Z")], &policy, now)
        .unwrap();
    assert_eq!(h.moved, 1);
    assert_eq!(s.outlook(u64::MAX / 2, 10).unwrap().next_due_ms, Some(now));
    // Unparseable dates are reported, not applied.
    let h = s
        .hint(&[hint("http://a/0", "yesterday")], &policy, now)
        .unwrap();
    assert_eq!(
        h.anomalies,
        vec![crate::recrawl::Anomaly::LastmodUnparseable]
    );
    let got = s.promote_due(now, 10).unwrap();
    assert_eq!(got.len(), 1);
}

// --- operators: what they set on the crawl, and forced re-fetches ---

fn api() -> crate::control::Requester {
    crate::control::Requester::Api {
        peer: "127.0.0.1:5000".into(),
    }
}

fn hm(text: &str) -> crate::control::HostMatch {
    crate::control::HostMatch::parse(text).unwrap()
}

/// One change of every kind (and each once more where that changes nothing), as an operator would send them.
fn operator_changes() -> Vec<crate::control::Change> {
    use crate::control::{Change, Requester};
    let pause = |host: Option<&str>, at_ms: u64| Change::Pause {
        host: host.map(hm),
        at_ms,
        by: api(),
    };
    let resume = |host: Option<&str>, at_ms: u64| Change::Resume {
        host: host.map(hm),
        at_ms,
        by: api(),
    };
    let politeness = |delay_ms: Option<u64>, concurrency: Option<u32>| Change::Politeness {
        host: hm("a.example"),
        delay_ms,
        concurrency,
        until_ms: Some(T0 + 3_600_000),
        at_ms: T0,
        by: api(),
    };
    let drop = |at_ms: u64| Change::Drop {
        host: hm("b.example"),
        at_ms,
        by: api(),
    };
    let dropped = |requested_ms: u64| Change::Dropped {
        host: hm("b.example"),
        requested_ms,
        by: Requester::Process,
    };
    vec![
        pause(None, T0),
        pause(None, T0 + 1),
        pause(Some("a.example"), T0),
        pause(Some("a.example:8080"), T0),
        pause(Some("b.example"), T0),
        politeness(Some(2_000), Some(1)),
        politeness(Some(2_000), Some(1)),
        drop(T0 + 10),
        drop(T0 + 11),
        dropped(T0 + 9),
        dropped(T0 + 10),
        resume(Some("a.example:8080"), T0 + 20),
        resume(Some("c.example"), T0 + 20),
        resume(None, T0 + 20),
        resume(None, T0 + 21),
        politeness(None, None),
        Change::Pause {
            host: None,
            at_ms: T0 + 30,
            by: Requester::Alert {
                alert: "CrawlErrorsHigh".into(),
                fingerprint: "f00d".into(),
            },
        },
        pause(Some("[::1]:8443"), T0 + 30),
    ]
}

/// The operator state starts empty; every kind of change reads back as [`crate::control::OperatorState::apply`]
/// says (and `apply_operator` answers what it answers), the version changes with the state and only then, and
/// state and version survive a reopen.
pub fn operator_changes_read_back_and_survive_reopen(open: &Open) {
    let dir = tempfile::tempdir().unwrap();
    let mut model = crate::control::OperatorState::default();
    let last;
    {
        let mut s = open(dir.path());
        s.recover().unwrap();
        let (mut version, state) = s.operator_state().unwrap();
        assert!(state.is_empty(), "{state:?}");
        assert_eq!(
            s.operator_state().unwrap().0,
            version,
            "nothing changed, nor does the version"
        );
        for change in operator_changes() {
            let changed = model.apply(&change);
            assert_eq!(s.apply_operator(&change).unwrap(), changed, "{change:?}");
            let (v, state) = s.operator_state().unwrap();
            assert_eq!(state, model, "after {change:?}");
            if changed {
                assert_ne!(v, version, "the state changed with {change:?}");
            } else {
                assert_eq!(v, version, "nothing changed with {change:?}");
            }
            version = v;
        }
        assert!(model.crawl.is_some() && model.hosts.len() == 3, "{model:?}");
        last = (version, model.clone());
    }
    let mut s = open(dir.path());
    s.recover().unwrap();
    assert_eq!(s.operator_state().unwrap(), last, "after a reopen");
}

/// A forced re-fetch queues again each known URL that is done (fetched, or recorded without a fetch) or waiting in
/// the revisit schedule, once however often it is named: a done one as described, a scheduled one with its prior
/// visit and out of the schedule (never promoted later). Pending URLs (in a host's queue or the records queue) and
/// unknown ones are left out. Counters: pending grows by what was queued, done shrinks by the done ones queued,
/// scheduled by the scheduled ones (which count as done already, as when they are promoted); known stays. A
/// re-fetched URL is pending until it finishes, then may be re-fetched again; all of it survives a reopen.
pub fn refetch_queues_done_and_scheduled_urls_again(open: &Open) {
    let dir = tempfile::tempdir().unwrap();
    let a = host_fp("a");
    let excluded = |url: &str, host: &str| {
        let mut d = disc(url, host, 1);
        d.kind = JobKind::OutOfScope;
        d
    };
    {
        let mut s = open(dir.path());
        s.recover().unwrap();
        assert!(s.refetch(&[]).unwrap().is_empty());
        s.commit(Batch {
            discovered: vec![
                disc("http://a/0", "a", 0),
                disc("http://a/1", "a", 1),
                disc("http://a/2", "a", 1),
                disc("http://b/0", "b", 0),
                excluded("http://x/out", "x"),
                excluded("http://y/waits", "y"),
            ],
            ..Batch::default()
        })
        .unwrap();
        let q = s.next_urls(a, None, 10).unwrap();
        assert_eq!(urls(&q), vec!["http://a/0", "http://a/1", "http://a/2"]);
        let qb = s.next_urls(host_fp("b"), None, 10).unwrap();
        let rq = s.next_urls(RECORDS_HOST, None, 10).unwrap();
        assert_eq!(urls(&rq), vec!["http://x/out", "http://y/waits"]);
        let c = s
            .commit(Batch {
                finished: vec![
                    finished(&q[0], true),
                    finished(&q[1], true),
                    finished(&qb[0], true),
                    finished(&rq[0], false),
                ],
                records: vec![
                    (1, line("a0")),
                    (2, line("a1")),
                    (3, line("b0")),
                    (4, line("out")),
                ],
                rescheduled: vec![resched(&q[1], T0 + 3_600_000, prior(1, "\"one\""))],
                ..Batch::default()
            })
            .unwrap();
        let counts = |c: &Counters| (c.known, c.pending, c.done, c.scheduled);
        assert_eq!(counts(&c.counters), (6, 2, 4, 1));

        let got = s
            .refetch(&[
                disc("http://a/0", "a", 0),
                disc("http://a/1", "a", 1),
                disc("http://a/2", "a", 1),
                disc("http://a/unknown", "a", 1),
                disc("http://a/0", "a", 0),
                disc("http://b/0", "b", 0),
                disc("http://x/out", "x", 1),
                disc("http://y/waits", "y", 1),
            ])
            .unwrap();
        let entries: Vec<Entry> = got.iter().map(|g| g.entry.clone()).collect();
        assert_eq!(
            urls(&entries),
            vec!["http://a/0", "http://a/1", "http://b/0", "http://x/out"],
            "done and scheduled ones, once each, in the order asked"
        );
        assert_eq!(
            got.iter().map(|g| g.host.as_str()).collect::<Vec<_>>(),
            vec!["a", "a", "b", "x"]
        );
        let (a0, a1, out) = (&entries[0], &entries[1], &entries[3]);
        assert_eq!((a0.host, a0.depth, a0.kind), (a, 0, JobKind::Page));
        assert!(a0.prior.is_none());
        assert_eq!(a0.id, q[0].id, "the same URL");
        assert_eq!((a1.host, a1.depth, a1.kind), (a, 1, JobKind::Page));
        assert_eq!(a1.prior.as_deref(), Some(&prior(1, "\"one\"")));
        assert_eq!(
            (out.host, out.kind),
            (host_fp("x"), JobKind::Page),
            "a URL recorded without a fetch is fetched now"
        );
        assert!(entries.iter().all(|e| e.attempt == 0 && e.retries == 0));
        let c = s.commit(Batch::default()).unwrap();
        assert_eq!(counts(&c.counters), (6, 6, 1, 0));

        // In their hosts' queues, once each; the schedule entry is gone.
        let q = s.next_urls(a, None, 10).unwrap();
        let mut listed = urls(&q);
        listed.sort_unstable();
        assert_eq!(listed, vec!["http://a/0", "http://a/1", "http://a/2"]);
        assert_eq!(
            q.iter()
                .find(|e| e.url == "http://a/1")
                .and_then(|e| e.prior.as_deref()),
            Some(&prior(1, "\"one\""))
        );
        assert_eq!(
            urls(&s.next_urls(host_fp("x"), None, 10).unwrap()),
            vec!["http://x/out"]
        );
        assert!(s.promote_due(u64::MAX / 2, 10).unwrap().is_empty());
        assert_eq!(s.outlook(u64::MAX / 2, 10).unwrap(), Outlook::default());
        // Pending now: named again, left out.
        assert!(
            s.refetch(&[disc("http://a/0", "a", 0), disc("http://a/1", "a", 1)])
                .unwrap()
                .is_empty()
        );

        // Finished (the revisit without a next visit: done for good), they may be re-fetched again.
        let done: Vec<Finished> = q
            .iter()
            .filter(|e| e.url != "http://a/2")
            .map(|e| finished(e, true))
            .collect();
        let c = s
            .commit(Batch {
                finished: done,
                ..Batch::default()
            })
            .unwrap();
        assert_eq!(counts(&c.counters), (6, 4, 3, 0));
        let again = s
            .refetch(&[disc("http://a/1", "a", 2), disc("http://a/0", "a", 0)])
            .unwrap();
        assert_eq!(
            again
                .iter()
                .map(|g| g.entry.url.as_str())
                .collect::<Vec<_>>(),
            vec!["http://a/1", "http://a/0"]
        );
        assert!(
            again.iter().all(|g| g.entry.prior.is_none()),
            "no schedule entry any more"
        );
        assert_eq!(again[0].entry.depth, 2, "a done URL goes where it is asked");
        assert!(s.promote_due(u64::MAX / 2, 10).unwrap().is_empty());
    }
    let mut s = open(dir.path());
    let r = s.recover().unwrap();
    assert_eq!(
        (
            r.counters.known,
            r.counters.pending,
            r.counters.done,
            r.counters.scheduled
        ),
        (6, 6, 1, 0)
    );
    let mut hosts: Vec<(String, u64)> = r
        .hosts
        .iter()
        .map(|h| (h.name.clone(), h.pending))
        .collect();
    hosts.sort();
    assert_eq!(
        hosts,
        vec![
            (String::new(), 1),
            ("a".into(), 3),
            ("b".into(), 1),
            ("x".into(), 1)
        ]
    );
    assert_eq!(s.next_urls(a, None, 10).unwrap().len(), 3);
    assert!(
        s.refetch(&[
            disc("http://a/1", "a", 1),
            disc("http://b/0", "b", 0),
            disc("http://y/waits", "y", 1)
        ])
        .unwrap()
        .is_empty(),
        "still pending after a reopen"
    );
}
