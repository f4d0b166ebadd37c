//! Operators steering a running crawl through the control API, with the real binary: a host paused (the site sees
//! no request for it while the other host goes on), the whole crawl paused and resumed, a host's politeness set,
//! URLs added (answered queued, known, excluded or invalid; a queued one fetched), a host's queue dropped (every
//! URL recorded `excluded`/`operator`, none fetched), a pause that survives a restart, and an add answered
//! `queued` that survives kill -9; `crawl-engine ctl` for each (`hosts`, `host`, `pause`, `resume`, `politeness`,
//! `add`, `drop`; `status`, `reload` and `--json` are in api.rs).
//!
//! Hosts use 127.0.5.40..=127.0.5.49 (this file's range).

use crate::ENGINE;
use crate::api::{Answer, TOKEN, api_addr, api_lines, call, finish, write};
use crawl_core::record::{Outcome, Reason};
use crawl_tests::engine::{Running, TestCrawl, read_records};
use crawl_tests::site::{Site, SiteSpec};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Two hosts of `pages` pages, four links each, two orphan pages each (linked from nowhere, in a sitemap nothing
/// names).
fn site(last: u8, pages: usize) -> SiteSpec {
    SiteSpec {
        hosts: 2,
        pages_per_host: pages,
        links_per_page: 4,
        cross_host_ratio: 0.0,
        // Served but never read (robots.txt, which would name it, is not): the orphans stay unknown until added.
        robots: false,
        sitemaps: true,
        redirects: false,
        missing: false,
        orphans: 2,
        gzip: false,
        prefix: [127, 0, 5],
        first_octet: last,
        log_requests: true,
        ..SiteSpec::default()
    }
}

/// One request at a time per host, `delay_ms` apart; the API on loopback with the token in `token`.
fn config(delay_ms: u64, api: &str) -> String {
    format!(
        "[crawl]\nrespect_robots = false\nmax_depth = 1000\n[politeness]\nper_host_concurrency = 1\n\
         min_delay_ms = {delay_ms}\n[security]\nallow_private_networks = true\n[api]\n{api}\n"
    )
}

/// Requests the site saw for `host` so far.
pub(crate) fn seen(site: &Site, host: usize) -> usize {
    site.requests().iter().filter(|r| r.host == host).count()
}

/// Waits up to `within` for `cond`, polling every 50 ms.
pub(crate) fn eventually(within: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("timed out waiting for {what}");
}

pub(crate) fn get(addr: SocketAddr, path: &str) -> serde_json::Value {
    let a = call(addr, "GET", path, Some(TOKEN), "");
    assert_eq!(a.status, 200, "GET {path}: {}", a.body);
    a.json()
}

fn post(addr: SocketAddr, path: &str, body: &str) -> Answer {
    let a = call(addr, "POST", path, Some(TOKEN), body);
    assert!(
        a.status < 300,
        "POST {path} {body}: {} {}",
        a.status,
        a.body
    );
    a
}

/// Runs `crawl-engine ctl --api ... --token-file ... ARGS`; its stdout.
fn ctl(addr: SocketAddr, token: &std::path::Path, args: &[&str]) -> String {
    let api = format!("http://{addr}");
    let out = tokio::task::block_in_place(|| {
        Command::new(ENGINE)
            .arg("ctl")
            .args(["--api", &api, "--token-file"])
            .arg(token)
            .args(args)
            .env_remove("CRAWL_ENGINE_CONFIG")
            .stdin(Stdio::null())
            .output()
            .expect("run ctl")
    });
    assert_eq!(
        out.status.code(),
        Some(0),
        "ctl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Nothing new reaches `host` for `quiet` (after what was in flight when asked has ended).
pub(crate) fn stays_quiet(site: &Site, host: usize, quiet: Duration) -> usize {
    // A request already sent when the pause was applied may still arrive: let in-flight ones land.
    std::thread::sleep(Duration::from_millis(400));
    let before = seen(site, host);
    std::thread::sleep(quiet);
    let after = seen(site, host);
    assert_eq!(
        after,
        before,
        "host {host} got {} requests while paused",
        after - before
    );
    after
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_pause_resume_add_and_drop() {
    let site = Site::builder(site(41, 80)).start().await.expect("site");
    let (h0, h1) = (site.url(0, "/"), site.url(1, "/"));
    let name1 = url::Url::parse(&h1).unwrap().host_str().unwrap().to_owned();
    let c = TestCrawl::new(ENGINE, &[h0.clone(), h1.clone()], "").expect("test crawl");
    let token = write(&c, "api.token", TOKEN);
    c.rewrite(&config(150, &api_lines(&token, "")))
        .expect("config");
    let child = c.start();
    let addr = api_addr(&child);
    tokio::task::block_in_place(|| {
        eventually(Duration::from_secs(20), "both hosts fetched", || {
            seen(&site, 0) >= 2 && seen(&site, 1) >= 2
        })
    });

    // A host paused: nothing more for it, the other goes on.
    let a = post(addr, "/v1/pause", &format!(r#"{{"host": "{name1}"}}"#)).json();
    assert_eq!(
        (a["changed"].as_bool(), a["target"].as_str()),
        (Some(true), Some("host"))
    );
    let other = seen(&site, 0);
    tokio::task::block_in_place(|| stays_quiet(&site, 1, Duration::from_millis(1500)));
    assert!(seen(&site, 0) > other, "the other host stopped too");
    let h = get(addr, &format!("/v1/hosts/{name1}"));
    assert_eq!(h["paused"], true, "{h}");
    assert!(
        h["paused_by"]
            .as_str()
            .is_some_and(|b| b.starts_with("api 127.0.0.1:")),
        "{h}"
    );
    assert!(h["queued"].as_u64().is_some_and(|n| n > 0), "{h}");
    let table = ctl(addr, &token, &["hosts", "--sort", "name"]);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with(&name1) && l.contains("yes")),
        "{table}"
    );
    let one = ctl(addr, &token, &["host", &name1]);
    assert!(
        one.contains(&name1) && one.contains("api 127.0.0.1:"),
        "{one}"
    );
    let status = get(addr, "/v1/status");
    assert_eq!(
        status["operator"]["paused_hosts"][0],
        name1.as_str(),
        "{status}"
    );

    // The whole crawl paused: nothing at all; then resumed, host included.
    ctl(addr, &token, &["pause"]);
    assert_eq!(get(addr, "/v1/status")["state"], "paused");
    tokio::task::block_in_place(|| stays_quiet(&site, 0, Duration::from_millis(1200)));
    ctl(addr, &token, &["resume"]);
    ctl(addr, &token, &["resume", &name1]);
    let before = seen(&site, 1);
    tokio::task::block_in_place(|| {
        eventually(Duration::from_secs(10), "the host resumed", || {
            seen(&site, 1) > before
        })
    });

    // Politeness: shown on the host, refused for one authority.
    let a = call(
        addr,
        "PUT",
        &format!("/v1/hosts/{name1}/politeness"),
        Some(TOKEN),
        r#"{"delay_ms": 50, "concurrency": 2, "expires_s": 600}"#,
    );
    assert_eq!(a.status, 200, "{}", a.body);
    let h = get(addr, &format!("/v1/hosts/{name1}"));
    assert_eq!(
        (
            h["politeness"]["delay_ms"].as_u64(),
            h["politeness"]["concurrency"].as_u64()
        ),
        (Some(50), Some(2)),
        "{h}"
    );
    let out = ctl(
        addr,
        &token,
        &[
            "politeness",
            &name1,
            "--delay-ms",
            "80",
            "--concurrency",
            "1",
        ],
    );
    assert!(out.contains("politeness set for"), "{out}");
    let h = get(addr, &format!("/v1/hosts/{name1}"));
    assert_eq!(h["politeness"]["delay_ms"], 80, "{h}");
    let out = ctl(addr, &token, &["politeness", &name1, "--clear"]);
    assert!(out.contains("configured"), "{out}");
    let h = get(addr, &format!("/v1/hosts/{name1}"));
    assert!(h["politeness"].is_null(), "{h}");
    let port = url::Url::parse(&h1)
        .unwrap()
        .port_or_known_default()
        .unwrap();
    let a = call(
        addr,
        "PUT",
        &format!("/v1/hosts/{name1}:{port}/politeness"),
        Some(TOKEN),
        r#"{"delay_ms": 50}"#,
    );
    assert_eq!(
        (a.status, a.json()["error"]["field"].as_str()),
        (400, Some("host")),
        "{}",
        a.body
    );

    // URLs added: an orphan queued (and fetched), a seed known, another site excluded, garbage invalid.
    let orphan = site.orphan_urls(0)[0].clone();
    let body =
        serde_json::json!({"urls": [orphan, h0, "http://127.0.6.1/", "http://"]}).to_string();
    let answers = post(addr, "/v1/urls", &body).json();
    let results: Vec<&str> = answers["urls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["result"].as_str().unwrap())
        .collect();
    assert_eq!(
        results,
        ["queued", "known", "excluded", "invalid"],
        "{answers}"
    );
    assert_eq!(answers["urls"][2]["reason"], "scope", "{answers}");
    let orphan_path = url::Url::parse(&orphan).unwrap().path().to_owned();
    let second = site.orphan_urls(0)[1].clone();
    let out = ctl(addr, &token, &["add", &second]);
    assert!(out.contains("queued"), "{out}");
    let second_path = url::Url::parse(&second).unwrap().path().to_owned();
    tokio::task::block_in_place(|| {
        eventually(Duration::from_secs(20), "the added orphans fetched", || {
            site.hits(0, &orphan_path) == 1 && site.hits(0, &second_path) == 1
        })
    });

    // The queue of host 1 dropped (through ctl): what it held is recorded, never fetched. Asked again while it
    // runs, or after: answered, no second drop of the same request.
    let out = ctl(addr, &token, &["drop", &name1]);
    assert!(out.starts_with("dropping the"), "{out}");
    let a = call(
        addr,
        "DELETE",
        &format!("/v1/hosts/{name1}/queue"),
        Some(TOKEN),
        "",
    );
    assert_eq!(a.status, 200, "{}", a.body);
    tokio::task::block_in_place(|| {
        eventually(Duration::from_secs(20), "the queue dropped", || {
            get(addr, &format!("/v1/hosts/{name1}"))["queued"].as_u64() == Some(0)
        })
    });
    let after_drop =
        tokio::task::block_in_place(|| stays_quiet(&site, 1, Duration::from_millis(800)));

    child.signal("TERM");
    let res = finish(child).await;
    assert_eq!(res.code(), Some(0), "{}", res.stderr);
    for needle in ["operator change", "pause", "drop"] {
        assert!(
            res.stderr.contains(needle),
            "no {needle:?} in the log:\n{}",
            res.stderr
        );
    }
    let records = read_records(&c.jsonl);
    let dropped: Vec<_> = records
        .iter()
        .filter(|r| r.reason == Some(Reason::Operator))
        .collect();
    assert!(!dropped.is_empty(), "nothing recorded dropped");
    for r in &dropped {
        assert_eq!(r.outcome, Outcome::Excluded);
        let path = url::Url::parse(&r.url).unwrap().path().to_owned();
        assert!(r.url.contains(&name1), "{r:?}");
        assert_eq!(site.hits(1, &path), 0, "{} was dropped and fetched", r.url);
    }
    assert_eq!(seen(&site, 1), after_drop);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_survives_a_restart_and_an_add_survives_kill_9() {
    let site = Site::builder(site(43, 60)).start().await.expect("site");
    let (h0, h1) = (site.url(0, "/"), site.url(1, "/"));
    let name0 = url::Url::parse(&h0).unwrap().host_str().unwrap().to_owned();
    let c = TestCrawl::new(ENGINE, &[h0.clone(), h1.clone()], "").expect("test crawl");
    let token = write(&c, "api.token", TOKEN);
    c.rewrite(&config(200, &api_lines(&token, "")))
        .expect("config");

    // First run: host 0 paused, then a clean stop.
    let child = c.start();
    let addr = api_addr(&child);
    tokio::task::block_in_place(|| {
        eventually(Duration::from_secs(20), "host 0 fetched", || {
            seen(&site, 0) >= 1
        })
    });
    post(addr, "/v1/pause", &format!(r#"{{"host": "{name0}"}}"#));
    child.signal("TERM");
    assert_eq!(finish(child).await.code(), Some(0));

    // Second run: still paused from the first request on; an orphan added, then kill -9 at once.
    let quiet_from = seen(&site, 0);
    let child = c.start();
    let addr = api_addr(&child);
    assert_eq!(get(addr, &format!("/v1/hosts/{name0}"))["paused"], true);
    let orphan = site.orphan_urls(1)[1].clone();
    let a = post(
        addr,
        "/v1/urls",
        &serde_json::json!({"urls": [orphan]}).to_string(),
    )
    .json();
    assert_eq!(a["urls"][0]["result"], "queued", "{a}");
    tokio::task::block_in_place(|| std::thread::sleep(Duration::from_millis(800)));
    assert_eq!(
        seen(&site, 0),
        quiet_from,
        "a paused host was fetched after a restart"
    );
    child.signal("KILL");
    let _ = finish(child).await;

    // Third run: the add is there (fetched), the pause too until resumed.
    let orphan_path = url::Url::parse(&orphan).unwrap().path().to_owned();
    let child: Running = c.start();
    let addr = api_addr(&child);
    tokio::task::block_in_place(|| {
        eventually(
            Duration::from_secs(30),
            "the added URL fetched after kill -9",
            || site.hits(1, &orphan_path) >= 1,
        )
    });
    assert_eq!(
        seen(&site, 0),
        quiet_from,
        "a paused host was fetched after kill -9"
    );
    post(addr, "/v1/resume", &format!(r#"{{"host": "{name0}"}}"#));
    tokio::task::block_in_place(|| {
        eventually(Duration::from_secs(20), "host 0 resumed", || {
            seen(&site, 0) > quiet_from
        })
    });
    child.signal("TERM");
    assert_eq!(finish(child).await.code(), Some(0));
}
