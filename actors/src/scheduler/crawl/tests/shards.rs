//! Unit tests of [`Crawl`] in a crawl shared by many processes: only hosts of owned shards are crawled, a lease
//! that runs out on the local clock stops new requests until it is renewed, gained hosts wait their delay, lost
//! hosts start nothing more, fenced records are not written and the numbering stays gapless, and records carry
//! their crawl-wide id. The store is the embedded one; the gate is a table the test sets.

use super::*;
use crawl_core::frontier::{HostInfo, host_fp};
use crawl_core::politeness::PolitenessPolicy;
use std::sync::Mutex;

/// Two shards by host fingerprint parity; the test says which are owned and whether their lease is live.
#[derive(Debug, Default)]
pub(in crate::scheduler::crawl) struct Table {
    pub(in crate::scheduler::crawl) owned: Mutex<HashSet<u32>>,
    pub(in crate::scheduler::crawl) expired: Mutex<HashSet<u32>>,
    pub(in crate::scheduler::crawl) handoff: Mutex<HashSet<u32>>,
    pub(in crate::scheduler::crawl) quiet: Mutex<HashSet<u32>>,
}

impl ShardGate for Table {
    fn shard_of(&self, host: Fp) -> u32 {
        (host % 2) as u32
    }
    fn may_start(&self, host: Fp) -> bool {
        let s = self.shard_of(host);
        self.owns(s) && !self.expired.lock().unwrap().contains(&s)
    }
    fn owns(&self, shard: u32) -> bool {
        self.owned.lock().unwrap().contains(&shard)
    }
    fn owned_count(&self) -> usize {
        self.owned.lock().unwrap().len()
    }
    fn handoffs(&self) -> Vec<u32> {
        self.handoff.lock().unwrap().iter().copied().collect()
    }
    fn quiet(&self, shard: u32) {
        self.quiet.lock().unwrap().insert(shard);
    }
}

/// A crawl whose hosts belong to the shards of `gate` (any scope, depth 10, nothing resumed).
fn sharded(settings: CrawlSettings, pol: PolitenessPolicy, t0: Instant, gate: Arc<Table>) -> Crawl {
    sharded_over(settings, HostQueues::new(pol), t0, gate)
}

/// [`sharded`] over the given host queues.
fn sharded_over(
    settings: CrawlSettings,
    queues: HostQueues,
    t0: Instant,
    gate: Arc<Table>,
) -> Crawl {
    Crawl::new(
        settings,
        Arc::new(ScopePolicy::new(
            ScopeMode::Any,
            &[],
            Vec::new(),
            Vec::new(),
            10,
        )),
        queues,
        Resume::default(),
        JsonlCheckpoint::default(),
        t0,
    )
    .with_shards(gate)
}

/// A crawl that obeys robots.txt and owns the shard of one host `a`, seeded with `http://a/`.
fn one_owned_host_with_robots() -> (String, Arc<Table>, H) {
    let (a, _) = two_hosts();
    let gate = Arc::new(Table::default());
    gate.owned.lock().unwrap().insert(shard(&a));
    let with_robots = CrawlSettings {
        respect_robots: true,
        ..settings()
    };
    let mut h = H::new(with_robots.clone(), policy(1));
    h.crawl = sharded(with_robots, policy(1), h.t0, gate.clone());
    h.seed(&format!("http://{a}/"));
    (a, gate, h)
}

/// A crawl (default settings, one request per host) that owns `shard` and nothing else.
fn owning(shard: u32) -> (Arc<Table>, H) {
    let gate = Arc::new(Table::default());
    gate.owned.lock().unwrap().insert(shard);
    let mut h = H::new(settings(), policy(1));
    h.crawl = sharded(settings(), policy(1), h.t0, gate.clone());
    (gate, h)
}

/// Two hosts in different shards.
fn two_hosts() -> (String, String) {
    let mut names = (0..50).map(|i| format!("h{i}.test"));
    let a = names.next().unwrap();
    let b = names.find(|n| host_fp(n) % 2 != host_fp(&a) % 2).unwrap();
    (a, b)
}

fn shard(host: &str) -> u32 {
    (host_fp(host) % 2) as u32
}

fn gained(shard: u32, hosts: &[&str]) -> ShardChanges {
    ShardChanges {
        gained: vec![(
            shard,
            hosts
                .iter()
                .map(|h| crawl_core::frontier::HostInfo {
                    fp: host_fp(h),
                    name: (*h).to_owned(),
                    pending: 1,
                    paused_until_ms: 0,
                    backoff_level: 0,
                })
                .collect(),
        )],
        ..ShardChanges::default()
    }
}

#[test]
fn only_owned_shards_are_crawled_and_ownership_moves_hosts_in_and_out() {
    let (a, b) = two_hosts();
    let gate = Arc::new(Table::default());
    gate.owned.lock().unwrap().insert(shard(&a));
    let pol = PolitenessPolicy {
        min_delay: Duration::from_millis(100),
        ..policy(1)
    };
    let mut h = H::new(settings(), pol.clone());
    let sharded = sharded(settings(), pol, h.t0, gate.clone());
    h.crawl = sharded;
    h.seed(&format!("http://{a}/"));
    h.seed(&format!("http://{b}/"));
    let jobs = h.lease(0).0;
    let urls: Vec<&str> = jobs.iter().map(|j| j.entry.url.as_str()).collect();
    assert_eq!(
        urls,
        [format!("http://{a}/")],
        "the other shard's host is not ours"
    );

    // The record carries the crawl-wide id.
    h.done(
        &jobs[0],
        ok(inscope(&[
            &format!("http://{a}/2"),
            &format!("http://{a}/3"),
        ])),
        0,
    );
    let out = h.commit();
    let r = &out[0].1;
    assert_eq!(
        r.record_id.as_deref(),
        Some(
            format!(
                "{:016x}-{:x}",
                crawl_core::frontier::url_fp(&format!("http://{a}/")),
                jobs[0].entry.seq
            )
            .as_str()
        )
    );

    // The other shard comes to us: its host is read from the store and waits its delay (100 ms) first.
    gate.owned.lock().unwrap().insert(shard(&b));
    h.crawl
        .shards_changed(gained(shard(&b), &[&b]), h.crawl.poll_token(), h.at(10));
    let early: Vec<String> = h.lease(20).0.iter().map(|j| j.entry.url.clone()).collect();
    assert!(!early.iter().any(|u| u.contains(&b)), "{early:?}");
    let later = h.lease(200).0;
    for j in &later {
        h.done(j, ok(Vec::new()), 300);
    }
    h.commit();
    assert!(
        later.iter().any(|j| j.entry.url == format!("http://{b}/")),
        "{later:?}"
    );

    // Our lease on a's shard runs out on the local clock: nothing of a starts until it is renewed.
    gate.expired.lock().unwrap().insert(shard(&a));
    let none = h.lease(400).0;
    assert!(!none.iter().any(|j| j.entry.url.contains(&a)), "{none:?}");
    gate.expired.lock().unwrap().clear();
    h.crawl
        .shards_changed(ShardChanges::default(), h.crawl.poll_token(), h.at(500));
    let again = h.lease(600).0;
    assert!(
        again.iter().any(|j| j.entry.url.contains(&a)),
        "renewed: a goes on"
    );

    // b's shard should go to a peer: nothing of b starts, and it is declared quiet once b's lease is done.
    let bs: Vec<Job> = h
        .lease(800)
        .0
        .into_iter()
        .chain(h.leased.iter().cloned())
        .filter(|j| j.entry.url.contains(&b))
        .collect();
    gate.handoff.lock().unwrap().insert(shard(&b));
    h.crawl
        .shards_changed(ShardChanges::default(), h.crawl.poll_token(), h.at(900));
    let out_b = bs.iter().any(|j| h.crawl.leases.url_of(j.id).is_some());
    assert_eq!(
        gate.quiet.lock().unwrap().contains(&shard(&b)),
        !out_b,
        "quiet exactly when no lease of b is out"
    );
    let out: Vec<&Job> = bs
        .iter()
        .filter(|j| h.crawl.leases.url_of(j.id).is_some())
        .collect();
    for j in out {
        h.done(j, ok(Vec::new()), 950);
    }
    h.commit();
    h.crawl
        .shards_changed(ShardChanges::default(), h.crawl.poll_token(), h.at(1000));
    assert!(gate.quiet.lock().unwrap().contains(&shard(&b)));
    let none_b = h.lease(1500).0;
    assert!(
        !none_b.iter().any(|j| j.entry.url.contains(&b)),
        "{none_b:?}"
    );

    // a's shard is lost: nothing of a starts any more.
    gate.owned.lock().unwrap().remove(&shard(&a));
    h.crawl.shards_changed(
        ShardChanges {
            lost: vec![shard(&a)],
            ..ShardChanges::default()
        },
        0,
        h.at(700),
    );
    let after: Vec<String> = h
        .lease(2_000)
        .0
        .iter()
        .map(|j| j.entry.url.clone())
        .collect();
    assert!(!after.iter().any(|u| u.contains(&a)), "{after:?}");
}

/// A poll's news with the crawl's counters: `pending` URLs in the whole crawl, `pending_held` of them in the
/// shards held, nothing unwritten anywhere.
fn polled(
    lost: Vec<u32>,
    gained: Vec<(u32, Vec<HostInfo>)>,
    pending: u64,
    pending_held: u64,
) -> ShardChanges {
    ShardChanges {
        lost,
        gained,
        counters: Some(Counters {
            pending,
            ..Counters::default()
        }),
        pending_held,
        ..ShardChanges::default()
    }
}

#[test]
fn after_an_outage_a_shard_taken_back_is_read_again_and_a_lost_one_holds_nothing_here() {
    // The answers of the commit and of the next shard poll come back in either order.
    outage_with_a_refused_commit(false);
    outage_with_a_refused_commit(true);
}

/// Redis goes down with a commit in flight and comes back past the leases: a peer took both of this process's
/// shards over; a's came back to this process under a new lease before the commit went through, b's stays with
/// the peer. The commit is refused for both; the next shard poll tells a's shard lost and gained, b's lost.
fn outage_with_a_refused_commit(poll_first: bool) {
    let (a, b) = two_hosts();
    let gate = Arc::new(Table::default());
    gate.owned.lock().unwrap().extend([shard(&a), shard(&b)]);
    let mut h = H::new(settings(), policy(1));
    // Host windows of four URLs: b's queue is read a part at a time.
    let queues = HostQueues::new(policy(1)).with_window(4);
    h.crawl = sharded_over(settings(), queues, h.t0, gate.clone());
    h.seed(&format!("http://{a}/"));
    for i in 1..=6 {
        h.seed(&format!("http://{b}/{i}"));
    }
    // One page of each host is leased and done; the commit with their records is in flight when Redis goes
    // down.
    let jobs = h.lease(0).0;
    assert_eq!(jobs.len(), 2, "{jobs:?}");
    for j in &jobs {
        h.done(j, ok(Vec::new()), 10);
    }
    let batch = h.crawl.take_commit(h.at(20)).expect("a commit");
    let refused = Committed {
        fenced: batch.finished.iter().map(|f| f.id).collect(),
        fenced_records: batch.records.iter().map(|(seq, _)| *seq).collect(),
        fenced_shards: vec![shard(&a), shard(&b)],
        ..Committed::default()
    };
    // b's next page is leased, and b's window asks for more: the refill waits behind the commit.
    let (more, _) = h.crawl.next_jobs(h.at(30));
    let [b2] = &more[..] else {
        panic!("b's second page: {more:?}")
    };
    let refills = h.crawl.take_refills();
    assert_eq!(refills.len(), 1, "b's window runs low");

    gate.owned.lock().unwrap().remove(&shard(&b));
    let info = |name: &str, pending| HostInfo {
        fp: host_fp(name),
        name: name.to_owned(),
        pending,
        paused_until_ms: 0,
        backoff_level: 0,
    };
    let news = polled(
        vec![shard(&a), shard(&b)],
        vec![(shard(&a), vec![info(&a, 1)])],
        7,
        1,
    );
    if poll_first {
        let token = h.crawl.poll_token();
        h.crawl.shards_changed(news, token, h.at(40));
        // a's window reads its queue again while a's page is still out (its commit has not come back).
        assert!(h.crawl.next_jobs(h.at(45)).0.is_empty());
        assert!(h.refill(h.at(45)), "a's queue is read");
        assert!(h.crawl.next_jobs(h.at(45)).0.is_empty(), "a's page is out");
        let lines = h.crawl.commit_done(Ok(refused), h.at(50)).unwrap();
        assert!(lines.is_empty(), "nothing of it is written");
    } else {
        let lines = h.crawl.commit_done(Ok(refused), h.at(40)).unwrap();
        assert!(lines.is_empty(), "nothing of it is written");
        let token = h.crawl.poll_token();
        h.crawl.shards_changed(news, token, h.at(50));
    }
    // The refill's answer comes, and b's second page comes back unsent (its lease ran out).
    for req in refills {
        let res = h
            .store
            .next_urls(req.host, req.refill.after, req.refill.max);
        h.crawl.filled(req, res, h.at(60)).unwrap();
    }
    h.done(b2, JobResult::NotStarted, 70);
    assert_eq!(
        h.crawl.windows.hosts().queued(),
        0,
        "nothing of b is held here"
    );

    // a's page, refused with the commit, is read from the store again and crawled once.
    let again = h.one(100);
    assert_eq!(again.entry.url, format!("http://{a}/"));
    h.done(&again, ok(Vec::new()), 110);
    h.flush();
    h.record(&format!("http://{a}/"));
    assert!(h.idle(200).is_none(), "nothing else to do here");

    // The rest of the crawl is b's, with the peer: this process is idle, and would read its own shards again
    // if they held URLs no window has (its lost host's unread queue is not waited for).
    // (Ten idle polls in a row with URLs pending in its shards, as the `Shards` part counts them.)
    for k in 0..10u64 {
        let token = h.crawl.poll_token();
        let news = polled(Vec::new(), Vec::new(), 6, 1);
        h.crawl.shards_changed(news, token, h.at(300 + k * 200));
        assert_eq!(h.crawl.take_reread(), k == 9, "poll {k}");
    }
    assert_eq!(h.crawl.finished(), None, "the peer has b's pages");
    let token = h.crawl.poll_token();
    h.crawl
        .shards_changed(polled(Vec::new(), Vec::new(), 0, 0), token, h.at(5_000));
    assert_eq!(h.crawl.finished(), Some(FinishReason::Completed));
}

#[test]
fn a_throttled_host_s_pause_goes_to_the_store_and_a_recorded_pause_holds_after_a_takeover() {
    let (a, b) = two_hosts();
    let (gate, mut h) = owning(shard(&a));
    h.seed(&format!("http://{a}/"));
    let job = h.one(0);
    let throttled = JobResult::Page(Box::new(PageOutcome {
        status: 429,
        http_version: "HTTP/1.1".into(),
        retry_after: Some(Duration::from_secs(30)),
        ..PageOutcome::default()
    }));
    h.done(&job, throttled, 10);
    let (name, until, level) = h
        .crawl
        .staging
        .staged_pauses()
        .last()
        .cloned()
        .expect("a pause is staged");
    assert_eq!(name, a);
    assert_eq!(level, 1, "one throttled answer so far");
    let wall_now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    assert!(
        until > wall_now + 25_000 && until < wall_now + 35_000,
        "{until} vs {wall_now}"
    );

    // b comes with a pause its previous owner recorded: nothing of b starts before it ends.
    gate.owned.lock().unwrap().insert(shard(&b));
    let mut ch = gained(shard(&b), &[&b]);
    ch.gained[0].1[0].paused_until_ms = wall_now + 60_000;
    ch.gained[0].1[0].backoff_level = 4;
    h.seed(&format!("http://{b}/"));
    h.commit();
    let token = h.crawl.poll_token();
    h.crawl.shards_changed(ch, token, h.at(20));
    for ms in [100, 5_000, 30_000] {
        let got = h.lease(ms).0;
        assert!(
            !got.iter().any(|j| j.entry.url.contains(&b)),
            "at {ms} ms: {got:?}"
        );
    }
    let hb = h
        .crawl
        .windows
        .hosts()
        .host_by_fp(host_fp(&b))
        .expect("b is known");
    assert_eq!(
        h.crawl.windows.hosts().backoff_level(hb),
        4,
        "the backoff step moved with the host"
    );
    assert!(h.lease(61_000).0.iter().any(|j| j.entry.url.contains(&b)));
}

#[test]
fn a_job_the_fetcher_did_not_start_waits_for_the_renewal_or_is_left_to_the_shard_s_next_owner() {
    let (a, gate, mut h) = one_owned_host_with_robots();
    let renew = |h: &mut H, ms: u64| {
        gate.expired.lock().unwrap().clear();
        let token = h.crawl.poll_token();
        h.crawl
            .shards_changed(ShardChanges::default(), token, h.at(ms));
    };

    // robots.txt: the lease ran out while the job waited, so the fetcher did not start it. Nothing of the host
    // starts (robots.txt included) until the lease is renewed; then the same robots.txt goes.
    let robots = h.one(0);
    assert_eq!(robots.entry.kind, JobKind::Robots);
    assert!(robots.gate.as_ref().is_some_and(|g| g.is_open()));
    gate.expired.lock().unwrap().insert(shard(&a));
    assert!(robots.gate.as_ref().is_some_and(|g| !g.is_open()));
    h.done(&robots, JobResult::NotStarted, 5);
    h.idle(10);
    renew(&mut h, 20);
    let again = h.one(30);
    assert_eq!(again.entry.url, robots.entry.url);
    h.done(
        &again,
        JobResult::Robots(RobotsOutcome::AllowAll { status: 404 }),
        35,
    );

    // A page: it waits in its window for the renewal, and goes then.
    let page = h.one(40);
    assert_eq!(page.entry.url, format!("http://{a}/"));
    gate.expired.lock().unwrap().insert(shard(&a));
    h.done(&page, JobResult::NotStarted, 45);
    h.idle(50);
    assert_eq!(h.crawl.windows.hosts().queued(), 1, "the page waits here");
    renew(&mut h, 60);
    let page = h.one(70);
    assert_eq!(page.entry.url, format!("http://{a}/"));

    // Not started, and then the shard is lost: the URL is left to the store for the next owner, and nothing of
    // it is queued here (this process may finish).
    gate.expired.lock().unwrap().insert(shard(&a));
    gate.owned.lock().unwrap().remove(&shard(&a));
    h.done(&page, JobResult::NotStarted, 75);
    let token = h.crawl.poll_token();
    h.crawl.shards_changed(
        ShardChanges {
            lost: vec![shard(&a)],
            ..ShardChanges::default()
        },
        token,
        h.at(80),
    );
    assert_eq!(h.crawl.windows.hosts().queued(), 0);
    assert!(h.crawl.leases.is_empty());
    assert_eq!(h.crawl.stats().not_started, 3);
    let pending = h.store.next_urls(host_fp(&a), None, 10).unwrap();
    assert_eq!(
        pending.iter().map(|e| e.url.clone()).collect::<Vec<_>>(),
        [format!("http://{a}/")],
        "the store still holds the page as pending"
    );

    // The shard comes back: the page is read from the store again (not skipped as out) and crawled.
    gate.owned.lock().unwrap().insert(shard(&a));
    gate.expired.lock().unwrap().clear();
    let token = h.crawl.poll_token();
    h.crawl
        .shards_changed(gained(shard(&a), &[&a]), token, h.at(90));
    let back = h.one(200);
    assert_eq!(back.entry.url, format!("http://{a}/"));
}

#[test]
fn a_host_whose_shard_is_lost_drops_its_robots_job_and_asks_again_once_regained() {
    let (a, gate, mut h) = one_owned_host_with_robots();
    // The lease runs out before robots.txt could be leased: it is held, not sent.
    gate.expired.lock().unwrap().insert(shard(&a));
    h.idle(0);
    assert_eq!(h.crawl.windows.hosts().queued(), 1, "robots.txt waits");
    gate.owned.lock().unwrap().remove(&shard(&a));
    let token = h.crawl.poll_token();
    h.crawl.shards_changed(
        ShardChanges {
            lost: vec![shard(&a)],
            ..ShardChanges::default()
        },
        token,
        h.at(10),
    );
    assert_eq!(
        h.crawl.windows.hosts().queued(),
        0,
        "nothing of a is queued here"
    );
    gate.owned.lock().unwrap().insert(shard(&a));
    gate.expired.lock().unwrap().clear();
    let token = h.crawl.poll_token();
    h.crawl
        .shards_changed(gained(shard(&a), &[&a]), token, h.at(20));
    let robots = h.one(30);
    assert_eq!(robots.entry.kind, JobKind::Robots, "asked for again");
}

#[test]
fn robots_rules_go_to_the_store_and_the_next_owner_obeys_them_without_fetching_robots_txt() {
    let (a, _) = two_hosts();
    let with_robots = CrawlSettings {
        respect_robots: true,
        ..settings()
    };
    // The first owner fetches robots.txt: its rules are staged for the store.
    let gate = Arc::new(Table::default());
    gate.owned.lock().unwrap().insert(shard(&a));
    let mut first = H::new(with_robots.clone(), policy(1));
    first.crawl = sharded(with_robots.clone(), policy(1), first.t0, gate.clone());
    first.seed(&format!("http://{a}/"));
    let robots = first.one(0);
    assert_eq!(robots.entry.kind, JobKind::Robots);
    let body = "User-agent: *\nDisallow: /private\nCrawl-delay: 1\n";
    first.done(
        &robots,
        JobResult::Robots(RobotsOutcome::Rules(Arc::new(
            crawl_core::robots::Robots::parse(body.as_bytes(), "crawl-engine/0.1"),
        ))),
        5,
    );
    let shared = first.crawl.staging.staged_robots().to_vec();
    assert_eq!(shared.len(), 1, "{shared:?}");
    assert_eq!(shared[0].host, a);
    assert_eq!(shared[0].authority, format!("http://{a}:80"));

    // The next owner gains the shard with those rules: no robots.txt request, the disallowed page is excluded,
    // and the crawl-delay holds.
    let gate = Arc::new(Table::default());
    gate.owned.lock().unwrap().insert(shard(&a));
    let mut next = H::new(with_robots.clone(), policy(1));
    next.crawl = sharded(with_robots.clone(), policy(1), next.t0, gate.clone());
    next.seed(&format!("http://{a}/private/1"));
    next.seed(&format!("http://{a}/open/1"));
    next.seed(&format!("http://{a}/open/2"));
    next.commit();
    let mut ch = gained(shard(&a), &[&a]);
    ch.robots = shared;
    let token = next.crawl.poll_token();
    next.crawl.shards_changed(ch, token, next.at(0));
    let first_page = next.one(2_000);
    assert_eq!(first_page.entry.kind, JobKind::Page);
    assert_eq!(first_page.entry.url, format!("http://{a}/open/1"));
    next.done(&first_page, ok(Vec::new()), 2_010);
    next.idle(2_500);
    let second = next.one(3_100);
    assert_eq!(second.entry.url, format!("http://{a}/open/2"));
    assert!(
        next.leased
            .iter()
            .all(|j| j.entry.kind == JobKind::Page && !j.entry.url.contains("private")),
        "{:?}",
        next.leased
    );
}

#[test]
fn a_record_id_names_the_url_and_its_queueing() {
    let (a, _) = two_hosts();
    let gate = Arc::new(Table::default());
    gate.owned.lock().unwrap().insert(shard(&a));
    let mut h = H::new(settings(), policy(1));
    h.crawl = sharded(settings(), policy(1), h.t0, gate);
    h.seed(&format!("http://{a}/"));
    let job = h.one(0);
    h.done(&job, ok(Vec::new()), 5);
    let out = h.commit();
    let fp = crawl_core::frontier::url_fp(&format!("http://{a}/"));
    assert_eq!(
        out[0].1.record_id.as_deref(),
        Some(format!("{fp:016x}-{:x}", job.entry.seq).as_str())
    );
}

#[test]
fn records_taken_over_by_an_idle_process_make_a_commit_due() {
    let (_, mut h) = owning(0);
    let token = h.crawl.poll_token();
    h.crawl
        .shards_changed(ShardChanges::default(), token, h.at(0));
    h.flush();
    assert!(!h.crawl.has_staged(), "nothing to commit");
    // A poll took over two records of a stopped process: they are handed out with the next commit, which is due
    // although this process has nothing of its own to store (without it the crawl would wait on them forever).
    let changes = ShardChanges {
        claimed: 2,
        unacked: 2,
        counters: Some(Counters::default()),
        ..ShardChanges::default()
    };
    let token = h.crawl.poll_token();
    h.crawl.shards_changed(changes, token, h.at(10));
    assert!(h.crawl.has_staged());
    assert_eq!(h.crawl.finished(), None, "two records are not written yet");
    let batch = h.crawl.take_commit(h.at(20)).expect("a commit is due");
    assert!(batch.finished.is_empty() && batch.records.is_empty());
    assert!(!h.crawl.has_staged(), "one commit hands them all out");
}

#[test]
fn an_idle_process_whose_shards_hold_unknown_pending_urls_reads_them_again() {
    let (a, _) = two_hosts();
    let (_, mut h) = owning(shard(&a));
    h.flush();
    let poll = |h: &mut H, pending_held: u64, ms: u64| {
        let changes = ShardChanges {
            counters: Some(Counters {
                pending: 5,
                ..Counters::default()
            }),
            pending_held,
            ..ShardChanges::default()
        };
        let token = h.crawl.poll_token();
        h.crawl.shards_changed(changes, token, h.at(ms));
    };
    // Pending URLs elsewhere only: this process just waits.
    for i in 0..30 {
        poll(&mut h, 0, i * 200);
    }
    assert!(!h.crawl.take_reread());
    // Two of them in its own shards, yet nothing here accounts for them: after ten polls in a row it asks for its
    // shards again, once.
    for i in 0..9 {
        poll(&mut h, 2, 6000 + i * 200);
    }
    assert!(!h.crawl.take_reread(), "a short gap is not a stall");
    poll(&mut h, 2, 8000);
    assert!(h.crawl.take_reread());
    assert!(!h.crawl.take_reread(), "asked once");
    // A process with work of its own never asks.
    h.seed(&format!("http://{a}/x"));
    let (jobs, _) = h.lease(9000);
    assert_eq!(jobs.len(), 1);
    for i in 0..20 {
        poll(&mut h, 2, 9000 + i * 200);
    }
    assert!(!h.crawl.take_reread());
}

/// A host this process never met (another process crawls it) still has a view: its shard, what operators set on
/// it, nothing counted here; an unsharded crawl knows no such host.
#[test]
fn a_host_another_process_crawls_has_a_view_with_its_shard_and_rule() {
    let (a, b) = two_hosts();
    let (_gate, mut h) = owning(shard(&a));
    h.seed(&format!("http://{a}/"));
    let mine = h.crawl.host_view(&a, h.t0).expect("a is met here");
    assert!(mine.known_here && mine.held_here, "{mine:?}");
    let mut paused = crawl_core::control::OperatorState::default();
    paused.apply(&crawl_core::control::Change::Pause {
        host: Some(crawl_core::control::HostMatch::parse(&b).unwrap()),
        at_ms: 1,
        by: crawl_core::control::Requester::Process,
    });
    h.crawl.operator_state(1, paused, h.t0, 0);
    let v = h.crawl.host_view(&b, h.t0).expect("a view of b");
    assert!(!v.known_here && !v.held_here, "{v:?}");
    assert_eq!((v.shard, v.queued, v.in_flight), (Some(shard(&b)), None, 0));
    assert!(v.rule.is_some_and(|r| r.paused.is_some()));
    let alone = H::new(settings(), policy(1));
    assert!(alone.crawl.host_view(&b, alone.t0).is_none());
}
