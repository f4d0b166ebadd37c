//! Unit tests of [`Crawl`] (continued): throttling and retries, panics and fetcher loss, max_pages, drain, and
//! durability across a reopen of the store. The harness is in the parent module.

use super::*;

#[test]
fn throttled_page_pauses_its_host_then_is_recorded_with_the_status() {
    let mut h = H::new(settings(), policy(1));
    h.seed("http://a.test/1");
    let j = h.one(0);
    h.done(&j, status(429, Some(Duration::from_secs(30))), 0);
    h.seed("http://b.test/1");
    let (jobs, wake) = h.lease(1000);
    assert_eq!(jobs.len(), 1, "another host is not paused");
    assert_eq!(jobs[0].entry.url, "http://b.test/1");
    assert_eq!(wake, Some(h.at(30_000)));
    h.done(&jobs[0], ok(Vec::new()), 1000);
    assert!(h.lease(29_999).0.is_empty());

    let j = h.one(30_000);
    assert_eq!(
        (j.entry.url.as_str(), j.entry.retries),
        ("http://a.test/1", 1)
    );
    h.done(&j, status(503, Some(Duration::from_secs(10))), 30_000);
    assert!(h.lease(39_999).0.is_empty());
    let j = h.one(40_000);
    assert_eq!(j.entry.retries, 2);
    h.done(&j, status(429, Some(Duration::from_secs(10))), 40_000);
    h.flush();
    let r = h.record("http://a.test/1");
    assert_eq!((r.outcome, r.status), (Outcome::Fetched, Some(429)));
    assert_eq!(r.attempts, 3);
    assert_eq!(h.crawl.stats().retries, 2);
    // the host stays paused after the last 429, but nothing is left to do
    assert!(h.lease(40_000).0.is_empty());
    assert_eq!(h.crawl.finished(), Some(FinishReason::Completed));
}

#[test]
fn retryable_failure_backs_off_then_is_recorded_non_retryable_at_once() {
    let mut h = H::new(settings(), policy(1));
    h.seed("http://a.test/slow");
    let j = h.one(0);
    h.done(&j, failed(Reason::Timeout, true), 0);
    assert_eq!(h.lease(0).1, Some(h.at(1000)), "retry_base");
    let j = h.one(1000);
    assert_eq!(j.entry.retries, 1);
    h.done(&j, failed(Reason::Timeout, true), 1000);
    assert_eq!(h.lease(1000).1, Some(h.at(3000)), "doubled");
    let j = h.one(3000);
    h.done(&j, failed(Reason::Timeout, true), 3500);
    assert!(h.lease(100_000).0.is_empty());
    h.flush();
    let r = h.record("http://a.test/slow");
    assert_eq!(
        (r.outcome, r.reason, r.status),
        (Outcome::Failed, Some(Reason::Timeout), None)
    );
    assert_eq!(r.attempts, 3);
    assert_eq!(r.elapsed_ms, Some(500));
    assert_eq!(r.error.as_deref(), Some("synthetic timeout"));

    h.seed("http://b.test/nx");
    let j = h.one(100_000);
    h.done(&j, failed(Reason::Dns, false), 100_000);
    assert!(h.lease(200_000).0.is_empty());
    h.flush();
    let r = h.record("http://b.test/nx");
    assert_eq!((r.reason, r.attempts), (Some(Reason::Dns), 1));
    assert_eq!(h.crawl.finished(), Some(FinishReason::Completed));
}

#[test]
fn panics_redrive_with_a_new_lease_then_poison() {
    let mut h = H::new(settings(), policy(1));
    h.seed("http://a.test/poison");
    let mut ids = HashSet::new();
    for attempt in 0..3 {
        let j = h.one(0);
        assert_eq!(j.entry.attempt, attempt);
        assert!(ids.insert(j.id), "a re-driven url gets a new job id");
        h.done(&j, panicked(), 0);
    }
    assert!(h.lease(0).0.is_empty());
    h.flush();
    let r = h.record("http://a.test/poison");
    assert_eq!(
        (r.outcome, r.reason),
        (Outcome::Failed, Some(Reason::Poison))
    );
    assert_eq!(r.attempts, 3, "tried three times");
    assert!(
        r.error
            .as_deref()
            .unwrap()
            .contains("parser panicked 3 times")
    );
    assert_eq!(h.crawl.stats().panics, 3);
    assert_eq!(h.crawl.finished(), Some(FinishReason::Completed));
}

#[test]
fn fetcher_down_redrives_its_jobs_and_late_results_are_stale() {
    let mut h = H::new(settings(), policy(1));
    for host in ["a", "b", "c"] {
        h.seed(&format!("http://{host}.test/1"));
    }
    let (jobs, _) = h.lease(0);
    assert_eq!(jobs.len(), 3);
    let by = |u: &str| {
        jobs.iter()
            .find(|j| j.entry.url.contains(u))
            .unwrap()
            .clone()
    };
    let (a, b, c) = (by("a.test"), by("b.test"), by("c.test"));
    h.crawl.assign(a.id, 0);
    h.crawl.assign(b.id, 0);
    h.crawl.assign(c.id, 1);
    h.crawl
        .fetcher_down(0, Some(a.id), "fetcher panicked", h.at(0));
    assert_eq!(h.crawl.in_flight(), 1, "only c is still held");

    let (again, _) = h.lease(0);
    assert_eq!(again.len(), 2, "a and b are leased again at once");
    let a2 = again.iter().find(|j| j.entry.url == a.entry.url).unwrap();
    let b2 = again.iter().find(|j| j.entry.url == b.entry.url).unwrap();
    assert_eq!(a2.entry.attempt, 1, "the panicked job counts an attempt");
    assert_eq!(b2.entry.attempt, 0, "the others do not");
    assert!(a2.id != a.id && b2.id != b.id);

    // the old leases answer late: ignored
    h.done(&a, ok(inscope(&["http://a.test/late"])), 0);
    h.done(&b, ok(Vec::new()), 0);
    assert_eq!(h.crawl.stats().stale_results, 2);
    for j in [a2.clone(), b2.clone(), c] {
        h.done(&j, ok(Vec::new()), 0);
    }
    // a late duplicate of an answered job is stale too
    h.done(b2, ok(Vec::new()), 0);
    assert_eq!(h.crawl.stats().stale_results, 3);
    assert!(h.lease(0).0.is_empty());
    h.flush();
    h.assert_unique();
    assert_eq!(
        h.file.len(),
        3,
        "a/late from the stale result is not admitted"
    );
    assert_eq!(h.record(&a.entry.url).attempts, 2);
    assert_eq!(h.record(&b.entry.url).attempts, 1);
    assert_eq!(h.crawl.finished(), Some(FinishReason::Completed));
}

#[test]
fn robots_poisoned_with_other_work_in_flight_releases_the_host_once() {
    let s = CrawlSettings {
        respect_robots: true,
        robots_cache: Duration::from_secs(60),
        ..settings()
    };
    let mut h = H::new(s, policy(2));
    for i in 1..=5 {
        h.seed(&format!("http://a.test/{i}"));
    }
    let r = h.one(0);
    h.done(
        &r,
        JobResult::Robots(RobotsOutcome::AllowAll { status: 404 }),
        0,
    );
    let (pages, _) = h.lease(0);
    assert_eq!(pages.len(), 2);
    // the cache expires while /2 is in flight: robots.txt is fetched again next to it, and panics every time
    h.done(&pages[0], ok(Vec::new()), 61_000);
    for _ in 0..3 {
        let r = h.one(61_000);
        assert_eq!(r.entry.kind, JobKind::Robots);
        h.done(&r, panicked(), 61_000);
    }
    // poisoned robots.txt counts as unavailable: retried after robots_retry, with /2 still in flight
    let r = h.one(71_000);
    assert_eq!(r.entry.kind, JobKind::Robots);
    h.done(
        &r,
        JobResult::Robots(RobotsOutcome::AllowAll { status: 404 }),
        71_000,
    );
    let (more, _) = h.lease(71_000);
    assert_eq!(
        more.len(),
        1,
        "per-host concurrency 2 with /2 still in flight"
    );
    h.done(&pages[1], ok(Vec::new()), 71_000);
    assert_eq!(h.lease(71_000).0.len(), 1);
}

#[test]
fn max_pages_stops_leasing_and_leaves_the_rest_pending() {
    let s = CrawlSettings {
        max_pages: 2,
        ..settings()
    };
    let mut h = H::new(s.clone(), policy(1));
    for host in ["a", "b", "c", "d"] {
        h.seed(&format!("http://{host}.test/"));
    }
    let (jobs, _) = h.lease(0);
    assert_eq!(jobs.len(), 2, "max_pages counts leases");
    assert_eq!(h.crawl.finished(), None);
    h.done(&jobs[0], ok(inscope(&["http://a.test/next"])), 0);
    assert!(h.lease(0).0.is_empty(), "one done plus one lease");
    h.done(&jobs[1], ok(Vec::new()), 0);
    assert!(h.lease(0).0.is_empty());
    assert_eq!(h.crawl.finished(), None, "records not written yet");
    h.flush();
    assert_eq!(h.crawl.finished(), Some(FinishReason::LimitReached));
    assert_eq!(h.file.len(), 2);

    let leased: HashSet<String> = h.leased_urls().into_iter().collect();
    let (dir, file) = h.close();
    let (pending_entries, rec) = stored(dir.path());
    let pending: HashSet<String> = pending_entries.iter().map(|e| e.url.clone()).collect();
    let all: HashSet<String> = ["a", "b", "c", "d"]
        .iter()
        .map(|h| format!("http://{h}.test/"))
        .chain(["http://a.test/next".to_owned()])
        .collect();
    assert_eq!(pending, &all - &leased);
    assert_eq!(pending.len(), 3);
    assert_eq!(rec.counters.pages_fetched, 2);
    assert!(rec.outbox.is_empty());

    // a resumed crawl with the same limit leases nothing more
    let mut h = H::resume(dir, s, policy(1), file);
    assert!(h.lease(0).0.is_empty());
    assert_eq!(h.crawl.finished(), Some(FinishReason::LimitReached));
}

#[test]
fn drain_stops_leasing_and_finishes_with_shutdown() {
    let mut h = H::new(settings(), policy(1));
    h.seed("http://a.test/");
    h.seed("http://b.test/");
    let (jobs, _) = h.lease(0);
    assert_eq!(jobs.len(), 2);
    h.seed("http://c.test/");
    h.crawl.drain();
    assert!(h.crawl.is_draining());
    assert!(h.lease(0).0.is_empty());
    h.done(&jobs[0], ok(inscope(&["http://a.test/child"])), 0);
    assert!(h.lease(0).0.is_empty());
    assert_eq!(h.crawl.finished(), None, "a lease is still out");
    h.done(&jobs[1], ok(Vec::new()), 0);
    assert_eq!(h.crawl.finished(), None, "records staged");
    let out = h.commit();
    assert_eq!(out.len(), 2);
    assert_eq!(h.crawl.finished(), None, "records committed, not written");
    assert_eq!(h.crawl.pending_writes(), 2);
    h.written(out[1].0);
    assert_eq!(h.crawl.pending_writes(), 0);
    assert_eq!(h.crawl.finished(), None, "the outbox trim is staged");
    assert!(h.crawl.has_staged());
    assert!(h.commit().is_empty());
    assert_eq!(h.crawl.finished(), Some(FinishReason::Shutdown));

    let (dir, _) = h.close();
    let (pending_entries, rec) = stored(dir.path());
    let mut pending: Vec<_> = pending_entries.iter().map(|e| e.url.as_str()).collect();
    pending.sort();
    assert_eq!(pending, ["http://a.test/child", "http://c.test/"]);
    assert!(rec.outbox.is_empty());
}

#[test]
fn windows_let_go_of_their_urls_once_leasing_stops_and_the_store_keeps_them() {
    let mut h = H::new(settings(), policy(1));
    h.seed("http://a.test/");
    let root = h.one(0);
    let links: Vec<String> = (0..40).map(|i| format!("http://a.test/p{i}")).collect();
    let refs: Vec<&str> = links.iter().map(String::as_str).collect();
    h.done(&root, ok(inscope(&refs)), 0);
    h.commit();
    h.lease(0);
    assert!(
        h.crawl.windows.hosts().queued() > 0,
        "the host window holds the new links"
    );
    h.crawl.drain();
    assert!(h.lease(0).0.is_empty());
    assert_eq!(
        h.crawl.windows.hosts().queued(),
        0,
        "nothing held once leasing stopped"
    );
    h.commit();
    let (dir, _) = h.close();
    let (pending, _) = stored(dir.path());
    assert_eq!(
        pending.len(),
        40,
        "every link stays pending in the store, the one leased too"
    );
}

#[test]
fn commit_reopen_and_resume_continue_without_rerecording() {
    let mut h = H::new(settings(), policy(1));
    h.seed("http://a.test/");
    let root = h.one(0);
    let links = vec![
        link("http://a.test/x", ScopeVerdict::InScope),
        link("http://a.test/y", ScopeVerdict::InScope),
        link("http://b.test/", ScopeVerdict::OutOfScope),
    ];
    h.done(&root, ok(links), 0);
    let out = h.commit();
    assert_eq!(
        out.iter()
            .map(|(s, r)| (*s, r.url.as_str()))
            .collect::<Vec<_>>(),
        [(1, "http://a.test/"), (2, "http://b.test/")]
    );
    // only the first line reaches the file; its outbox copy is trimmed
    h.file.push(out[0].1.clone());
    h.written(1);
    h.commit();
    // x is fetched but never committed: it must be fetched again
    let x = h.one(0);
    h.done(&x, ok(Vec::new()), 0);
    let (dir, file) = h.close();

    {
        let (pending_entries, rec) = stored(dir.path());
        let pending: Vec<_> = pending_entries.iter().map(|e| e.url.as_str()).collect();
        assert_eq!(pending, ["http://a.test/x", "http://a.test/y"]);
        assert_eq!(pending_entries[0].parent.as_deref(), Some("http://a.test/"));
        assert_eq!(pending_entries[0].depth, 1);
        assert_eq!(rec.outbox.len(), 1);
        assert_eq!(rec.outbox[0].0, 2);
        assert_eq!(parse(&rec.outbox[0].1).url, "http://b.test/");
        assert_eq!(
            (
                rec.counters.known,
                rec.counters.done,
                rec.counters.pages_fetched
            ),
            (4, 2, 1)
        );
        assert_eq!(rec.next_record, 3);
    }

    let mut h = H::resume(dir, settings(), policy(1), file);
    assert_eq!(h.file.len(), 2, "the outbox record was written on resume");
    assert!(!h.seed("http://a.test/"), "a done seed is not added again");
    assert_eq!(h.crawl.stats().resumed, 2);
    let x = h.one(0);
    assert_eq!(x.entry.url, "http://a.test/x");
    let back = inscope(&["http://a.test/", "http://a.test/y", "http://a.test/x"]);
    h.done(&x, ok(back), 0);
    let y = h.one(0);
    h.done(
        &y,
        ok(vec![link("http://b.test/", ScopeVerdict::OutOfScope)]),
        0,
    );
    assert!(h.lease(0).0.is_empty());
    let new = h.flush();
    let urls: Vec<_> = new.iter().map(|r| r.url.as_str()).collect();
    assert_eq!(urls, ["http://a.test/x", "http://a.test/y"]);
    h.assert_unique();
    assert_eq!(h.file.len(), 4);
    assert_eq!(h.crawl.stats().known, 4);
    assert_eq!(h.crawl.finished(), Some(FinishReason::Completed));

    let (dir, _) = h.close();
    let (pending_entries, rec) = stored(dir.path());
    assert!(pending_entries.is_empty());
    assert!(rec.outbox.is_empty());
    assert_eq!((rec.counters.done, rec.next_record), (4, 5));
}

#[test]
fn retry_counters_survive_a_reopen_and_commit_is_due_by_ops() {
    let s = CrawlSettings {
        commit_max_ops: 2,
        ..settings()
    };
    let mut h = H::new(s.clone(), policy(1));
    h.seed("http://a.test/");
    assert!(!h.crawl.has_staged(), "the harness committed the seed");
    let j = h.one(0);
    h.done(&j, status(503, None), 0);
    assert!(h.crawl.has_staged() && !h.crawl.commit_due(), "one update");
    let j = h.one(1000);
    h.done(&j, panicked(), 1000);
    h.crawl
        .add_seed(&canon::canonicalize("http://a.test/later").unwrap());
    assert!(h.crawl.commit_due(), "an update and a seed");
    assert!(h.commit().is_empty(), "no record yet");
    let (dir, file) = h.close();
    let mut h = H::resume(dir, s, policy(1), file);
    let j = h.one(0);
    assert_eq!((j.entry.retries, j.entry.attempt), (1, 1));
    h.done(&j, ok(Vec::new()), 0);
    h.flush();
    assert_eq!(h.record("http://a.test/").attempts, 3);
}

#[test]
fn body_errors_and_unexpected_results_are_recorded_failed() {
    let mut h = H::new(settings(), policy(1));
    h.seed("http://a.test/big");
    h.seed("http://a.test/odd");
    let j = h.one(0);
    let out = PageOutcome {
        status: 200,
        content_length: 5000,
        links_found: 3,
        links: inscope(&["http://a.test/never"]),
        body_error: Some((Reason::TooLarge, "body over 4096 bytes".into())),
        ..PageOutcome::default()
    };
    h.done(&j, JobResult::Page(Box::new(out)), 0);
    let j = h.one(0);
    h.done(&j, JobResult::Sitemap(SitemapOutcome::default()), 0);
    assert!(
        h.lease(0).0.is_empty(),
        "links of an unusable body are not followed"
    );
    h.flush();
    let big = h.record("http://a.test/big");
    assert_eq!(
        (big.outcome, big.reason, big.status, big.links),
        (Outcome::Failed, Some(Reason::TooLarge), Some(200), None)
    );
    assert_eq!(big.error.as_deref(), Some("body over 4096 bytes"));
    let odd = h.record("http://a.test/odd");
    assert_eq!((odd.reason, odd.attempts), (Some(Reason::Protocol), 1));
    assert_eq!(h.file.len(), 2);
    let s = h.crawl.stats();
    assert_eq!((s.failed, s.fetched), (2, 0));
    assert_eq!(s.by_reason.get("too_large"), Some(&1));
}

#[test]
fn expired_leases_redrive_and_only_the_first_on_a_fetcher_counts_an_attempt() {
    let s = CrawlSettings {
        lease_timeout: Duration::from_secs(5),
        ..settings()
    };
    let mut h = H::new(s, policy(2));
    h.seed("http://a.test/1");
    h.seed("http://a.test/2");
    let (jobs, _) = h.lease(0);
    assert_eq!(jobs.len(), 2);
    for j in &jobs {
        h.crawl.assign(j.id, 0);
    }
    assert_eq!(h.crawl.next_deadline(), Some(h.at(5000)));
    assert!(h.crawl.expire_leases(h.at(4999)).is_empty());
    let expired = h.crawl.expire_leases(h.at(5000));
    assert_eq!(
        expired.len(),
        1,
        "the second job on that fetcher is re-driven silently"
    );
    assert_eq!(expired[0].1, Some(0));
    assert!(h.crawl.is_suspect(0));
    h.crawl.fetcher_back(0);
    let again = h.lease(5000).0;
    assert_eq!(again.len(), 2);
    let attempts: Vec<u32> = again.iter().map(|j| j.entry.attempt).collect();
    assert_eq!(attempts.iter().sum::<u32>(), 1, "{attempts:?}");
    // a late result of an expired lease is stale
    h.done(&jobs[0], ok(Vec::new()), 5001);
    assert_eq!(h.crawl.stats().stale_results, 1);
}

#[test]
fn leasing_waits_while_the_store_is_behind() {
    let s = CrawlSettings {
        commit_max_ops: 2,
        ..settings()
    };
    let mut h = H::new(s, policy(4));
    for i in 0..6 {
        h.seed(&format!("http://a.test/{i}"));
    }
    let (jobs, _) = h.lease(0);
    assert_eq!(jobs.len(), 4);
    let j = jobs[0].clone();
    let batch_in_flight = {
        h.done(&j, ok(inscope(&["http://a.test/x", "http://a.test/y"])), 0);
        h.crawl.take_commit(h.at(0)).expect("a batch")
    };
    // four more changes wait behind the commit in flight: no new lease until it is answered
    h.crawl
        .add_seed(&canon::canonicalize("http://b.test/1").unwrap());
    h.crawl
        .add_seed(&canon::canonicalize("http://b.test/2").unwrap());
    h.crawl
        .add_seed(&canon::canonicalize("http://b.test/3").unwrap());
    h.crawl
        .add_seed(&canon::canonicalize("http://b.test/4").unwrap());
    assert!(h.crawl.next_jobs(h.at(1)).0.is_empty(), "backlogged");
    let res = h.store.commit(batch_in_flight);
    h.crawl.commit_done(res, h.at(1)).unwrap();
    assert!(!h.crawl.next_jobs(h.at(1)).0.is_empty(), "leasing again");
}

#[test]
fn parses_lost_with_a_replaced_parser_are_leased_again_without_an_attempt() {
    let mut h = H::new(settings(), policy(1));
    for host in ["a", "b", "c"] {
        h.seed(&format!("http://{host}.test/1"));
    }
    let (jobs, _) = h.lease(0);
    assert_eq!(jobs.len(), 3);
    for j in &jobs {
        h.crawl.assign(j.id, 0);
    }
    // Two waited behind a stuck parser; one of them had already been answered (its id is no longer leased).
    h.done(&jobs[1], ok(Vec::new()), 0);
    h.crawl.parses_lost(&[jobs[0].id, jobs[1].id], h.at(0));
    assert_eq!(h.crawl.in_flight(), 1, "only the third is still held");
    let (again, _) = h.lease(0);
    assert_eq!(again.len(), 1, "the lost one is leased again at once");
    assert_eq!(again[0].entry.url, jobs[0].entry.url);
    assert_eq!(again[0].entry.attempt, 0, "no attempt is counted");
    // Its old lease answering late (the stuck thread woke up) is stale.
    h.done(&jobs[0], ok(Vec::new()), 0);
    assert_eq!(h.crawl.stats().stale_results, 1);
    h.done(&again[0], ok(Vec::new()), 0);
    h.done(&jobs[2], ok(Vec::new()), 0);
    h.flush();
    h.assert_unique();
    assert_eq!(h.file.len(), 3);
    assert_eq!(h.record(&jobs[0].entry.url).attempts, 1);
    assert_eq!(h.crawl.finished(), Some(FinishReason::Completed));
}
