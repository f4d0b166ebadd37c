//! End-to-end tests of proxy chains (docs/PROXY.md) with the real `crawl-engine` binary against loopback sites and
//! in-test SOCKS5 servers ([`FakeSocks`]): a 2-hop chain carrying every connection, no silent direct connection when
//! every chain fails (and `fallback_direct`), each misbehaviour ending within its deadline with the right reason,
//! failover to another chain when a hop dies mid-crawl, the breaker opening / probing / closing, credentials never
//! printed, and interop with Debian's real `microsocks`. Hosts use 127.0.0.170..=127.0.0.189.

use crate::ENGINE;
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crawl_core::record::{Outcome, Reason, Record};
use crawl_tests::engine::{RunResult, TestCrawl, wait_with_deadline};
use crawl_tests::site::{ExpectOptions, Route, Site, SiteSpec};
use crawl_tests::socks::{Behaviour, FakeSocks, SeenTarget, SocksOptions};
use tokio::net::{TcpListener, TcpStream};

/// Kill deadline of every crawl run: a run that outlives it fails its test (the engine hung).
const DEADLINE: Duration = Duration::from_secs(30);

pub(super) fn ip(last: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, last))
}

pub(super) async fn socks(b: Behaviour, last: u8) -> FakeSocks {
    FakeSocks::start_with(b, SocksOptions::default().on(ip(last)))
        .await
        .expect("fake socks starts")
}

/// `hosts` generated hosts from 127.0.0.{first} with `pages` pages each (a chain of links), no robots.txt,
/// sitemaps, redirects or 404 links.
pub(super) fn plain(first: u8, hosts: usize, pages: usize) -> SiteSpec {
    SiteSpec {
        hosts,
        pages_per_host: pages,
        links_per_page: 1,
        cross_host_ratio: 0.0,
        robots: false,
        sitemaps: false,
        redirects: false,
        missing: false,
        orphans: 0,
        first_octet: first,
        ..SiteSpec::small()
    }
}

/// One host on 127.0.0.{octet} whose `/` links to `/p/0`..`/p/{n-1}`, each answered after `delay`; returns the
/// site and every page URL (root included).
async fn fan(octet: u8, n: usize, delay: Duration) -> (Site, BTreeSet<String>) {
    let links: String = (0..n)
        .map(|i| format!("<a href=\"/p/{i}\">p</a>\n"))
        .collect();
    let mut b = Site::builder(plain(octet, 1, 1)).route(
        0,
        "/",
        Route::ok(format!("<html><body>{links}</body></html>")),
    );
    for i in 0..n {
        let leaf = Route::ok("<html><body>leaf</body></html>").delay(delay);
        b = b.route(0, &format!("/p/{i}"), leaf);
    }
    let site = b.start().await.expect("site starts");
    let mut all: BTreeSet<String> = (0..n).map(|i| site.url(0, &format!("/p/{i}"))).collect();
    all.insert(site.seed_url());
    (site, all)
}

/// A TOML array of strings.
fn list<S: AsRef<str>>(items: &[S]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{:?}", s.as_ref())).collect();
    format!("[{}]", quoted.join(", "))
}

/// `[proxy.chains.<name>]` tables for (name, hop URLs).
pub(super) fn chains(defs: &[(&str, Vec<String>)]) -> String {
    defs.iter()
        .map(|(name, hops)| format!("[proxy.chains.{name}]\nhops = {}\n", list(hops)))
        .collect()
}

/// A `[[proxy.rules]]` table routing `host` to `chains`.
fn rule(host: &str, use_: &[&str]) -> String {
    format!(
        "[[proxy.rules]]\nhosts = [{host:?}]\nuse = {}\n",
        list(use_)
    )
}

/// Runs `cmd` to its end on a blocking thread (sites and proxies keep serving on the runtime meanwhile).
pub(super) async fn run(mut cmd: Command) -> RunResult {
    tokio::task::spawn_blocking(move || {
        let child = cmd
            .spawn()
            .expect("spawn crawl-engine (cargo build --workspace --bins)");
        wait_with_deadline(child, DEADLINE)
    })
    .await
    .expect("join runner")
}

/// The last few KB of a (possibly huge, debug-level) log, for assertion messages.
fn tail(s: &str) -> &str {
    let mut at = s.len().saturating_sub(6000);
    while !s.is_char_boundary(at) {
        at += 1;
    }
    &s[at..]
}

pub(super) fn assert_ok(r: &RunResult) {
    assert_eq!(
        r.code(),
        Some(0),
        "exit status\nstdout:\n{}\nstderr (tail):\n{}",
        r.stdout,
        tail(&r.stderr)
    );
}

/// Records by URL; a URL recorded twice fails the test.
pub(super) fn index(records: Vec<Record>) -> BTreeMap<String, Record> {
    let mut m = BTreeMap::new();
    for r in records {
        let url = r.url.clone();
        if let Some(old) = m.insert(url.clone(), r) {
            panic!("{url} recorded more than once (earlier: {old:?})");
        }
    }
    m
}

/// Asserts exactly `want` were recorded, all fetched with status 200 through `proxy` (a name, or one of `any`).
pub(super) fn assert_all_fetched(
    recs: &BTreeMap<String, Record>,
    want: &BTreeSet<String>,
    any: &[&str],
) {
    let got: BTreeSet<String> = recs.keys().cloned().collect();
    assert_eq!(&got, want, "recorded URL set");
    for r in recs.values() {
        assert_eq!(
            (r.outcome, r.status),
            (Outcome::Fetched, Some(200)),
            "{r:?}"
        );
        let p = r.proxy.as_deref().unwrap_or("<none>");
        assert!(any.contains(&p), "proxy {p:?} not one of {any:?}: {r:?}");
    }
}

fn count_proxy(recs: &BTreeMap<String, Record>, name: &str) -> usize {
    recs.values()
        .filter(|r| r.proxy.as_deref() == Some(name))
        .count()
}

/// Polls `cond` every 10 ms for at most `within`; true once it held.
async fn eventually(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < within {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    cond()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hop_chain_carries_every_connection() {
    let site = Site::start(SiteSpec {
        hosts: 1,
        pages_per_host: 12,
        first_octet: 173,
        ..SiteSpec::small()
    })
    .await
    .expect("site starts");
    let target = site.addr(0).expect("host 0");
    let hop1 = socks(Behaviour::Good, 171).await;
    let opts2 = SocksOptions::default().on(ip(172)).outbound_ip(ip(172));
    let hop2 = FakeSocks::start_with(Behaviour::Good, opts2)
        .await
        .expect("hop2");
    let overrides = format!(
        "[proxy]\ndefault = [\"two\"]\n{}",
        chains(&[("two", vec![hop1.url(), hop2.url()])])
    );
    let crawl = TestCrawl::new(ENGINE, &[site.seed_url()], &overrides).expect("test crawl");
    let res = run(crawl.command()).await;
    assert_ok(&res);

    let exp = site.expected(ExpectOptions::default());
    let mut want: BTreeSet<String> = exp.fetched_ok.clone();
    want.extend(exp.redirects.keys().cloned());
    want.extend(exp.not_found.iter().cloned());
    let recs = index(crawl.records());
    let fetched: BTreeSet<String> = recs
        .values()
        .filter(|r| r.outcome == Outcome::Fetched)
        .map(|r| r.url.clone())
        .collect();
    assert_eq!(fetched, want, "every page fetched");
    for r in recs.values() {
        assert_ne!(r.outcome, Outcome::Failed, "{r:?}");
        if r.outcome == Outcome::Fetched {
            assert_eq!(r.proxy.as_deref(), Some("two"), "{r:?}");
        }
    }

    // hop1 only ever tunnelled to hop2; hop2 (bound to 127.0.0.172) only to the site, once per site connection.
    let (t1, t2) = (hop1.targets(), hop2.targets());
    assert!(!t1.is_empty());
    assert!(
        t1.iter().all(|t| *t == SeenTarget::Addr(hop2.addr())),
        "hop1 targets {t1:?}"
    );
    assert_eq!(hop1.accepted(), t1.len() as u64);
    assert_eq!(
        hop2.accepted(),
        t1.len() as u64,
        "hop2 is reached only through hop1"
    );
    assert!(
        t2.iter().all(|t| *t == SeenTarget::Addr(target)),
        "hop2 targets {t2:?}"
    );
    assert_eq!(
        site.connections(0),
        t2.len(),
        "every connection the site accepted came through hop2 (none from anywhere else)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_silent_direct_when_every_chain_fails() {
    let spec = SiteSpec {
        hosts: 1,
        pages_per_host: 5,
        first_octet: 175,
        ..SiteSpec::small()
    };
    let site = Site::start(spec).await.expect("site starts");
    // two chains that always fail: reply 01, and a port that refuses connections
    let failing = socks(Behaviour::Reply(1), 174).await;
    let gone = socks(Behaviour::Good, 174).await;
    gone.shutdown().await;
    let seeds: Vec<String> = (0..3).map(|n| site.page_url(0, n)).collect();
    let crawl = |fallback: bool, robots: bool| {
        let overrides = format!(
            "[crawl]\nrespect_robots = {robots}\nrobots_max_attempts = 2\nrobots_retry_ms = 100\n\
             [fetch]\nmax_retries = 1\n[proxy]\ndefault = [\"gf\", \"gone\"]\nfallback_direct = {fallback}\n\
             breaker_failures = 2\n{}",
            chains(&[("gf", vec![failing.url()]), ("gone", vec![gone.url()])])
        );
        TestCrawl::new(ENGINE, &seeds, &overrides).expect("test crawl")
    };
    let all_failed_proxy = |c: &TestCrawl, what: &str| {
        let recs = index(c.records());
        let got: BTreeSet<String> = recs.keys().cloned().collect();
        assert_eq!(
            got,
            seeds.iter().cloned().collect(),
            "{what}: every seed recorded"
        );
        for r in recs.values() {
            let want = (Outcome::Failed, Some(Reason::Proxy));
            assert_eq!((r.outcome, r.reason), want, "{what}: {r:?}");
        }
    };

    // fallback_direct = false, robots off: page fetches only
    let c = crawl(false, false);
    assert_ok(&run(c.command()).await);
    assert_eq!(site.connections(0), 0, "no silent direct connection");
    all_failed_proxy(&c, "robots off");
    assert!(failing.accepted() > 0, "the failing chain was tried");

    // fallback_direct = true: the same chains fail, pages come directly and say so
    let c = crawl(true, true);
    assert_ok(&run(c.command()).await);
    let recs = index(c.records());
    for u in &site.expected(ExpectOptions::default()).fetched_ok {
        let r = recs
            .get(u)
            .unwrap_or_else(|| panic!("{u} not recorded: {:?}", recs.keys()));
        assert_eq!(
            (r.outcome, r.status),
            (Outcome::Fetched, Some(200)),
            "{r:?}"
        );
        assert_eq!(r.proxy.as_deref(), Some("direct"), "{r:?}");
    }
    let direct = site.connections(0);
    assert!(direct > 0);

    // fallback_direct = false, robots on: robots.txt goes through the (failing) chains first
    let c = crawl(false, true);
    assert_ok(&run(c.command()).await);
    assert_eq!(
        site.connections(0),
        direct,
        "no silent direct connection (robots on)"
    );
    all_failed_proxy(&c, "robots on");
}

/// The path of generated page `n`.
fn page_path(n: usize) -> String {
    if n == 0 {
        "/".into()
    } else {
        format!("/page/{n}")
    }
}

/// The stderr JSON log has a `proxy fault` line for `chain` whose fault kind contains `kind`.
fn logged_fault(stderr: &str, chain: &str, kind: &str) -> bool {
    let chain_field = format!("\"chain\":\"{chain}\"");
    stderr
        .lines()
        .any(|l| l.contains("proxy fault") && l.contains(&chain_field) && l.contains(kind))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn misbehaving_hops_end_within_their_deadlines() {
    // host i of the site (127.0.0.177 + i) goes through chain NAMES[i], whose one hop acts out BEHAVIOURS[i].
    const NAMES: [&str; 6] = ["greet", "creply", "auth", "refused", "drop", "slow"];
    let behaviours = [
        Behaviour::HangAfterGreeting,
        Behaviour::HangAfterConnect,
        Behaviour::RefuseAuth,
        Behaviour::Reply(5),
        Behaviour::DropMidStream { after_bytes: 30 },
        Behaviour::Trickle {
            every: Duration::from_millis(20),
        },
    ];
    let mut spec = plain(177, 6, 3);
    spec.links_per_page = 0;
    let site = Site::start(spec).await.expect("site starts");
    let mut hops = Vec::new();
    for b in behaviours {
        let opts = SocksOptions::default().on(ip(176)).with_auth("u", "p");
        hops.push(FakeSocks::start_with(b, opts).await.expect("hop"));
    }
    let mut overrides = String::from(
        "[crawl]\nrespect_robots = false\n[fetch]\nmax_retries = 1\nrequest_timeout_ms = 1500\n\
         connect_timeout_ms = 1000\nheader_timeout_ms = 1500\nidle_timeout_ms = 1500\n\
         [proxy]\nconnect_timeout_ms = 1000\ngreeting_timeout_ms = 300\nauth_timeout_ms = 300\n\
         connect_reply_timeout_ms = 300\nchain_timeout_ms = 2000\nbreaker_failures = 2\n\
         breaker_cooldown_ms = 60000\n",
    );
    let defs: Vec<(&str, Vec<String>)> = NAMES
        .iter()
        .zip(&hops)
        .map(|(n, h)| (*n, vec![h.url()]))
        .collect();
    overrides += &chains(&defs);
    for (i, name) in NAMES.iter().enumerate() {
        overrides += &rule(&site.spec().ip(i).to_string(), &[name]);
    }
    let seeds: Vec<String> = (0..6)
        .flat_map(|h| (0..3).map(move |n| (h, n)))
        .map(|(h, n)| site.page_url(h, n))
        .collect();
    let crawl = TestCrawl::new(ENGINE, &seeds, &overrides).expect("test crawl");
    let started = Instant::now();
    let res = run(crawl.command()).await;
    assert_ok(&res);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
    let recs = index(crawl.records());
    assert_eq!(recs.len(), seeds.len(), "{:?}", recs.keys());
    let want = [
        Reason::Proxy,
        Reason::Proxy,
        Reason::Proxy,
        Reason::Connect,
        Reason::Protocol,
        Reason::Timeout,
    ];
    for (h, reason) in want.iter().enumerate() {
        for n in 0..3 {
            let r = &recs[&site.page_url(h, n)];
            assert_eq!(
                (r.outcome, r.reason),
                (Outcome::Failed, Some(*reason)),
                "host {h} ({}): {r:?}",
                NAMES[h]
            );
            assert_eq!(r.attempts, 2, "retried once: {r:?}");
        }
    }
    // each fault classified as the phase that hung or failed (the proxy deadlines fired, not the request timeout)
    for (chain, kind) in [
        ("greet", "timeout_greeting"),
        ("creply", "timeout_connect_reply"),
        ("auth", "auth_failed"),
    ] {
        assert!(
            logged_fault(&res.stderr, chain, kind),
            "no proxy fault {kind} logged for {chain}:\n{}",
            tail(&res.stderr)
        );
    }
    // reply 05 is a target fault: the chain's breaker never opened, every attempt (3 URLs x 2) reached the hop
    assert_eq!(
        hops[3].accepted(),
        6,
        "every attempt went through chain refused"
    );
    assert!(
        !res.stderr
            .lines()
            .any(|l| l.contains("proxy fault") && l.contains("\"chain\":\"refused\""))
    );
    for h in 0..4 {
        assert_eq!(
            site.connections(h),
            0,
            "host {h}: no connection (and none direct)"
        );
    }
    let drops: Vec<usize> = (0..3).map(|n| site.hits(4, &page_path(n))).collect();
    assert_eq!(
        drops,
        [2, 2, 2],
        "each page dropped mid-stream, then retried"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_to_the_other_chain_when_a_hop_dies() {
    let (site, want) = fan(185, 40, Duration::from_millis(150)).await;
    let a = socks(Behaviour::Good, 183).await;
    let b = socks(Behaviour::Good, 184).await;
    let overrides = format!(
        "[proxy]\nselect = \"round-robin\"\n{}{}",
        chains(&[("a", vec![a.url()]), ("b", vec![b.url()])]),
        rule("127.0.0.185", &["a", "b"])
    );
    let crawl = TestCrawl::new(ENGINE, &[site.seed_url()], &overrides).expect("test crawl");
    let child = crawl.spawn();
    let waiter = tokio::task::spawn_blocking(move || wait_with_deadline(child, DEADLINE));
    let started = eventually(Duration::from_secs(20), || site.total_requests() >= 10).await;
    let requests_at_kill = site.total_requests() as usize;
    let (a_bytes, b_bytes) = (a.bytes_relayed(), b.bytes_relayed());
    a.kill();
    let killed_at = Instant::now();
    assert!(started, "the crawl got going");
    assert!(
        a_bytes > 0 && b_bytes > 0,
        "both chains carried traffic before the kill"
    );
    let moved = eventually(Duration::from_secs(5), || b.bytes_relayed() > b_bytes).await;
    assert!(moved, "traffic through b within seconds of the kill");
    let res = waiter.await.expect("join runner");
    assert_ok(&res);
    assert!(
        killed_at.elapsed() < Duration::from_secs(20),
        "crawl finished after the kill"
    );

    let recs = index(crawl.records());
    assert_all_fetched(&recs, &want, &["a", "b"]);
    let (via_a, via_b) = (count_proxy(&recs, "a"), count_proxy(&recs, "b"));
    assert!(
        via_a > 0 && via_b > 0,
        "both chains in the records: a {via_a}, b {via_b}"
    );
    assert!(
        via_a <= requests_at_kill,
        "a served only requests made before it died ({via_a} > {requests_at_kill})"
    );
}

/// A SOCKS hop whose availability the test switches: down, it closes every connection at once (the chain fails
/// mid-handshake); up, it forwards the bytes to a real server. Counts the connections it accepts.
struct Switch {
    addr: SocketAddr,
    accepted: Arc<AtomicU64>,
    up: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Switch {
    async fn start(last: u8, backend: SocketAddr) -> Switch {
        let l = TcpListener::bind((ip(last), 0)).await.expect("bind switch");
        let addr = l.local_addr().expect("switch addr");
        let accepted = Arc::new(AtomicU64::new(0));
        let up = Arc::new(AtomicBool::new(false));
        let (acc, on) = (Arc::clone(&accepted), Arc::clone(&up));
        let task = tokio::spawn(async move {
            let mut conns = tokio::task::JoinSet::new();
            while let Ok((mut c, _)) = l.accept().await {
                acc.fetch_add(1, Ordering::SeqCst);
                if !on.load(Ordering::SeqCst) {
                    continue; // dropped: closed before any reply
                }
                conns.spawn(async move {
                    if let Ok(mut s) = TcpStream::connect(backend).await {
                        let _ = tokio::io::copy_bidirectional(&mut c, &mut s).await;
                    }
                });
            }
        });
        Switch {
            addr,
            accepted,
            up,
            task,
        }
    }

    fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for Switch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn breaker_opens_probes_and_closes() {
    let (site, want) = fan(187, 200, Duration::from_millis(40)).await;
    let backend = socks(Behaviour::Good, 186).await;
    let good = socks(Behaviour::Good, 186).await;
    let hop = Switch::start(186, backend.addr()).await;
    let cooldown = Duration::from_millis(1000);
    let overrides = format!(
        "[politeness]\nper_host_concurrency = 2\n[fetch]\npool_max_idle_per_host = 0\n\
         [proxy]\nbreaker_failures = 2\nbreaker_cooldown_ms = {}\n{}{}",
        cooldown.as_millis(),
        chains(&[
            ("bad", vec![format!("socks5://{}", hop.addr)]),
            ("good", vec![good.url()])
        ]),
        rule("127.0.0.187", &["bad", "good"])
    );
    let crawl = TestCrawl::new(ENGINE, &[site.seed_url()], &overrides).expect("test crawl");
    let child = crawl.spawn();
    let waiter = tokio::task::spawn_blocking(move || wait_with_deadline(child, DEADLINE));

    // Two faults in a row open it (a third attempt may have been in flight).
    assert!(
        eventually(Duration::from_secs(10), || hop.accepted() >= 2).await,
        "bad was tried"
    );
    let seen = Instant::now();
    tokio::time::sleep(Duration::from_millis(150)).await;
    let at_open = hop.accepted();
    assert!(at_open <= 3, "attempts went on after 2 faults: {at_open}");
    // Open: no attempt for the cooldown (while good keeps carrying the crawl).
    let good_before = good.accepted();
    tokio::time::sleep_until((seen + cooldown - Duration::from_millis(200)).into()).await;
    assert_eq!(
        hop.accepted(),
        at_open,
        "no attempt while open ({:?} after opening)",
        seen.elapsed()
    );
    assert!(
        good.accepted() > good_before,
        "the crawl went on through good"
    );
    // Half-open: exactly one probe; it fails (still down), so the breaker re-opens.
    assert!(
        eventually(Duration::from_secs(5), || hop.accepted() > at_open).await,
        "a probe after the cooldown"
    );
    let probe = Instant::now();
    let early = cooldown - Duration::from_millis(150);
    assert!(
        seen.elapsed() >= early,
        "probe came early: {:?}",
        seen.elapsed()
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        hop.accepted(),
        at_open + 1,
        "one probe, then open again ({:?} later)",
        probe.elapsed()
    );
    // The hop comes back: the next probe succeeds, the breaker closes and traffic returns.
    hop.up.store(true, Ordering::SeqCst);
    let back = eventually(Duration::from_secs(5), || backend.targets().len() >= 3).await;
    assert!(
        back,
        "traffic back on bad: hop accepted {}, backend {:?}",
        hop.accepted(),
        backend.counters()
    );
    let res = waiter.await.expect("join runner");
    assert_ok(&res);
    let recs = index(crawl.records());
    assert_all_fetched(&recs, &want, &["bad", "good"]);
    assert!(
        count_proxy(&recs, "bad") >= 2,
        "pages through bad after it closed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_never_appear() {
    const USER: &str = "alice-proxyuser";
    const PASS: &str = "secretpw";
    let site = Site::start(plain(170, 1, 6)).await.expect("site starts");
    let opts = SocksOptions::default().on(ip(188)).with_auth(USER, PASS);
    let good = FakeSocks::start_with(Behaviour::Good, opts.clone())
        .await
        .expect("good");
    let bad = FakeSocks::start_with(Behaviour::RefuseAuth, opts)
        .await
        .expect("bad");
    let overrides = format!(
        "[observability]\nlog_level = \"debug\"\n[proxy]\ndefault = [\"bad\", \"good\"]\n{}",
        chains(&[("bad", vec![bad.url()]), ("good", vec![good.url()])])
    );
    assert!(bad.url().contains(PASS), "the config carries the password");
    let crawl = TestCrawl::new(ENGINE, &[site.seed_url()], &overrides).expect("test crawl");
    let res = run(crawl.command()).await;
    assert_ok(&res);
    let recs = index(crawl.records());
    let want = site.expected(ExpectOptions::default()).fetched_ok;
    assert_all_fetched(&recs, &want, &["good"]);
    assert!(
        bad.accepted() > 0,
        "the refusing hop was tried (its errors were logged)"
    );
    assert!(res.stderr.contains("DEBUG"), "debug logs were on");
    assert!(
        logged_fault(&res.stderr, "bad", "auth_failed"),
        "{}",
        tail(&res.stderr)
    );

    let check = run({
        let mut c = crawl.command();
        c.arg("--check");
        c
    })
    .await;
    assert_ok(&check);
    for hop in [&good, &bad] {
        let shown = format!("socks5://***@{}", hop.addr());
        assert!(
            check.stdout.contains(&shown),
            "--check shows {shown}:\n{}",
            check.stdout
        );
    }
    let jsonl = std::fs::read_to_string(&crawl.jsonl).expect("jsonl");
    for (what, text) in [
        ("jsonl", &jsonl),
        ("stdout", &res.stdout),
        ("stderr", &res.stderr),
        ("--check stdout", &check.stdout),
        ("--check stderr", &check.stderr),
    ] {
        for secret in [PASS, USER] {
            let line = text.lines().find(|l| l.contains(secret));
            assert!(line.is_none(), "{secret} in {what}: {line:?}");
        }
    }
}
