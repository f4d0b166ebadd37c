//! Continuous crawling through the scheduler and a real store: a fetched page is scheduled with its finish, comes
//! back from the store when due with its prior visit, is fetched conditionally and recorded as the next visit;
//! the crawl never completes; max_pages counts this run; the host budget holds a host's revisits.

use super::*;
use crawl_core::config::RecrawlConfig;

fn recrawl(per_minute: u32) -> RecrawlConfig {
    RecrawlConfig {
        enabled: true,
        interval: Duration::from_secs(60),
        min_interval: Duration::from_secs(1),
        host_revisits_per_minute: per_minute,
        ..RecrawlConfig::default()
    }
}

fn page(etag: &str, digest: &str) -> JobResult {
    JobResult::Page(Box::new(PageOutcome {
        status: 200,
        content_type: Some("text/html".into()),
        content_length: 10,
        http_version: "HTTP/1.1".into(),
        etag: Some(etag.into()),
        digest: Some(digest.into()),
        requested_at_ms: 1_796_083_200_000,
        ..PageOutcome::default()
    }))
}

fn not_modified(etag: &str) -> JobResult {
    JobResult::Page(Box::new(PageOutcome {
        status: 304,
        http_version: "HTTP/1.1".into(),
        etag: Some(etag.into()),
        requested_at_ms: 1_796_083_300_000,
        ..PageOutcome::default()
    }))
}

/// Promotes what the store finds due at `ms` since the Unix epoch, as the actor does every second.
fn promote(h: &mut H, unix_ms: u64) -> usize {
    let added = h.store.promote_due(unix_ms, 1024).unwrap();
    let n = added.len();
    let now = h.t0;
    h.crawl.promoted(added, now);
    n
}

#[test]
fn a_fetched_page_comes_back_when_due_and_is_fetched_conditionally_as_the_next_visit() {
    let mut h = H::new(settings(), policy(1)).revisiting(&recrawl(0));
    assert!(h.seed("http://a.test/"));
    let job = h.one(0);
    assert!(job.entry.prior.is_none(), "a first visit");
    h.done(&job, page("\"v1\"", "sha1:AAAA"), 1);
    let recs = h.commit();
    assert_eq!(recs.len(), 1);
    let v = recs[0].1.revisit.clone().expect("revisit fields");
    assert_eq!((v.visit, v.changed), (1, None));
    let due = v.next_due_at.expect("due");
    let first_id = recs[0].1.record_id.clone().expect("one id per fetch");
    assert!(
        h.crawl.finished().is_none(),
        "a continuous crawl does not complete"
    );

    // Not due yet a minute minus 5 %, due after a minute plus 5 % (the first interval, jittered).
    let fetched = 1_796_083_200_000;
    assert_eq!(promote(&mut h, fetched + 56_000), 0, "not yet: {due}");
    assert_eq!(promote(&mut h, fetched + 64_000), 1);
    let again = h.one(10);
    let prior = again
        .entry
        .prior
        .as_deref()
        .expect("a revisit carries its prior");
    assert_eq!(prior.validators.etag.as_deref(), Some("\"v1\""));
    assert_eq!(prior.visits, 1);
    h.done(&again, not_modified("\"v1\""), 11);
    let recs = h.commit();
    let r = &recs[0].1;
    assert_eq!(r.status, Some(304));
    let v = r.revisit.clone().expect("revisit fields");
    assert_eq!((v.visit, v.changed), (2, Some(false)));
    assert!(v.previous_fetched_at.is_some());
    let second_id = r.record_id.clone().expect("one id per fetch");
    assert_ne!(second_id, first_id, "a new id for the new fetch");
    assert_eq!(promote(&mut h, fetched + 65_000), 0, "promoted once");
}

#[test]
fn max_pages_counts_this_runs_fetches_and_the_budget_holds_a_hosts_revisits() {
    let mut s = settings();
    s.max_pages = 100;
    let mut h = H::new(s.clone(), policy(4));
    for i in 0..4 {
        h.seed(&format!("http://a.test/{i}"));
    }
    let (jobs, _) = h.lease(0);
    assert_eq!(jobs.len(), 4);
    for j in &jobs {
        h.done(j, page("\"x\"", "sha1:X"), 0);
    }
    h.flush();
    let (dir, file) = h.close();
    // A new run with continuous crawling and 4 fetches done before: max_pages 7 lets this run fetch 7 pages (it
    // counts this run's fetches only): 4 new ones, then revisits, 2 a minute from the host's budget.
    s.max_pages = 7;
    let mut h = H::resume(dir, s, policy(4), file).revisiting(&recrawl(2));
    // The first run had no [recrawl]: nothing is scheduled. Finish the URLs again in this run so they are.
    assert_eq!(h.store.promote_due(u64::MAX / 2, 10).unwrap().len(), 0);
    let mut e = |i: u32| {
        h.seed(&format!("http://a.test/new{i}"));
    };
    for i in 0..4 {
        e(i);
    }
    let (jobs, _) = h.lease(0);
    assert_eq!(jobs.len(), 4, "max_pages counts this run: {jobs:?}");
    for j in &jobs {
        h.done(j, page("\"y\"", "sha1:Y"), 0);
    }
    h.commit();
    assert_eq!(promote(&mut h, 1_796_083_200_000 + 64_000), 4);
    let (jobs, wake) = h.lease(1_000);
    assert_eq!(jobs.len(), 2, "two revisits a minute: {jobs:?}");
    assert!(jobs.iter().all(|j| j.entry.prior.is_some()));
    let wake = wake.expect("woken when the next token comes");
    assert_eq!(wake - h.at(1_000), Duration::from_secs(30));
    assert!(h.lease(30_999).0.is_empty());
    let (jobs, _) = h.lease(31_000);
    assert_eq!(jobs.len(), 1, "the 7th page of this run");
    for j in &jobs {
        h.done(j, not_modified("\"y\""), 31_000);
    }
    assert!(h.lease(120_000).0.is_empty(), "max_pages reached");
}
