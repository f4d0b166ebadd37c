//! No secret leaves the process, and credentials stay with their origin.
//!
//! Canary strings, new each run, are put where a crawl holds secrets: a seed's password, the passwords of SOCKS5
//! hops, a configured cookie and bearer token, the Redis password, and the passwords of URLs in links and redirects
//! on pages. Crawls then meet failures of every kind (proxy refusing auth, proxy dropping the tunnel, 500, a stalled
//! answer, a TLS failure, a name that does not resolve, robots.txt failing, a redirect to another origin, Redis
//! restarted) with trace logs in JSON, an OTLP receiver taking every span, `/metrics` scraped while it runs, the
//! JSONL, WARC files and every file of the data_dir. No canary may appear in any of them, raw, percent-encoded or in
//! base64 (`user:password` as Basic sends it). The one exception: a page's own bytes (its links, its `Location`)
//! are archived as served, so the link canary may appear inside WARC response records and nowhere else. A marker
//! put in the same places (the seed's path, a proxy chain's name) must be found in every one of them, so that a
//! search that sees nothing cannot pass.
//!
//! Credentials on redirects: origin A (seed user name and password, a configured cookie) links and redirects to
//! origin B, to another port of A's host and elsewhere; A sees `Authorization` and `Cookie` on every request
//! (robots.txt included), no other server ever does.
//!
//! Hosts use 127.0.4.1..=127.0.4.19 (this file's range).

mod redirects;
mod server;

use crate::ENGINE;
use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crawl_core::record::{Outcome, Reason, Record};
use crawl_output::warc::reader::MemberReader;
use crawl_test_kit::redis::{self, Options, RedisServer};
use crawl_tests::engine::TestCrawl;
use crawl_tests::otlp::OtlpReceiver;
use crawl_tests::prom;
use crawl_tests::socks::{Behaviour, FakeSocks, SocksOptions};
use server::{Answer, Server, not_tls};

const DEADLINE: Duration = Duration::from_secs(60);

fn ip(last: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 4, last))
}

/// 16 hex digits, new each run.
fn token() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.write_u32(std::process::id());
    format!("{:016x}", h.finish())
}

fn base64(input: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(A[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn percent(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The forms a secret could leak in: as is, percent-encoded, base64 alone and as Basic's `user:password`. The
/// base64 forms drop trailing padding so they match inside a longer encoding too.
fn forms(user: &str, secret: &str) -> Vec<String> {
    let pair = format!("{user}:{secret}");
    let mut v = vec![
        secret.to_owned(),
        percent(secret),
        percent(&pair),
        base64(secret.as_bytes()),
        base64(pair.as_bytes()),
    ];
    for f in &mut v {
        while f.ends_with('=') {
            f.pop();
        }
        // The last base64 character before padding depends on what follows: leave it out.
        if f.len() > 8 && !f.contains(secret) && !f.contains('%') {
            f.pop();
        }
    }
    v.sort();
    v.dedup();
    v
}

fn contains(hay: &[u8], needle: &str) -> bool {
    let n = needle.as_bytes();
    !n.is_empty() && hay.windows(n.len()).any(|w| w == n)
}

/// A named blob of captured output.
struct Sink {
    name: String,
    bytes: Vec<u8>,
    /// Holds bytes the sites served (WARC response blocks): the link canary may be there.
    served: bool,
}

fn sink(name: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Sink {
    Sink {
        name: name.into(),
        bytes: bytes.into(),
        served: false,
    }
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// Every file under `dir`, raw bytes.
fn dir_sinks(label: &str, dir: &Path) -> Vec<Sink> {
    let mut files = Vec::new();
    files_under(dir, &mut files);
    files
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()));
            sink(format!("{label} {}", p.display()), bytes)
        })
        .collect()
}

/// Each WARC record, decompressed: its WARC header block, and its content block (marked `served` for responses);
/// the folder's other files (its owner marker, the writers' locks) as they are.
fn warc_sinks(dir: &Path) -> Vec<Sink> {
    let mut files = Vec::new();
    files_under(dir, &mut files);
    let mut out = Vec::new();
    for p in files {
        if !p.to_string_lossy().ends_with(".warc.gz") {
            let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()));
            out.push(sink(format!("warc_dir {}", p.display()), bytes));
            continue;
        }
        let f = std::fs::File::open(&p).expect("open warc");
        let mut r = MemberReader::new(f);
        let mut i = 0;
        while let Some(m) = r.next_member().expect("whole gzip members") {
            let split = m
                .data
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .map_or(m.data.len(), |i| i + 4);
            let (head, block) = m.data.split_at(split);
            let response = contains(head, "WARC-Type: response");
            out.push(sink(format!("{} record {i} header", p.display()), head));
            out.push(Sink {
                name: format!("{} record {i} block", p.display()),
                bytes: block.to_vec(),
                served: response,
            });
            i += 1;
        }
    }
    assert!(!out.is_empty(), "no WARC records in {}", dir.display());
    out
}

/// Asserts no form of any `never` secret is in any sink, nor a form of a `link` secret outside served bytes, and
/// that each `(group, marker)` of `must_see` is found in the sinks whose name starts with `group`.
fn assert_clean(
    sinks: &[Sink],
    never: &[(&str, Vec<String>)],
    link: &[String],
    must_see: &[(&str, &str)],
) {
    let mut leaks = Vec::new();
    for s in sinks {
        for (what, forms) in never {
            for f in forms {
                if contains(&s.bytes, f) {
                    leaks.push(format!("{what} as `{f}` in {}", s.name));
                }
            }
        }
        if !s.served {
            for f in link {
                if contains(&s.bytes, f) {
                    leaks.push(format!("link password as `{f}` in {}", s.name));
                }
            }
        }
    }
    for s in sinks
        .iter()
        .filter(|s| !leaks.is_empty() && leaks.iter().any(|l| l.ends_with(&s.name)))
    {
        let text = String::from_utf8_lossy(&s.bytes);
        let hits: Vec<&str> = text
            .lines()
            .filter(|l| {
                never
                    .iter()
                    .flat_map(|(_, f)| f)
                    .chain(link)
                    .any(|f| l.contains(f.as_str()))
            })
            .take(3)
            .collect();
        eprintln!("--- {}:\n{}", s.name, hits.join("\n"));
    }
    assert!(leaks.is_empty(), "secrets leaked:\n{}", leaks.join("\n"));
    for (group, marker) in must_see {
        let seen = sinks
            .iter()
            .filter(|s| s.name.starts_with(group))
            .any(|s| contains(&s.bytes, marker));
        assert!(
            seen,
            "the marker {marker} is not found in {group}: the search there would be blind"
        );
    }
}

fn has_reason(records: &[Record], reason: Reason) -> bool {
    records.iter().any(|r| r.reason == Some(reason))
}

fn summary(records: &[Record]) -> String {
    records
        .iter()
        .map(|r| {
            format!(
                "{} {:?} {:?} {:?} {:?}",
                r.url, r.outcome, r.reason, r.status, r.error
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn canaries_never_leave_the_process_whatever_fails() {
    let t = token();
    let seed_pass = format!("cnry-seed-{t}");
    let link_pass = format!("cnry-link-{t}");
    let proxy_pass = format!("cnry-proxy-{t}");
    let cookie = format!("cnry-cookie-{t}");
    let bearer = format!("cnry-bearer-{t}");
    let mark = format!("mark-{t}");

    let a = Server::start(ip(1)).await;
    let a_other_port = Server::start(ip(1)).await;
    let b = Server::start(ip(2)).await;
    let tls = not_tls(ip(3)).await;
    let robots_down = Server::start(ip(4)).await;
    let behind_refuse = Server::start(ip(5)).await;
    let behind_drop = Server::start(ip(6)).await;
    let socks = |b: Behaviour, last: u8| {
        let opts = SocksOptions::default()
            .on(ip(last))
            .with_auth("proxyuser", &proxy_pass);
        FakeSocks::start_with(b, opts)
    };
    let refuse = socks(Behaviour::RefuseAuth, 7).await.expect("socks");
    let drop = socks(Behaviour::DropMidStream { after_bytes: 64 }, 8)
        .await
        .expect("socks");
    let rx = OtlpReceiver::start().await;

    let (pa, pb) = (a.addr, b.addr);
    let link = |host: std::net::SocketAddr, path: &str| {
        format!("http://linkuser:{link_pass}@{host}{path}")
    };
    let page = format!(
        "<html><body>\
         <a href=\"{}\">b</a> <a href=\"/{mark}/away\">away</a> <a href=\"/{mark}/err500\">500</a>\
         <a href=\"/{mark}/slow\">slow</a> <a href=\"{}\">other port</a> <a href=\"https://{tls}/tls\">tls</a>\
         <a href=\"http://linkuser:{link_pass}@nx-{t}.invalid/dns\">dns</a>\
         <a href=\"{}\">robots down</a> <a href=\"{}\">refused</a> <a href=\"{}\">dropped</a>\
         <a href=\"{}\">self</a> <a href=\"/{mark}/bad-location\">bad location</a>\
         <a href=\"http://linkuser:{link_pass}@[bad/x\">bad href</a></body></html>",
        link(pb, "/b-page"),
        a_other_port.url("/other-port"),
        robots_down.url("/page"),
        behind_refuse.url("/p"),
        behind_drop.url("/big"),
        link(pa, &format!("/{mark}/self")),
    );
    a.route(
        "/robots.txt",
        Answer::text(200, "User-agent: *\nAllow: /\n"),
    );
    a.route(&format!("/{mark}/"), Answer::html(page));
    a.route(
        &format!("/{mark}/away"),
        Answer::redirect(&link(pb, "/landing")),
    );
    a.route(&format!("/{mark}/err500"), Answer::text(500, "boom"));
    a.route(&format!("/{mark}/slow"), Answer::Stall);
    a.route(&format!("/{mark}/self"), Answer::html("<p>self</p>"));
    // A Location that is no URL at all, with a password in it.
    a.route(
        &format!("/{mark}/bad-location"),
        Answer::redirect(&format!("http://linkuser:{link_pass}@[bad/x")),
    );
    a_other_port.route("/other-port", Answer::html("<p>other port</p>"));
    b.route("/b-page", Answer::html("<p>b</p>"));
    b.route("/landing", Answer::html("<p>landing</p>"));
    robots_down.route("/robots.txt", Answer::text(500, "down"));
    robots_down.route("/page", Answer::html("<p>never</p>"));
    behind_drop.route("/big", Answer::html("x".repeat(8192)));

    let seed = format!("http://seeduser:{seed_pass}@{pa}/{mark}/");
    let chain_refuse = format!("refuse-{mark}");
    let overrides = format!(
        r#"
[crawl]
scope = "any"
max_depth = 3
robots_max_attempts = 1
robots_retry_ms = 100
[fetch]
max_retries = 0
connect_timeout_ms = 1000
header_timeout_ms = 1500
idle_timeout_ms = 1500
request_timeout_ms = 4000
[[fetch.credentials]]
origin = "http://{pa}"
cookie = "sid={cookie}"
[[fetch.credentials]]
origin = "https://{tls}"
authorization = "Bearer {bearer}"
[output]
warc_dir = "WARC_DIR"
[observability]
log_level = "trace"
log_format = "json"
otlp_endpoint = "{otlp}"
sample_ratio = 1.0
metrics_listen = "127.0.4.9:0"
[proxy.chains.{chain_refuse}]
hops = ["{refuse_url}"]
[proxy.chains.drop]
hops = ["{drop_url}"]
[[proxy.rules]]
hosts = ["127.0.4.5"]
use = "{chain_refuse}"
[[proxy.rules]]
hosts = ["127.0.4.6"]
use = "drop"
"#,
        otlp = rx.http_endpoint(),
        refuse_url = refuse.url(),
        drop_url = drop.url(),
    );
    let crawl = TestCrawl::new(ENGINE, &[seed], "").expect("test crawl");
    let warc_dir = crawl.dir.path().join("warc");
    crawl
        .rewrite(&overrides.replace("WARC_DIR", &warc_dir.display().to_string()))
        .expect("rewrite config");
    assert!(
        refuse.url().contains(&proxy_pass),
        "the config carries the proxy password"
    );

    let (run, scrapes) = tokio::task::block_in_place(|| {
        let running = crawl.start();
        let addr = running.metrics_addr(Duration::from_secs(10));
        let scraper = std::thread::spawn(move || {
            let mut all = String::new();
            while let Ok((_, text)) = prom::scrape(addr, None) {
                all.push_str(&text);
                std::thread::sleep(Duration::from_millis(150));
            }
            all
        });
        let run = running.wait(DEADLINE);
        (run, scraper.join().expect("scraper"))
    });
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let records = crawl.records();
    let all = summary(&records);

    // Every kind of failure happened.
    for reason in [
        Reason::Proxy,
        Reason::Timeout,
        Reason::Dns,
        Reason::RobotsUnavailable,
    ] {
        assert!(has_reason(&records, reason), "no {reason:?} record:\n{all}");
    }
    assert!(
        records.iter().any(|r| r
            .error
            .as_deref()
            .is_some_and(|e| e.starts_with("unusable Location \"http://***@[bad/x\""))),
        "the unusable Location is named without its userinfo:\n{all}"
    );
    // The TLS host and the one behind the dropping proxy fail at their robots.txt already.
    for detail in ["tls: ", "end of file"] {
        assert!(
            records
                .iter()
                .any(|r| r.error.as_deref().is_some_and(|e| e.contains(detail))),
            "no failure with `{detail}`:\n{all}"
        );
    }
    assert!(
        records.iter().any(|r| r.status == Some(500)),
        "no 500:\n{all}"
    );
    assert!(
        records
            .iter()
            .any(|r| r.status == Some(302) && r.redirect_to.as_deref() == Some(&b.url("/landing"))),
        "the redirect to B is recorded without its userinfo:\n{all}"
    );
    let fetched: BTreeSet<&str> = records
        .iter()
        .filter(|r| r.outcome == Outcome::Fetched && r.status == Some(200))
        .map(|r| r.url.as_str())
        .collect();
    for want in [
        b.url("/b-page"),
        b.url("/landing"),
        a_other_port.url("/other-port"),
    ] {
        assert!(
            fetched.contains(want.as_str()),
            "{want} not fetched:\n{all}"
        );
    }

    // Credentials went to A, on every request (robots.txt too), and to no one else.
    let basic = format!(
        "Basic {}",
        base64(format!("seeduser:{seed_pass}").as_bytes())
    );
    let at_a = a.seen();
    assert!(at_a.len() >= 4, "{at_a:?}");
    for s in &at_a {
        assert_eq!(
            s.header("authorization"),
            Some(basic.as_str()),
            "{} at A",
            s.path
        );
        assert_eq!(
            s.header("cookie"),
            Some(format!("sid={cookie}").as_str()),
            "{} at A",
            s.path
        );
    }
    for (name, server) in [
        ("B", &b),
        ("A's host on another port", &a_other_port),
        ("robots-down host", &robots_down),
        ("host behind the dropping proxy", &behind_drop),
    ] {
        let seen = server.seen();
        assert!(!seen.is_empty(), "{name} was never asked");
        for s in seen {
            assert!(
                s.header("authorization").is_none() && s.header("cookie").is_none(),
                "{name} got credentials on {}: {:?}",
                s.path,
                s.headers
            );
        }
    }

    // The process has exited, and its exporter's shutdown waits for every export's answer, which the receiver
    // sends once it has kept the spans: every span is in.
    assert!(
        rx.wait_for(|spans| !spans.is_empty(), Duration::from_secs(10)),
        "no span reached the receiver"
    );
    let spans = format!("{:?}", rx.spans());
    let mut sinks = vec![
        sink("stderr", run.stderr.clone()),
        sink("stdout", run.stdout.clone()),
        sink("spans", spans),
        sink("metrics", scrapes),
        sink("jsonl", std::fs::read(&crawl.jsonl).expect("jsonl")),
        sink(
            "jsonl marker",
            std::fs::read(format!("{}.owner", crawl.jsonl.display())).expect("jsonl marker"),
        ),
    ];
    sinks.extend(dir_sinks("data_dir", &crawl.data_dir));
    sinks.extend(warc_sinks(&warc_dir));
    let never = [
        ("seed password", forms("seeduser", &seed_pass)),
        ("proxy password", forms("proxyuser", &proxy_pass)),
        ("cookie", forms("sid", &cookie)),
        ("bearer token", forms("Bearer", &bearer)),
    ];
    let link_forms = forms("linkuser", &link_pass);
    // The search sees each secret where it must be: the config holds them, A received the Basic form, the archive
    // holds the page as served.
    let config = std::fs::read(&crawl.config_path).expect("config");
    for (what, f) in &never {
        assert!(
            f.iter().any(|x| contains(&config, x)),
            "{what} is in the config"
        );
    }
    let sent = at_a[0]
        .header("authorization")
        .unwrap_or_default()
        .as_bytes();
    assert!(
        forms("seeduser", &seed_pass)
            .iter()
            .any(|f| contains(sent, f)),
        "the base64 forms match what A received"
    );
    assert!(
        sinks
            .iter()
            .any(|s| s.served && contains(&s.bytes, &link_pass)),
        "the page with the link password is archived as served"
    );
    let warc = warc_dir.display().to_string();
    assert_clean(
        &sinks,
        &never,
        &link_forms,
        &[
            ("stderr", &chain_refuse),
            ("spans", &mark),
            ("metrics", &chain_refuse),
            ("jsonl", &mark),
            ("data_dir", &mark),
            (&warc, &mark),
        ],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_redis_password_never_leaves_the_process() {
    if !redis::require("the_redis_password_never_leaves_the_process", false) {
        return;
    }
    let t = token();
    let redis_pass = format!("cnry-redis-{t}");
    let seed_pass = format!("cnry-seed-{t}");
    let mark = format!("mark-{t}");
    let mut redis = RedisServer::with(Options {
        password: Some(redis_pass.clone()),
        aof: true,
        ..Options::default()
    });
    assert!(redis.url().contains(&redis_pass));

    let a = Server::start(ip(10)).await;
    let b = Server::start(ip(11)).await;
    let pages = 12;
    let mut index = String::new();
    for i in 0..pages {
        index.push_str(&format!("<a href=\"/{mark}/p{i}\">{i}</a> "));
        a.route(
            &format!("/{mark}/p{i}"),
            Answer::html(format!("<a href=\"{}\">b</a>", b.url("/x"))),
        );
    }
    a.route(&format!("/{mark}/"), Answer::html(index));
    a.route(&format!("/{mark}/p3"), Answer::text(500, "boom"));
    a.route(&format!("/{mark}/p4"), Answer::redirect(&b.url("/moved")));
    b.route("/moved", Answer::html("<p>moved</p>"));
    b.route("/x", Answer::html("<p>x</p>"));

    let seed = format!("http://seeduser:{seed_pass}@{}/{mark}/", a.addr);
    let overrides = format!(
        r#"
[crawl]
scope = "any"
[politeness]
min_delay_ms = 150
per_host_concurrency = 1
[frontier]
backend = "redis"
commit_interval_ms = 20
[frontier.redis]
urls = ["{url}"]
crawl = "c{t}"
lease_ms = 2000
max_outage_ms = 20000
[observability]
log_level = "trace"
log_format = "json"
"#,
        url = redis.url()
    );
    let crawl = TestCrawl::new(ENGINE, &[seed], &overrides).expect("test crawl");
    let run = tokio::task::block_in_place(|| {
        let running = crawl.start();
        // Redis goes away and comes back (from its AOF) while the crawl runs: reconnection paths log too. It comes
        // back once the crawl has logged the outage.
        crawl_tests::wait::until_blocking(Duration::from_secs(20), "A served 4 requests", || {
            a.seen().len() >= 4
        });
        redis.kill();
        let outage = running.wait_for_line(Duration::from_secs(10), |l| {
            (l.contains("redis unreachable") || l.contains("shard lease round failed"))
                .then_some(())
        });
        assert!(
            outage.is_some(),
            "the crawl never logged the outage:\n{}",
            running.stderr_so_far()
        );
        redis.restart();
        running.wait(DEADLINE)
    });
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let records = crawl.records();
    let all = summary(&records);
    assert!(records.len() > pages, "{all}");
    assert!(records.iter().any(|r| r.status == Some(500)), "{all}");
    for s in b.seen() {
        assert!(
            s.header("authorization").is_none(),
            "B got credentials: {s:?}"
        );
    }
    assert!(a.seen().iter().all(|s| s.header("authorization").is_some()));

    let mut sinks = vec![
        sink("stderr", run.stderr.clone()),
        sink("stdout", run.stdout.clone()),
        sink("jsonl", std::fs::read(&crawl.jsonl).expect("jsonl")),
    ];
    sinks.extend(dir_sinks("data_dir", &crawl.data_dir));
    let never = [
        ("redis password", forms("", &redis_pass)),
        ("seed password", forms("seeduser", &seed_pass)),
    ];
    // The crawl name sits next to the password in the config and is logged; the seed's path is recorded.
    let crawl_name = format!("c{t}");
    let config = std::fs::read(&crawl.config_path).expect("config");
    for (what, f) in &never {
        assert!(
            f.iter().any(|x| contains(&config, x)),
            "{what} is in the config"
        );
    }
    assert_clean(
        &sinks,
        &never,
        &[],
        &[("stderr", &crawl_name), ("jsonl", &mark)],
    );
}
