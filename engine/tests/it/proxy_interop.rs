//! Interop of the proxy-chain actor with a real SOCKS5 server: Debian's `microsocks` (skipped with a note when it is
//! not installed; `.ci/run` installs it).

use super::proxy::{assert_all_fetched, assert_ok, chains, index, ip, plain, run};
use crate::ENGINE;
use crawl_tests::engine::TestCrawl;
use crawl_tests::site::{ExpectOptions, Site};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tokio::net::TcpStream;

const MICROSOCKS: &str = "/usr/bin/microsocks";

/// Kills and reaps a child process (the microsocks server) when dropped, also on a failed assertion.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interop_with_microsocks() {
    if !std::path::Path::new(MICROSOCKS).exists() {
        crawl_test_kit::tool::unavailable(
            "microsocks interop",
            MICROSOCKS,
            "apt-get install microsocks",
        );
        return;
    }
    let site = Site::start(plain(189, 1, 6)).await.expect("site starts");
    let port = std::net::TcpListener::bind((ip(189), 0))
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let server = Command::new(MICROSOCKS)
        .args([
            "-i",
            "127.0.0.189",
            "-p",
            &port.to_string(),
            "-b",
            "127.0.0.189",
        ])
        .args(["-u", "mcuser", "-P", "mcpass"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn microsocks");
    let mut server = KillOnDrop(server);
    let addr = SocketAddr::new(ip(189), port);
    let mut listening = false;
    for _ in 0..300 {
        if TcpStream::connect(addr).await.is_ok() {
            listening = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(listening, "microsocks listens on {addr}");
    let overrides = format!(
        "[proxy]\ndefault = [\"ms\"]\n{}",
        chains(&[("ms", vec![format!("socks5://mcuser:mcpass@{addr}")])])
    );
    let crawl = TestCrawl::new(ENGINE, &[site.seed_url()], &overrides).expect("test crawl");
    let res = run(crawl.command()).await;
    assert_ok(&res);
    let recs = index(crawl.records());
    let want = site.expected(ExpectOptions::default()).fetched_ok;
    assert_all_fetched(&recs, &want, &["ms"]);
    assert!(site.connections(0) > 0);
    assert!(
        server.0.try_wait().expect("try_wait").is_none(),
        "microsocks still running"
    );
    server.0.kill().expect("kill microsocks");
    server.0.wait().expect("reap microsocks");
}
