use super::*;
use crate::RedisFrontier;
use crawl_test_kit::redis::{Options, RedisServer};

const WITHIN: Duration = Duration::from_secs(3);

fn settings(url: String, crawl: &str, shards: u32) -> RedisSettings {
    RedisSettings {
        urls: vec![url],
        crawl: crawl.to_owned(),
        shards,
        ..RedisSettings::default()
    }
}

#[test]
fn a_probe_reads_the_crawl_and_changes_nothing() {
    if !crawl_test_kit::redis::require("redis probe", false) {
        return;
    }
    let srv = RedisServer::with(Options {
        password: Some("probe-pw-5521".into()),
        aof: false,
        ..Options::default()
    });
    let s = settings(srv.url(), "news", 8);
    assert_eq!(probe(&s, WITHIN).unwrap(), CrawlThere::Absent);
    assert_eq!(
        srv.cli(&["-a", "probe-pw-5521", "--no-auth-warning", "DBSIZE"])
            .unwrap()
            .trim(),
        "0",
        "the probe wrote"
    );
    let dir = tempfile::tempdir().unwrap();
    let mut with_spool = s.clone();
    with_spool.spool = Some(dir.path().join("spool"));
    drop(RedisFrontier::open(with_spool, "p1").unwrap());
    assert_eq!(
        probe(&s, WITHIN).unwrap(),
        CrawlThere::Made { shards: Some(8) }
    );

    // A wrong password is named without it (nor the right one).
    let wrong = settings(srv.url().replace("probe-pw-5521", "wrong-pw-7"), "news", 8);
    let err = probe(&wrong, WITHIN).unwrap_err().to_string();
    assert!(
        !err.contains("wrong-pw-7") && !err.contains("probe-pw-5521"),
        "{err}"
    );
    assert!(err.starts_with("redis redis+unix://"), "{err}");
}

#[test]
fn a_probe_of_an_address_nothing_listens_on_fails_at_once_without_the_password() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let s = settings(format!("redis://:pw-9912@127.0.0.1:{port}/0"), "c", 4);
    let started = std::time::Instant::now();
    let err = probe(&s, WITHIN).unwrap_err().to_string();
    assert!(started.elapsed() < WITHIN, "{:?}", started.elapsed());
    assert!(
        err.starts_with(&format!("redis redis://:***@127.0.0.1:{port}/0: ")),
        "{err}"
    );
    assert!(!err.contains("pw-9912"), "{err}");
    // Settings that cannot work are refused before anything is sent.
    let mut bad = s.clone();
    bad.crawl = "a{b}".into();
    assert!(probe(&bad, WITHIN).is_err());
}
