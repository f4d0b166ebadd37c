//! Credentials across redirects with the real binary: origin A has `[[fetch.credentials]]`; its robots.txt
//! redirects to origin B's, and its pages redirect to B, to another port of A's host and to a host whose credential
//! is for https only. A sees `Authorization` and `Cookie` on every request; B, the other port and the http side of
//! the https-only origin never do. Hosts 127.0.4.12..=127.0.4.14.

use super::ip;
use super::server::{Answer, Server};
use crate::ENGINE;
use crawl_core::record::Outcome;
use crawl_tests::engine::TestCrawl;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_stay_with_their_origin_across_redirects() {
    let a = Server::start(ip(12)).await;
    let a_other_port = Server::start(ip(12)).await;
    let b = Server::start(ip(13)).await;
    let https_only = Server::start(ip(14)).await;

    a.route("/robots.txt", Answer::redirect(&b.url("/robots.txt")));
    a.route(
        "/",
        Answer::html(
            "<a href=\"/to-b\">b</a> <a href=\"/to-port\">port</a> <a href=\"/to-http\">http</a>",
        ),
    );
    a.route("/to-b", Answer::redirect(&b.url("/landing")));
    a.route("/to-port", Answer::redirect(&a_other_port.url("/landing")));
    a.route("/to-http", Answer::redirect(&https_only.url("/landing")));
    b.route(
        "/robots.txt",
        Answer::text(200, "User-agent: *\nAllow: /\n"),
    );
    for s in [&a_other_port, &b, &https_only] {
        s.route("/landing", Answer::html("<p>landing</p>"));
    }

    let overrides = format!(
        r#"
[crawl]
scope = "any"
[[fetch.credentials]]
origin = "http://{a}"
authorization = "Bearer a-token"
cookie = "a=1"
[[fetch.credentials]]
origin = "https://{d}"
authorization = "Bearer https-only-token"
"#,
        a = a.addr,
        d = https_only.addr,
    );
    let crawl = TestCrawl::new(ENGINE, &[a.url("/")], &overrides).expect("test crawl");
    let run = tokio::task::block_in_place(|| crawl.run(Duration::from_secs(60)));
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let records = crawl.records();
    for landing in [&b, &a_other_port, &https_only] {
        let url = landing.url("/landing");
        assert!(
            records
                .iter()
                .any(|r| r.url == url && r.outcome == Outcome::Fetched && r.status == Some(200)),
            "{url} not fetched: {records:?}"
        );
    }

    let at_a = a.seen();
    let paths: Vec<&str> = at_a.iter().map(|s| s.path.as_str()).collect();
    for p in ["/robots.txt", "/", "/to-b", "/to-port", "/to-http"] {
        assert!(paths.contains(&p), "A was not asked for {p}: {paths:?}");
    }
    for s in &at_a {
        assert_eq!(
            s.header("authorization"),
            Some("Bearer a-token"),
            "{}",
            s.path
        );
        assert_eq!(s.header("cookie"), Some("a=1"), "{}", s.path);
    }
    let at_b = b.seen();
    assert!(
        at_b.iter().any(|s| s.path == "/robots.txt"),
        "A's robots.txt redirect was followed to B: {at_b:?}"
    );
    for (name, server) in [
        ("B", &b),
        ("A's host on another port", &a_other_port),
        ("http side of an https-only origin", &https_only),
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
}
