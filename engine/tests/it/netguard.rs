//! End-to-end tests of the SSRF guard and of IPv6 with the real `crawl-engine` binary.
//!
//! The trick: `security.allow_cidrs = ["127.0.1.0/24"]` with `allow_private_networks = false` makes 127.0.1.x an
//! "allowed" network and 127.0.2.x a "private" one on a single machine. Every private address has a listener that
//! counts connections and must count zero. IPv6 runs on `::1` (skipped with a message when the machine has none,
//! a failure when CI=true). Addresses: 127.0.1.1-19 and 127.0.2.1-19.

use crate::ENGINE;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crawl_core::record::{Outcome, Reason, Record};
use crawl_tests::dns::{Behaviour, FakeDns, FakeDoh, Zone};
use crawl_tests::engine::TestCrawl;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};

const DEADLINE: Duration = Duration::from_secs(30);

fn v4(c: u8, d: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, c, d))
}

/// What a path answers.
#[derive(Clone)]
enum Resp {
    Page(String),
    Redirect(String),
}

/// A minimal HTTP/1.1 server (every answer `connection: close`, so no pooled connection hides a new dial) that
/// counts the connections it accepts and logs the paths asked.
struct Server {
    conns: Arc<AtomicUsize>,
    paths: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    fn start(listener: TcpListener, routes: Vec<(&str, Resp)>) -> Server {
        let routes: BTreeMap<String, Resp> =
            routes.into_iter().map(|(p, r)| (p.to_owned(), r)).collect();
        let conns = Arc::new(AtomicUsize::new(0));
        let paths = Arc::new(Mutex::new(Vec::new()));
        let (c, p) = (conns.clone(), paths.clone());
        let task = tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                c.fetch_add(1, Ordering::SeqCst);
                let (routes, p) = (routes.clone(), p.clone());
                tokio::spawn(answer(sock, routes, p));
            }
        });
        Server { conns, paths, task }
    }

    fn conns(&self) -> usize {
        self.conns.load(Ordering::SeqCst)
    }

    fn paths(&self) -> Vec<String> {
        self.paths.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(
    mut sock: TcpStream,
    routes: BTreeMap<String, Resp>,
    paths: Arc<Mutex<Vec<String>>>,
) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 2048];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
        match sock.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let head = String::from_utf8_lossy(&buf);
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
    paths.lock().unwrap().push(path.clone());
    let (status, extra, body) = match routes.get(&path) {
        Some(Resp::Page(body)) => ("200 OK", String::new(), body.clone()),
        Some(Resp::Redirect(to)) => ("302 Found", format!("location: {to}\r\n"), String::new()),
        None => ("404 Not Found", String::new(), "none\n".to_owned()),
    };
    let reply = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/html\r\ncontent-length: {}\r\n{extra}connection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = sock.write_all(reply.as_bytes()).await;
    let _ = sock.shutdown().await;
}

fn page(hrefs: &[String]) -> Resp {
    let mut s = String::from("<!DOCTYPE html><html><head><title>t</title></head><body>\n");
    for h in hrefs {
        s.push_str(&format!("<a href=\"{h}\">x</a>\n"));
    }
    Resp::Page(s + "</body></html>\n")
}

/// Listeners on `a` and `b` with the same port (retried on another port when `b`'s is taken).
async fn same_port(a: IpAddr, b: IpAddr) -> (TcpListener, TcpListener) {
    for _ in 0..20 {
        let first = TcpListener::bind((a, 0)).await.expect("bind");
        let port = first.local_addr().expect("addr").port();
        if let Ok(second) = TcpListener::bind((b, port)).await {
            return (first, second);
        }
    }
    panic!("no port free on both {a} and {b}");
}

/// A listener on `[::1]:0` and its port; `None` (the test skipped) where the machine has no ::1, unless CI=true.
async fn v6_listener(test: &str) -> Option<(TcpListener, u16)> {
    if !have_v6_loopback(test) {
        return None;
    }
    let listener = TcpListener::bind((Ipv6Addr::LOCALHOST, 0))
        .await
        .expect("bind ::1");
    let port = listener.local_addr().expect("addr").port();
    Some((listener, port))
}

/// Whether this machine has an IPv6 loopback; without one the test is skipped, unless CI=true.
fn have_v6_loopback(test: &str) -> bool {
    if std::net::TcpListener::bind((Ipv6Addr::LOCALHOST, 0)).is_ok() {
        return true;
    }
    crawl_test_kit::tool::unavailable(test, "::1", "an IPv6 loopback")
}

/// The guard settings of these tests: 127.0.1.0/24 (and ::1 when asked) allowed, every other non-public address not.
fn guarded(dns: Option<&FakeDns>, extra_cidrs: &str, more: &str) -> String {
    let ns = dns.map_or_else(String::new, |d| {
        format!("nameservers = [\"{}\"]\n", d.addr())
    });
    format!(
        "[crawl]\nrespect_robots = false\nscope = \"any\"\n\
         [security]\nallow_private_networks = false\nallow_cidrs = [\"127.0.1.0/24\"{extra_cidrs}]\n\
         [resolver]\nmode = \"plain\"\nmin_ttl_s = 0\nnegative_ttl_s = 0\n{ns}{more}"
    )
}

fn by_url(records: Vec<Record>) -> BTreeMap<String, Record> {
    let mut m = BTreeMap::new();
    for r in records {
        if let Some(old) = m.insert(r.url.clone(), r) {
            panic!("{} recorded twice (earlier {old:?})", old.url);
        }
    }
    m
}

fn rec<'a>(m: &'a BTreeMap<String, Record>, url: &str) -> &'a Record {
    m.get(url)
        .unwrap_or_else(|| panic!("no record for {url}; recorded: {:?}", m.keys()))
}

fn fetched(m: &BTreeMap<String, Record>, url: &str) {
    let r = rec(m, url);
    assert_eq!(
        (r.outcome, r.status),
        (Outcome::Fetched, Some(200)),
        "{url}: {r:?}"
    );
}

fn private(m: &BTreeMap<String, Record>, url: &str, addr: &str) {
    let r = rec(m, url);
    assert_eq!(
        (r.outcome, r.reason),
        (Outcome::Excluded, Some(Reason::PrivateNetwork)),
        "{url}: {r:?}"
    );
    let error = r.error.as_deref().unwrap_or_default();
    assert!(error.contains(addr), "{url}: error names {addr}: {error}");
}

/// Runs the crawl to its end on a blocking thread; its records by URL, after asserting a clean exit.
async fn crawl(seeds: &[String], overrides: &str) -> BTreeMap<String, Record> {
    let c = TestCrawl::new(ENGINE, seeds, overrides).expect("test crawl");
    let (res, c) = tokio::task::spawn_blocking(move || (c.run(DEADLINE), c))
        .await
        .expect("join");
    assert_eq!(
        res.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        res.stdout,
        res.stderr
    );
    by_url(c.records())
}

/// A crawl of `rebind.test` (TTL 0, every lookup asks again) whose first `allowed` A answers are 127.0.1.{octet} and
/// every later one 127.0.2.{octet}. Each fetch asks twice: the fetcher (its record's `dns`), then the connector.
async fn rebinding(octet: u8, allowed: usize) -> BTreeMap<String, Record> {
    let (good, private_l) = same_port(v4(1, octet), v4(2, octet)).await;
    let port = good.local_addr().unwrap().port();
    let site = Server::start(
        good,
        vec![("/", page(&["/next".into()])), ("/next", page(&[]))],
    );
    let inside = Server::start(private_l, vec![("/", page(&[])), ("/next", page(&[]))]);
    let ok = Behaviour::v4(&[Ipv4Addr::new(127, 0, 1, octet)], 0);
    let rebound = Behaviour::v4(&[Ipv4Addr::new(127, 0, 2, octet)], 0);
    let mut answers = vec![ok; allowed];
    answers.push(rebound);
    let dns = FakeDns::start(Zone::new().with("rebind.test", Behaviour::Sequence(answers)))
        .await
        .expect("dns");
    let seed = format!("http://rebind.test:{port}/");
    let m = crawl(std::slice::from_ref(&seed), &guarded(Some(&dns), "", "")).await;
    fetched(&m, &seed);
    let next = format!("http://rebind.test:{port}/next");
    private(&m, &next, &format!("127.0.2.{octet}"));
    assert_eq!(inside.conns(), 0, "the private listener saw no connection");
    assert_eq!(site.paths(), ["/"]);
    assert!(dns.queries_for("rebind.test") >= 3, "asked again each time");
    dns.shutdown().await;
    m
}

#[tokio::test]
async fn dns_rebinding_never_reaches_the_private_address() {
    // "/" is fetched from 127.0.1.5; the next lookup for "/next" already answers 127.0.2.5.
    rebinding(5, 2).await;
}

#[tokio::test]
async fn rebinding_between_the_fetchers_lookup_and_the_dial_is_caught_at_the_dial() {
    // The fetcher's lookup for "/next" still answers 127.0.1.15 (its record says so); the connector's, just before
    // the dial, answers 127.0.2.15: the address actually dialed is the one checked.
    let m = rebinding(15, 3).await;
    let next = m
        .values()
        .find(|r| r.url.ends_with("/next"))
        .expect("/next recorded");
    let dns = next.dns.clone().expect("dns evidence");
    assert_eq!(dns.addresses, ["127.0.1.15"], "{next:?}");
}

#[tokio::test]
async fn a_redirect_to_a_private_address_is_refused_with_a_record() {
    let (allowed, private_l) = same_port(v4(1, 6), v4(2, 6)).await;
    let port = allowed.local_addr().unwrap().port();
    let literal = format!("http://127.0.2.6:{port}/secret");
    let named = format!("http://inside.test:{port}/secret");
    let mapped = format!("http://[::ffff:127.0.2.6]:{port}/secret");
    let site = Server::start(
        allowed,
        vec![
            ("/", page(&["/r1".into(), "/r2".into(), "/r3".into()])),
            ("/r1", Resp::Redirect(literal.clone())),
            ("/r2", Resp::Redirect(named.clone())),
            ("/r3", Resp::Redirect(mapped.clone())),
        ],
    );
    let inside = Server::start(private_l, vec![("/secret", page(&[]))]);
    let hosts =
        "hosts = { \"public.test\" = [\"127.0.1.6\"], \"inside.test\" = [\"127.0.2.6\"] }\n";
    let seed = format!("http://public.test:{port}/");
    let m = crawl(std::slice::from_ref(&seed), &guarded(None, "", hosts)).await;
    fetched(&m, &seed);
    for r in ["/r1", "/r2", "/r3"] {
        let url = format!("http://public.test:{port}{r}");
        assert_eq!(rec(&m, &url).status, Some(302), "{url}");
    }
    private(&m, &literal, "127.0.2.6");
    private(&m, &named, "127.0.2.6");
    // The mapped form is refused as the loopback address it embeds (the URL is kept as written, canonicalised).
    let mapped_rec = m
        .iter()
        .find(|(u, _)| u.contains("ffff"))
        .map(|(u, _)| u.clone())
        .expect("the mapped redirect target is recorded");
    private(&m, &mapped_rec, "127.0.2.6");
    assert_eq!(inside.conns(), 0, "the private listener saw no connection");
    let mut asked = site.paths();
    asked.sort();
    assert_eq!(asked, ["/", "/r1", "/r2", "/r3"]);
}

#[tokio::test]
async fn ipv6_literals_and_aaaa_names_are_crawled_on_loopback() {
    let Some((listener, port)) =
        v6_listener("ipv6_literals_and_aaaa_names_are_crawled_on_loopback").await
    else {
        return;
    };
    let seed = format!("http://[::1]:{port}/");
    // A non-canonical literal (upper case, uncompressed) must be canonicalised to [::1] and fetched once.
    let long = format!("http://[0:0:0:0:0:0:0:1]:{port}/b");
    let v6_dns = format!("http://v6only.test:{port}/c");
    let v6_hosts = format!("http://v6hosts.test:{port}/d");
    let site = Server::start(
        listener,
        vec![
            (
                "/",
                page(&[
                    "/a".into(),
                    long,
                    "/b".into(),
                    v6_dns.clone(),
                    v6_hosts.clone(),
                ]),
            ),
            ("/a", page(&[])),
            ("/b", page(&[])),
            ("/c", page(&[])),
            ("/d", page(&[])),
        ],
    );
    let zone = Zone::new().with(
        "v6only.test",
        Behaviour::Answer {
            v4: Vec::new(),
            v6: vec![Ipv6Addr::LOCALHOST],
            ttl: 60,
        },
    );
    let dns = FakeDns::start(zone).await.expect("dns");
    let hosts = "hosts = { \"v6hosts.test\" = [\"::1\"] }\n";
    let m = crawl(
        std::slice::from_ref(&seed),
        &guarded(Some(&dns), ", \"::1\"", hosts),
    )
    .await;
    fetched(&m, &seed);
    fetched(&m, &format!("http://[::1]:{port}/a"));
    fetched(&m, &format!("http://[::1]:{port}/b"));
    fetched(&m, &v6_dns);
    fetched(&m, &v6_hosts);
    assert_eq!(m.len(), 5, "recorded: {:?}", m.keys());
    let mut paths = site.paths();
    paths.sort();
    assert_eq!(paths, ["/", "/a", "/b", "/c", "/d"], "each fetched once");
    let aaaa = dns
        .log()
        .iter()
        .filter(|q| q.name == "v6only.test" && q.qtype.to_string() == "AAAA")
        .count();
    assert!(aaaa >= 1, "asked for AAAA over plain dns: {:?}", dns.log());
    dns.shutdown().await;
}

#[tokio::test]
async fn without_allow_cidrs_the_ipv6_loopback_is_refused() {
    let Some((listener, port)) =
        v6_listener("without_allow_cidrs_the_ipv6_loopback_is_refused").await
    else {
        return;
    };
    let site = Server::start(listener, vec![("/", page(&[]))]);
    let literal = format!("http://[::1]:{port}/");
    let named = format!("http://v6hosts.test:{port}/");
    let hosts = "hosts = { \"v6hosts.test\" = [\"::1\", \"fd00::1\", \"0.0.0.0\"] }\n";
    let m = crawl(&[literal.clone(), named.clone()], &guarded(None, "", hosts)).await;
    private(&m, &literal, "::1");
    private(&m, &named, "::1");
    assert_eq!(site.conns(), 0);
}

/// A listener on `addr` whose accept queue is full: further connection attempts get no answer (their SYNs are
/// dropped), like a black-holed address.
async fn black_hole(addr: SocketAddr) -> Option<(TcpListener, Vec<TcpStream>)> {
    let socket = if addr.is_ipv6() {
        TcpSocket::new_v6()
    } else {
        TcpSocket::new_v4()
    }
    .ok()?;
    socket.bind(addr).ok()?;
    let listener = socket.listen(0).ok()?;
    let mut held = Vec::new();
    for _ in 0..64 {
        match tokio::time::timeout(Duration::from_millis(300), TcpStream::connect(addr)).await {
            Ok(Ok(s)) => held.push(s),
            _ => return Some((listener, held)),
        }
    }
    None
}

#[tokio::test]
async fn a_black_holed_or_refusing_family_is_raced_past() {
    if !have_v6_loopback("a_black_holed_or_refusing_family_is_raced_past") {
        return;
    }
    // race6.test: AAAA ::1 black-holed, A 127.0.1.8 serving. race4.test: A 127.0.1.9 black-holed, AAAA ::1
    // serving (another port). refuse.test: AAAA ::1 where nothing listens, A 127.0.1.10 serving.
    let (good4, hole6) = {
        let mut found = None;
        for _ in 0..20 {
            let l = TcpListener::bind((v4(1, 8), 0)).await.expect("bind");
            let port = l.local_addr().unwrap().port();
            if let Some(h) = black_hole(SocketAddr::new(Ipv6Addr::LOCALHOST.into(), port)).await {
                found = Some((l, h));
                break;
            }
        }
        found.expect("a black hole on ::1")
    };
    let p1 = good4.local_addr().unwrap().port();
    let (good6, hole4) = {
        let mut found = None;
        for _ in 0..20 {
            let l = TcpListener::bind((Ipv6Addr::LOCALHOST, 0))
                .await
                .expect("bind");
            let port = l.local_addr().unwrap().port();
            if let Some(h) = black_hole(SocketAddr::new(v4(1, 9), port)).await {
                found = Some((l, h));
                break;
            }
        }
        found.expect("a black hole on 127.0.1.9")
    };
    let p2 = good6.local_addr().unwrap().port();
    let good_refuse = TcpListener::bind((v4(1, 10), 0)).await.expect("bind");
    let p3 = good_refuse.local_addr().unwrap().port();
    let s1 = Server::start(good4, vec![("/", page(&[]))]);
    let s2 = Server::start(good6, vec![("/", page(&[]))]);
    let s3 = Server::start(good_refuse, vec![("/", page(&[]))]);
    let both = |a: Ipv4Addr| Behaviour::Answer {
        v4: vec![a],
        v6: vec![Ipv6Addr::LOCALHOST],
        ttl: 60,
    };
    let zone = Zone::new()
        .with("race6.test", both(Ipv4Addr::new(127, 0, 1, 8)))
        .with("race4.test", both(Ipv4Addr::new(127, 0, 1, 9)))
        .with("refuse.test", both(Ipv4Addr::new(127, 0, 1, 10)));
    let dns = FakeDns::start(zone).await.expect("dns");
    let seeds = [
        format!("http://race6.test:{p1}/"),
        format!("http://race4.test:{p2}/"),
        format!("http://refuse.test:{p3}/"),
    ];
    // connect_timeout 5 s: a fetch that waited for the black hole would take that long.
    let over = guarded(Some(&dns), ", \"::1\"", "") + "[fetch]\nconnect_timeout_ms = 5000\n";
    let m = crawl(&seeds, &over).await;
    for seed in &seeds {
        fetched(&m, seed);
        let elapsed = rec(&m, seed).elapsed_ms.unwrap_or(u64::MAX);
        assert!(elapsed < 2_000, "{seed} took {elapsed} ms");
    }
    // The black-holed AAAA of race6 was tried first: the A attempt started one attempt delay (250 ms) later.
    let race6 = rec(&m, &seeds[0]).elapsed_ms.unwrap_or(0);
    assert!(race6 >= 240, "race6 went through the race: {race6} ms");
    assert_eq!((s1.conns(), s2.conns(), s3.conns()), (1, 1, 1));
    drop((hole6, hole4));
    dns.shutdown().await;
}

/// `[[resolver.doh]]` for `doh`, its CA written to `dir`.
fn doh_table(doh: &FakeDoh, dir: &tempfile::TempDir) -> String {
    let ca = doh.write_ca_file(dir.path()).expect("write ca file");
    format!(
        "[[resolver.doh]]\nurl = \"{}\"\nbootstrap = \"{}\"\nca_file = \"{}\"\n",
        doh.url(),
        doh.bootstrap(),
        ca.display()
    )
}

#[tokio::test]
async fn aaaa_answers_over_the_tcp_fallback_and_doh_are_crawled() {
    let Some((listener, port)) =
        v6_listener("aaaa_answers_over_the_tcp_fallback_and_doh_are_crawled").await
    else {
        return;
    };
    let site = Server::start(listener, vec![("/", page(&[]))]);
    let v6 = |ttl| Behaviour::Answer {
        v4: Vec::new(),
        v6: vec![Ipv6Addr::LOCALHOST],
        ttl,
    };
    // Plain DNS: every UDP answer is truncated, the AAAA record comes over TCP.
    let dns =
        FakeDns::start(Zone::new().with("v6tcp.test", Behaviour::Truncated(Box::new(v6(60)))))
            .await
            .expect("dns");
    let seed = format!("http://v6tcp.test:{port}/");
    let m = crawl(
        std::slice::from_ref(&seed),
        &guarded(Some(&dns), ", \"::1\"", ""),
    )
    .await;
    fetched(&m, &seed);
    let over_tcp = dns
        .log()
        .iter()
        .filter(|q| q.qtype.to_string() == "AAAA" && format!("{:?}", q.transport) == "Tcp")
        .count();
    assert!(over_tcp >= 1, "AAAA asked over tcp: {:?}", dns.log());
    dns.shutdown().await;
    // DoH only: the AAAA record comes from the DoH server.
    let doh = FakeDoh::start(Zone::new().with("v6doh.test", v6(60)))
        .await
        .expect("doh");
    let dir = tempfile::tempdir().expect("tempdir");
    let seed = format!("http://v6doh.test:{port}/");
    let over = guarded(None, ", \"::1\"", "").replace("mode = \"plain\"", "mode = \"doh\"")
        + &doh_table(&doh, &dir);
    let m = crawl(std::slice::from_ref(&seed), &over).await;
    fetched(&m, &seed);
    let dns_info = rec(&m, &seed).dns.clone().expect("dns evidence");
    assert_eq!(
        (dns_info.source.as_str(), dns_info.addresses.clone()),
        ("doh", vec!["::1".to_owned()])
    );
    assert!(
        doh.log().iter().any(|q| q.qtype.to_string() == "AAAA"),
        "AAAA asked over doh: {:?}",
        doh.log()
    );
    assert_eq!(site.conns(), 2);
    doh.shutdown().await;
}

#[tokio::test]
async fn a_bogus_aaaa_answer_is_detected_and_never_used() {
    let listener = TcpListener::bind((v4(1, 14), 0)).await.expect("bind");
    let port = listener.local_addr().unwrap().port();
    let site = Server::start(listener, vec![("/", page(&[]))]);
    let zone = Zone::new().with(
        "bogus6.test",
        Behaviour::Answer {
            v4: vec![Ipv4Addr::new(127, 0, 1, 14)],
            v6: vec!["2001:db8:bad::1".parse().unwrap()],
            ttl: 60,
        },
    );
    let dns = FakeDns::start(zone).await.expect("dns");
    let seed = format!("http://bogus6.test:{port}/");
    let over = guarded(Some(&dns), "", "bogus_ips = [\"2001:db8:bad::/48\"]\n")
        .replace("mode = \"plain\"", "mode = \"detect\"");
    let m = crawl(std::slice::from_ref(&seed), &over).await;
    fetched(&m, &seed);
    let info = rec(&m, &seed).dns.clone().expect("dns evidence");
    assert!(info.polluted, "{info:?}");
    assert_eq!(info.rules, ["bogus_ip"]);
    assert_eq!(
        info.addresses,
        ["127.0.1.14"],
        "the bogus address is not offered"
    );
    assert_eq!(site.conns(), 1);
    dns.shutdown().await;
}

#[tokio::test]
async fn through_a_proxy_chain_the_guard_checks_what_it_can_see() {
    use crawl_tests::socks::{Behaviour as Socks, FakeSocks, SeenTarget, SocksOptions};
    let (good, private_l) = same_port(v4(1, 17), v4(2, 17)).await;
    let port = good.local_addr().unwrap().port();
    let site = Server::start(good, vec![("/", page(&[]))]);
    let inside = Server::start(private_l, vec![("/", page(&[]))]);
    // The hop is on an allowed address; with remote resolution it maps inside.test to the private address.
    let opts = SocksOptions::default()
        .on(v4(1, 16))
        .resolve("inside.test", v4(2, 17));
    let hop = FakeSocks::start_with(Socks::Good, opts)
        .await
        .expect("socks");
    let hosts =
        "hosts = { \"public.test\" = [\"127.0.1.17\"], \"inside.test\" = [\"127.0.2.17\"] }\n";
    let chain = |resolve: &str| {
        format!(
            "[proxy]\ndefault = \"c\"\n[proxy.chains.c]\nhops = [\"socks5://{}\"]\n{resolve}",
            hop.addr()
        )
    };
    let public = format!("http://public.test:{port}/");
    let named = format!("http://inside.test:{port}/");
    let literal = format!("http://127.0.2.17:{port}/");
    // resolve = "local": the target address is chosen here, so the guard sees it.
    let over = guarded(None, "", hosts) + &chain("resolve = \"local\"\n");
    let m = crawl(&[public.clone(), named.clone(), literal.clone()], &over).await;
    fetched(&m, &public);
    private(&m, &named, "127.0.2.17");
    private(&m, &literal, "127.0.2.17");
    assert_eq!(inside.conns(), 0);
    assert_eq!(site.conns(), 1);
    let targets = hop.targets();
    assert_eq!(
        targets,
        [SeenTarget::Addr(SocketAddr::new(v4(1, 17), port))],
        "only the allowed address was sent to the chain"
    );
    // Remote resolution (the default): the last hop resolves the name and dials what its DNS says. The guard cannot
    // see that address: this is the documented limit (the literal is still refused before the chain).
    let over = guarded(None, "", hosts) + &chain("");
    let m = crawl(&[named.clone(), literal.clone()], &over).await;
    fetched(&m, &named);
    private(&m, &literal, "127.0.2.17");
    assert_eq!(
        inside.conns(),
        1,
        "reached through the proxy's own resolution"
    );
    assert!(
        hop.targets()
            .contains(&SeenTarget::Name("inside.test".into(), port))
    );
    hop.shutdown().await;
}

#[tokio::test]
async fn a_private_address_in_a_mixed_answer_is_never_dialed() {
    let (good, private_l) = same_port(v4(1, 18), v4(2, 18)).await;
    let port = good.local_addr().unwrap().port();
    let site = Server::start(good, vec![("/", page(&[]))]);
    let inside = Server::start(private_l, vec![("/", page(&[]))]);
    // The private addresses come first in the answer (v6 ones too): the race moves past each without dialing it.
    let hosts = "hosts = { \"mixed.test\" = [\"127.0.2.18\", \"::ffff:127.0.2.18\", \"169.254.169.254\", \
                 \"127.0.1.18\"] }\n";
    let seed = format!("http://mixed.test:{port}/");
    let m = crawl(std::slice::from_ref(&seed), &guarded(None, "", hosts)).await;
    fetched(&m, &seed);
    assert_eq!((site.conns(), inside.conns()), (1, 0));
}
